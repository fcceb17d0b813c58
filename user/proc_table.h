/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading the per-process tables the BPF side keeps (procs, tlb_procs, switch_procs: rows of
 * the comm and counters by tgid), with the counts their per-CPU slots still hold added
 * (struct proc_slot, bpf/state.bpf.h proc_counters()).
 */
#ifndef MMSCOPE_PROC_TABLE_H
#define MMSCOPE_PROC_TABLE_H

#include <stddef.h>

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

#endif
