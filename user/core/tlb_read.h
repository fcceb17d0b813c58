/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The end-of-run tables of `mmscope tlb` and `mmscope switch` read from the BPF maps into
 * plain rows, totalled and sorted heaviest first, for the writers (out/tlb_report.c), which
 * touch no map.
 */
#ifndef MMSCOPE_TLB_READ_H
#define MMSCOPE_TLB_READ_H

#include "bpf/mmscope.h"

struct session;

/* A process's issued flushes by reason, and their sum. */
struct tlb_proc_row {
	__u32 tgid;
	struct tlb_proc p;
	__u64 total;
};

/* Flushes issued during one system call (k.nr, unbiased) for one reason. */
struct tlb_syscall_row {
	struct tlb_syscall_key k;
	__u64 count;
};

struct tlb_details {
	struct tlb_proc_row *procs; /* by total, descending */
	int nprocs;
	struct tlb_syscall_row *syscalls; /* by count, descending */
	int nsyscalls;
};

struct switch_proc_row {
	__u32 tgid;
	struct switch_proc p;
};

struct switch_details {
	struct switch_proc_row *procs; /* by total, descending */
	int nprocs;
};

/* What could not be read is said on stderr and left out (the rows may be NULL, n 0). */
void tlb_details_read(struct session *s, struct tlb_details *d);
void tlb_details_free(struct tlb_details *d);
void switch_details_read(struct session *s, struct switch_details *d);
void switch_details_free(struct switch_details *d);

#endif
