/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Streaming JSON writer (see json.h).
 *
 * The writer keeps an explicit stack of open containers, so commas, indentation and the
 * key/value alternation of objects are decided here and not by every caller. Misuse (a value in
 * an object without a key, a key in an array, closing the wrong container, nesting deeper than
 * JW_MAX_DEPTH) is a bug in mmscope, not in the traced data, and would otherwise produce a
 * document nobody can parse: it prints a message and abort()s.
 *
 * Several top-level values on one writer are separated by a newline, which makes one writer
 * usable for JSON Lines output (one record per line in compact mode).
 *
 * Write errors are left sticky on the FILE: callers check ferror() once at the end, as they do
 * for their other output.
 */
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/escape.h"
#include "out/json.h"

/*
 * Our documents are a handful of levels deep (record -> stack -> frame): a fixed stack keeps
 * the writer free of allocations after jw_new(), and reaching this depth means a begin/end
 * imbalance in the caller.
 */
#define JW_MAX_DEPTH 64

enum jw_kind {
	JW_ARRAY,
	JW_OBJECT,
};

struct jw_level {
	enum jw_kind kind;
	bool has_items; /* a comma is needed before the next item */
};

struct json_writer {
	FILE *out;
	bool pretty;
	bool key_pending; /* a key was written and its value not yet */
	bool top_written; /* a complete top-level value was written */
	unsigned int depth;
	struct jw_level stack[JW_MAX_DEPTH];
};

static const char hex_digits[] = "0123456789abcdef";

static __attribute__((noreturn)) void jw_bug(const char *what)
{
	fprintf(stderr, "mmscope: JSON writer misuse: %s\n", what);
	abort();
}

/*
 * The JSON string body for s: runs of bytes that need no escaping are copied in one piece. It
 * writes through the escapers' sink (escape.h), so jw_string() and json_escape() give the same
 * bytes.
 */
static void escape_into(struct esc_sink *k, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0, n;
	char esc[6];

	while (i < len) {
		unsigned char c = p[i];

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80 && (n = utf8_seq_len(p + i, len - i))) {
			i += n;
			continue;
		}
		esc_sink_put(k, s + run, i - run);
		switch (c) {
		case '"':
			esc_sink_put(k, "\\\"", 2);
			break;
		case '\\':
			esc_sink_put(k, "\\\\", 2);
			break;
		case '\n':
			esc_sink_put(k, "\\n", 2);
			break;
		case '\t':
			esc_sink_put(k, "\\t", 2);
			break;
		case '\r':
			esc_sink_put(k, "\\r", 2);
			break;
		default:
			if (c < 0x80) {
				/* Other control characters and DEL: JSON's only general escape. */
				memcpy(esc, "\\u00", 4);
				esc[4] = hex_digits[c >> 4];
				esc[5] = hex_digits[c & 0xf];
				esc_sink_put(k, esc, 6);
			} else {
				/*
				 * A byte that is not part of valid UTF-8 has no code point to
				 * write: keep its value as the text \xNN (the backslash escaped
				 * for JSON), so the document stays valid and nothing is dropped.
				 */
				memcpy(esc, "\\\\x", 3);
				esc[3] = hex_digits[c >> 4];
				esc[4] = hex_digits[c & 0xf];
				esc_sink_put(k, esc, 5);
			}
			break;
		}
		i++;
		run = i;
	}
	esc_sink_put(k, s + run, i - run);
}

char *json_escape(const char *s, size_t len)
{
	/* Worst case is six output bytes per input byte (\u00XX). */
	return esc_to_string(escape_into, s, len, 6);
}

static void jw_write_string(struct json_writer *w, const char *s, size_t len)
{
	struct esc_sink k = {.f = w->out};

	fputc('"', w->out);
	escape_into(&k, s, len);
	fputc('"', w->out);
}

static void jw_indent(struct json_writer *w, unsigned int level)
{
	unsigned int i;

	if (!w->pretty)
		return;
	fputc('\n', w->out);
	for (i = 0; i < level; i++)
		fputs("  ", w->out);
}

/* Separator and indentation before a value, wherever the value goes. */
static void jw_before_value(struct json_writer *w)
{
	struct jw_level *top;

	if (!w->depth) {
		if (w->top_written)
			fputc('\n', w->out);
		return;
	}
	top = &w->stack[w->depth - 1];
	if (top->kind == JW_OBJECT) {
		if (!w->key_pending)
			jw_bug("value in an object without a key");
		/* jw_key() already wrote the comma and the indentation. */
		w->key_pending = false;
		return;
	}
	if (top->has_items)
		fputc(',', w->out);
	top->has_items = true;
	jw_indent(w, w->depth);
}

static void jw_after_value(struct json_writer *w)
{
	if (!w->depth)
		w->top_written = true;
}

struct json_writer *jw_new(FILE *out, bool pretty)
{
	struct json_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->out = out;
	w->pretty = pretty;
	return w;
}

static void jw_end(struct json_writer *w, enum jw_kind kind, char close);

