// SPDX-License-Identifier: GPL-2.0
#include <linux/bpf.h>
#include <stdlib.h>

#include "core/loc_table.h"

_Static_assert(__builtin_offsetof(struct location_slot, key) == 0 &&
		       sizeof(struct fault_location_key) % 8 == 0,
	       "a location slot begins with its key, of whole words");

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct prune_arg {
	uint64_t median;
	uint64_t *lost;
};

static bool heavier_than_median(const void *entry, void *arg)
{
	return ((const struct location_slot *)entry)->loc.count > ((struct prune_arg *)arg)->median;
}

static void count_given_up(const void *entry, void *arg)
{
	*((struct prune_arg *)arg)->lost += ((const struct location_slot *)entry)->loc.count;
}

/*
 * The lighter half goes, at once: one sort and one pass per LOCATION_TABLE_MAX / 2 new
 * locations, not a search for the lightest row per new one. The rows kept stay exact.
 */
static void give_up_lighter_half(struct location_table *t)
{
	struct prune_arg arg = {.lost = &t->lost};
	uint64_t *counts = malloc(t->t.n * sizeof(*counts));
	size_t n = 0;

	if (!counts)
		return;
	for (size_t i = 0; i < t->t.cap; i++) {
		const struct location_slot *e = ktable_at(&t->t, i);

		if (e)
			counts[n++] = e->loc.count;
	}
	qsort(counts, n, sizeof(*counts), cmp_u64);
	arg.median = n ? counts[(n - 1) / 2] : 0;
	free(counts);
	t->given_up += ktable_prune(&t->t, heavier_than_median, count_given_up, &arg);
}

void locations_add(struct location_table *t, const struct location_slot *in)
{
	struct location_slot *s;
	bool created;

	if (!in->loc.count)
		return;
	if (!t->t.entry_size)
		t->t = KEYED_TABLE(struct location_slot, sizeof(in->key), LOCATION_TABLE_MAX);
	s = ktable_get(&t->t, &in->key, &created);
	if (!s && t->t.n >= t->t.max) {
		give_up_lighter_half(t);
		s = ktable_get(&t->t, &in->key, &created);
	}
	if (!s) {
		t->lost += in->loc.count; /* no memory for a new row */
		return;
	}
	if (created) {
		*s = *in;
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
	ktable_free(&t->t);
	t->lost = t->given_up = 0;
}
