// SPDX-License-Identifier: GPL-2.0
/* The userspace table of fault locations: counts added by key, one row by code for the
 * processes that run it, raw addresses settled as code, growth, and the lighter half given up
 * when full (counted, never dropped silently). */
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>

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
	struct location_slot c = slot(2, 0x400000, 5, BPF_STACK_BUILD_ID_IP);
	struct location_slot empty = slot(9, 9, 0, 0);
	const struct location_slot *e;

	locations_add(&t, &a);
	locations_add(&t, &c); /* another process: its own entry */
	locations_add(&t, &a); /* same key: counts add */
	locations_add(&t, &empty);
	EXPECT_EQ_U64(t.t.n, 2);
	e = find_key(&t, 1, 0x400000);
	EXPECT(e && e->loc.count == 6 && e->loc.status == BPF_STACK_BUILD_ID_IP);
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

static struct location_slot code_slot(__u32 tgid, __u64 ip, __u64 count, unsigned char id,
				      __u64 offset)
{
	struct location_slot s = slot(tgid, ip, count, BPF_STACK_BUILD_ID_VALID);

	memset(s.loc.build_id, id, sizeof(s.loc.build_id));
	s.loc.offset_or_ip = offset;
	return s;
}

/* The row of code (build ID byte id repeated, offset), or NULL. */
static const struct location_slot *find_code(const struct location_table *t, unsigned char id,
					     __u64 offset)
{
	for (size_t i = 0; i < t->t.cap; i++) {
		const struct location_slot *e = ktable_at(&t->t, i);

		if (e && e->key.kernel == LOC_KEY_BY_CODE && e->loc.offset_or_ip == offset &&
		    e->loc.build_id[0] == id && e->loc.build_id[19] == id)
			return e;
	}
	return NULL;
}

/*
 * Two processes (other address spaces, other addresses) at one instruction of one file: one
 * row by code, whatever their keys; another offset or another file is another row.
 */
static void same_code_one_row(void)
{
	struct location_table t = {0};
	struct location_slot a = code_slot(100, 0x555500001234, 7, 0xab, 0x1234);
	struct location_slot b = code_slot(200, 0x566600001234, 5, 0xab, 0x1234);
	struct location_slot other_off = code_slot(200, 0x566600001240, 2, 0xab, 0x1240);
	struct location_slot other_file = code_slot(300, 0x555500001234, 1, 0xcd, 0x1234);
	const struct location_slot *e;

	b.key.mm = 0x2000;
	locations_add(&t, &a);
	locations_add(&t, &b);
	locations_add(&t, &other_off);
	locations_add(&t, &other_file);
	EXPECT_EQ_U64(t.t.n, 3);
	e = find_code(&t, 0xab, 0x1234);
	EXPECT(e && e->loc.count == 12 && e->key.tgid == 0 &&
	       e->loc.status == BPF_STACK_BUILD_ID_VALID);
	EXPECT(find_code(&t, 0xab, 0x1240) && find_code(&t, 0xab, 0x1240)->loc.count == 2);
	EXPECT(find_code(&t, 0xcd, 0x1234) && find_code(&t, 0xcd, 0x1234)->loc.count == 1);
	EXPECT(find_key(&t, 100, 0x555500001234) == NULL);
	locations_free(&t);
}

/* A stand-in for the mmap log: images of tgid 1 and 2 at 0x7000 map build ID 0xab from file
 * offset 0x1000 (ip 0x7000 + x is offset 0x1000 + x); tgid 3's records are unknown. */
static bool fake_to_code(void *arg, uint32_t tgid, const unsigned char *image, uint64_t ip,
			 unsigned char *build_id, uint64_t *offset)
{
	(void)image;
	if (arg)
		(*(int *)arg)++; /* the calls, counted */
	if (tgid == 3 || ip < 0x7000)
		return false;
	memset(build_id, 0xab, MMSCOPE_BUILD_ID_SIZE);
	*offset = 0x1000 + (ip - 0x7000);
	return true;
}

static struct location_slot raw_slot(__u32 tgid, __u64 ip, __u64 count)
{
	return slot(tgid, ip, count, LOC_MMAP_RECORDS);
}

static void count_raw(uint32_t tgid, void *arg)
{
	(void)tgid;
	(*(int *)arg)++;
}

/*
 * Settling: the raw rows the records know become rows by code at the right offsets, merged with
 * the rows of that code already there; the others stay, counted, and are not asked for again;
 * every count is kept.
 */
static void settle_raw_rows(void)
{
	int calls = 0;
	struct location_table t = {.to_code = fake_to_code, .to_code_arg = &calls};
	struct location_slot known = code_slot(9, 0x9999, 4, 0xab, 0x1010);
	struct location_slot r1 = raw_slot(1, 0x7010, 3), r2 = raw_slot(2, 0x7010, 5);
	struct location_slot r3 = raw_slot(2, 0x7020, 1), unknown = raw_slot(3, 0x7010, 6);
	struct location_slot kernel = slot(1, 0x7010, 2, 0);
	const struct location_slot *e;
	int raw = 0;

	kernel.key.kernel = 1;
	locations_add(&t, &known);
	locations_add(&t, &r1);
	locations_add(&t, &r2);
	locations_add(&t, &r3);
	locations_add(&t, &unknown);
	locations_add(&t, &kernel);
	EXPECT_EQ_U64(t.t.n, 6);
	/* three raw rows into rows of 0x1010 and 0x1020 */
	EXPECT_EQ_U64(locations_settle(&t, true), 2);
	EXPECT_EQ_U64(t.t.n, 4);
	e = find_code(&t, 0xab, 0x1010);
	EXPECT(e && e->loc.count == 12);
	e = find_code(&t, 0xab, 0x1020);
	EXPECT(e && e->loc.count == 1);
	e = find_key(&t, 3, 0x7010);
	EXPECT(e && e->loc.count == 6 && e->loc.status == LOC_MMAP_RECORDS);
	locations_each_raw(&t, count_raw, &raw);
	EXPECT_EQ_U64(raw, 1);
	EXPECT_EQ_U64(held_total(&t), 4 + 3 + 5 + 1 + 6 + 2);
	/* Not settled with every record read: never will be, not asked again. */
	EXPECT_EQ_U64(calls, 4);
	EXPECT_EQ_U64(locations_settle(&t, true), 0);
	EXPECT_EQ_U64(calls, 4);
	locations_free(&t);
}

/* Full of raw rows the records know: settling makes the room, nothing is given up. */
static void full_settles_first(void)
{
	struct location_table t = {.to_code = fake_to_code};
	uint64_t total = 0;

	/* the same 16 instructions in many processes, each its own row until settled */
	for (__u32 i = 0; i < LOCATION_TABLE_MAX + 100; i++) {
		struct location_slot s = raw_slot(i % 2 ? 1 : 2, 0x7000 + (i % 16) * 4, 1);

		s.key.mm = i; /* another address space each */
		locations_add(&t, &s);
		total++;
	}
	EXPECT_EQ_U64(t.given_up, 0);
	EXPECT_EQ_U64(t.lost, 0);
	EXPECT(t.t.n <= 16 + 100);
	EXPECT_EQ_U64(held_total(&t), total);
	locations_free(&t);
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

TEST_MAIN(T(adds_by_key), T(same_code_one_row), T(settle_raw_rows), T(full_settles_first),
	  T(full_gives_up_lighter_half), T(full_of_equals_starts_over))
