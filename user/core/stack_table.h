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

#include "core/mmap_log.h"
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
 *
 * A host where short processes come and go (builds, scripts) gives each its own records of
 * the same few stacks: they filled the table in a minute and took mmscope's memory with them.
 * So, whenever the table has doubled since the last look, the records of processes gone
 * (kill(tgid, 0): ESRCH) are merged by command and stacks under tgid 0. A merged record
 * keeps one of its processes in sym_tgid, whose recorded mappings name its user frames: a
 * stack's id is a hash of its frames, and equal raw addresses in processes of one command
 * are the same code.
 */
#define FOLDED_TABLE_MAX (1u << 20)

struct folded_entry {
	struct folded_key key;
	struct folded_value v;
	uint32_t sym_tgid; /* key.tgid 0 (processes gone, merged): one of them */
};

struct folded_table {
	struct keyed_table t;	     /* struct folded_entry by key; set up by the first add */
	uint64_t lost;		     /* events of records there was no room for */
	size_t next_merge;	     /* records at which processes gone are next merged */
	uint64_t merged;	     /* records of processes gone merged into others */
	bool (*gone)(uint32_t tgid); /* NULL: kill(tgid, 0) says ESRCH (tests set their own) */
};

void folded_table_add(struct folded_table *t, const struct folded_key *key,
		      const struct folded_value *v);
/* Merge the records of processes gone (see above): the number of records that went. */
size_t folded_table_merge_gone(struct folded_table *t);
void folded_table_free(struct folded_table *t);
/* The user frames of the records' stacks held as raw addresses of images the mmap records
 * give (LOC_MMAP_RECORDS), settled in place as (build ID, offset) where to_code() knows them
 * (see loc_table.h); unsettled(tgid) for each record whose stack keeps one: its process's
 * records are still needed to name it. */
void folded_settle_stacks(const struct folded_table *t, struct stack_table *ustacks,
			  to_code_fn to_code, void *arg, void (*unsettled)(uint32_t tgid, void *a),
			  void *a);
/* kill(tgid, 0) says ESRCH: the process is gone. */
bool tgid_gone(uint32_t tgid);

#endif
