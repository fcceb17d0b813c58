// SPDX-License-Identifier: GPL-2.0
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>

#include "loc_table.h"

static size_t key_hash(const struct fault_location_key *k)
{
	uint64_t h = (k->ip ^ (k->mm >> 6) ^ ((uint64_t)k->tgid << 40) ^ k->kernel) *
		     0x9e3779b97f4a7c15ULL;

	return (size_t)(h ^ (h >> 29));
}

static struct location_slot *find(struct location_slot *e, size_t cap,
				  const struct fault_location_key *key)
{
	size_t i = key_hash(key) & (cap - 1);

	while (e[i].loc.count && memcmp(&e[i].key, key, sizeof(*key)) != 0)
		i = (i + 1) & (cap - 1);
	return &e[i];
}

/* Twice the entries: the table stays under 3/4 full, so a probe always ends. */
static int grow(struct location_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	struct location_slot *e = calloc(cap, sizeof(*e));

	if (!e)
		return -1;
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].loc.count)
			*find(e, cap, &t->e[i].key) = t->e[i];
	free(t->e);
	t->e = e;
	t->cap = cap;
	return 0;
}

void locations_add(struct location_table *t, const struct location_slot *in)
{
	bool room = t->n < LOCATION_TABLE_MAX;
	struct location_slot *s;

	if (!in->loc.count)
		return;
	if (room && (t->n + 1) * 4 > t->cap * 3 && grow(t))
		room = false;
	s = t->cap ? find(t->e, t->cap, &in->key) : NULL;
	if (!s || (!s->loc.count && !room)) {
		t->lost += in->loc.count; /* full: only locations already there are counted */
		return;
	}
	if (!s->loc.count) {
		*s = *in;
		t->n++;
		return;
	}
	/* The same instruction in the same address space: a build ID read since replaces a
	 * raw address. */
	if (s->loc.status != BPF_STACK_BUILD_ID_VALID &&
	    in->loc.status == BPF_STACK_BUILD_ID_VALID) {
		uint64_t count = s->loc.count;

		s->loc = in->loc;
		s->loc.count = count;
	}
	s->loc.count += in->loc.count;
}

void locations_free(struct location_table *t)
{
	free(t->e);
	memset(t, 0, sizeof(*t));
}
