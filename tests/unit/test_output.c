/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests of the output modules: log2 histogram slots and printing (hist.c), the JSON writer
 * and its string escaping (json.c), folded-stack escaping (escape.c).
 *
 * Expected outputs are written out by hand wherever the format is the contract (histogram rows,
 * JSON text). Every JSON document is also checked by a real parser (python3's json module),
 * and the escaping is checked against a UTF-8 decoder written independently of the table-based
 * one in json.c/escape.c, over many pseudo-random byte strings from a fixed seed.
 */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test.h"
#include "mem_file.h"
#include "utf8_oracle.h"
#include "lib/escape.h"
#include "out/hist.h"
#include "out/json.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* xorshift64*: a fixed seed makes a failing random case reproducible. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * Decode a JSON string body as produced by json_escape(). Returns false on anything a strict
 * JSON parser would reject (raw control characters, a raw '"', unknown escapes) or that the
 * writer never produces (\u escapes above U+007F).
 */
static bool json_body_decode(const char *e, char **out, size_t *outlen)
{
	size_t elen = strlen(e), i = 0, o = 0;
	char *d = malloc(elen + 1);
	int h[4], k;

	while (i < elen) {
		unsigned char c = (unsigned char)e[i];

		if (c < 0x20 || c == '"')
			goto bad;
		if (c != '\\') {
			d[o++] = (char)c;
			i++;
			continue;
		}
		if (i + 1 >= elen)
			goto bad;
		switch (e[i + 1]) {
		case '"':
		case '\\':
		case '/':
			d[o++] = e[i + 1];
			i += 2;
			break;
		case 'n':
			d[o++] = '\n';
			i += 2;
			break;
		case 't':
			d[o++] = '\t';
			i += 2;
			break;
		case 'r':
			d[o++] = '\r';
			i += 2;
			break;
		case 'u':
			if (i + 6 > elen)
				goto bad;
			for (k = 0; k < 4; k++) {
				h[k] = hexval(e[i + 2 + k]);
				if (h[k] < 0)
					goto bad;
			}
			if (h[0] || h[1] > 0 || (h[2] << 4 | h[3]) > 0x7f)
				goto bad;
			d[o++] = (char)(h[2] << 4 | h[3]);
			i += 6;
			break;
		default:
			goto bad;
		}
	}
	d[o] = '\0';
	*out = d;
	*outlen = o;
	return true;
bad:
	free(d);
	return false;
}

static int python_state = -1; /* -1: not probed yet */

static bool have_python(void)
{
	if (python_state < 0) {
		python_state = system("command -v python3 >/dev/null 2>&1") == 0;
		if (!python_state)
			printf("SKIP json-python-validation (python3 not found: no real JSON "
			       "parser to check the documents)\n");
	}
	return python_state;
}

/*
 * Parse doc with python3's json module, from bytes so that invalid UTF-8 fails too, and
 * refusing the NaN/Infinity extension it accepts by default.
 */
#define PY_VALIDATE                                                                                \
	"python3 -c 'import json,sys; json.load(sys.stdin.buffer, "                                \
	"parse_constant=lambda c: sys.exit(\"non-JSON constant \" + c))'"

static void expect_valid_json_at(const char *doc, const char *file, int line)
{
	FILE *p;
	int st;

	if (!have_python())
		return;
	fflush(NULL);
	p = popen(PY_VALIDATE, "w");
	if (!p) {
		fprintf(stderr, "%s:%d: popen(python3) failed\n", file, line);
		t_case_failures++;
		return;
	}
	fputs(doc, p);
	st = pclose(p);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "%s:%d: python3 rejected the JSON document:\n%s\n", file, line,
			doc);
		t_case_failures++;
	}
}

#define EXPECT_VALID_JSON(doc) expect_valid_json_at(doc, __FILE__, __LINE__)

/* Run a python3 script on doc (in a temporary file, argv[1]) and return its stdout. */
static char *python_on_doc(const char *script, const char *doc)
{
	char path[] = "/tmp/mmscope-test-json-XXXXXX", cmd[1024];
	struct mem m;
	char chunk[4096];
	size_t n;
	FILE *p;
	int fd;

	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	if (write(fd, doc, strlen(doc)) != (ssize_t)strlen(doc)) {
		close(fd);
		unlink(path);
		return NULL;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "python3 -c '%s' %s", script, path);
	fflush(NULL);
	p = popen(cmd, "r");
	if (!p) {
		unlink(path);
		return NULL;
	}
	mem_open(&m);
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		fwrite(chunk, 1, n, m.f);
	mem_close(&m);
	if (pclose(p) != 0) {
		/* python3 failed: report no output rather than a partial one. */
		mem_free(&m);
	}
	unlink(path);
	return m.buf;
}

/* Write one document with a fresh writer into memory; the caller frees the text. */
typedef void (*doc_fn)(struct json_writer *w, void *arg);

