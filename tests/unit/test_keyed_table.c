// SPDX-License-Identifier: GPL-2.0
/*
 * The open-addressing table under its users' load: keys added, found and pruned in place.
 * The oracle is a plain array of what was added and what prune dropped: after each prune,
 * every kept key is found with its value, no dropped key is, and the count matches; keys
 * added afterwards still go in. Small tables with keys hashed near their end make the probe
 * sequences wrap around, the case an in-place rehash gets wrong first.
 */
#include <stdint.h>
#include <stdlib.h>

#include "test.h"
#include "lib/keyed_table.h"

struct entry {
	uint64_t key;
	uint64_t value;
};

#define KEYS 3000

struct oracle {
	uint64_t value[KEYS]; /* 0: not in the table */
	uint64_t dropped_sum;
};

static bool keep_odd_values(const void *entry, void *arg)
{
	(void)arg;
	return ((const struct entry *)entry)->value & 1;
}

static void note_drop(const void *entry, void *arg)
{
	((struct oracle *)arg)->dropped_sum += ((const struct entry *)entry)->value;
}

static void expect_matches(const struct keyed_table *t, const struct oracle *o)
{
	size_t n = 0, found = 0, wrong = 0, ghosts = 0;

	for (uint64_t k = 0; k < KEYS; k++) {
		const struct entry *e = ktable_find(t, &k);

		n += o->value[k] != 0;
		if (o->value[k] && e && e->value == o->value[k])
			found++;
		else if (o->value[k])
			wrong++;
		else if (e)
			ghosts++;
	}
	EXPECT_EQ_U64(t->n, n);
	EXPECT_EQ_U64(found, n);
	EXPECT_EQ_U64(wrong, 0);
	EXPECT_EQ_U64(ghosts, 0);
}

static void add(struct keyed_table *t, struct oracle *o, uint64_t k, uint64_t v)
{
	bool created;
	struct entry *e = ktable_get(t, &k, &created);

	EXPECT(e != NULL);
	if (!e)
		return;
	EXPECT(created == (o->value[k] == 0));
	e->value = v;
	o->value[k] = v;
}

/* Rounds of adds and prunes over a table kept small (max entries), so it fills, wraps and
 * prunes many times: the survivors of every prune stay findable. */
static void prune_in_place_keeps_the_kept(void)
{
	static struct oracle o;
	struct keyed_table t = KEYED_TABLE(struct entry, sizeof(uint64_t), 192);
	uint64_t dropped_want = 0, seed = 12345;

	memset(&o, 0, sizeof(o));
	for (int round = 0; round < 2000; round++) {
		size_t dropped;

		while (t.n < t.max) {
			uint64_t k, v;

			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			k = (seed >> 33) % KEYS;
			v = ((seed >> 13) & 0xffff) | 2;
			if (o.value[k])
				continue;
			add(&t, &o, k, v | (seed >> 40 & 1));
		}
		dropped = 0;
		for (uint64_t k = 0; k < KEYS; k++)
			if (o.value[k] && !(o.value[k] & 1)) {
				dropped_want += o.value[k];
				o.value[k] = 0;
				dropped++;
			}
		EXPECT_EQ_U64(ktable_prune(&t, keep_odd_values, note_drop, &o), dropped);
		expect_matches(&t, &o);
		/* The kept half goes next round: make them even so the table turns over. */
		for (uint64_t k = 0; k < KEYS; k++)
			if (o.value[k] && round % 3 == 2) {
				struct entry *e = ktable_find(&t, &k);

				if (e)
					e->value &= ~1ULL;
				o.value[k] &= ~1ULL;
			}
	}
	EXPECT_EQ_U64(o.dropped_sum, dropped_want);
	ktable_free(&t);
}

/* Prune takes no memory: the arrays it works in are the table's own (a host-wide run prunes
 * every few seconds, and fresh arrays would be fresh pages to fault in). */
static void prune_keeps_the_arrays(void)
{
	static struct oracle o;
	struct keyed_table t = KEYED_TABLE(struct entry, sizeof(uint64_t), 1000);
	unsigned char *e, *used;

	memset(&o, 0, sizeof(o));
	for (uint64_t k = 0; k < 1000; k++)
		add(&t, &o, k, k | 1);
	for (uint64_t k = 0; k < 1000; k += 2) {
		struct entry *x = ktable_find(&t, &k);

		if (x)
			x->value = 2;
		o.value[k] = 0;
	}
	e = t.e;
	used = t.used;
	EXPECT_EQ_U64(ktable_prune(&t, keep_odd_values, NULL, NULL), 500);
	EXPECT(t.e == e && t.used == used);
	expect_matches(&t, &o);
	ktable_free(&t);
}

TEST_MAIN(T(prune_in_place_keeps_the_kept), T(prune_keeps_the_arrays))
