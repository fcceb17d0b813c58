/* SPDX-License-Identifier: GPL-2.0 */
/*
 * serve --labels: per-process counters folded into bounded label values (comm or cgroup).
 * The BPF side counts per tgid; each pass adds every tgid's increase since the previous pass
 * to the row of its current label value, so a row only grows: counters stay monotonic when
 * processes exit, exec (a new comm) or reuse a pid. Entries of processes that have exited are
 * read one last time and deleted from the BPF maps, so the maps do not fill up on a host that
 * runs for months. At most max_series label values get a row; the others share "__other__".
 */
#ifndef MMSCOPE_SERVE_SERIES_H
#define MMSCOPE_SERVE_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/mmscope.h"

#define SERIES_OTHER "__other__"

enum series_field {
	SF_FAULT_USER,
	SF_FAULT_KERNEL,
	SF_FAULT_MINOR,
	SF_FAULT_MAJOR,
	SF_SW_SAME_MM,
	SF_SW_MM_CHANGE,
	SF_SW_KERNEL,
	SF_TLB0, /* TLB_REASON_SLOTS of them */
	SF_NR = SF_TLB0 + TLB_REASON_SLOTS,
};

struct series_row {
	char *value; /* the label value: raw bytes of a comm, or a cgroup path */
	uint64_t v[SF_NR];
};

struct series_tgid;

struct series_table {
	int labels; /* enum serve_labels */
	int max_series;
	struct series_row *rows; /* nrows used of max_series + 1; the last is __other__ */
	int nrows;
	bool capped;	  /* a label value was refused a row */
	uint64_t refused; /* passes of a process whose value had no row */
	/* cgroup: the value of a tgid, resolved once, on first sight (NULL: values given). */
	void (*resolve)(uint32_t tgid, char *buf, size_t len);
	struct series_tgid **buckets;
	unsigned int nbuckets;
	uint64_t pass;
};

int series_init(struct series_table *t, int labels, int max_series);
void series_free(struct series_table *t);
/* The row for a label value, created while there is room, else the __other__ row. */
struct series_row *series_row_for(struct series_table *t, const char *value);
/*
 * One process's counters as read now: add the increase since the last call for this tgid to
 * its label's row. value: its comm now, or NULL for the value resolve() gave on first sight.
 * fields: SF_* indices of vals (n of them), the rest of the row untouched.
 */
void series_update(struct series_table *t, uint32_t tgid, const char *value, const int *fields,
		   const uint64_t *vals, int n);
/* Forget a tgid (its process exited): its next appearance starts from zero. */
void series_forget(struct series_table *t, uint32_t tgid);

#endif
