/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libFuzzer target for the output modules. The input bytes stand for what a traced process
 * controls (comm, symbol names, paths): they go through json_escape(), folded_escape() and
 * folded_write_frame(), and into a JSON document (as keys, as string values, as the bits of
 * numbers, as a nesting depth) written in both compact and pretty mode.
 *
 * Sanitizers catch memory errors; the checks below catch wrong output. Each JSON document is
 * parsed by a small strict parser written here, independently of json.c (RFC 8259 grammar,
 * UTF-8 checked by assembling code points, not by json.c's table), and every decoded string
 * and number must be exactly what was written. Folded output must be free of separators,
 * control characters and invalid UTF-8, and unescape back to the input. The input also becomes
 * stacks (names, frame kinds, weights) and a title for the flame graph SVG writer, whose document
 * must be valid UTF-8 without XML-forbidden characters, made only of the writer's own elements,
 * properly nested, with every '&' an entity and no markup from the names. The same stacks (the
 * names also as file paths) go through the pprof writer, whose output must gunzip to fields of
 * the wire format and a string table of valid UTF-8 (what proto3 readers demand).
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -I. -Iuser -Itests/common \
 *        tests/fuzz/fuzz_output.c tests/common/utf8_oracle.c user/out/json.c user/lib/escape.c \
 *        user/out/hist.c user/out/svg.c user/out/pprof.c user/lib/keyed_table.c -lz -o fuzz_output
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/escape.h"
#include "out/hist.h"
#include "out/json.h"
#include "out/pprof.h"
#include "out/svg.h"
#include "fuzz_check.h"
#include "utf8_oracle.h"
#include <zlib.h>

/* ---- UTF-8, the long way (checked by tests/common/utf8_oracle.c) -------------------------- */

static void put_utf8(char *out, size_t *o, uint32_t cp)
{
	if (cp < 0x80) {
		out[(*o)++] = (char)cp;
	} else if (cp < 0x800) {
		out[(*o)++] = (char)(0xc0 | cp >> 6);
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*o)++] = (char)(0xe0 | cp >> 12);
		out[(*o)++] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		out[(*o)++] = (char)(0xf0 | cp >> 18);
		out[(*o)++] = (char)(0x80 | (cp >> 12 & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	}
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* ---- a strict JSON parser that records every scalar ------------------------------------- */

struct tok {
	char kind;	 /* 'k' key, 's' string, 'n' number, 'l' literal */
	size_t off, len; /* of the NUL-terminated bytes in the arena */
};

/* Tokens in one growing arena: few allocations, so the sanitizers' allocator stays fast. */
struct toks {
	struct tok *v;
	size_t n, cap;
	char *arena;
	size_t alen, acap;
};

static void toks_add(struct toks *t, char kind, const char *data, size_t len)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->v = realloc(t->v, t->cap * sizeof(*t->v));
		CHECK(t->v);
	}
	while (t->acap - t->alen < len + 1) {
		t->acap = t->acap ? 2 * t->acap : 256;
		t->arena = realloc(t->arena, t->acap);
		CHECK(t->arena);
	}
	t->v[t->n].kind = kind;
	t->v[t->n].off = t->alen;
	t->v[t->n].len = len;
	if (len)
		memcpy(t->arena + t->alen, data, len);
	t->arena[t->alen + len] = '\0';
	t->alen += len + 1;
	t->n++;
}

static const char *tok_data(const struct toks *t, size_t i)
{
	return t->arena + t->v[i].off;
}

static void toks_free(struct toks *t)
{
	free(t->v);
	free(t->arena);
	memset(t, 0, sizeof(*t));
}

struct jp {
	const char *p, *end;
	struct toks *toks;
	char *buf; /* decoded string scratch, as long as the document: decoding never grows */
};

static void jp_ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool jp_lit(struct jp *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n))
		return false;
	toks_add(j->toks, 'l', lit, n);
	j->p += n;
	return true;
}

