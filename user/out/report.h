/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Output shared by every subcommand: the JSON envelope (version, kernel, arch, duration,
 * target, hooks, unavailable, lost), the text header and hook lines, counters that may be
 * unavailable ("n/a (reason)" in text, null plus a reason in JSON), and histograms.
 */
#ifndef MMSCOPE_REPORT_H
#define MMSCOPE_REPORT_H

#include "out/hist.h"
#include "out/json.h"
#include "core/run_result.h"

#define REPORT_MAX_UNAVAILABLE 48

struct report {
	const struct run_result *res; /* all a writer knows of the run, beside the counts */
	FILE *out;
	struct json_writer *jw; /* NULL for text */
	int nunavail;
	char unavail_key[REPORT_MAX_UNAVAILABLE][64];
	char unavail_why[REPORT_MAX_UNAVAILABLE][192];
};

void report_init(struct report *r, const struct run_result *res, FILE *out);
/* JSON: opens the object and writes the envelope. Text: the title and hook lines. */
void report_begin(struct report *r, int interval, double t0, double t1);
/* JSON: unavailable, lost, and closes the object. Text: the lost line. */
void report_end(struct report *r, const struct mm_stats *st);

/* Print every nonzero lost counter on stderr. */
void report_lost_stderr(const struct mm_stats *st);

/* A counter at dotted key; available false prints n/a (why). Text rows use label. */
void report_counter(struct report *r, const char *key, const char *label, bool available,
		    uint64_t value, const char *why);
/* A log2 histogram at key ({lo,hi,count} buckets) or null with why. */
void report_hist(struct report *r, const char *key, const char *title, const char *unit,
		 const uint64_t *slots, const uint64_t *sum, bool available, const char *why);
/* A key that is null in JSON, and why: listed in the envelope's "unavailable". */
void report_note_unavailable(struct report *r, const char *key, const char *why);
/* JSON nesting helpers (no-ops in text mode). */
void report_section(struct report *r, const char *key);
void report_section_end(struct report *r);

#endif
