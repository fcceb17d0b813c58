/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests of the flame graph SVG writer (svg.c) and of XML escaping (escape.c).
 *
 * Layout: the frames' positions and widths are read back from the document and compared with
 * the arithmetic done by hand (1180 px of graph for the total weight, starting at x = 10).
 * Every document is checked by a real XML parser (python3's xml.etree, from bytes, so invalid
 * UTF-8 or a forbidden character fails) after hostile names went through it.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "test.h"
#include "lib/escape.h"
#include "out/svg.h"

/* ---- building input ---- */

#define MAX_FRAMES 8

struct rec_spec {
	const char *frames[MAX_FRAMES]; /* "u:name", "k:name", "p:name", "f:name", "t:name" */
	uint64_t count, latency_ns;
};

static enum frame_type type_of(char c)
{
	switch (c) {
	case 'p':
		return FRAME_PROCESS;
	case 'u':
		return FRAME_USER;
	case 'k':
		return FRAME_KERNEL;
	case 'f':
		return FRAME_FAULT;
	case 't':
		return FRAME_TLB;
	default:
		return FRAME_OTHER;
	}
}

static struct stack_record *make_records(const struct rec_spec *spec, int n)
{
	struct stack_record *r = calloc((size_t)n, sizeof(*r));

	for (int i = 0; i < n; i++) {
		int k = 0;

		while (k < MAX_FRAMES && spec[i].frames[k])
			k++;
		r[i].frames = calloc((size_t)k + 1, sizeof(*r[i].frames));
		for (int j = 0; j < k; j++) {
			r[i].frames[j].name = strdup(spec[i].frames[j] + 2);
			r[i].frames[j].type = type_of(spec[i].frames[j][0]);
		}
		r[i].nframes = k;
		r[i].count = spec[i].count;
		r[i].latency_ns = spec[i].latency_ns;
	}
	return r;
}

static void free_records(struct stack_record *r, int n)
{
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < r[i].nframes; j++)
			free(r[i].frames[j].name);
		free(r[i].frames);
	}
	free(r);
}

static char *render(const struct stack_record *r, int n, const struct flame_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		exit(2);
	EXPECT(flame_svg_write(f, r, n, o) == 0);
	fclose(f);
	return buf;
}

static const struct flame_opts count_opts = {
	.title = "test", .subtitle = {"where", "how", NULL}, .unit = "faults"};

/* ---- reading the document back ---- */

struct frame_out {
	char title[512]; /* the title's first line: the name as shown */
	char label[512]; /* the text drawn, "" when none */
	double x, y, w;
	char fill[8];
	uint64_t count; /* from the title's second line */
};

/* The frames of a document, in document order. */
static int parse_frames(const char *doc, struct frame_out *out, int max)
{
	const char *p = doc;
	int n = 0;

	while (n < max && (p = strstr(p, "<g><title>"))) {
		struct frame_out *fo = &out[n];
		const char *nl, *end = strstr(p, "</g>"), *t;
		size_t len;

		memset(fo, 0, sizeof(*fo));
		p += strlen("<g><title>");
		nl = strchr(p, '\n');
		if (!nl || !end)
			break;
		len = (size_t)(nl - p) < sizeof(fo->title) - 1 ? (size_t)(nl - p)
							       : sizeof(fo->title) - 1;
		memcpy(fo->title, p, len);
		fo->count = strtoull(nl + 1, NULL, 10);
		t = strstr(p, "<rect x=\"");
		if (!t ||
		    sscanf(t, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%*d\" fill=\"%7s",
			   &fo->x, &fo->y, &fo->w, fo->fill) != 4)
			break;
		t = strstr(t, "<text");
		if (t && t < end) {
			const char *b = strchr(t, '>') + 1, *e = strstr(b, "</text>");

			len = (size_t)(e - b) < sizeof(fo->label) - 1 ? (size_t)(e - b)
								      : sizeof(fo->label) - 1;
			memcpy(fo->label, b, len);
		}
		p = end;
		n++;
	}
	return n;
}

static const struct frame_out *find(const struct frame_out *f, int n, const char *title)
{
	for (int i = 0; i < n; i++)
		if (strcmp(f[i].title, title) == 0)
			return &f[i];
	return NULL;
}

#define NEAR(a, b) (fabs((a) - (b)) < 0.011)

/* python3's XML parser on the document's bytes; the root must be an SVG element. */
#define PY_XML                                                                                     \
	"python3 -c 'import sys, xml.etree.ElementTree as E; "                                     \
	"r = E.parse(sys.stdin.buffer).getroot(); "                                                \
	"sys.exit(0 if r.tag == \"{http://www.w3.org/2000/svg}svg\" else 3)'"