static bool jp_hex4(struct jp *j, uint32_t *v)
{
	int i, h;

	if (j->end - j->p < 4)
		return false;
	*v = 0;
	for (i = 0; i < 4; i++) {
		h = hexval((unsigned char)j->p[i]);
		if (h < 0)
			return false;
		*v = *v << 4 | (uint32_t)h;
	}
	j->p += 4;
	return true;
}

static bool jp_string(struct jp *j, char kind)
{
	char *out = j->buf;
	size_t o = 0, n;
	uint32_t cp, lo;

	if (j->p >= j->end || *j->p != '"')
		return false;
	j->p++;
	while (j->p < j->end) {
		unsigned char c = (unsigned char)*j->p;

		if (c == '"') {
			j->p++;
			toks_add(j->toks, kind, out, o);
			return true;
		}
		if (c < 0x20)
			return false;
		if (c != '\\') {
			n = oracle_utf8_char((const unsigned char *)j->p, (size_t)(j->end - j->p));
			if (!n)
				return false;
			memcpy(out + o, j->p, n);
			o += n;
			j->p += n;
			continue;
		}
		if (j->end - j->p < 2)
			return false;
		c = (unsigned char)j->p[1];
		j->p += 2;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			out[o++] = (char)c;
			break;
		case 'b':
			out[o++] = '\b';
			break;
		case 'f':
			out[o++] = '\f';
			break;
		case 'n':
			out[o++] = '\n';
			break;
		case 'r':
			out[o++] = '\r';
			break;
		case 't':
			out[o++] = '\t';
			break;
		case 'u':
			if (!jp_hex4(j, &cp) || (cp >= 0xdc00 && cp <= 0xdfff))
				return false;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
					return false;
				j->p += 2;
				if (!jp_hex4(j, &lo) || lo < 0xdc00 || lo > 0xdfff)
					return false;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			put_utf8(out, &o, cp);
			break;
		default:
			return false;
		}
	}
	return false;
}

static bool jp_digits(struct jp *j)
{
	const char *start = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > start;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool jp_number(struct jp *j)
{
	const char *start = j->p;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!(j->p < j->end && *j->p >= '1' && *j->p <= '9') || !jp_digits(j))
		return false;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!jp_digits(j))
			return false;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!jp_digits(j))
			return false;
	}
	toks_add(j->toks, 'n', start, (size_t)(j->p - start));
	return true;
}

/* Step over c if it comes next. */
static bool jp_eat(struct jp *j, char c)
{
	if (j->p >= j->end || *j->p != c)
		return false;
	j->p++;
	return true;
}

static bool jp_value(struct jp *j, int depth)
{
	/* The writer stops at 64 levels; bound the recursion all the same. */
	if (depth > 100)
		return false;
	jp_ws(j);
	if (j->p >= j->end)
		return false;
	switch (*j->p) {
	case '{':
		j->p++;
		jp_ws(j);
		if (jp_eat(j, '}'))
			return true;
		do {
			jp_ws(j);
			if (!jp_string(j, 'k'))
				return false;
			jp_ws(j);
			if (!jp_eat(j, ':') || !jp_value(j, depth + 1))
				return false;
			jp_ws(j);
		} while (jp_eat(j, ','));
		return jp_eat(j, '}');
	case '[':
		j->p++;
		jp_ws(j);
		if (jp_eat(j, ']'))
			return true;
		do {
			if (!jp_value(j, depth + 1))
				return false;
			jp_ws(j);
		} while (jp_eat(j, ','));
		return jp_eat(j, ']');
	case '"':
		return jp_string(j, 's');
	case 't':
		return jp_lit(j, "true");
	case 'f':
		return jp_lit(j, "false");
	case 'n':
		return jp_lit(j, "null");
	default:
		return jp_number(j);
	}
}

/* One JSON value, then only whitespace; the writer ends the document with a newline. */
static void parse_document(const char *doc, size_t len, struct toks *out)
{
	struct jp j = {doc, doc + len, out, malloc(len + 1)};

	CHECK(j.buf);
	CHECK(len > 0 && doc[len - 1] == '\n');
	CHECK(jp_value(&j, 0));
	jp_ws(&j);
	CHECK(j.p == j.end);
	free(j.buf);
}

