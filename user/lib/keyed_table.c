// SPDX-License-Identifier: GPL-2.0
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/keyed_table.h"

static size_t key_hash(const void *key, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ULL, w;

	for (size_t i = 0; i < size; i += sizeof(w)) {
		memcpy(&w, (const unsigned char *)key + i, sizeof(w));
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return (size_t)h;
}

/* The place of key in e: its entry, or the free place where it would go. */
static size_t place(const struct keyed_table *t, const unsigned char *e, const unsigned char *used,
		    size_t cap, const void *key)
{
	size_t i = key_hash(key, t->key_size) & (cap - 1);

	while (used[i] && memcmp(e + i * t->entry_size, key, t->key_size) != 0)
		i = (i + 1) & (cap - 1);
	return i;
}

/* Twice the places: the table stays under 3/4 full, so a probe always ends. */
static int grow(struct keyed_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	unsigned char *e = calloc(cap, t->entry_size), *used = calloc(cap, 1);

	if (!e || !used) {
		free(e);
		free(used);
		return -1;
	}
	for (size_t i = 0; t->e && i < t->cap; i++) {
		size_t j;

		if (!t->used[i])
			continue;
		j = place(t, e, used, cap, t->e + i * t->entry_size);
		memcpy(e + j * t->entry_size, t->e + i * t->entry_size, t->entry_size);
		used[j] = 1;
	}
	free(t->e);
	free(t->used);
	t->e = e;
	t->used = used;
	t->cap = cap;
	return 0;
}

void *ktable_get(struct keyed_table *t, const void *key, bool *created)
{
	unsigned char *entry = ktable_find(t, key);
	size_t i;

	*created = false;
	if (entry)
		return entry;
	if (t->n >= t->max || ((t->n + 1) * 4 > t->cap * 3 && grow(t)) || !t->e)
		return NULL;
	i = place(t, t->e, t->used, t->cap, key);
	entry = t->e + i * t->entry_size;
	memset(entry, 0, t->entry_size);
	memcpy(entry, key, t->key_size);
	t->used[i] = 1;
	t->n++;
	*created = true;
	return entry;
}

void *ktable_find(const struct keyed_table *t, const void *key)
{
	size_t i;

	if (!t->cap)
		return NULL;
	i = place(t, t->e, t->used, t->cap, key);
	return t->used[i] ? t->e + i * t->entry_size : NULL;
}

void *ktable_at(const struct keyed_table *t, size_t i)
{
	return i < t->cap && t->used[i] ? t->e + i * t->entry_size : NULL;
}

/*
 * Open addressing has no delete: a place freed in the middle of a probe sequence would hide the
 * keys placed after it. So the kept entries are placed again, in place: fresh arrays would be
 * fresh pages, and a host-wide run that prunes its tables every few seconds would fault on
 * each of them (mmscope's own faults, issue 26).
 *
 * The pass starts after a place that was free before the drops: no probe sequence crosses it.
 * From there, each kept entry moves to the first free place from its home, which is never after
 * its own. The places it skipped are before it and stay taken: a later entry only ever frees
 * its own place, after this one.
 */
size_t ktable_prune(struct keyed_table *t, bool (*keep)(const void *entry, void *arg),
		    void (*drop)(const void *entry, void *arg), void *arg)
{
	size_t dropped = 0, start = 0;

	if (!t->cap || t->n >= t->cap)
		return 0;
	while (t->used[start])
		start++;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->used[i] || keep(t->e + i * t->entry_size, arg))
			continue;
		if (drop)
			drop(t->e + i * t->entry_size, arg);
		t->used[i] = 0;
		dropped++;
	}
	for (size_t k = 1; dropped && k < t->cap; k++) {
		size_t i = (start + k) & (t->cap - 1), j;

		if (!t->used[i])
			continue;
		t->used[i] = 0;
		j = place(t, t->e, t->used, t->cap, t->e + i * t->entry_size);
		if (j != i)
			memcpy(t->e + j * t->entry_size, t->e + i * t->entry_size, t->entry_size);
		t->used[j] = 1;
	}
	t->n -= dropped;
	return dropped;
}

void ktable_free(struct keyed_table *t)
{
	free(t->e);
	free(t->used);
	t->e = t->used = NULL;
	t->cap = t->n = 0;
}
