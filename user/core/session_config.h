/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a subcommand wants from the BPF side: apart from core/session.h so that a run's result
 * (core/run_result.h), which the writers read, can say what was collected without the session.
 */
#ifndef MMSCOPE_SESSION_CONFIG_H
#define MMSCOPE_SESSION_CONFIG_H

#include <stdbool.h>

struct session_config {
	unsigned int events;   /* bits of enum mm_event_id the subcommand needs */
	unsigned int required; /* of those, the ones without which it cannot run at all */
	unsigned int primary;  /* at least one of these must be observable (0: any event) */
	bool procs, locations, stacks;
	bool files;	     /* faults on files, by file and process (by_file) */
	bool procs_live;     /* procs read during the run (serve): nothing left pending per CPU */
	bool tlb_stacks;     /* TLB flush stacks */
	bool tlb_detail;     /* TLB events by process and system call */
	bool tlb_reasons;    /* the output names tlb_flush reasons (x86: read from the kernel) */
	bool switch_procs;   /* context switches by process */
	bool track_mm_cpus;  /* CPUs each mm ran on: avoidable broadcasts */
	bool count_only;     /* no pairing: counters only (stat) */
	bool fault_latency;  /* a latency per fault is needed (--weight latency) */
	bool untimed_faults; /* faults paired for their class only: no latency read (tlb) */
};

#endif