static void expect_valid_xml_at(const char *doc, const char *file, int line)
{
	static int have = -1;
	FILE *p;
	int st;

	if (have < 0) {
		have = system("command -v python3 >/dev/null 2>&1") == 0;
		if (!have)
			printf("SKIP svg-xml-validation (python3 not found)\n");
	}
	if (!have)
		return;
	fflush(NULL);
	p = popen(PY_XML, "w");
	if (!p) {
		t_case_failures++;
		return;
	}
	fputs(doc, p);
	st = pclose(p);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "%s:%d: python3 rejected the SVG document\n", file, line);
		t_case_failures++;
	}
}

#define EXPECT_VALID_XML(doc) expect_valid_xml_at(doc, __FILE__, __LINE__)

/* ---- cases ---- */

/* Widths and positions by hand: 1180 px for a total of 8, so 147.5 px per event. */
static void layout_arithmetic(void)
{
	static const struct rec_spec spec[] = {
		{{"p:B", "u:z", "f:[write minor]"}, 4, 0},
		{{"p:A", "u:y", "f:[read minor]"}, 1, 0},
		{{"p:A", "u:x", "f:[write minor]"}, 3, 0},
	};
	struct stack_record *r = make_records(spec, 3);
	char *doc = render(r, 3, &count_opts);
	struct frame_out f[32];
	int n = parse_frames(doc, f, 32);
	const struct frame_out *all = find(f, n, "all"), *a = find(f, n, "A"), *b = find(f, n, "B"),
			       *x = find(f, n, "x"), *y = find(f, n, "y"), *z = find(f, n, "z");

	EXPECT_EQ_U64(n, 9); /* all, A, x, [write minor], y, [read minor], B, z, [write minor] */
	EXPECT(all && a && b && x && y && z);
	if (all && a && b && x && y && z) {
		EXPECT(NEAR(all->x, 10) && NEAR(all->w, 1180));
		EXPECT_EQ_U64(all->count, 8);
		/* Alphabetical: A left of B, whatever the input order; x left of y. */
		EXPECT(NEAR(a->x, 10) && NEAR(a->w, 590));
		EXPECT(NEAR(b->x, 600) && NEAR(b->w, 590));
		EXPECT(NEAR(x->x, 10) && NEAR(x->w, 442.5));
		EXPECT(NEAR(y->x, 452.5) && NEAR(y->w, 147.5));
		EXPECT(NEAR(z->x, 600) && NEAR(z->w, 590));
		/* Root at the bottom, one frame height per level. */
		EXPECT(NEAR(a->y, all->y - FLAME_FRAME_H) && NEAR(x->y, a->y - FLAME_FRAME_H));
		EXPECT(strstr(doc, "4 faults (50.00%)") != NULL);
		/* Frames of one kind, different names: the same colour family, by name. */
		EXPECT(strcmp(x->fill, y->fill) != 0);
	}
	EXPECT_VALID_XML(doc);
	free(doc);
	free_records(r, 3);
}

/* Identical prefixes are one frame; identical stacks add up. */
static void merged_prefixes(void)
{
	static const struct rec_spec spec[] = {
		{{"p:P", "u:main", "u:f", "k:k1", "f:[read minor]"}, 2, 0},
		{{"p:P", "u:main", "u:g", "k:k1", "f:[read minor]"}, 2, 0},
		{{"p:P", "u:main", "u:f", "k:k1", "f:[read minor]"}, 3, 0},
		{{"p:P", "u:main", "u:f", "k:k1", "f:[read minor]"}, 1, 0},
	};
	struct stack_record *r = make_records(spec, 4);
	char *doc = render(r, 4, &count_opts);
	struct frame_out f[32];
	int n = parse_frames(doc, f, 32), mains = 0, k1 = 0;
	const struct frame_out *ff = find(f, n, "f"), *main_ = find(f, n, "main");

	for (int i = 0; i < n; i++) {
		mains += strcmp(f[i].title, "main") == 0;
		k1 += strcmp(f[i].title, "k1") == 0;
	}
	EXPECT_EQ_U64(mains, 1);
	EXPECT_EQ_U64(k1, 2); /* under f and under g */
	EXPECT(ff && main_);
	if (ff && main_) {
		EXPECT_EQ_U64(ff->count, 6);
		EXPECT_EQ_U64(main_->count, 8);
		EXPECT(NEAR(ff->w, 1180.0 * 6 / 8));
	}
	free(doc);
	free_records(r, 4);
}

