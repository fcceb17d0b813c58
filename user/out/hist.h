/* SPDX-License-Identifier: GPL-2.0 */
/* log2 histograms in userspace: bucket bounds, totals, and bcc-style star printing. */
#ifndef MMSCOPE_USER_HIST_H
#define MMSCOPE_USER_HIST_H

#include <stdint.h>
#include <stdio.h>
#include "bpf/hist.h"

struct log2_hist {
	uint64_t slots[MMSCOPE_HIST_SLOTS];
};

/* Inclusive bounds of slot s: [0,1], [2,3], [4,7], ... */
uint64_t hist_slot_lo(unsigned int s);
uint64_t hist_slot_hi(unsigned int s);
void hist_add(struct log2_hist *h, uint64_t value);
void hist_merge(struct log2_hist *dst, const struct log2_hist *src);
uint64_t hist_total(const struct log2_hist *h);
/* Index of the highest non-empty slot + 1, or 0 when the histogram is empty. */
unsigned int hist_used_slots(const struct log2_hist *h);
/*
 * Print like bcc's print_log2_hist: a header naming the unit ("nsecs", "pages"), one row per
 * slot from the lowest to the highest non-empty slot, "lo -> hi : count |stars|", 40 stars
 * for the largest row. Prints "(no events)" when empty.
 */
void hist_print(FILE *f, const struct log2_hist *h, const char *unit);

#endif
