/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading the per-process tables the BPF side keeps (procs, tlb_procs, switch_procs: rows of
 * the comm and counters by tgid), with the counts their per-CPU slots still hold added
 * (struct proc_slot, bpf/state.bpf.h proc_counters()).
 */
#ifndef MMSCOPE_PROC_TABLE_H
#define MMSCOPE_PROC_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/mmscope.h"

struct session;
struct bpf_map;

/*
 * The rows of rows_map as an array of *n elements of elem_size bytes: each the tgid (a
 * uint32_t) at offset 0 and the BPF row at value_off, with what slots_map holds for it on
 * every CPU added. Unsorted; NULL with *n 0 when there is none. Out of memory or a failed
 * read of the slots is said on stderr (then the rows come without what was pending).
 * Caller frees.
 */
void *proc_table_read(struct session *s, const struct bpf_map *rows_map,
		      const struct bpf_map *slots_map, size_t elem_size, size_t value_off, int *n);

/*
 * The rows of processes gone, taken out of the BPF table during the run so that it keeps room
 * for the processes to come (a heavy one starting late gets its row): the max heaviest kept
 * (a min-heap by faults), the rest added up in other, the [other] row's share. Only for the
 * faults table (struct proc_faults rows).
 */
struct proc_fold_row {
	uint32_t tgid;
	struct proc_faults f;
};

struct proc_fold {
	struct proc_fold_row *rows;
	int n, max;
	struct proc_faults other;
	uint64_t folded;  /* processes taken out */
	bool unsupported; /* the kernel cannot take a row out atomically: no sweep */
};

int proc_fold_init(struct proc_fold *pf, int max); /* 0 or -ENOMEM */
/* Keep row if it is among the max heaviest so far (by user + kernel faults: a min-heap, the
 * lightest at [0]); what leaves or never enters is added to other. */
void proc_fold_keep(struct proc_fold *pf, const struct proc_fold_row *row);
void proc_fold_free(struct proc_fold *pf);
/*
 * Take the rows of processes that no longer exist, and whose counts no longer pend in a CPU's
 * slot (slots_map, ncpus CPUs), out of rows_map (the faults table) into pf. 0, or -errno when
 * the kernel has no atomic lookup-and-delete for hash maps (before v5.14): then the table is
 * left as it is from then on.
 */
int proc_fold_sweep(struct proc_fold *pf, const struct bpf_map *rows_map,
		    const struct bpf_map *slots_map, int ncpus);

struct proc_row {
	uint32_t tgid;
	struct proc_faults f;
};

/* Per-process rows of the faults table, with those of the processes gone that the run kept
 * (proc_fold_sweep()), sorted by faults, descending; *n rows, and in *other the remainder
 * row's counts ([other]: processes the table had no room for; zeros where there is none).
 * Caller frees. */
struct proc_row *read_procs(struct session *s, int *n, struct proc_row *other);

/* The per-process tables, in the order proc_tables_pass() gives them. */
enum proc_table_id {
	PROC_TABLE_FAULTS, /* struct proc_faults rows */
	PROC_TABLE_TLB,	   /* struct tlb_proc rows */
	PROC_TABLE_SWITCH, /* struct switch_proc rows */
	PROC_TABLES,
};

/*
 * For a reader that keeps its own copy of the per-process tables (mmscope serve --labels):
 * row[table]() for every row of each table, as it is now. The rows of processes that no
 * longer exist are read once more (final), deleted from every table so that the tables keep
 * room for the processes to come, and then handed to forget().
 */
void proc_tables_pass(struct session *s,
		      void (*const row[PROC_TABLES])(uint32_t tgid, const void *value),
		      void (*forget)(uint32_t tgid));

#endif
