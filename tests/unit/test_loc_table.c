// SPDX-License-Identifier: GPL-2.0
/* The userspace table of fault locations: counts added by key, build IDs replacing raw
 * addresses, growth, and the lighter half given up when full (counted, never dropped
 * silently). */
#include <linux/bpf.h>
#include <stdlib.h>

#include "test.h"
#include "core/loc_table.h"

static struct location_slot slot(__u32 tgid, __u64 ip, __u64 count, __u32 status)
{
	struct location_slot s = {.key = {.tgid = tgid, .mm = 0x1000, .ip = ip}};

	s.loc.count = count;
	s.loc.status = status;
	s.loc.offset_or_ip = ip;
	return s;
}

static const struct location_slot *find_key(const struct location_table *t, __u32 tgid, __u64 ip)
{
	for (size_t i = 0; i < t->t.cap; i++) {
		const struct location_slot *e = ktable_at(&t->t, i);

		if (e && e->key.tgid == tgid && e->key.ip == ip)
			return e;
	}
	return NULL;
}

static void adds_by_key(void)
{
	struct location_table t = {0};
	struct location_slot a = slot(1, 0x400000, 3, BPF_STACK_BUILD_ID_IP);
	struct location_slot b = slot(1, 0x400000, 4, BPF_STACK_BUILD_ID_VALID);
	struct location_slot c = slot(2, 0x400000, 5, BPF_STACK_BUILD_ID_IP);
	struct location_slot empty = slot(9, 9, 0, 0);
	const struct location_slot *e;

	b.loc.offset_or_ip = 0x1234;
	locations_add(&t, &a);
	locations_add(&t, &b); /* same key: counts add, the build ID replaces the raw address */
	locations_add(&t, &c); /* another process: its own entry */
	locations_add(&t, &a); /* a raw address never replaces a build ID */
	locations_add(&t, &empty);
	EXPECT_EQ_U64(t.t.n, 2);
	e = find_key(&t, 1, 0x400000);
	EXPECT(e != NULL);
	if (e) {
		EXPECT_EQ_U64(e->loc.count, 10);
		EXPECT_EQ_U64(e->loc.status, BPF_STACK_BUILD_ID_VALID);
		EXPECT_EQ_U64(e->loc.offset_or_ip, 0x1234);
	}
	e = find_key(&t, 2, 0x400000);
	EXPECT(e != NULL && e->loc.count == 5);
	EXPECT(find_key(&t, 9, 9) == NULL);
	EXPECT_EQ_U64(t.lost, 0);
	locations_free(&t);
	EXPECT(t.t.e == NULL && t.t.n == 0);
}

static uint64_t held_total(const struct location_table *t)
{
	uint64_t held = 0;

	for (size_t i = 0; i < t->t.cap; i++) {
		const struct location_slot *e = ktable_at(&t->t, i);

		held += e ? e->loc.count : 0;
	}
	return held;
}

/*
 * Full, the table gives up its lighter half: the heavy rows stay exact, a location new after
 * that gets a row, and the rows plus lost add up to every count added.
 */
static void full_gives_up_lighter_half(void)
{
	struct location_table t = {0};
	uint64_t total = 0;
	const struct location_slot *e;

	for (__u64 i = 0; i < LOCATION_TABLE_MAX; i++) {
		/* every 16th location heavy (100), the others light (1) */
		struct location_slot s = slot(7, 0x1000 + i * 16, i % 16 ? 1 : 100, 0);

		locations_add(&t, &s);
		total += s.loc.count;
	}
	EXPECT_EQ_U64(t.t.n, LOCATION_TABLE_MAX);
	EXPECT_EQ_U64(t.lost, 0);
	EXPECT_EQ_U64(t.given_up, 0);

	/* A late location, heavy from now on: the first of it makes room. */
	for (int k = 0; k < 1000; k++) {
		struct location_slot late = slot(8, 0x2000, 3, 0);

		locations_add(&t, &late);
		total += 3;
	}
	EXPECT_EQ_U64(t.given_up, LOCATION_TABLE_MAX - LOCATION_TABLE_MAX / 16);
	EXPECT_EQ_U64(t.lost, LOCATION_TABLE_MAX - LOCATION_TABLE_MAX / 16);
	EXPECT_EQ_U64(t.t.n, LOCATION_TABLE_MAX / 16 + 1);
	e = find_key(&t, 8, 0x2000);
	EXPECT(e && e->loc.count == 3000);
	e = find_key(&t, 7, 0x1000 + 32 * 16);
	EXPECT(e && e->loc.count == 100);
	EXPECT(find_key(&t, 7, 0x1000 + 16) == NULL);
	EXPECT_EQ_U64(held_total(&t) + t.lost, total);

	/* Known keys still count; a location given up and seen again starts a new row. */
	struct location_slot again = slot(7, 0x1000 + 16, 5, 0);

	locations_add(&t, &again);
	total += 5;
	e = find_key(&t, 7, 0x1000 + 16);
	EXPECT(e && e->loc.count == 5);
	EXPECT_EQ_U64(held_total(&t) + t.lost, total);
	locations_free(&t);
}

/* All rows alike (none above the median): all go, and the table keeps counting. */
static void full_of_equals_starts_over(void)
{
	struct location_table t = {0};
	uint64_t total = 0;

	for (__u64 i = 0; i < LOCATION_TABLE_MAX + 100; i++) {
		struct location_slot s = slot(7, 0x1000 + i * 16, 2, BPF_STACK_BUILD_ID_IP);

		locations_add(&t, &s);
		total += 2;
	}
	EXPECT_EQ_U64(t.t.n, 100);
	EXPECT_EQ_U64(t.lost, 2ull * LOCATION_TABLE_MAX);
	EXPECT_EQ_U64(held_total(&t) + t.lost, total);
	locations_free(&t);
}

TEST_MAIN(T(adds_by_key), T(full_gives_up_lighter_half), T(full_of_equals_starts_over))
