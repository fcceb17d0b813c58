/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Escaping for line-oriented outputs (folded stacks, text tables). A folded line is
 * "frame;frame;... COUNT": a frame must never contain ';' (frame separator), a newline or
 * carriage return (record separator), other control characters, or invalid UTF-8. Those bytes,
 * and '\\' itself, become the four characters \xNN. Spaces stay: flame graph tools split the
 * count off at the last space.
 */
#ifndef MMSCOPE_ESCAPE_H
#define MMSCOPE_ESCAPE_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Write s (len bytes) to f escaped as a folded frame. */
void folded_write_frame(FILE *f, const char *s, size_t len);
/* The same into a malloc'ed NUL-terminated string. */
char *folded_escape(const char *s, size_t len);
/*
 * XML character data and attribute values (SVG output): '&', '<', '>', '"' and '\'' become
 * entities; control characters, bytes of invalid UTF-8 and the two characters XML 1.0 forbids
 * among valid UTF-8 (U+FFFE, U+FFFF) become the four characters \xNN, as in folded frames. Any
 * input gives text a conforming XML parser accepts.
 */
void xml_write_text(FILE *f, const char *s, size_t len);
char *xml_escape(const char *s, size_t len);
/*
 * Where an escaper writes: a FILE (f set), or buf, which the caller sized for the worst case.
 * Each escaper is written once against this sink, so its streaming form (to a FILE) and its
 * string form give byte-identical text. Used by the escapers here and by the JSON writer.
 */
struct esc_sink {
	FILE *f;
	char *buf;
	size_t len;
};

/* Inline: the escapers call it for every run of plain bytes. */
static inline void esc_sink_put(struct esc_sink *k, const char *p, size_t n)
{
	if (!n)
		return;
	if (k->f) {
		fwrite(p, 1, n, k->f);
		return;
	}
	memcpy(k->buf + k->len, p, n);
	k->len += n;
}

/*
 * The string form of an escaper: a malloc'ed, NUL-terminated copy of s (len bytes; NULL reads
 * as empty) escaped by fn, where fn writes at most worst bytes per input byte. NULL when out of
 * memory or when len is too large to size.
 */
char *esc_to_string(void (*fn)(struct esc_sink *k, const char *s, size_t len), const char *s,
		    size_t len, size_t worst);
/* Length of the well-formed UTF-8 sequence at p (avail bytes there), 0 if none starts. */
size_t utf8_seq_len(const unsigned char *p, size_t avail);
/* Length of a comm or other fixed buffer up to its first NUL (at most max). */
size_t bounded_strlen(const char *s, size_t max);

#endif
