/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault locations by key, in userspace: the counts the BPF per-CPU location slots give up
 * (REC_LOCATION records, bpf/faults.bpf.c location_count()) and, when the run ends, the slots
 * still held. Up to LOCATION_TABLE_MAX locations; counts of locations beyond it are counted
 * lost, never silently dropped.
 */
#ifndef MMSCOPE_LOC_TABLE_H
#define MMSCOPE_LOC_TABLE_H

#include <stdint.h>

#include "lib/keyed_table.h"
#include "bpf/mmscope.h"

#define LOCATION_TABLE_MAX (1u << 17)

struct location_table {
	struct keyed_table t; /* struct location_slot by its key; set up by the first add */
	uint64_t lost;	      /* events of locations there was no room for */
};

/* Add one slot's counts under its key; the build ID of a key read since replaces a raw
 * address. */
void locations_add(struct location_table *t, const struct location_slot *in);
void locations_free(struct location_table *t);

#endif
