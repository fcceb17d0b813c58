/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault locations by key, in userspace: the counts the BPF per-CPU location slots give up
 * (REC_LOCATION records, bpf/faults.bpf.c location_count()) and, when the run ends, the slots
 * still held. Up to LOCATION_TABLE_MAX locations. Full, the table gives up its lighter half
 * (the rows at or below the median count) to make room, so that a location that turns heavy
 * late in a long host-wide run still gets a row: what those rows held is counted in lost, and
 * the report's [other] row carries it, so the rows still add up to the total. A location
 * given up and seen again starts a new row; its earlier faults stay in [other].
 *
 * A kernel-mode location, and a user one known as (build ID, file offset) (key
 * LOC_KEY_BY_CODE), is one row for every process that runs that code: a host where short
 * processes come and go made each its own rows of the same code, which filled the table again
 * and again. Raw addresses of images whose
 * mappings the kernel's mmap records give (LOC_MMAP_RECORDS) are settled into such rows while
 * their records are held (locations_settle(), and before any row is given up).
 */
#ifndef MMSCOPE_LOC_TABLE_H
#define MMSCOPE_LOC_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/mmap_log.h"
#include "lib/keyed_table.h"
#include "bpf/mmscope.h"

#define LOCATION_TABLE_MAX (1u << 17)

/* key.kernel of a row keyed by code: tgid 0, mm a hash of the build ID, ip the file offset (two
 * build IDs of one hash, 2^-64 a pair, would share a row). */
#define LOC_KEY_BY_CODE 2

struct location_table {
	struct keyed_table t; /* struct location_slot by its key; set up by the first add */
	uint64_t lost;	      /* events not in a row: given up to make room, or no room */
	uint64_t given_up;    /* rows given up to make room */
	to_code_fn to_code;   /* settles a LOC_MMAP_RECORDS row (NULL: none are) */
	void *to_code_arg;
};

/* Add one slot's counts under its key; the build ID of a key read since replaces a raw
 * address. */
void locations_add(struct location_table *t, const struct location_slot *in);
/* Settle the LOC_MMAP_RECORDS rows whose code to_code() knows into rows by code: the number
 * of rows fewer. records_read: the log has read every record written before these rows came
 * (mmap_log_consume() since), so a row not settled now never will be: not tried again. */
size_t locations_settle(struct location_table *t, bool records_read);
/* Call fn for each LOC_MMAP_RECORDS row still unsettled, with its process. */
void locations_each_raw(const struct location_table *t, void (*fn)(uint32_t tgid, void *arg),
			void *arg);
void locations_free(struct location_table *t);

#endif
