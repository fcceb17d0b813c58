/* SPDX-License-Identifier: GPL-2.0 */
/* Reading what the BPF side aggregated by process, location and stack, and symbolizing it. */
#ifndef MMSCOPE_STACKS_H
#define MMSCOPE_STACKS_H

#include <stdint.h>
#include <stdio.h>

#include "report.h"

struct proc_row {
	uint32_t tgid;
	struct proc_faults f;
};

/* Per-process rows sorted by faults, descending; *n rows. Caller frees. */
struct proc_row *read_procs(struct session *s, int *n);

struct location_row {
	char *symbol;
	char *dso;
	uint64_t count;
};

/* Fault locations, symbolized and merged by (symbol, dso), descending. Caller frees with
 * free_locations. */
struct location_row *read_locations(struct session *s, int *n);
void free_locations(struct location_row *rows, int n);

/* Write folded stacks; kind_name names the leaf frame from the key's kind. Returns lines. */
typedef void (*kind_name_fn)(uint32_t kind, char *buf, size_t len);
int write_folded(struct session *s, FILE *out, kind_name_fn kind_name, uint64_t *total);

#endif
