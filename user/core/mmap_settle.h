/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The mmap log (core/mmap_log.h) holds the mappings of every image exec'ed during the run, and a
 * host where short processes come and go fills it in a minute: what came after showed
 * [unknown]. So, while the records are held, the locations and stacks that name code by raw
 * address are settled as (build ID, file offset), which needs no records at the end; and when
 * the log nears its cap, the records of processes gone that nothing still needs are forgotten.
 */
#ifndef MMSCOPE_MMAP_SETTLE_H
#define MMSCOPE_MMAP_SETTLE_H

#include "core/loc_table.h"
#include "core/mmap_log.h"
#include "core/stack_table.h"

/* Settle the location rows; the log nearly full, the stacks too, and forget what is not
 * needed (folded, ustacks: NULL when no stacks are kept). Call after mmap_log_consume(). */
void mmap_settle(struct mmap_log *l, struct location_table *locs, const struct folded_table *folded,
		 struct stack_table *ustacks);

#endif
