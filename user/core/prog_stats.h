/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What mmscope's own BPF programs cost in a run: the kernel's run-time statistics of each
 * program (runs, nanoseconds), read once the hooks are detached. The kernel keeps them only
 * while kernel.bpf_stats_enabled is 1 or someone holds a BPF_ENABLE_STATS file descriptor
 * (--bpf-stats: for this run only, since each program run then pays two clock reads).
 */
#ifndef MMSCOPE_PROG_STATS_H
#define MMSCOPE_PROG_STATS_H

#include <stdbool.h>
#include <stdint.h>

struct bpf_object;
struct report;

#define PROG_STATS_MAX 64

struct prog_stat {
	char name[64];
	uint64_t runs, run_time_ns;
};

struct prog_stats {
	int stats_fd;	    /* BPF_ENABLE_STATS (--bpf-stats), or -1 */
	bool on;	    /* statistics were kept during the whole run */
	char why[160];	    /* when !on: why not */
	const char *source; /* "--bpf-stats" or "kernel.bpf_stats_enabled" */
	int n;
	struct prog_stat p[PROG_STATS_MAX];
};

/* Before the hooks are attached: turn the statistics on (enable), or see whether they are. */
void prog_stats_start(struct prog_stats *ps, bool enable);
/* After the hooks are detached: each program that ran, and whether the statistics stayed on. */
void prog_stats_read(struct prog_stats *ps, struct bpf_object *obj);
/* Give back the BPF_ENABLE_STATS descriptor (the kernel stops timing when the last goes). */
void prog_stats_stop(struct prog_stats *ps);

/* JSON bpf_programs (null and a reason when off); text with -v or --bpf-stats only. */
void prog_stats_report(struct report *r, const struct prog_stats *ps, bool text);

#endif
