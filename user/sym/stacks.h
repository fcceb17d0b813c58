/* SPDX-License-Identifier: GPL-2.0 */
/* Reading what the BPF side aggregated by process, location and stack, and symbolizing it. */
#ifndef MMSCOPE_STACKS_H
#define MMSCOPE_STACKS_H

#include <stdint.h>
#include <stdio.h>

#include "core/session.h"
#include "out/svg.h"

struct location_row {
	char *symbol;
	char *dso;
	uint64_t count;
};

/* Fault locations, symbolized and merged by (symbol, dso), descending. Caller frees with
 * free_locations. */
struct location_row *read_locations(struct session *s, int *n);
void free_locations(struct location_row *rows, int n);

/*
 * The stacks the BPF side counted, symbolized: one record per distinct stack and process
 * (stacks of a process that symbolize alike are merged), sorted by their --folded text, then
 * pid. --folded, --svg and --pprof are written from these records. kind_name names the leaf
 * frame from the key's kind.
 */
struct name_pool;
struct stack_set {
	struct stack_record *recs;
	/* The frames' names and files, one copy of each string: a host-wide run's stacks repeat
	 * the same few thousand names hundreds of thousands of times. */
	struct name_pool *names;
	int n;
	int distinct; /* distinct --folded texts (stacks of several processes count once) */
	uint64_t count, latency_ns; /* totals */
	uint64_t lost; /* events of records userspace had no room for (CNT_LOST_FOLDED) */
};
typedef void (*kind_name_fn)(uint32_t kind, char *buf, size_t len);
/* 0, or -ENOMEM (set then holds what was read before). The records' frames only with_frames
 * (for --svg and --pprof; NULL otherwise): --folded needs the text alone, and a host-wide run's
 * tens of thousands of stacks would otherwise take mmscope tens of MB and as many page faults. */
int read_stacks(struct session *s, kind_name_fn kind_name, bool with_frames, struct stack_set *set);
void free_stacks(struct stack_set *set);
/* --sample N: each stack taken stands for N events (bpf/state.bpf.h stack_sampled()); its
 * count and latency, and the totals, are multiplied by every (nothing done for 0 or 1). The
 * records lost (set->lost) stay counts of stacks taken. */
void scale_stacks(struct stack_set *set, uint64_t every);
/* Folded lines "frame;frame;... WEIGHT": weight = count, or latency in ns (lines of weight 0
 * left out), then, weighted by count, "[other] N" for the other events that were not kept in
 * a line (other: CNT_LOST_FOLDED). Returns the number of lines. */
int write_folded(FILE *out, const struct stack_set *set, bool latency, uint64_t other);

#endif
