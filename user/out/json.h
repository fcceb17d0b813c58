/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A streaming JSON writer: keys and values are written in order, commas and nesting are the
 * writer's job. Strings are escaped so that any byte string (comm, symbol, path) becomes one
 * valid JSON string: quotes, backslashes and control characters as JSON escapes, valid UTF-8
 * passed through, and each byte of invalid UTF-8 as \\xNN in the JSON text, which decodes to the
 * four characters \xNN (a backslash, x and two hex digits), so nothing is lost and the document
 * stays valid.
 */
#ifndef MMSCOPE_JSON_H
#define MMSCOPE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct json_writer;

/* pretty: newlines and two-space indentation; otherwise one line. */
struct json_writer *jw_new(FILE *out, bool pretty);
/* Ends the line after the top-level value and frees the writer (not the FILE). */
void jw_free(struct json_writer *w);

void jw_begin_object(struct json_writer *w);
void jw_end_object(struct json_writer *w);
void jw_begin_array(struct json_writer *w);
void jw_end_array(struct json_writer *w);
void jw_key(struct json_writer *w, const char *key);
void jw_string(struct json_writer *w, const char *s); /* NULL writes null */
void jw_string_len(struct json_writer *w, const char *s, size_t len);
void jw_u64(struct json_writer *w, uint64_t v);
void jw_i64(struct json_writer *w, int64_t v);
void jw_double(struct json_writer *w, double v); /* non-finite values write null */
void jw_bool(struct json_writer *w, bool v);
void jw_null(struct json_writer *w);

/* Escape one byte string as a JSON string body (no quotes) into a malloc'ed buffer. */
char *json_escape(const char *s, size_t len);

#endif
