/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Faults on files (faults' by_file) read from the BPF maps: the (file, process) counts added
 * up by file, each file named, the rows sorted and those to show chosen, for the writer
 * (out/file_report.c), which touches no map.
 */
#ifndef MMSCOPE_FILE_READ_H
#define MMSCOPE_FILE_READ_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/mmscope.h"

struct session;

/* One process's faults on a file. */
struct file_proc {
	uint32_t tgid;
	char comm[MMSCOPE_COMM_LEN];
	uint64_t n[TY_NR];
};

/* A file: its faults, by process (heaviest first), and its names. */
struct file_row {
	struct file_name_key key;
	uint64_t n[TY_NR];
	uint64_t lat_sum, lat_max;
	struct file_proc *procs;
	int nprocs, capprocs;
	char *path; /* NULL: not named (no mount of its device here) */
	char *name; /* the file's own name, or "" */
	bool shown; /* among the top by faults or by major faults */
};

/* A row in the order by major faults (the rows stay in their order by faults). */
struct file_major_ref {
	struct file_row *row;
};

struct file_result {
	/* Why fault types (and so files) cannot be told on this kernel, or NULL: then the rest
	 * is empty. */
	const char *why;
	bool untimed; /* no latency (the run's faults are untimed) */
	int top;      /* files shown: the first top by faults and the first top by majors */
	struct file_row *rows; /* by faults, descending */
	int n;
	struct file_major_ref *bymajor; /* the rows with major faults, by them, descending */
	int nmajor;
};

static inline uint64_t file_row_faults(const uint64_t *n)
{
	return n[TY_MINOR] + n[TY_MAJOR] + n[TY_INCOMPLETE];
}

/* What could not be read is said on stderr and left out. */
void file_result_read(struct session *s, struct file_result *res);
void file_result_free(struct file_result *res);

#endif