/* A frame under FLAME_MIN_WIDTH is not drawn, nor its children; its weight stays. */
static void elision(void)
{
	static const struct rec_spec spec[] = {
		{{"p:P", "u:big", "f:[write minor]"}, 999999, 0},
		{{"p:P", "u:tiny", "u:tinier", "f:[write minor]"}, 1, 0},
	};
	struct stack_record *r = make_records(spec, 2);
	char *doc = render(r, 2, &count_opts);
	struct frame_out f[32];
	int n = parse_frames(doc, f, 32);
	const struct frame_out *p = find(f, n, "P");

	EXPECT(find(f, n, "big") != NULL);
	EXPECT(find(f, n, "tiny") == NULL);
	EXPECT(find(f, n, "tinier") == NULL);
	EXPECT(p && p->count == 1000000 && NEAR(p->w, 1180));
	/* The picture is as high as the drawn frames: all, P, big, [write minor]. */
	EXPECT_EQ_U64(n, 4);
	for (int i = 0; i < n; i++)
		EXPECT(f[i].w >= FLAME_MIN_WIDTH);
	free(doc);
	free_records(r, 2);
}

/* Labels: whole when they fit, else cut by characters (not bytes) and ended with "..". */
static void truncation(void)
{
	char longname[2 + 200 * 2 + 1] = "u:", shortname[] = "u:short";
	struct rec_spec spec[] = {
		{{"p:P", longname, "f:[write minor]"}, 1, 0},
		{{"p:P", shortname, "f:[write minor]"}, 1, 0},
	};
	struct stack_record *r;
	struct frame_out f[32];
	size_t fit = (size_t)((590 - 6) / FLAME_CHAR_WIDTH), chars = 0;
	const struct frame_out *l, *s;
	char *doc;
	int n;

	for (int i = 0; i < 200; i++)
		memcpy(longname + 2 + 2 * i, "\xc3\xa4", 2); /* ä */
	longname[2 + 400] = '\0';
	r = make_records(spec, 2);
	doc = render(r, 2, &count_opts);
	n = parse_frames(doc, f, 32);
	l = find(f, n, longname + 2);
	s = find(f, n, "short");
	EXPECT(l && s);
	if (l && s) {
		size_t len = strlen(l->label);

		for (size_t i = 0; i < len; i++)
			chars += ((unsigned char)l->label[i] & 0xc0) != 0x80;
		EXPECT_EQ_U64(chars, fit);
		EXPECT(len >= 2 && strcmp(l->label + len - 2, "..") == 0);
		EXPECT(strncmp(l->label, "\xc3\xa4\xc3\xa4", 4) == 0);
		EXPECT_STREQ(s->label, "short");
	}
	EXPECT_VALID_XML(doc);
	free(doc);
	free_records(r, 2);
}

