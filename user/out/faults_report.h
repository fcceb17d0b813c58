/* SPDX-License-Identifier: GPL-2.0 */
/* The faults section, shared by `mmscope faults` and `mmscope stat`. */
#ifndef MMSCOPE_FAULTS_REPORT_H
#define MMSCOPE_FAULTS_REPORT_H

#include "out/report.h"

/* Counters (and, with histograms, the latency histograms) of one interval or the total.
 * open_at_end: faults still open at the end (incomplete), 0 for intervals. */
void faults_report_counts(struct report *r, const struct mm_stats *st, uint64_t open_at_end,
			  bool histograms);
/* Why read/write/exec cannot be told with the chosen entry hook, or NULL when they can. */
const char *faults_class_unavailable(const struct session *s);
/* Why a fault on a present page cannot be told from one on a missing page, or NULL. */
const char *faults_prot_unavailable(const struct session *s);
/* The latency method in words ("pairing: ..."), or NULL when there is none. */
const char *faults_latency_method(const struct session *s, char *buf, size_t len);

/* Faults by the type of mapping they hit (JSON by_type) and how handle_mm_fault() calls ended
 * (JSON results); n/a where handle_mm_fault() is not hooked. */
void faults_report_anatomy(struct report *r, const struct mm_stats *st, bool histograms);
/* Why fault types cannot be told on this kernel, or NULL. */
const char *faults_type_unavailable(const struct session *s);
/* Why copy-on-write faults cannot be told from other writes on this machine (their type is
 * then their mapping's), or NULL. */
const char *faults_cow_unavailable(const struct session *s);

#endif