/* ---- the document ------------------------------------------------------------------------- */

/* What was written, in document order, as the parser will record it. */
struct expect {
	struct toks toks;
};

static void exp_string(struct toks *t, char kind, const char *s, size_t len)
{
	size_t dlen;
	char *d = oracle_decoded(s, len, &dlen);

	CHECK(d);
	toks_add(t, kind, d, dlen);
	free(d);
}

/* Doubles are compared by value, so their expected token holds the 8 bytes of the double. */
static void exp_double(struct toks *t, double v)
{
	if (isfinite(v))
		toks_add(t, 'd', (const char *)&v, sizeof(v));
	else
		toks_add(t, 'l', "null", 4);
}

static void exp_text(struct toks *t, char kind, const char *text)
{
	toks_add(t, kind, text, strlen(text));
}

/*
 * Extra nesting for the "nest" member, up to the writer's limit of 64 levels in all. Pretty
 * indentation grows with the square of the depth, so deep documents are kept to the rarer last
 * bytes (0xf0..0xff: 46..61 levels) and the common case stays fast.
 */
static unsigned int nest_depth(unsigned char b)
{
	return b < 0xf0 ? b % 8 : 61 - (b & 0x0f);
}

static void write_document(FILE *f, bool pretty, const char *data, size_t size, struct toks *exp)
{
	struct json_writer *w = jw_new(f, pretty);
	size_t split = size ? (unsigned char)data[0] % (size + 1) : 0;
	size_t keylen = bounded_strlen(data, size), i;
	unsigned int depth = size ? nest_depth((unsigned char)data[size - 1]) : 0;
	unsigned char raw[16] = {0};
	char key[4096 + 1], num[32];
	uint64_t u;
	int64_t s;
	double d;

	CHECK(w);
	memcpy(raw, data, size < sizeof(raw) ? size : sizeof(raw));
	memcpy(&u, raw, sizeof(u));
	memcpy(&s, raw + 4, sizeof(s));
	memcpy(&d, raw + 8, sizeof(d));
	/* jw_key() takes a C string: the key is the input up to its first NUL. */
	if (keylen > sizeof(key) - 1)
		keylen = sizeof(key) - 1;
	memcpy(key, data, keylen);
	key[keylen] = '\0';

	jw_begin_object(w);
	jw_key(w, key);
	exp_string(exp, 'k', key, keylen);
	jw_string_len(w, data, size);
	exp_string(exp, 's', data, size);

	jw_key(w, "parts");
	exp_text(exp, 'k', "parts");
	jw_begin_array(w);
	jw_string_len(w, data, split);
	exp_string(exp, 's', data, split);
	jw_string_len(w, data + split, size - split);
	exp_string(exp, 's', data + split, size - split);
	jw_string(w, NULL);
	exp_text(exp, 'l', "null");
	jw_bool(w, size & 1);
	exp_text(exp, 'l', size & 1 ? "true" : "false");
	jw_u64(w, u);
	snprintf(num, sizeof(num), "%" PRIu64, u);
	exp_text(exp, 'n', num);
	jw_i64(w, s);
	snprintf(num, sizeof(num), "%" PRId64, s);
	exp_text(exp, 'n', num);
	jw_double(w, d);
	exp_double(exp, d);
	jw_begin_object(w);
	jw_end_object(w);
	jw_begin_array(w);
	jw_end_array(w);
	jw_end_array(w);

	/* Nesting driven by the input, up to the writer's limit of 64 levels. */
	jw_key(w, "nest");
	exp_text(exp, 'k', "nest");
	jw_begin_array(w);
	for (i = 0; i < depth; i++)
		jw_begin_array(w);
	jw_begin_object(w);
	jw_key(w, key + keylen / 2);
	exp_string(exp, 'k', key + keylen / 2, keylen - keylen / 2);
	jw_string_len(w, data, split);
	exp_string(exp, 's', data, split);
	jw_end_object(w);
	for (i = 0; i < depth; i++)
		jw_end_array(w);
	jw_end_array(w);

	/* Left open on purpose: jw_free() must close it. */
	jw_key(w, "open");
	exp_text(exp, 'k', "open");
	jw_begin_array(w);
	jw_double(w, (double)u);
	exp_double(exp, (double)u);
	jw_free(w);
}

