/* SPDX-License-Identifier: GPL-2.0 */
/*
 * UTF-8 checked the long way, for the tests: the code point is assembled and then judged, so
 * the tests do not lean on the table-driven check in json.c/escape.c that they are testing.
 * Shared by the unit tests and the fuzzers (one oracle, not a copy in each).
 */
#ifndef MMSCOPE_TESTS_UTF8_ORACLE_H
#define MMSCOPE_TESTS_UTF8_ORACLE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Length of the well-formed UTF-8 character at p (1 to 4), 0 when p does not start one:
 * overlong forms, surrogates and values above U+10FFFF are rejected. avail >= 1.
 */
size_t oracle_utf8_char(const unsigned char *p, size_t avail);

/* Whether all of s[0..len) is well-formed UTF-8. */
bool oracle_valid_utf8(const char *s, size_t len);

/*
 * What an escaped string must decode back to (JSON strings, folded frames): valid UTF-8
 * unchanged, each byte of invalid UTF-8 as the four characters \xNN. A malloc'ed,
 * NUL-terminated string of *outlen bytes; NULL when out of memory.
 */
char *oracle_decoded(const char *s, size_t len, size_t *outlen);

#endif