static char *json_doc(bool pretty, doc_fn fn, void *arg)
{
	struct json_writer *w;
	struct mem m;

	mem_open(&m);
	w = jw_new(m.f, pretty);
	EXPECT(w != NULL);
	fn(w, arg);
	jw_free(w);
	mem_close(&m);
	return m.buf;
}

/*
 * Run fn in a child and expect it to abort() with a message containing msg on stderr: writer
 * misuse must stop the program, not emit a broken document.
 */
static void expect_abort_at(doc_fn fn, const char *msg, const char *file, int line)
{
	char buf[512] = "";
	int pfd[2], st;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(pfd)) {
		perror("pipe");
		t_case_failures++;
		return;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		FILE *devnull = fopen("/dev/null", "w");
		struct json_writer *w = jw_new(devnull, false);

		dup2(pfd[1], STDERR_FILENO);
		close(pfd[0]);
		fn(w, NULL);
		_exit(0);
	}
	close(pfd[1]);
	while (got < sizeof(buf) - 1 && (n = read(pfd[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(pfd[0]);
	waitpid(pid, &st, 0);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT || !strstr(buf, msg)) {
		fprintf(stderr,
			"%s:%d: expected abort with \"%s\", got status %#x, stderr \"%s\"\n", file,
			line, msg, st, buf);
		t_case_failures++;
	}
}

#define EXPECT_ABORT(fn, msg) expect_abort_at(fn, msg, __FILE__, __LINE__)

/*
 * A pseudo-random byte string made to hit the interesting cases: the separators and escapes,
 * control characters, valid UTF-8 of every length, truncated sequences, stray continuation
 * bytes, and arbitrary bytes.
 */
static size_t random_bytes(char *buf, size_t max)
{
	static const char specials[] = {';', '\n', '\r', '\\', '"', '\0', 0x7f, ' ', '\t', 'x'};
	size_t len = 0, want = rng() % (max / 4 + 1), i, n;
	unsigned char enc[4];
	uint32_t cp;

	while (len < want && len + 4 <= max) {
		switch (rng() % 6) {
		case 0:
			buf[len++] = (char)rng();
			break;
		case 1:
			buf[len++] = (char)(0x20 + rng() % 0x5f);
			break;
		case 2:
			buf[len++] = specials[rng() % sizeof(specials)];
			break;
		case 3:
		case 4:
			/* A valid character of random length, maybe cut short. */
			switch (rng() % 4) {
			case 0:
				cp = 0x80 + rng() % 0x780;
				enc[0] = 0xc0 | cp >> 6;
				enc[1] = 0x80 | (cp & 0x3f);
				n = 2;
				break;
			case 1:
				do {
					cp = 0x800 + rng() % 0xf800;
				} while (cp >= 0xd800 && cp <= 0xdfff);
				enc[0] = 0xe0 | cp >> 12;
				enc[1] = 0x80 | (cp >> 6 & 0x3f);
				enc[2] = 0x80 | (cp & 0x3f);
				n = 3;
				break;
			default:
				cp = 0x10000 + rng() % 0x100000;
				enc[0] = 0xf0 | cp >> 18;
				enc[1] = 0x80 | (cp >> 12 & 0x3f);
				enc[2] = 0x80 | (cp >> 6 & 0x3f);
				enc[3] = 0x80 | (cp & 0x3f);
				n = 4;
				break;
			}
			if (rng() % 8 == 0)
				n = 1 + rng() % (n - 1);
			for (i = 0; i < n; i++)
				buf[len++] = (char)enc[i];
			break;
		default:
			/* Continuation bytes and bytes that never appear in UTF-8. */
			buf[len++] = (char)(rng() % 2 ? 0x80 + rng() % 0x40 : 0xf5 + rng() % 11);
			break;
		}
	}
	return len;
}

/* ---- log2 histograms ---------------------------------------------------------------------- */

static void test_log2_slot(void)
{
	EXPECT_EQ_U64(mmscope_hist_slot(0), 0);
	EXPECT_EQ_U64(mmscope_hist_slot(1), 0);
	EXPECT_EQ_U64(mmscope_hist_slot(2), 1);
	EXPECT_EQ_U64(mmscope_hist_slot(3), 1);
	EXPECT_EQ_U64(mmscope_hist_slot(4), 2);
	EXPECT_EQ_U64(mmscope_hist_slot(7), 2);
	EXPECT_EQ_U64(mmscope_hist_slot(8), 3);
	EXPECT_EQ_U64(mmscope_hist_slot(0xffffffffULL), 31);
	EXPECT_EQ_U64(mmscope_hist_slot(0x100000000ULL), 32);
	EXPECT_EQ_U64(mmscope_hist_slot(1ULL << 63), 63);
	EXPECT_EQ_U64(mmscope_hist_slot(UINT64_MAX), 63);
}

static unsigned int naive_log2(uint64_t v)
{
	unsigned int r = 0;

	while (v >>= 1)
		r++;
	return r;
}

static int check_in_slot(uint64_t v)
{
	unsigned int s = mmscope_hist_slot(v);

	if (s >= MMSCOPE_HIST_SLOTS || s != naive_log2(v) || v < hist_slot_lo(s) ||
	    v > hist_slot_hi(s)) {
		fprintf(stderr, "value %" PRIu64 " in slot %u [%" PRIu64 ", %" PRIu64 "]\n", v, s,
			hist_slot_lo(s), hist_slot_hi(s));
		return 1;
	}
	return 0;
}

static void test_slot_bounds(void)
{
	unsigned int s, k;
	int bad = 0;

	EXPECT_EQ_U64(hist_slot_lo(0), 0);
	EXPECT_EQ_U64(hist_slot_hi(0), 1);
	EXPECT_EQ_U64(hist_slot_lo(1), 2);
	EXPECT_EQ_U64(hist_slot_hi(1), 3);
	EXPECT_EQ_U64(hist_slot_lo(2), 4);
	EXPECT_EQ_U64(hist_slot_hi(2), 7);
	EXPECT_EQ_U64(hist_slot_lo(62), 1ULL << 62);
	EXPECT_EQ_U64(hist_slot_hi(62), (1ULL << 63) - 1);
	EXPECT_EQ_U64(hist_slot_lo(63), 1ULL << 63);
	EXPECT_EQ_U64(hist_slot_hi(63), UINT64_MAX);
	/* Out of range saturates (documented in hist.c) instead of shifting by >= 64. */
	EXPECT_EQ_U64(hist_slot_lo(64), UINT64_MAX);
	EXPECT_EQ_U64(hist_slot_hi(64), UINT64_MAX);

	/* The slots tile [0, UINT64_MAX] with no gap and no overlap. */
	for (s = 0; s + 1 < MMSCOPE_HIST_SLOTS; s++)
		EXPECT_EQ_U64(hist_slot_lo(s + 1), hist_slot_hi(s) + 1);

	for (k = 0; k < 64; k++) {
		uint64_t p = 1ULL << k;

		bad += check_in_slot(p);
		bad += check_in_slot(p - 1);
		bad += check_in_slot(p + 1);
		bad += check_in_slot(p | (p - 1));
	}
	bad += check_in_slot(UINT64_MAX);
	bad += check_in_slot(UINT64_MAX - 1);
	for (k = 0; k < 200000; k++)
		bad += check_in_slot(rng() >> (rng() % 64));
	EXPECT_EQ_U64(bad, 0);
}

static void test_hist_ops(void)
{
	struct log2_hist a = {0}, b = {0};

	EXPECT_EQ_U64(hist_total(&a), 0);
	EXPECT_EQ_U64(hist_used_slots(&a), 0);
	hist_add(&a, 0);
	EXPECT_EQ_U64(hist_used_slots(&a), 1);
	hist_add(&a, 1);
	hist_add(&a, 5);
	hist_add(&a, 1000);
	EXPECT_EQ_U64(a.slots[0], 2);
	EXPECT_EQ_U64(a.slots[2], 1);
	EXPECT_EQ_U64(a.slots[9], 1);
	EXPECT_EQ_U64(hist_total(&a), 4);
	EXPECT_EQ_U64(hist_used_slots(&a), 10);

	hist_add(&b, UINT64_MAX);
	hist_add(&b, 6);
	EXPECT_EQ_U64(hist_used_slots(&b), 64);
	hist_merge(&a, &b);
	EXPECT_EQ_U64(a.slots[2], 2);
	EXPECT_EQ_U64(a.slots[63], 1);
	EXPECT_EQ_U64(hist_total(&a), 6);
	EXPECT_EQ_U64(hist_used_slots(&a), 64);
	EXPECT_EQ_U64(hist_total(&b), 2);
}

static char *hist_text(const struct log2_hist *h, const char *unit)
{
	struct mem m;

	mem_open(&m);
	hist_print(m.f, h, unit);
	mem_close(&m);
	return m.buf;
}

static void test_hist_print(void)
{
	/* bcc's layout; rows from the first non-empty slot (4..7), the empty 8..15 row kept. */
	static const char expected[] =
		"     usecs               : count    distribution\n"
		"         4 -> 7          : 3        |************                            |\n"
		"         8 -> 15         : 0        |                                        |\n"
		"        16 -> 31         : 10       |****************************************|\n"
		"        32 -> 63         : 5        |********************                    |\n";
	struct log2_hist h = {0};
	uint64_t v;
	char *text;

	hist_add(&h, 4);
	hist_add(&h, 5);
	hist_add(&h, 7);
	for (v = 16; v < 26; v++)
		hist_add(&h, v);
	hist_add(&h, 32);
	hist_add(&h, 40);
	hist_add(&h, 50);
	hist_add(&h, 60);
	hist_add(&h, 63);
	text = hist_text(&h, "usecs");
	EXPECT_STREQ(text, expected);
	free(text);
}

static void test_hist_print_wide(void)
{
	/* 20-digit bounds and an 11-digit count: the columns widen and stay aligned. */
	static const char expected[] =
		"               nsecs                         : count       distribution\n"
		" 2305843009213693952 -> 4611686018427387903  : 1           "
		"|                                        |\n"
		" 4611686018427387904 -> 9223372036854775807  : 0           "
		"|                                        |\n"
		" 9223372036854775808 -> 18446744073709551615 : 12345678901 "
		"|****************************************|\n";
	struct log2_hist h = {0};
	const char *row;
	char *text;
	int stars = 0;

	h.slots[61] = 1;
	h.slots[63] = 12345678901ULL;
	text = hist_text(&h, "nsecs");
	EXPECT_STREQ(text, expected);
	free(text);

	/* count * 40 would overflow here: floor(40 * (2^63 - 1) / (2^64 - 1)) is 19. */
	memset(&h, 0, sizeof(h));
	h.slots[0] = UINT64_MAX;
	h.slots[1] = UINT64_MAX / 2;
	text = hist_text(&h, "pages");
	row = strstr(text, "\n         2 -> 3");
	EXPECT(row != NULL);
	if (row) {
		for (row = strchr(row, '|') + 1; *row == '*'; row++)
			stars++;
	}
	EXPECT_EQ_U64(stars, 19);
	EXPECT(strstr(text, "18446744073709551615 |****************************************|\n"));
	free(text);
}

static void test_hist_print_empty(void)
{
	struct log2_hist h = {0};
	char *text = hist_text(&h, "nsecs");

	EXPECT_STREQ(text, "(no events)\n");
	free(text);
}

/* ---- JSON writer -------------------------------------------------------------------------- */

static void doc_nested(struct json_writer *w, void *arg)
{
	(void)arg;
	jw_begin_object(w);
	jw_key(w, "name");
	jw_string(w, "a b;c");
	jw_key(w, "list");
	jw_begin_array(w);
	jw_u64(w, 1);
	jw_i64(w, -2);
	jw_begin_object(w);
	jw_end_object(w);
	jw_begin_array(w);
	jw_end_array(w);
	jw_bool(w, true);
	jw_bool(w, false);
	jw_null(w);
	jw_string(w, NULL);
	jw_end_array(w);
	jw_key(w, "obj");
	jw_begin_object(w);
	jw_key(w, "x");
	jw_double(w, 0.5);
	jw_key(w, "frames; with spaces");
	jw_begin_array(w);
	jw_string(w, "main");
	jw_end_array(w);
	jw_end_object(w);
	jw_end_object(w);
}

static void test_json_compact(void)
{
	char *doc = json_doc(false, doc_nested, NULL);

	EXPECT_STREQ(doc, "{\"name\":\"a b;c\",\"list\":[1,-2,{},[],true,false,null,null],"
			  "\"obj\":{\"x\":0.5,\"frames; with spaces\":[\"main\"]}}\n");
	EXPECT_VALID_JSON(doc);
	free(doc);
}

static void test_json_pretty(void)
{
	char *doc = json_doc(true, doc_nested, NULL);

	EXPECT_STREQ(doc, "{\n"
			  "  \"name\": \"a b;c\",\n"
			  "  \"list\": [\n"
			  "    1,\n"
			  "    -2,\n"
			  "    {},\n"
			  "    [],\n"
			  "    true,\n"
			  "    false,\n"
			  "    null,\n"
			  "    null\n"
			  "  ],\n"
			  "  \"obj\": {\n"
			  "    \"x\": 0.5,\n"
			  "    \"frames; with spaces\": [\n"
			  "      \"main\"\n"
			  "    ]\n"
			  "  }\n"
			  "}\n");
	EXPECT_VALID_JSON(doc);
	free(doc);
}

/* fn() of a string literal (NULs included) compared with the expected text. */
#define EXPECT_ESC(fn, lit, want)                                                                  \
	do {                                                                                       \
		char *got_ = fn(lit, sizeof(lit) - 1);                                             \
		EXPECT_STREQ(got_, want);                                                          \
		free(got_);                                                                        \
	} while (0)

/* The string escapers read NULL as the empty string. */
#define EXPECT_ESC_NULL(fn)                                                                        \
	do {                                                                                       \
		char *got_ = fn(NULL, 0);                                                          \
		EXPECT(got_ && !*got_);                                                            \
		free(got_);                                                                        \
	} while (0)

#define EXPECT_JSON_ESC(lit, want) EXPECT_ESC(json_escape, lit, want)

static void test_json_escape(void)
{
	EXPECT_JSON_ESC("", "");
	EXPECT_ESC_NULL(json_escape);
	EXPECT_JSON_ESC("plain text; with spaces", "plain text; with spaces");
	EXPECT_JSON_ESC("q\"b\\s/", "q\\\"b\\\\s/");
	EXPECT_JSON_ESC("\n\t\r", "\\n\\t\\r");
	EXPECT_JSON_ESC("\x01\x08\x0c\x1f\x7f", "\\u0001\\u0008\\u000c\\u001f\\u007f");
	EXPECT_JSON_ESC("a\0b", "a\\u0000b");
}

/* é, €, U+1D11E, U+0080, U+D7FF, U+E000, U+FFFF, U+10FFFF: all kept as they are. */
#define VALID_UTF8                                                                                 \
	"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\xc2\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\xf4\x8f" \
	"\xbf\xbf"

static void test_json_utf8_valid(void)
{
	EXPECT_JSON_ESC(VALID_UTF8, VALID_UTF8);
	EXPECT_JSON_ESC("caf\xc3\xa9 \"x\"", "caf\xc3\xa9 \\\"x\\\"");
}

static void test_json_utf8_invalid(void)
{
	/* Each byte that is not part of a valid sequence becomes \\xNN in the JSON text. */
	EXPECT_JSON_ESC("\xff", "\\\\xff");
	EXPECT_JSON_ESC("a\x80-", "a\\\\x80-");
	/* truncated € */
	EXPECT_JSON_ESC("\xe2\x82", "\\\\xe2\\\\x82");
	EXPECT_JSON_ESC("\xe2\x82z", "\\\\xe2\\\\x82z");
	/* overlong forms */
	EXPECT_JSON_ESC("\xc0\xaf", "\\\\xc0\\\\xaf");
	EXPECT_JSON_ESC("\xc1\xbf", "\\\\xc1\\\\xbf");
	EXPECT_JSON_ESC("\xe0\x80\xaf", "\\\\xe0\\\\x80\\\\xaf");
	EXPECT_JSON_ESC("\xf0\x80\x80\xaf", "\\\\xf0\\\\x80\\\\x80\\\\xaf");
	/* surrogates U+D800, U+DFFF */
	EXPECT_JSON_ESC("\xed\xa0\x80", "\\\\xed\\\\xa0\\\\x80");
	EXPECT_JSON_ESC("\xed\xbf\xbf", "\\\\xed\\\\xbf\\\\xbf");
	/* above U+10FFFF */
	EXPECT_JSON_ESC("\xf4\x90\x80\x80", "\\\\xf4\\\\x90\\\\x80\\\\x80");
	EXPECT_JSON_ESC("\xf5\x80\x80\x80", "\\\\xf5\\\\x80\\\\x80\\\\x80");
	/* A bad lead byte does not swallow the valid character after it. */
	EXPECT_JSON_ESC("\xc3\xc3\xa9", "\\\\xc3\xc3\xa9");
	EXPECT_JSON_ESC("\xe2\x82\xac\xe2", "\xe2\x82\xac\\\\xe2");
}

static const char *const tricky[] = {
	"k\xff;",	    "\xff", "\xc3\xa9",	    "\x01",	   "a\\b",
	"\xf0\x9d\x84\x9e", "\x7f", "\xed\xa0\x80", "sp ace;semi", "\"q\"",
};

static void doc_tricky(struct json_writer *w, void *arg)
{
	size_t i;

	(void)arg;
	jw_begin_object(w);
	for (i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++) {
		jw_key(w, tricky[i]);
		jw_string(w, tricky[i]);
	}
	jw_end_object(w);
}

/* A real parser decodes what we wrote to the strings we meant. */
static void test_json_python_decodes(void)
{
	static const char script[] =
		"import json,sys; d = json.load(open(sys.argv[1], \"rb\")); "
		"[sys.stdout.write(json.dumps([k, v]) + \"\\n\") for k, v in d.items()]";
	static const char expected[] = "[\"k\\\\xff;\", \"k\\\\xff;\"]\n"
				       "[\"\\\\xff\", \"\\\\xff\"]\n"
				       "[\"\\u00e9\", \"\\u00e9\"]\n"
				       "[\"\\u0001\", \"\\u0001\"]\n"
				       "[\"a\\\\b\", \"a\\\\b\"]\n"
				       "[\"\\ud834\\udd1e\", \"\\ud834\\udd1e\"]\n"
				       "[\"\\u007f\", \"\\u007f\"]\n"
				       "[\"\\\\xed\\\\xa0\\\\x80\", \"\\\\xed\\\\xa0\\\\x80\"]\n"
				       "[\"sp ace;semi\", \"sp ace;semi\"]\n"
				       "[\"\\\"q\\\"\", \"\\\"q\\\"\"]\n";
	char *doc, *out;
	int pretty;

	if (!have_python())
		return;
	for (pretty = 0; pretty < 2; pretty++) {
		doc = json_doc(pretty, doc_tricky, NULL);
		EXPECT_VALID_JSON(doc);
		out = python_on_doc(script, doc);
		EXPECT_STREQ(out, expected);
		free(out);
		free(doc);
	}
}

/* Finite values first: the test reads those back. */
static const double test_doubles[] = {
	0.1,
	1.0,
	-0.0,
	1e300,
	1.0 / 3,
	0.1 + 0.2,
	1e-7,
	123456789012345678.0,
	1.7976931348623157e308,
	4.9406564584124654e-324,
	-2.2250738585072014e-308,
	NAN,
	INFINITY,
	-INFINITY,
};
#define N_FINITE 11

static void doc_numbers(struct json_writer *w, void *arg)
{
	size_t i;

	(void)arg;
	jw_begin_array(w);
	jw_u64(w, 0);
	jw_u64(w, UINT64_MAX);
	jw_i64(w, INT64_MIN);
	jw_i64(w, INT64_MAX);
	for (i = 0; i < sizeof(test_doubles) / sizeof(test_doubles[0]); i++)
		jw_double(w, test_doubles[i]);
	jw_end_array(w);
}

static void test_json_numbers(void)
{
	static const char expected[] = "[0,18446744073709551615,-9223372036854775808,"
				       "9223372036854775807,0.1,1,-0,1e+300,0.3333333333333333,"
				       "0.30000000000000004,1e-07,1.2345678901234568e+17,"
				       "1.7976931348623157e+308,4.94065645841247e-324,"
				       "-2.2250738585072014e-308,null,null,null]\n";
	char *doc = json_doc(false, doc_numbers, NULL);
	char *p, *end;
	size_t i;

	EXPECT_STREQ(doc, expected);
	EXPECT_VALID_JSON(doc);
	/* Every finite double reads back exactly, sign of zero included. */
	p = doc + 1;
	for (i = 0; i < 4; i++)
		p = strchr(p, ',') + 1;
	for (i = 0; i < N_FINITE; i++) {
		double back = strtod(p, &end);

		EXPECT(back == test_doubles[i] && !signbit(back) == !signbit(test_doubles[i]));
		p = end + 1;
	}
	free(doc);
}

static void doc_top_level(struct json_writer *w, void *arg)
{
	(void)arg;
	jw_begin_object(w);
	jw_key(w, "a");
	jw_u64(w, 1);
	jw_end_object(w);
	jw_begin_object(w);
	jw_end_object(w);
	jw_string(w, "x");
}

static void doc_nothing(struct json_writer *w, void *arg)
{
	(void)w;
	(void)arg;
}

static void doc_left_open(struct json_writer *w, void *arg)
{
	(void)arg;
	jw_begin_object(w);
	jw_key(w, "a");
	jw_begin_array(w);
	jw_u64(w, 1);
	jw_begin_object(w);
	jw_key(w, "dangling");
}

static void test_json_top_level(void)
{
	char *doc;

	/* Several top-level values: one per line (JSON Lines). */
	doc = json_doc(false, doc_top_level, NULL);
	EXPECT_STREQ(doc, "{\"a\":1}\n{}\n\"x\"\n");
	free(doc);
	doc = json_doc(true, doc_top_level, NULL);
	EXPECT_STREQ(doc, "{\n  \"a\": 1\n}\n{}\n\"x\"\n");
	free(doc);
	/* Nothing written, nothing printed (not even the newline). */
	doc = json_doc(false, doc_nothing, NULL);
	EXPECT_STREQ(doc, "");
	free(doc);
	/* jw_free() closes what the caller left open, so the document still parses. */
	doc = json_doc(false, doc_left_open, NULL);
	EXPECT_STREQ(doc, "{\"a\":[1,{\"dangling\":null}]}\n");
	EXPECT_VALID_JSON(doc);
	free(doc);
}

static void doc_deep(struct json_writer *w, void *arg)
{
	int i, depth = *(int *)arg;

	for (i = 0; i < depth; i++)
		jw_begin_array(w);
	jw_string(w, "bottom");
	for (i = 0; i < depth; i++)
		jw_end_array(w);
}

static void doc_too_deep(struct json_writer *w, void *arg)
{
	int depth = 65;

	(void)arg;
	doc_deep(w, &depth);
}

static void doc_value_without_key(struct json_writer *w, void *arg)
{
	(void)arg;
	jw_begin_object(w);
	jw_u64(w, 1);
}

static void doc_key_in_array(struct json_writer *w, void *arg)
{
	(void)arg;
	jw_begin_array(w);
	jw_key(w, "k");
}

static void doc_wrong_close(struct json_writer *w, void *arg)
{
	(void)arg;
	jw_begin_array(w);
	jw_end_object(w);
}

static void doc_close_unopened(struct json_writer *w, void *arg)
{
	(void)arg;
	jw_end_array(w);
}

static void doc_key_without_value(struct json_writer *w, void *arg)
{
	(void)arg;
	jw_begin_object(w);
	jw_key(w, "k");
	jw_end_object(w);
}

static void test_json_depth_and_misuse(void)
{
	int depth = 64;
	char *doc = json_doc(true, doc_deep, &depth);

	EXPECT_VALID_JSON(doc);
	EXPECT(strstr(doc, "\"bottom\"") != NULL);
	free(doc);

	EXPECT_ABORT(doc_too_deep, "nesting deeper than 64");
	EXPECT_ABORT(doc_value_without_key, "without a key");
	EXPECT_ABORT(doc_key_in_array, "key outside an object");
	EXPECT_ABORT(doc_wrong_close, "closing an array as an object");
	EXPECT_ABORT(doc_close_unopened, "not open");
	EXPECT_ABORT(doc_key_without_value, "key without a value");
}

struct random_doc {
	char (*strs)[256];
	size_t *lens;
	size_t n;
};

static void doc_random(struct json_writer *w, void *arg)
{
	struct random_doc *rd = arg;
	size_t i;

	jw_begin_array(w);
	for (i = 0; i < rd->n; i++)
		jw_string_len(w, rd->strs[i], rd->lens[i]);
	jw_end_array(w);
}

/* python3 decodes 1000 random strings in one document to exactly the expected bytes. */
static void check_random_with_python(void)
{
	static const char script[] = "import json,sys; "
				     "[sys.stdout.write(s.encode().hex() + \"\\n\") "
				     "for s in json.load(open(sys.argv[1], \"rb\"))]";
	static char strs[1000][256];
	static size_t lens[1000];
	struct random_doc rd = {strs, lens, 1000};
	struct mem want;
	char *doc, *out;
	size_t k;
	int i;

	for (i = 0; i < 1000; i++)
		lens[i] = random_bytes(strs[i], sizeof(strs[i]));
	doc = json_doc(false, doc_random, &rd);
	EXPECT_VALID_JSON(doc);
	mem_open(&want);
	for (i = 0; i < 1000; i++) {
		size_t wl;
		char *w = oracle_decoded(strs[i], lens[i], &wl);

		for (k = 0; k < wl; k++)
			fprintf(want.f, "%02x", (unsigned char)w[k]);
		fputc('\n', want.f);
		free(w);
	}
	mem_close(&want);
	out = python_on_doc(script, doc);
	EXPECT(out != NULL);
	if (out && strcmp(out, want.buf)) {
		for (k = 0; out[k] && out[k] == want.buf[k]; k++)
			;
		fprintf(stderr, "python3 decoded differently, first difference at byte %zu\n", k);
		t_case_failures++;
	}
	free(out);
	mem_free(&want);
	free(doc);
}

/*
 * Random byte strings: the escaped text is valid UTF-8 with no raw control character and
 * decodes back to the expected string, by our decoder for 10000 strings and by python3's for
 * 1000 more in one document.
 */
static void test_json_escape_random(void)
{
	int bad = 0, i;
	size_t k;

	rng_state = 0x1234567887654321ULL;
	for (i = 0; i < 10000; i++) {
		char buf[256], *esc, *dec = NULL, *want;
		size_t len = random_bytes(buf, sizeof(buf)), declen = 0, wantlen;

		esc = json_escape(buf, len);
		want = oracle_decoded(buf, len, &wantlen);
		if (!esc || !oracle_valid_utf8(esc, strlen(esc)) ||
		    !json_body_decode(esc, &dec, &declen) || declen != wantlen ||
		    memcmp(dec, want, wantlen)) {
			if (bad++ < 5) {
				fprintf(stderr, "json_escape of:");
				for (k = 0; k < len; k++)
					fprintf(stderr, " %02x", (unsigned char)buf[k]);
				fprintf(stderr, "\n  gave \"%s\"\n", esc ? esc : "(null)");
			}
		}
		free(dec);
		free(want);
		free(esc);
	}
	EXPECT_EQ_U64(bad, 0);

	if (have_python())
		check_random_with_python();
}

/* ---- folded escaping ---------------------------------------------------------------------- */

#define EXPECT_FOLDED(lit, want) EXPECT_ESC(folded_escape, lit, want)

static void test_folded_escape(void)
{
	EXPECT_FOLDED("", "");
	EXPECT_ESC_NULL(folded_escape);
	EXPECT_FOLDED("a;b", "a\\x3bb");
	EXPECT_FOLDED("line\nnext\r", "line\\x0anext\\x0d");
	EXPECT_FOLDED("back\\slash", "back\\x5cslash");
	EXPECT_FOLDED("tab\t\x01\x1f\x7f", "tab\\x09\\x01\\x1f\\x7f");
	EXPECT_FOLDED("a\0b", "a\\x00b");
	EXPECT_FOLDED("a b  c ", "a b  c ");
	EXPECT_FOLDED("std::vector<int>::at(unsigned long) [clone .cold]",
		      "std::vector<int>::at(unsigned long) [clone .cold]");
	EXPECT_FOLDED(VALID_UTF8, VALID_UTF8);
	EXPECT_FOLDED("\xff", "\\xff");
	EXPECT_FOLDED("\xe2\x82", "\\xe2\\x82");
	EXPECT_FOLDED("\xc0\xaf", "\\xc0\\xaf");
	EXPECT_FOLDED("\xed\xa0\x80", "\\xed\\xa0\\x80");
	EXPECT_FOLDED("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
	EXPECT_FOLDED("\xc3\xc3\xa9;", "\\xc3\xc3\xa9\\x3b");
}

static void test_folded_write_frame(void)
{
	struct mem m;

	mem_open(&m);
	folded_write_frame(m.f, "main;x", 6);
	fputc(';', m.f);
	folded_write_frame(m.f, "\xff\n", 2);
	folded_write_frame(m.f, NULL, 0);
	fputs(" 3\n", m.f);
	mem_close(&m);
	EXPECT_STREQ(m.buf, "main\\x3bx;\\xff\\x0a 3\n");
	mem_free(&m);
}

/* Undo folded escaping; false if the text holds a backslash that is not \xNN. */
static bool folded_unescape(const char *e, char *out, size_t *outlen)
{
	size_t o = 0;
	int hi, lo;

	while (*e) {
		if (*e != '\\') {
			out[o++] = *e++;
			continue;
		}
		if (e[1] != 'x' || (hi = hexval(e[2])) < 0 || (lo = hexval(e[3])) < 0)
			return false;
		out[o++] = (char)(hi << 4 | lo);
		e += 4;
	}
	*outlen = o;
	return true;
}

static void test_folded_random(void)
{
	int bad = 0, i;
	size_t k;

	rng_state = 0xfeedfacecafebeefULL;
	for (i = 0; i < 10000; i++) {
		char buf[256], back[256], *esc;
		size_t len = random_bytes(buf, sizeof(buf)), backlen = 0, elen;
		bool ok;
		struct mem m;

		esc = folded_escape(buf, len);
		ok = esc != NULL;
		elen = ok ? strlen(esc) : 0;
		for (k = 0; ok && k < elen; k++) {
			unsigned char c = (unsigned char)esc[k];

			ok = c != ';' && c >= 0x20 && c != 0x7f;
		}
		ok = ok && oracle_valid_utf8(esc, elen);
		ok = ok && folded_unescape(esc, back, &backlen) && backlen == len &&
		     !memcmp(back, buf, len);
		if (ok && i % 10 == 0) {
			/* The FILE variant writes the same bytes. */
			mem_open(&m);
			folded_write_frame(m.f, buf, len);
			mem_close(&m);
			ok = m.len == elen && !memcmp(m.buf, esc, elen);
			mem_free(&m);
		}
		if (!ok && bad++ < 5) {
			fprintf(stderr, "folded_escape of:");
			for (k = 0; k < len; k++)
				fprintf(stderr, " %02x", (unsigned char)buf[k]);
			fprintf(stderr, "\n  gave \"%s\"\n", esc ? esc : "(null)");
		}
		free(esc);
	}
	EXPECT_EQ_U64(bad, 0);
}

static void test_bounded_strlen(void)
{
	char comm[4] = {'a', 'b', 'c', 'd'}; /* no NUL: must not be read past */

	EXPECT_EQ_U64(bounded_strlen("abc", 16), 3);
	EXPECT_EQ_U64(bounded_strlen(comm, sizeof(comm)), 4);
	EXPECT_EQ_U64(bounded_strlen(comm, 2), 2);
	EXPECT_EQ_U64(bounded_strlen("", 5), 0);
	EXPECT_EQ_U64(bounded_strlen("abc", 0), 0);
	EXPECT_EQ_U64(bounded_strlen(NULL, 5), 0);
}

TEST_MAIN(T(test_log2_slot), T(test_slot_bounds), T(test_hist_ops), T(test_hist_print),
	  T(test_hist_print_wide), T(test_hist_print_empty), T(test_json_compact),
	  T(test_json_pretty), T(test_json_escape), T(test_json_utf8_valid),
	  T(test_json_utf8_invalid), T(test_json_python_decodes), T(test_json_numbers),
	  T(test_json_top_level), T(test_json_depth_and_misuse), T(test_json_escape_random),
	  T(test_folded_escape), T(test_folded_write_frame), T(test_folded_random),
	  T(test_bounded_strlen))