static void check_tokens(const struct toks *got, const struct toks *want)
{
	size_t i;

	CHECK(got->n == want->n);
	for (i = 0; i < got->n; i++) {
		const struct tok *g = &got->v[i], *e = &want->v[i];
		const char *gd = tok_data(got, i), *ed = tok_data(want, i);

		if (e->kind == 'd') {
			double v, back;

			memcpy(&v, ed, sizeof(v));
			CHECK(g->kind == 'n');
			back = strtod(gd, NULL);
			CHECK(back == v && !signbit(back) == !signbit(v));
			continue;
		}
		CHECK(g->kind == e->kind);
		CHECK(g->len == e->len && !memcmp(gd, ed, g->len));
	}
}

/* Pretty and compact output differ only in whitespace outside strings. */
static size_t strip_ws(const char *s, size_t len, char *out)
{
	bool in_str = false;
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		char c = s[i];

		if (in_str) {
			out[o++] = c;
			if (c == '\\' && i + 1 < len)
				out[o++] = s[++i];
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
			out[o++] = c;
		} else if (c != ' ' && c != '\n') {
			out[o++] = c;
		}
	}
	return o;
}

/*
 * Pretty layout: every line is indented by two spaces per open container (one fewer on a line
 * that closes one), a comma ends its line, a colon is followed by one space, and a container
 * is either empty on one line ({} or []) or opens a line and is closed on a line of its own.
 */
static void check_pretty_layout(const char *s, size_t len)
{
	bool in_str = false, line_start = true, first;
	size_t i, n;
	long depth = 0;

	for (i = 0; i < len; i++) {
		char c = s[i];

		first = line_start;
		if (line_start) {
			for (n = 0; i + n < len && s[i + n] == ' '; n++)
				;
			CHECK(i + n < len);
			c = s[i + n];
			CHECK((long)n == 2 * (depth - (c == '}' || c == ']')));
			i += n;
			line_start = false;
		}
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		switch (c) {
		case '"':
			in_str = true;
			break;
		case '{':
		case '[':
			depth++;
			CHECK(i + 1 < len &&
			      (s[i + 1] == '\n' || s[i + 1] == (c == '{' ? '}' : ']')));
			break;
		case '}':
		case ']':
			/* A non-empty container closes on its own line. */
			CHECK(first || s[i - 1] == (c == '}' ? '{' : '['));
			depth--;
			CHECK(depth >= 0);
			break;
		case ',':
			CHECK(i + 1 < len && s[i + 1] == '\n');
			break;
		case ':':
			CHECK(i + 1 < len && s[i + 1] == ' ');
			break;
		case '\n':
			line_start = i + 1 < len;
			break;
		}
	}
	CHECK(depth == 0 && !in_str);
}

static void fuzz_json_document(const char *data, size_t size)
{
	char *text[2] = {NULL, NULL}, *a, *b;
	size_t len[2] = {0, 0}, alen, blen, i, newlines = 0;
	int pretty;

	for (pretty = 0; pretty < 2; pretty++) {
		struct toks exp = {0}, got = {0};
		FILE *f = open_memstream(&text[pretty], &len[pretty]);

		CHECK(f);
		write_document(f, pretty, data, size, &exp);
		CHECK(!ferror(f));
		fclose(f);
		parse_document(text[pretty], len[pretty], &got);
		check_tokens(&got, &exp);
		toks_free(&got);
		toks_free(&exp);
	}
	/* Compact is one line: raw newlines cannot hide in strings, all are escaped. */
	for (i = 0; i < len[0]; i++)
		newlines += text[0][i] == '\n';
	CHECK(newlines == 1);
	check_pretty_layout(text[1], len[1]);
	a = malloc(len[0] + 1);
	b = malloc(len[1] + 1);
	CHECK(a && b);
	alen = strip_ws(text[0], len[0], a);
	blen = strip_ws(text[1], len[1], b);
	CHECK(alen == blen && !memcmp(a, b, alen));
	free(a);
	free(b);
	free(text[0]);
	free(text[1]);
}

