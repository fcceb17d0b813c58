/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Prometheus exposition formats, written once: the text format 0.0.4 and OpenMetrics
 * 1.0.0 (chosen by the scraper's Accept header). Families with HELP/TYPE (and UNIT in
 * OpenMetrics), counter samples (with the _total suffix), gauges, info metrics, and classic
 * histograms built from mmscope's log2 slots. Label values are escaped here, whatever their
 * bytes: a comm is chosen by whoever runs the process.
 */
#ifndef MMSCOPE_METRICS_H
#define MMSCOPE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum metrics_format {
	METRICS_TEXT,	     /* text/plain; version=0.0.4 */
	METRICS_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
};

/* A growing output buffer; after an allocation failure it keeps failed set and stops. */
struct mbuf {
	char *p;
	size_t len, cap;
	bool failed;
};

void mbuf_printf(struct mbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mbuf_put(struct mbuf *b, const char *s, size_t len);
void mbuf_free(struct mbuf *b);

struct metrics_writer {
	struct mbuf b;
	enum metrics_format fmt;
};

/* Which format an Accept header asks for (NULL: none given). */
enum metrics_format metrics_negotiate(const char *accept);
const char *metrics_content_type(enum metrics_format fmt);

/* A label value escaped for both formats: backslash, double quote and newline as \\, \" and
 * \n; invalid UTF-8 and other control bytes as U+FFFD. Reads at most len bytes, stops at NUL. */
void metrics_escape_label(struct mbuf *b, const char *s, size_t len);

/*
 * Start a family. name has no _total suffix; type is "counter", "gauge", "histogram" or
 * "info" (a gauge named NAME_info in the text format); unit (may be NULL) must be the end of
 * name.
 */
void metrics_family(struct metrics_writer *w, const char *name, const char *type, const char *unit,
		    const char *help);
/* Labels of a sample: name, value, name, value, ... as a NULL-terminated array. */
#define LABELS(...) ((const char *const[]){__VA_ARGS__, NULL})

/*
 * One sample of the family: suffix is "" for gauges, "_total" for counters, "_info" for info
 * metrics. labels: LABELS("k", "v", ...), or NULL for none.
 */
void metrics_sample(struct metrics_writer *w, const char *name, const char *suffix, uint64_t value,
		    const char *const *labels);
/*
 * A classic histogram from log2 slots (slot s holds [2^s, 2^(s+1)-1], slot 0 also 0): one
 * cumulative bucket per slot below nbuckets, with le = the slot's upper bound times scale,
 * then le="+Inf", _sum (the kernel's integer sum times scale, when sum is not NULL) and
 * _count (all slots; in OpenMetrics only with a _sum). label/value: one optional label (NULL
 * for none).
 */
void metrics_histogram(struct metrics_writer *w, const char *name, const uint64_t *slots,
		       unsigned int nbuckets, double scale, const uint64_t *sum, const char *label,
		       const char *value);
/* OpenMetrics: the "# EOF" line. Text: nothing. */
void metrics_end(struct metrics_writer *w);

#endif
