/* SPDX-License-Identifier: GPL-2.0 */
/* Small shared helpers: messages, strict number parsing, time, atomic output files. */
#ifndef MMSCOPE_UTIL_H
#define MMSCOPE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int verbose;

/* One-line messages on stderr, prefixed "mmscope: ". */
void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warn_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void verbose_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Whole-string decimal parsing; false on anything else (sign, junk, overflow, empty). */
bool parse_u64(const char *s, uint64_t *out);
/* A positive, finite number of seconds ("2", "0.5"); false otherwise. */
bool parse_seconds(const char *s, double *out);

uint64_t now_ns(void);			  /* CLOCK_MONOTONIC */
double wall_time_s(void);		  /* CLOCK_REALTIME, for timestamps in output */
void format_clock(char *buf, size_t len); /* HH:MM:SS local time */

/*
 * An output file that appears complete or not at all: written to a temporary file in the
 * same directory, renamed over the target on commit, removed on abort.
 */
struct atomic_file {
	char *path;
	char *tmp_path;
	FILE *f;
};
int atomic_file_open(struct atomic_file *af, const char *path); /* 0 or -errno */
int atomic_file_commit(struct atomic_file *af);			/* 0 or -errno */
void atomic_file_abort(struct atomic_file *af);

/* Read a small text file (sysfs, procfs) into buf; returns bytes read or -errno. */
long read_small_file(const char *path, char *buf, size_t size);

/* Parse a CPU list "0,2-5"; sets bits in mask (nbits wide). 0 or -EINVAL / -ERANGE. */
int parse_cpu_list(const char *s, uint64_t *mask, unsigned int nbits);

/* qsort()/bsearch() order of uint32_t values (process ids). */
int cmp_u32(const void *a, const void *b);

#endif