/* ---- escaping on its own -------------------------------------------------------------------- */

static void fuzz_json_escape(const char *data, size_t size)
{
	char *esc = json_escape(data, size), *quoted, *want;
	size_t elen, wantlen, i;
	struct toks got = {0};
	struct jp j;

	CHECK(esc);
	elen = strlen(esc);
	CHECK(oracle_valid_utf8(esc, elen));
	for (i = 0; i < elen; i++)
		CHECK((unsigned char)esc[i] >= 0x20 && esc[i] != 0x7f);
	/* The body between quotes is exactly one JSON string that decodes to the expectation. */
	quoted = malloc(elen + 3);
	CHECK(quoted);
	quoted[0] = '"';
	memcpy(quoted + 1, esc, elen);
	quoted[elen + 1] = '"';
	quoted[elen + 2] = '\0';
	j = (struct jp){quoted, quoted + elen + 2, &got, malloc(elen + 3)};
	CHECK(j.buf);
	CHECK(jp_string(&j, 's') && j.p == j.end);
	free(j.buf);
	want = oracle_decoded(data, size, &wantlen);
	CHECK(want);
	CHECK(got.n == 1 && got.v[0].len == wantlen && !memcmp(tok_data(&got, 0), want, wantlen));
	free(want);
	toks_free(&got);
	free(quoted);
	free(esc);
}

static void fuzz_folded(const char *data, size_t size)
{
	char *esc = folded_escape(data, size), *back, *mem = NULL;
	size_t elen, i, o = 0, memlen = 0;
	FILE *f;

	CHECK(esc);
	elen = strlen(esc);
	CHECK(oracle_valid_utf8(esc, elen));
	back = malloc(elen + 1);
	CHECK(back);
	for (i = 0; i < elen; i++) {
		unsigned char c = (unsigned char)esc[i];

		CHECK(c >= 0x20 && c != 0x7f && c != ';');
		if (c != '\\') {
			back[o++] = (char)c;
			continue;
		}
		/* A backslash only ever starts \xNN. */
		CHECK(i + 3 < elen && esc[i + 1] == 'x' && hexval(esc[i + 2]) >= 0 &&
		      hexval(esc[i + 3]) >= 0);
		back[o++] = (char)(hexval(esc[i + 2]) << 4 | hexval(esc[i + 3]));
		i += 3;
	}
	CHECK(o == size && (!size || !memcmp(back, data, size)));

	f = open_memstream(&mem, &memlen);
	CHECK(f);
	folded_write_frame(f, data, size);
	fclose(f);
	CHECK(memlen == elen && !memcmp(mem, esc, elen));
	free(mem);
	free(back);
	free(esc);
}

/* Values from the input: each lands inside its slot's bounds; printing does not misbehave. */
static void fuzz_hist(const char *data, size_t size)
{
	struct log2_hist h = {0};
	char *text = NULL;
	size_t i, textlen = 0, lines = 0, n = 0;
	unsigned int first = 0, used;
	uint64_t v;
	FILE *f;

	for (i = 0; i + 8 <= size && n < 64; i += 8, n++) {
		unsigned int s;

		memcpy(&v, data + i, sizeof(v));
		/* Spread over all slots, not only the huge ones random 64-bit values fall in. */
		v >>= v & 63;
		s = mmscope_hist_slot(v);
		CHECK(s < MMSCOPE_HIST_SLOTS && hist_slot_lo(s) <= v && v <= hist_slot_hi(s));
		hist_add(&h, v);
	}
	CHECK(hist_total(&h) == n);
	used = hist_used_slots(&h);
	while (used && !h.slots[first])
		first++;
	f = open_memstream(&text, &textlen);
	CHECK(f);
	hist_print(f, &h, "nsecs");
	fclose(f);
	for (i = 0; i < textlen; i++)
		lines += text[i] == '\n';
	if (!n)
		CHECK(!strcmp(text, "(no events)\n"));
	else
		CHECK(lines == 1 + used - first &&
		      strstr(text, "|****************************************|\n"));
	free(text);
}

