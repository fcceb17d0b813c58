/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault locations by key, in userspace: the counts the BPF per-CPU location slots give up
 * (REC_LOCATION records, bpf/faults.bpf.c location_count()) and, when the run ends, the slots
 * still held. Up to LOCATION_TABLE_MAX locations. Full, the table gives up its lighter half
 * (the rows at or below the median count) to make room, so that a location that turns heavy
 * late in a long host-wide run still gets a row: what those rows held is counted in lost, and
 * the report's [other] row carries it, so the rows still add up to the total. A location
 * given up and seen again starts a new row; its earlier faults stay in [other].
 */
#ifndef MMSCOPE_LOC_TABLE_H
#define MMSCOPE_LOC_TABLE_H

#include <stdint.h>

#include "lib/keyed_table.h"
#include "bpf/mmscope.h"

#define LOCATION_TABLE_MAX (1u << 17)

struct location_table {
	struct keyed_table t; /* struct location_slot by its key; set up by the first add */
	uint64_t lost;	      /* events not in a row: given up to make room, or no room */
	uint64_t given_up;    /* rows given up to make room */
};

/* Add one slot's counts under its key; the build ID of a key read since replaces a raw
 * address. */
void locations_add(struct location_table *t, const struct location_slot *in);
void locations_free(struct location_table *t);

#endif
