// SPDX-License-Identifier: GPL-2.0
/* The userspace table of stacks by id: one copy per id (the first), lookups through growth,
 * and the cap (stacks beyond it counted as dropped, never stored half). */
#include <linux/bpf.h>
#include <stdlib.h>

#include "test.h"
#include "core/stack_table.h"
#include "bpf/mmscope.h"

static void copies_by_id(void)
{
	struct stack_table t = {0};
	struct kernel_stack a = {.nr = 2, .ip = {0xffffffff81000010, 0xffffffff81000020}};
	struct kernel_stack b = {.nr = 1, .ip = {0xffffffff81000030}};
	const struct kernel_stack *k;

	EXPECT_EQ_U64(stacks_add(&t, 0x11, &a, 8 + 2 * 8), 0);
	/* The same id again (another CPU sent it too): the first copy stays. */
	EXPECT_EQ_U64(stacks_add(&t, 0x11, &b, 8 + 1 * 8), 0);
	a.ip[0] = 0; /* the table holds a copy, not the caller's buffer */
	k = stacks_find(&t, 0x11);
	EXPECT(k != NULL);
	if (k) {
		EXPECT_EQ_U64(k->nr, 2);
		EXPECT_EQ_U64(k->ip[0], 0xffffffff81000010);
		EXPECT_EQ_U64(k->ip[1], 0xffffffff81000020);
	}
	EXPECT(stacks_find(&t, 0x13) == NULL);
	/* Id 0 is "not captured": never stored, never found. */
	EXPECT(stacks_add(&t, 0, &b, 16) < 0);
	EXPECT(stacks_find(&t, 0) == NULL);
	EXPECT_EQ_U64(t.t.n, 1);
	stacks_free(&t);
	EXPECT(t.t.e == NULL && t.t.n == 0 && stacks_find(&t, 0x11) == NULL);
}

static void grows_then_caps(void)
{
	struct stack_table t = {0};
	uint64_t found = 0;

	/* Ids that differ in their high bits only, and in their low bits only. */
	for (uint64_t i = 0; i < STACK_TABLE_MAX + 10; i++) {
		uint64_t id = (i & 1) ? (i << 40) | 1 : (i << 1) | 1;
		__u64 st[2] = {1, id};

		stacks_add(&t, id, st, sizeof(st));
	}
	EXPECT_EQ_U64(t.t.n, STACK_TABLE_MAX);
	EXPECT_EQ_U64(t.dropped, 10);
	for (uint64_t i = 0; i < STACK_TABLE_MAX; i++) {
		uint64_t id = (i & 1) ? (i << 40) | 1 : (i << 1) | 1;
		const __u64 *st = stacks_find(&t, id);

		found += st && st[1] == id;
	}
	EXPECT_EQ_U64(found, STACK_TABLE_MAX);
	/* Full: a known id is still no drop. */
	EXPECT_EQ_U64(stacks_add(&t, 1, &found, sizeof(found)), 0);
	EXPECT_EQ_U64(t.dropped, 10);
	stacks_free(&t);
}

TEST_MAIN(T(copies_by_id), T(grows_then_caps))
