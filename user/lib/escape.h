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
/* Length of the well-formed UTF-8 sequence at p (avail bytes there), 0 if none starts. */
size_t utf8_seq_len(const unsigned char *p, size_t avail);
/* Length of a comm or other fixed buffer up to its first NUL (at most max). */
size_t bounded_strlen(const char *s, size_t max);

#endif