/* ---- flame graph SVG ------------------------------------------------------------------------ */

static bool starts(const char *p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	return (size_t)(end - p) >= n && !memcmp(p, lit, n);
}

/*
 * The document's markup, read by a tokenizer written here: only the writer's elements, nested
 * properly, attribute values quoted and free of '<', text free of '<' and '>', every '&' one of
 * the five entities, each frame group <g> holding one <title> and one <rect>. A name that got
 * through unescaped would show as an unknown element, a stray '>' or a broken nesting.
 */
static void check_svg_markup(const char *doc, size_t len, size_t max_groups)
{
	static const char *const elems[] = {"svg", "title", "desc", "style", "rect", "text", "g"};
	static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
	const char *p = doc, *end = doc + len;
	int stack[16], depth = 0, titles = 0, rects = 0;
	size_t groups = 0;

	CHECK(starts(p, end, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"));
	p = strchr(p, '\n') + 1;
	while (p < end) {
		if (*p == '&') {
			bool known = false;

			for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++)
				known |= starts(p, end, ents[i]);
			CHECK(known);
			p++;
			continue;
		}
		CHECK(*p != '>');
		if (*p != '<') {
			p++;
			continue;
		}
		bool closing = p + 1 < end && p[1] == '/';
		const char *name = p + 1 + closing;
		size_t nlen = strspn(name, "abcdefghijklmnopqrstuvwxyz");
		int e = -1;

		for (int i = 0; i < (int)(sizeof(elems) / sizeof(elems[0])); i++)
			if (strlen(elems[i]) == nlen && !memcmp(name, elems[i], nlen))
				e = i;
		CHECK(e >= 0);
		p = name + nlen;
		/* Attributes: name="value" with no '<' in the value. */
		while (p < end && *p != '>' && *p != '/') {
			CHECK(*p == ' ');
			p++;
			p += strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-");
			CHECK(starts(p, end, "=\""));
			p += 2;
			while (p < end && *p != '"') {
				CHECK(*p != '<' && *p != '>');
				p++;
			}
			CHECK(p < end);
			p++;
		}
		CHECK(p < end);
		if (closing) {
			CHECK(*p == '>' && depth > 0 && stack[depth - 1] == e);
			depth--;
			if (e == 6) {
				CHECK(titles == 1 && rects == 1);
				titles = rects = 0;
			}
		} else if (*p == '/') {
			CHECK(p + 1 < end && p[1] == '>');
			p++;
			rects += e == 4 && depth > 0 && stack[depth - 1] == 6;
		} else {
			CHECK(depth < 16);
			stack[depth++] = e;
			if (e == 6) {
				groups++;
				titles = rects = 0;
			}
			titles += e == 1 && depth > 1 && stack[depth - 2] == 6;
		}
		p++;
	}
	CHECK(depth == 0);
	CHECK(groups <= max_groups);
}

static bool pb_get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 70 && *p < end; shift += 7) {
		unsigned char c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

/* A gzipped Profile: its top-level fields well formed, its string table valid UTF-8. */
static void check_pprof(const unsigned char *gz, size_t len)
{
	size_t cap = 1 << 20;
	unsigned char *raw = malloc(cap);
	const unsigned char *p, *end;
	z_stream z = {0};
	int nstrings = 0;

	CHECK(raw);
	CHECK(len >= 2 && gz[0] == 0x1f && gz[1] == 0x8b);
	CHECK(inflateInit2(&z, 15 + 16) == Z_OK);
	z.next_in = (unsigned char *)gz;
	z.avail_in = (uInt)len;
	z.next_out = raw;
	z.avail_out = (uInt)cap;
	CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END);
	p = raw;
	end = raw + z.total_out;
	inflateEnd(&z);
	while (p < end) {
		uint64_t tag, v;

		CHECK(pb_get_varint(&p, end, &tag));
		CHECK((tag & 7) == 0 || (tag & 7) == 2);
		CHECK(pb_get_varint(&p, end, &v));
		if ((tag & 7) == 0)
			continue;
		CHECK(v <= (uint64_t)(end - p));
		if (tag >> 3 == 6) {
			/* The first string is "". */
			CHECK(nstrings++ || v == 0);
			CHECK(oracle_valid_utf8((const char *)p, v));
		}
		p += v;
	}
	CHECK(nstrings >= 1);
	free(raw);
}

