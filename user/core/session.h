/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One tracing run, the same for every subcommand: options → target → hook selection →
 * open → configure → load → attach → run → read → destroy, with one cleanup path
 * (session_close) whatever happened.
 */
#ifndef MMSCOPE_SESSION_H
#define MMSCOPE_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/catalog.h"
#include "core/run_result.h"
#include "core/session_config.h"
#include "out/json.h"
#include "core/loc_table.h"
#include "core/proc_table.h"
#include "core/stack_table.h"
#include "cmd/opts.h"
#include "core/prog_stats.h"
#include "core/target.h"
#include "sym/sym.h"
#include "lib/util.h"
#include "bpf/mmscope.h"

struct mmscope;
struct unwind_tables;

struct hw_counter {
	const char *name; /* "dtlb_misses" */
	int fds[MMSCOPE_MAX_CPUS];
	int nfds;
	bool available;
	char reason[160];
	uint64_t value, prev;
};

struct session {
	struct mm_opts *opts;
	struct session_config cfg;
	struct mmscope *skel;
	struct kcaps caps;
	struct selection sel;
	struct bpf_link **links;
	int nlinks, caplinks;
	/* links[flush_from, flush_to): the switch CR3-load hook's (see detach_links()) */
	int flush_from, flush_to;
	/* Kernel-counted events standing in for programs (HM_PERF_COUNT): summed by
	 * session_read_stats() into counter c[counter], per CPU where cpu >= 0. */
	struct perf_counter {
		int fd;
		int cpu; /* -1: a task's event (with its children), all CPUs */
		int counter;
		bool self; /* mmscope's own count on that CPU, taken out of the CPU's */
	} * counters;
	int ncounters, capcounters;
	struct ring_buffer *rb;
	unsigned int fn_attached; /* which functions of a kprobe list got attached */
	int ncpus;		  /* possible CPUs: per-CPU map values */

	pid_t child; /* -- COMMAND */
	int child_go_fd, child_err_fd;
	int child_status;
	bool child_exited;
	struct target target; /* -p, -t, -c: checked and held (core/target.h) */
	int descendants;      /* -p: descendants found running at the start (add_descendants()) */

	uint64_t t_start, t_end;
	/* Faults open when the hooks were detached (session_open_faults()). */
	uint64_t open_faults;
	uint64_t open_fault_tlb[FAULT_CLASS_SLOTS][FT_NR];
	double wall_start;
	struct usyms *usyms;
	/* User stacks walked with DWARF tables (bpf/unwind.bpf.h), or why not. */
	bool unwind_dwarf;
	char unwind_why[160];
	uint32_t unwind_chunks[3]; /* rows, pages, rules: the tables' budget */
	struct unwind_tables *unwind;
	struct mmap_log *mlog; /* the kernel's mmap records, when the locations use them */
	/* Running processes named from the records (seed_images()), and those left out. */
	unsigned int seeded_images, seed_skipped;
	uint64_t seed_start;
	/* Fault locations: the counts the BPF per-CPU slots gave up, and (once the hooks are
	 * detached) the ones they held. */
	struct location_table locs;
	/* The rows of processes gone, taken out of the per-process table during the run
	 * (faults: proc_fold_sweep()), and when it was last swept. */
	struct proc_fold gone_procs;
	uint64_t last_sweep;
	uint64_t last_settle; /* mmap_settle(): the mmap log's raw addresses as code */
	/* Stacks by id, as the BPF programs sent them (REC_KERNEL_STACK, REC_USER_STACK). */
	struct stack_table kstacks, ustacks;
	/* Folded-stack counts: what the BPF per-CPU slots gave up (REC_FOLDED), and (once the
	 * hooks are detached) what they held. */
	struct folded_table folded;
	struct ksyms *ksyms; /* see session_ksyms() */
	bool ksyms_failed;

	struct atomic_file out_file;
	FILE *out;
	bool out_broken;	     /* EPIPE: the reader went away */
	bool out_direct;	     /* -o names a device or FIFO: written in place */
	struct atomic_file svg_file; /* --svg, the same way */
	FILE *svg;
	bool svg_direct;
	struct atomic_file pprof_file; /* --pprof, the same way */
	FILE *pprof;
	bool pprof_direct;

	/* Maps snapshots to take again a little after an exec: the new image's libraries are
	 * mapped by its loader after the exec event, and frames recorded as raw addresses (when
	 * the kernel could not read a build ID, e.g. under mmap_lock) need them. */
	struct {
		int tgid;
		uint64_t due;
	} resnap[256];
	int nresnap;
	uint64_t pass_start; /* start of this loop pass: the immediate-snapshot budget */

	struct hw_counter hw[4];
	struct prog_stats progs; /* what mmscope's own programs cost (--bpf-stats) */
	bool stopped_by_signal;
};

/*
 * The BTF to relocate against, in opts->btf (NULL: the kernel's own): --btf's file or the one
 * built in, once checked against the running kernel. 0, or -1 after an error (a BTF that does
 * not describe this kernel included). btf_facts_checked: how many facts the check compared
 * (-1: no check ran).
 */
int resolve_btf(struct mm_opts *opts);
extern int btf_facts_checked;
int session_open(struct session *s, struct mm_opts *opts, const struct session_config *cfg);
/* Interval callback: called every -i with the interval index (from 0). */
typedef void (*interval_fn)(struct session *s, int index, double t0, double t1);
int session_run(struct session *s, interval_fn on_interval);
/*
 * After session_run ended because its targets did (serve keeps answering with the final
 * counts): wait for SIGINT/SIGTERM or the end of -d. At once if a signal ended the run.
 */
void session_linger(struct session *s);
/* Sum the per-CPU statistics block; with percpu, also hand back the per-CPU values
 * (s->ncpus of them, caller frees). */
int session_read_stats(struct session *s, struct mm_stats *out, struct mm_stats **percpu);
/*
 * Faults still open when the run ended (counted as the hooks were detached) never completed:
 * their number, and (when st is given) their class and invalidations added to st->fault_tlb
 * as incomplete.
 */
uint64_t session_open_faults(struct session *s, struct mm_stats *st);
void session_read_hw(struct session *s);
/* Finish the output (commit -o file) and release everything; returns the exit code. */
int session_close(struct session *s, int status);
double session_duration_s(const struct session *s);
/* Kernel symbols, loaded on first use; NULL (warned once) when unavailable. */
struct ksyms *session_ksyms(struct session *s);
const struct hook_candidate *session_hook(const struct session *s, enum mm_event_id id);
/* What the run found, for the writers (core/run_result.c): called once the counts are read,
 * before writing. res->sel points into s, which must outlive res. */
void session_result(const struct session *s, struct run_result *res);

#endif
