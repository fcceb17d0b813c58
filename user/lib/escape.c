/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Escaping for folded stacks and text tables (see escape.h). Frame names come from the traced
 * processes (comm, symbols, paths), so they can hold anything; a frame that smuggles in a ';'
 * or a newline would split into fake frames or fake records in the flame graph. The escape
 * \xNN is also applied to '\\' itself, so the mapping stays reversible.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/escape.h"

static const char hex_digits[] = "0123456789abcdef";

char *esc_to_string(void (*fn)(struct esc_sink *k, const char *s, size_t len), const char *s,
		    size_t len, size_t worst)
{
	struct esc_sink k = {0};
	char *shrunk;

	if (!s) {
		/* Not even NULL + 0: that is undefined too. */
		s = "";
		len = 0;
	}
	if (len > (SIZE_MAX - 1) / worst)
		return NULL;
	k.buf = malloc(len * worst + 1);
	if (!k.buf)
		return NULL;
	fn(&k, s, len);
	k.buf[k.len] = '\0';
	/* Callers may keep many of these (symbol names): do not hold on to the worst case. */
	shrunk = realloc(k.buf, k.len + 1);
	return shrunk ? shrunk : k.buf;
}

/*
 * Length of the well-formed UTF-8 sequence starting at p, or 0 when p[0] does not start one
 * (Unicode table 3-7). Restricting the second byte's range is what rejects overlong forms
 * (E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and code points above U+10FFFF (F4 90..BF);
 * C0, C1 and F5..FF never start a sequence. The JSON writer uses it too.
 */
size_t utf8_seq_len(const unsigned char *p, size_t avail)
{
	unsigned char c = p[0], lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (avail < n || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < n; i++) {
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	}
	return n;
}

static void folded_escape_into(struct esc_sink *k, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0, n;
	char esc[4] = {'\\', 'x'};

	while (i < len) {
		unsigned char c = p[i];

		if (c >= 0x20 && c < 0x7f && c != ';' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80 && (n = utf8_seq_len(p + i, len - i))) {
			i += n;
			continue;
		}
		/* ';', '\\', control characters, DEL, and bytes of invalid UTF-8. */
		esc_sink_put(k, s + run, i - run);
		esc[2] = hex_digits[c >> 4];
		esc[3] = hex_digits[c & 0xf];
		esc_sink_put(k, esc, 4);
		i++;
		run = i;
	}
	esc_sink_put(k, s + run, i - run);
}

void folded_write_frame(FILE *f, const char *s, size_t len)
{
	struct esc_sink k = {.f = f};

	if (s)
		folded_escape_into(&k, s, len);
}

char *folded_escape(const char *s, size_t len)
{
	/* Worst case is four output bytes per input byte (\xNN). */
	return esc_to_string(folded_escape_into, s, len, 4);
}

static void xml_escape_into(struct esc_sink *k, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0, n;
	char esc[4] = {'\\', 'x'};

	while (i < len) {
		unsigned char c = p[i];
		const char *ent = NULL;

		if (c >= 0x20 && c < 0x7f) {
			switch (c) {
			case '&':
				ent = "&amp;";
				break;
			case '<':
				ent = "&lt;";
				break;
			case '>':
				ent = "&gt;";
				break;
			case '"':
				ent = "&quot;";
				break;
			case '\'':
				ent = "&#39;";
				break;
			default:
				i++;
				continue;
			}
			esc_sink_put(k, s + run, i - run);
			esc_sink_put(k, ent, strlen(ent));
			run = ++i;
			continue;
		}
		/* Valid UTF-8 except U+FFFE and U+FFFF (EF BF BE, EF BF BF): not XML characters. */
		if (c >= 0x80 && (n = utf8_seq_len(p + i, len - i)) &&
		    !(n == 3 && c == 0xef && p[i + 1] == 0xbf && p[i + 2] >= 0xbe)) {
			i += n;
			continue;
		}
		esc_sink_put(k, s + run, i - run);
		esc[2] = hex_digits[c >> 4];
		esc[3] = hex_digits[c & 0xf];
		esc_sink_put(k, esc, 4);
		run = ++i;
	}
	esc_sink_put(k, s + run, i - run);
}

void xml_write_text(FILE *f, const char *s, size_t len)
{
	struct esc_sink k = {.f = f};

	if (s)
		xml_escape_into(&k, s, len);
}

char *xml_escape(const char *s, size_t len)
{
	/* Worst case is six output bytes per input byte (&quot;). */
	return esc_to_string(xml_escape_into, s, len, 6);
}

/*
 * A comm or a path copied by BPF fills its fixed buffer and may lack the NUL: strnlen() never
 * examines more than max bytes (POSIX), unlike strlen().
 */
size_t bounded_strlen(const char *s, size_t max)
{
	if (!s)
		return 0;
	return strnlen(s, max);
}