/*
 * The input as stacks: NUL-separated chunks, each a frame whose first byte gives its kind (low
 * bits), whether it starts a new stack (0x80) and that stack's weight; the rest is the name.
 */
static void fuzz_svg(const char *data, size_t size)
{
	struct stack_frame frames[256] = {0};
	struct stack_record recs[64];
	struct flame_opts o = {.unit = "faults"};
	struct pprof_opts po = {.events = "faults", .unit = "count", .class_label = "fault_class"};
	char *names = malloc(size + 1), *doc = NULL;
	size_t doclen = 0, nframes = 0, i;
	int nrecs = 0;
	FILE *f;

	CHECK(names);
	if (size)
		memcpy(names, data, size);
	names[size] = '\0';
	o.title = names; /* up to the first NUL */
	o.subtitle[0] = names + bounded_strlen(names, size) / 2;
	o.latency = size && (data[size - 1] & 1);
	for (i = 0; i < size && nframes < 256;) {
		unsigned char b = (unsigned char)names[i];
		size_t n = strlen(names + i);

		if (!nrecs || ((b & 0x80) && nrecs < 64)) {
			recs[nrecs] = (struct stack_record){.frames = &frames[nframes],
							    .count = 1u + (b >> 3 & 0xf),
							    .latency_ns = (uint64_t)(b >> 2 & 0x7) *
									  1000};
			nrecs++;
		}
		frames[nframes].type = (enum frame_type)(b % FRAME_TYPES);
		frames[nframes].name = names + i + (n > 0);
		/* The name as the file too, for the pprof writer's mappings. */
		frames[nframes].dso = (b & 0x40) ? names + i : NULL;
		frames[nframes].addr = b;
		frames[nframes].build_id_len = b & 7;
		recs[nrecs - 1].nframes++;
		recs[nrecs - 1].pid = b;
		nframes++;
		i += n + 1;
	}
	f = open_memstream(&doc, &doclen);
	CHECK(f);
	CHECK(flame_svg_write(f, recs, nrecs, &o) == 0);
	fclose(f);
	CHECK(oracle_valid_utf8(doc, doclen));
	for (i = 0; i < doclen; i++) {
		unsigned char c = (unsigned char)doc[i];

		CHECK(c >= 0x20 || c == '\n');
		CHECK(c != 0x7f);
		/* U+FFFE and U+FFFF are not XML characters. */
		CHECK(!(c == 0xef && i + 2 < doclen && (unsigned char)doc[i + 1] == 0xbf &&
			(unsigned char)doc[i + 2] >= 0xbe));
	}
	check_svg_markup(doc, doclen, nframes + 1);
	free(doc);
	doc = NULL;
	po.comment[0] = names;
	po.latency = o.latency;
	f = open_memstream(&doc, &doclen);
	CHECK(f);
	CHECK(pprof_write(f, recs, nrecs, &po) == 0);
	fclose(f);
	check_pprof((const unsigned char *)doc, doclen);
	free(doc);
	free(names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *nul = memchr(s, 0, size);

	CHECK(bounded_strlen(s, size) == (nul ? (size_t)(nul - s) : size));
	fuzz_json_escape(s, size);
	fuzz_folded(s, size);
	fuzz_json_document(s, size);
	fuzz_hist(s, size);
	fuzz_svg(s, size);
	return 0;
}