/* Names that are markup, controls, invalid UTF-8 or non-characters: a valid document. */
static void hostile_names(void)
{
	static const struct rec_spec spec[] = {
		{{"p:<script>alert(1)</script>", "u:a&b\"c'd", "f:[write minor]"}, 5, 0},
		{{"p:\x01\x1b[31m\n\r\t", "u:\xff\xc0\x80\xed\xa0\x80", "f:[read minor]"}, 3, 0},
		{{"p:\xef\xbf\xbe\xef\xbf\xbf", "u:]]>--><!--", "k:;\\;", "f:[exec minor]"}, 2, 0},
	};
	struct stack_record *r = make_records(spec, 3);
	struct flame_opts o = count_opts;
	char *doc;

	o.title = "<title>&\x02\xff";
	o.subtitle[0] = "command: ./a '<b>' \"&\" \xc3\x28";
	doc = render(r, 3, &o);
	EXPECT(strstr(doc, "<script") == NULL);
	EXPECT(strstr(doc, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL);
	EXPECT(strstr(doc, "a&amp;b&quot;c&#39;d") != NULL);
	/* As --folded shows them: \xNN for controls and invalid bytes, ';' and '\\' too. */
	EXPECT(strstr(doc, "\\x01\\x1b[31m\\x0a\\x0d\\x09") != NULL);
	EXPECT(strstr(doc, "\\xff\\xc0\\x80\\xed\\xa0\\x80") != NULL);
	EXPECT(strstr(doc, "\\x3b\\x5c\\x3b") != NULL);
	EXPECT(strstr(doc, "\xef\xbf\xbe") == NULL && strstr(doc, "\xef\xbf\xbf") == NULL);
	EXPECT(strstr(doc, "]]&gt;--&gt;&lt;!--") != NULL);
	EXPECT_VALID_XML(doc);
	free(doc);
	free_records(r, 3);
}

/* Weighted by latency: widths from latency_ns; stacks without latency are left out. */
static void latency_weight(void)
{
	static const struct rec_spec spec[] = {
		{{"p:P", "u:slow", "f:[write minor]"}, 1, 3000000},
		{{"p:P", "u:fast", "f:[write minor]"}, 100, 1000000},
		{{"p:P", "u:never", "f:[write incomplete]"}, 50, 0},
	};
	struct stack_record *r = make_records(spec, 3);
	struct flame_opts o = count_opts;
	struct frame_out f[32];
	const struct frame_out *slow, *fast;
	char *doc;
	int n;

	o.latency = true;
	doc = render(r, 3, &o);
	n = parse_frames(doc, f, 32);
	slow = find(f, n, "slow");
	fast = find(f, n, "fast");
	EXPECT(slow && fast && !find(f, n, "never"));
	if (slow && fast) {
		EXPECT(NEAR(slow->w, 885) && NEAR(fast->w, 295));
		EXPECT(NEAR(fast->x, 10) && NEAR(slow->x, 305));
	}
	EXPECT(strstr(doc, "3.00 ms latency in 1 faults (75.00%)") != NULL);
	EXPECT_VALID_XML(doc);
	free(doc);
	free_records(r, 3);
}

/* The same stacks in any order give the same bytes. */
static void deterministic(void)
{
	static const struct rec_spec a[] = {
		{{"p:P", "u:one", "k:kf", "f:[read minor]"}, 7, 0},
		{{"p:Q", "u:two", "f:[write major]"}, 3, 0},
		{{"p:P", "u:three", "t:[tlb local_shootdown]"}, 5, 0},
	};
	static const struct rec_spec b[] = {a[2], a[0], a[1]};
	struct stack_record *ra = make_records(a, 3), *rb = make_records(b, 3);
	char *da = render(ra, 3, &count_opts), *db = render(rb, 3, &count_opts);

	EXPECT_STREQ(da, db);
	/* The legend names the kinds present. */
	EXPECT(strstr(da, ">TLB invalidation<") != NULL && strstr(da, ">kernel<") != NULL);
	free(da);
	free(db);
	free_records(ra, 3);
	free_records(rb, 3);
}

/* Deeper than FLAME_MAX_DEPTH: cut there, no crash, still a valid document. */
static void deep_stack(void)
{
	struct stack_record r = {.count = 1};
	struct frame_out f[4];
	char *doc, name[16];
	int n, depth = FLAME_MAX_DEPTH + 500;

	r.frames = calloc((size_t)depth, sizeof(*r.frames));
	for (int i = 0; i < depth; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		r.frames[i].name = strdup(name);
		r.frames[i].type = FRAME_USER;
	}
	r.nframes = depth;
	doc = render(&r, 1, &count_opts);
	n = parse_frames(doc, f, 4);
	EXPECT_EQ_U64(n, 4);
	{
		char last[32];

		snprintf(last, sizeof(last), "<title>f%d\n", FLAME_MAX_DEPTH - 1);
		EXPECT(strstr(doc, last) != NULL);
		snprintf(last, sizeof(last), "<title>f%d\n", FLAME_MAX_DEPTH);
		EXPECT(strstr(doc, last) == NULL);
	}
	EXPECT_VALID_XML(doc);
	free(doc);
	for (int i = 0; i < depth; i++)
		free(r.frames[i].name);
	free(r.frames);
}

static void empty(void)
{
	char *doc = render(NULL, 0, &count_opts);

	EXPECT(strstr(doc, "no stacks were recorded") != NULL);
	EXPECT(strstr(doc, "<g><title>") == NULL);
	EXPECT_VALID_XML(doc);
	free(doc);
}

static void xml_escaping(void)
{
	static const struct {
		const char *in;
		size_t len;
		const char *out;
	} cases[] = {
		{"plain", 5, "plain"},
		{"a<b>&\"'", 7, "a&lt;b&gt;&amp;&quot;&#39;"},
		{"\x01\n\x7f", 3, "\\x01\\x0a\\x7f"},
		{"\xff", 1, "\\xff"},
		{"\xc3\xa4", 2, "\xc3\xa4"},
		{"\xef\xbf\xbe", 3, "\\xef\\xbf\\xbe"},
		{"\xef\xbf\xbd", 3, "\xef\xbf\xbd"}, /* U+FFFD is a character */
		{"a\0b", 3, "a\\x00b"},
		{"\\;", 2, "\\;"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *e = xml_escape(cases[i].in, cases[i].len);

		EXPECT_STREQ(e, cases[i].out);
		free(e);
	}
	{
		char *e = xml_escape(NULL, 0);

		EXPECT_STREQ(e, "");
		free(e);
	}
}

TEST_MAIN(T(layout_arithmetic), T(merged_prefixes), T(elision), T(truncation), T(hostile_names),
	  T(latency_weight), T(deterministic), T(deep_stack), T(empty), T(xml_escaping))
