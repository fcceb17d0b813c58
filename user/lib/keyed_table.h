/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fixed-size entries found by their first key_size bytes, in an open-addressing table that
 * grows to max entries: what the BPF per-CPU slots and ring records hand to userspace (fault
 * locations, stacks by id, folded-stack counts) is added up here. Full, it finds the keys it
 * has and refuses new ones; its users count what was refused, or prune it to make room.
 */
#ifndef MMSCOPE_KEYED_TABLE_H
#define MMSCOPE_KEYED_TABLE_H

#include <stdbool.h>
#include <stddef.h>

struct keyed_table {
	unsigned char *e;    /* cap entries of entry_size bytes */
	unsigned char *used; /* cap flags */
	size_t cap, n;
	size_t key_size; /* a multiple of 8: the keys are whole words */
	size_t entry_size, max;
};

#define KEYED_TABLE(type, key_bytes, max_entries)                                                  \
	((struct keyed_table){                                                                     \
		.key_size = (key_bytes), .entry_size = sizeof(type), .max = (max_entries)})

/* The entry of key, a new one (zeroed but for its key; *created set) if it had none; NULL
 * when a new one has no room. */
void *ktable_get(struct keyed_table *t, const void *key, bool *created);
/* The entry of key, or NULL. */
void *ktable_find(const struct keyed_table *t, const void *key);
/* Entry i (i < cap), or NULL when that place is free: for walking the table. */
void *ktable_at(const struct keyed_table *t, size_t i);
/* Keep the entries keep() says yes to, drop the others (drop() sees each first, when given):
 * the number dropped. In place: no memory is taken. */
size_t ktable_prune(struct keyed_table *t, bool (*keep)(const void *entry, void *arg),
		    void (*drop)(const void *entry, void *arg), void *arg);
void ktable_free(struct keyed_table *t);

#endif
