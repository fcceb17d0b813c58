/* SPDX-License-Identifier: GPL-2.0 */
/* The faults section, shared by `mmscope faults` and `mmscope stat`. */
#ifndef MMSCOPE_FAULTS_REPORT_H
#define MMSCOPE_FAULTS_REPORT_H

#include "out/report.h"

/* Counters (and, with histograms, the latency histograms) of one interval or the total.
 * open_at_end: faults still open at the end (incomplete), 0 for intervals. */
void faults_report_counts(struct report *r, const struct mm_stats *st, uint64_t open_at_end,
			  bool histograms);

/* Faults by the type of mapping they hit (JSON by_type) and how handle_mm_fault() calls ended
 * (JSON results); n/a where handle_mm_fault() is not hooked. */
void faults_report_anatomy(struct report *r, const struct mm_stats *st, bool histograms);

#endif
