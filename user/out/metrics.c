// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "out/hist.h"
#include "out/metrics.h"

static bool mbuf_reserve(struct mbuf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 16384;
	char *p;

	if (b->failed)
		return false;
	if (b->len + more + 1 <= b->cap)
		return true;
	while (cap < b->len + more + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->failed = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void mbuf_put(struct mbuf *b, const char *s, size_t len)
{
	if (!mbuf_reserve(b, len))
		return;
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = '\0';
}

void mbuf_printf(struct mbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !mbuf_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void mbuf_free(struct mbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

enum metrics_format metrics_negotiate(const char *accept)
{
	/* Prometheus asks "application/openmetrics-text;version=1.0.0,...;q=0.75,
	 * text/plain;version=0.0.4;q=0.5,*" when it can parse OpenMetrics; q=0 refuses it. */
	const char *p = accept ? strstr(accept, "application/openmetrics-text") : NULL;

	while (p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		const char *q = memmem(p, n, "q=", 2);

		if (!q || strtod(q + 2, NULL) > 0)
			return METRICS_OPENMETRICS;
		p = strstr(p + n, "application/openmetrics-text");
	}
	return METRICS_TEXT;
}

const char *metrics_content_type(enum metrics_format fmt)
{
	return fmt == METRICS_OPENMETRICS
		       ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
		       : "text/plain; version=0.0.4; charset=utf-8";
}

void metrics_escape_label(struct mbuf *b, const char *s, size_t len)
{
	static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	len = bounded_strlen(s, len);
	while (i < len) {
		size_t n;

		if (u[i] == '\\' || u[i] == '"') {
			char esc[2] = {'\\', (char)u[i]};

			mbuf_put(b, esc, 2);
			i++;
			continue;
		}
		if (u[i] == '\n') {
			mbuf_put(b, "\\n", 2);
			i++;
			continue;
		}
		if (u[i] < 0x20 || u[i] == 0x7f) {
			mbuf_put(b, replacement, 3);
			i++;
			continue;
		}
		n = utf8_seq_len(u + i, len - i);
		if (n == 0) {
			mbuf_put(b, replacement, 3);
			i++;
			continue;
		}
		mbuf_put(b, s + i, n);
		i += n;
	}
}

void metrics_family(struct metrics_writer *w, const char *name, const char *type, const char *unit,
		    const char *help)
{
	bool om = w->fmt == METRICS_OPENMETRICS;
	bool counter = strcmp(type, "counter") == 0, info = strcmp(type, "info") == 0;

	if (om) {
		mbuf_printf(&w->b, "# TYPE %s %s\n", name, type);
		if (unit)
			mbuf_printf(&w->b, "# UNIT %s %s\n", name, unit);
		mbuf_printf(&w->b, "# HELP %s %s\n", name, help);
		return;
	}
	/* The text format names the family after its samples and has no info type. */
	mbuf_printf(&w->b, "# HELP %s%s %s\n", name,
		    counter ? "_total"
		    : info  ? "_info"
			    : "",
		    help);
	mbuf_printf(&w->b, "# TYPE %s%s %s\n", name,
		    counter ? "_total"
		    : info  ? "_info"
			    : "",
		    info ? "gauge" : type);
}

void metrics_sample(struct metrics_writer *w, const char *name, const char *suffix, uint64_t value,
		    const char *const *labels)
{
	mbuf_printf(&w->b, "%s%s", name, suffix);
	for (size_t i = 0; labels && labels[i] && labels[i + 1]; i += 2) {
		mbuf_printf(&w->b, "%s%s=\"", i ? "," : "{", labels[i]);
		metrics_escape_label(&w->b, labels[i + 1], strlen(labels[i + 1]));
		mbuf_put(&w->b, "\"", 1);
	}
	if (labels && labels[0] && labels[1])
		mbuf_put(&w->b, "}", 1);
	mbuf_printf(&w->b, " %llu\n", (unsigned long long)value);
}

static void hist_line(struct metrics_writer *w, const char *name, const char *suffix,
		      const char *label, const char *value, const char *le, uint64_t count)
{
	mbuf_printf(&w->b, "%s%s", name, suffix);
	if (label || le) {
		mbuf_put(&w->b, "{", 1);
		if (label) {
			mbuf_printf(&w->b, "%s=\"", label);
			metrics_escape_label(&w->b, value, strlen(value));
			mbuf_put(&w->b, "\"", 1);
		}
		if (le)
			mbuf_printf(&w->b, "%sle=\"%s\"", label ? "," : "", le);
		mbuf_put(&w->b, "}", 1);
	}
	mbuf_printf(&w->b, " %llu\n", (unsigned long long)count);
}

void metrics_histogram(struct metrics_writer *w, const char *name, const uint64_t *slots,
		       unsigned int nbuckets, double scale, const uint64_t *sum, const char *label,
		       const char *value)
{
	uint64_t cum = 0, total = 0;
	char le[40];

	for (unsigned int s = 0; s < MMSCOPE_HIST_SLOTS; s++)
		total += slots[s];
	for (unsigned int s = 0; s < nbuckets && s < MMSCOPE_HIST_SLOTS; s++) {
		cum += slots[s];
		/* %.10g: exact for the integer bounds below 2^33, and 2x apart, so increasing. */
		snprintf(le, sizeof(le), "%.10g", (double)hist_slot_hi(s) * scale);
		hist_line(w, name, "_bucket", label, value, le, cum);
	}
	hist_line(w, name, "_bucket", label, value, "+Inf", total);
	if (sum) {
		/* in the buckets' unit: the scale applied to the kernel's integer sum */
		mbuf_printf(&w->b, "%s_sum", name);
		if (label) {
			mbuf_printf(&w->b, "{%s=\"", label);
			metrics_escape_label(&w->b, value, strlen(value));
			mbuf_put(&w->b, "\"}", 2);
		}
		/* divided by 1e9 rather than times 1e-9, which is not exact in binary */
		mbuf_printf(&w->b, " %.15g\n",
			    scale < 1 ? (double)*sum / (double)(uint64_t)(1 / scale + 0.5)
				      : (double)*sum * scale);
	}
	/* OpenMetrics allows _count only together with _sum. */
	if (sum || w->fmt == METRICS_TEXT)
		hist_line(w, name, "_count", label, value, NULL, total);
}

void metrics_end(struct metrics_writer *w)
{
	if (w->fmt == METRICS_OPENMETRICS)
		mbuf_put(&w->b, "# EOF\n", 6);
}
