/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stacks by id, in userspace: each new stack a CPU sees goes to userspace once, in a
 * REC_KERNEL_STACK or REC_USER_STACK record (bpf/state.bpf.h stack_send()); the folded
 * records name stacks by these ids. Copies of up to STACK_TABLE_MAX stacks; stacks beyond
 * are counted, and their events show no frames.
 */
#ifndef MMSCOPE_STACK_TABLE_H
#define MMSCOPE_STACK_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/keyed_table.h"
#include "bpf/mmscope.h"

/* 2^18 stacks: up to ~190 MB at the deepest user stacks, ~80 MB at typical ones. */
#define STACK_TABLE_MAX (1u << 18)

struct stack_table {
	struct keyed_table t; /* struct stack_entry by id; set up by the first add */
	uint64_t dropped;     /* stacks there was no room for */
};

struct stack_entry {
	uint64_t id; /* a content hash with the low bit set; 0 is "not captured" */
	void *stack; /* struct kernel_stack or user_stack, its nr frames only */
};

/* Add a copy of the size bytes at stack under id, unless id is there already. 0, or -1 when
 * it was dropped (counted). */
int stacks_add(struct stack_table *t, uint64_t id, const void *stack, size_t size);
/* The stack stored under id, or NULL. */
const void *stacks_find(const struct stack_table *t, uint64_t id);
void stacks_free(struct stack_table *t);

/*
 * Folded-stack counts by key: what the BPF per-CPU slots give up (REC_FOLDED records,
 * bpf/state.bpf.h folded_add()) and, once the hooks are detached, the slots still held. Up
 * to FOLDED_TABLE_MAX records; the events of records beyond are counted lost.
 */
#define FOLDED_TABLE_MAX (1u << 20)

struct folded_entry {
	struct folded_key key;
	struct folded_value v;
};

struct folded_table {
	struct keyed_table t; /* struct folded_entry by key; set up by the first add */
	uint64_t lost;	      /* events of records there was no room for */
};

void folded_table_add(struct folded_table *t, const struct folded_key *key,
		      const struct folded_value *v);
void folded_table_free(struct folded_table *t);

#endif
