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

static uint64_t build_id_hash(const unsigned char *id)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < MMSCOPE_BUILD_ID_SIZE; i++)
		h = (h ^ id[i]) * 0x100000001b3ULL;
	return h;
}

/* The key of a kernel-mode location, or of a user one known as (build ID, offset): the
 * code's, no process's. */
static struct fault_location_key key_of(const struct location_slot *in)
{
	if (in->key.kernel)
		return (struct fault_location_key){.kernel = 1, .ip = in->key.ip};
	if (in->loc.status != BPF_STACK_BUILD_ID_VALID)
		return in->key;
	return (struct fault_location_key){.kernel = LOC_KEY_BY_CODE,
					   .mm = build_id_hash(in->loc.build_id),
					   .ip = in->loc.offset_or_ip};
}

/* in's counts into row s (created: new), or into lost when there was no row for it. */
static void count_into(struct location_table *t, struct location_slot *s, bool created,
		       const struct location_slot *in)
{
	if (!s) {
		t->lost += in->loc.count; /* no memory for a new row */
		return;
	}
	if (created) {
		s->loc = in->loc;
		return;
	}
	s->loc.count += in->loc.count;
}

/* Settling first: rows of raw addresses become rows by code, often enough room (an eighth of
 * the table, so that a full table is not walked again at the next new row); else the lighter
 * half goes. */
static void make_room(struct location_table *t)
{
	if (locations_settle(t, false) < t->t.max / 8)
		give_up_lighter_half(t);
}

void locations_add(struct location_table *t, const struct location_slot *in)
{
	struct fault_location_key key = key_of(in);
	struct location_slot *s;
	bool created;

	if (!in->loc.count)
		return;
	if (!t->t.entry_size)
		t->t = KEYED_TABLE(struct location_slot, sizeof(in->key), LOCATION_TABLE_MAX);
	s = ktable_get(&t->t, &key, &created);
	if (!s && t->t.n >= t->t.max) {
		make_room(t);
		s = ktable_get(&t->t, &key, &created);
	}
	count_into(t, s, created, in);
}

/* loc.pad of a LOC_MMAP_RECORDS row the records read cannot settle (mapped before they began:
 * in a /proc snapshot, or a record lost): named at the end as before, not tried again
 * meanwhile. */
#define LOC_UNSETTLED 1

struct settle_walk {
	struct location_table *t;
	bool records_read;
	struct location_slot *out; /* the rows settled, to add again by code */
	size_t nout, max;
};

static bool to_settle(const struct location_slot *e)
{
	return !e->key.kernel && e->loc.status == LOC_MMAP_RECORDS && e->loc.pad != LOC_UNSETTLED;
}

static bool keep_unsettled(const void *entry, void *arg)
{
	struct location_slot *e = (struct location_slot *)entry; /* the table's: marked in place */
	struct settle_walk *w = arg;
	struct location_slot *o = &w->out[w->nout];
	uint64_t offset;

	if (!to_settle(e) || w->nout == w->max)
		return true;
	if (!w->t->to_code(w->t->to_code_arg, e->key.tgid, e->loc.build_id, e->loc.offset_or_ip,
			   o->loc.build_id, &offset)) {
		if (w->records_read)
			e->loc.pad = LOC_UNSETTLED;
		return true;
	}
	o->loc.offset_or_ip = offset;
	o->loc.count = e->loc.count;
	o->loc.status = BPF_STACK_BUILD_ID_VALID;
	w->nout++;
	return false;
}

size_t locations_settle(struct location_table *t, bool records_read)
{
	struct settle_walk w = {.t = t, .records_read = records_read};
	size_t before = t->t.n;

	if (!t->to_code)
		return 0;
	for (size_t i = 0; i < t->t.cap; i++) {
		const struct location_slot *e = ktable_at(&t->t, i);

		w.max += e && to_settle(e);
	}
	if (!w.max || !(w.out = calloc(w.max, sizeof(*w.out))))
		return 0;
	ktable_prune(&t->t, keep_unsettled, NULL, &w);
	/* As many rows as went at most: always room, so added without make_room() (which
	 * settles). */
	for (size_t i = 0; i < w.nout; i++) {
		struct fault_location_key key = key_of(&w.out[i]);
		struct location_slot *s;
		bool created;

		s = ktable_get(&t->t, &key, &created);
		count_into(t, s, created, &w.out[i]);
	}
	free(w.out);
	return before - t->t.n;
}

void locations_each_raw(const struct location_table *t, void (*fn)(uint32_t tgid, void *arg),
			void *arg)
{
	for (size_t i = 0; i < t->t.cap; i++) {
		const struct location_slot *e = ktable_at(&t->t, i);

		if (e && !e->key.kernel && e->loc.status == LOC_MMAP_RECORDS)
			fn(e->key.tgid, arg);
	}
}

void locations_free(struct location_table *t)
{
	ktable_free(&t->t);
	t->lost = t->given_up = 0;
}
