/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a run found, as plain data: the one thing the writers (user/out) read. The core fills it
 * from the session (session_result()) once the counts are read; a test builds one by hand. The
 * counts themselves (struct mm_stats) and the tables read at the end are handed to the writers
 * beside it. Nothing here points into BPF maps or the skeleton.
 */
#ifndef MMSCOPE_RUN_RESULT_H
#define MMSCOPE_RUN_RESULT_H

#include <stdbool.h>
#include <sys/types.h>

#include "bpf/mmscope.h"
#include "cmd/opts.h"
#include "core/catalog.h"
#include "core/session_config.h"
#include "core/unwind.h"

#define RUN_TLB_REASON_LEN 40

struct run_result {
	const struct mm_opts *opts;
	struct session_config cfg;
	unsigned int arch;	      /* one of enum arch_bits */
	unsigned int mmu;	      /* powerpc: MMU_RADIX or MMU_HASH; 0 elsewhere */
	char kernel[65], machine[65]; /* uname's release and machine */
	/* Per event: whether the run wanted it, the candidate chosen (-1: none) and why each
	 * other one lost. */
	const struct selection *sel;
	unsigned int fn_attached; /* which functions of a kprobe list got attached */
	pid_t child;		  /* -- COMMAND's pid, or 0 */
	/* The target in one line ("command: ls -l (pid 12)", "whole host, mmscope itself ..."),
	 * and whether mmscope's own process is in it and left out (self_pid). */
	char target[512];
	bool self_left_out;
	pid_t self_pid;
	double duration_s;

	/* Why the fault hooks chosen cannot tell these (NULL: they can), and the latency
	 * method in words ("": none). */
	const char *no_fault_class, *no_fault_prot, *no_fault_type, *no_fault_cow;
	char fault_latency_method[256];

	/* User stacks: walked with DWARF tables, or with frame pointers and why; what the
	 * tables hold when there are tables. */
	bool unwind_dwarf;
	char unwind_why[160];
	bool unwind_tables;
	struct unwind_stats unwind_stats;

	/* The JSON key of each tlb_flush reason slot: the kernel's names on x86 (its BTF or the
	 * tracepoint's format), the operation kinds of bpf/tlb.bpf.c elsewhere. */
	char tlb_reasons[TLB_REASON_SLOTS][RUN_TLB_REASON_LEN];
};

/* The hook chosen for an event, or NULL when the run did not want it or none works. */
const struct hook_candidate *run_hook(const struct run_result *res, enum mm_event_id id);

/*
 * Whether mmscope's own process falls in the target and is left out (self_tgid in BPF): the
 * whole host, a cgroup, CPUs.
 */
bool run_self_left_out(const struct mm_opts *o);

/* res->target from res->opts, res->child, res->self_left_out and res->self_pid. */
void run_target_line(struct run_result *res);

#endif