void jw_free(struct json_writer *w)
{
	if (!w)
		return;
	/*
	 * Open containers here mean the caller stopped early (an error path, a signal): close
	 * them, so that what was written so far is still one parseable document.
	 */
	while (w->depth) {
		if (w->key_pending)
			jw_null(w);
		if (w->stack[w->depth - 1].kind == JW_OBJECT)
			jw_end(w, JW_OBJECT, '}');
		else
			jw_end(w, JW_ARRAY, ']');
	}
	if (w->top_written)
		fputc('\n', w->out);
	free(w);
}

static void jw_begin(struct json_writer *w, enum jw_kind kind, char open)
{
	jw_before_value(w);
	if (w->depth == JW_MAX_DEPTH)
		jw_bug("nesting deeper than 64 levels");
	w->stack[w->depth].kind = kind;
	w->stack[w->depth].has_items = false;
	w->depth++;
	fputc(open, w->out);
}

static void jw_end(struct json_writer *w, enum jw_kind kind, char close)
{
	struct jw_level *top;

	if (!w->depth)
		jw_bug("closing a container that is not open");
	top = &w->stack[w->depth - 1];
	if (top->kind != kind)
		jw_bug(kind == JW_OBJECT ? "closing an array as an object"
					 : "closing an object as an array");
	if (w->key_pending)
		jw_bug("key without a value");
	/* Empty containers stay on one line: {} and []. */
	if (top->has_items)
		jw_indent(w, w->depth - 1);
	w->depth--;
	fputc(close, w->out);
	jw_after_value(w);
}

void jw_begin_object(struct json_writer *w)
{
	jw_begin(w, JW_OBJECT, '{');
}

void jw_end_object(struct json_writer *w)
{
	jw_end(w, JW_OBJECT, '}');
}

void jw_begin_array(struct json_writer *w)
{
	jw_begin(w, JW_ARRAY, '[');
}

void jw_end_array(struct json_writer *w)
{
	jw_end(w, JW_ARRAY, ']');
}

void jw_key(struct json_writer *w, const char *key)
{
	struct jw_level *top;

	if (!key)
		jw_bug("NULL key");
	if (!w->depth || w->stack[w->depth - 1].kind != JW_OBJECT)
		jw_bug("key outside an object");
	if (w->key_pending)
		jw_bug("two keys without a value between them");
	top = &w->stack[w->depth - 1];
	if (top->has_items)
		fputc(',', w->out);
	top->has_items = true;
	jw_indent(w, w->depth);
	jw_write_string(w, key, strlen(key));
	fputs(w->pretty ? ": " : ":", w->out);
	w->key_pending = true;
}

void jw_string(struct json_writer *w, const char *s)
{
	if (!s) {
		jw_null(w);
		return;
	}
	jw_string_len(w, s, strlen(s));
}

void jw_string_len(struct json_writer *w, const char *s, size_t len)
{
	if (!s) {
		jw_null(w);
		return;
	}
	jw_before_value(w);
	jw_write_string(w, s, len);
	jw_after_value(w);
}

void jw_u64(struct json_writer *w, uint64_t v)
{
	jw_before_value(w);
	fprintf(w->out, "%" PRIu64, v);
	jw_after_value(w);
}

void jw_i64(struct json_writer *w, int64_t v)
{
	jw_before_value(w);
	fprintf(w->out, "%" PRId64, v);
	jw_after_value(w);
}

/*
 * printf() writes the locale's decimal point (a comma in many locales once the program calls
 * setlocale()); JSON only knows '.'.
 */
static void fix_decimal_point(char *buf)
{
	const char *dp = localeconv()->decimal_point;
	size_t dplen;
	char *p;

	if (!dp || !*dp || !strcmp(dp, "."))
		return;
	p = strstr(buf, dp);
	if (!p)
		return;
	dplen = strlen(dp);
	*p = '.';
	memmove(p + 1, p + dplen, strlen(p + dplen) + 1);
}

void jw_double(struct json_writer *w, double v)
{
	char buf[64];
	int prec, saved_errno = errno;

	if (!isfinite(v)) {
		/* JSON has no NaN or Infinity; null is what JSON.stringify() writes too. */
		jw_null(w);
		return;
	}
	/*
	 * The shortest of %.15g, %.16g, %.17g that reads back as the same double: 17 digits
	 * always round-trip, 15 give the familiar short form (0.1, not 0.10000000000000001)
	 * whenever it is exact. %g never writes a bare "1." or ".5", and its exponent form
	 * (1e+300) is a valid JSON number. strtod() uses the same locale as snprintf(), so the
	 * check holds before the decimal point is fixed up.
	 */
	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(buf, sizeof(buf), "%.17g", v);
	/* strtod() sets ERANGE for subnormals; that is no error of ours to report. */
	errno = saved_errno;
	fix_decimal_point(buf);
	jw_before_value(w);
	fputs(buf, w->out);
	jw_after_value(w);
}

void jw_bool(struct json_writer *w, bool v)
{
	jw_before_value(w);
	fputs(v ? "true" : "false", w->out);
	jw_after_value(w);
}

void jw_null(struct json_writer *w)
{
	jw_before_value(w);
	fputs("null", w->out);
	jw_after_value(w);
}
