// SPDX-License-Identifier: GPL-2.0
/* The userspace table of stacks by id: one copy per id (the first), lookups through growth,
 * and the cap (stacks beyond it counted as dropped, never stored half). The folded-stack
 * counts: the records of processes gone merged by command and stacks, counts exact; raw
 * frames settled as code. */
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>

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

/* Odd tgids are gone, even ones live. */
static bool odd_gone(uint32_t tgid)
{
	return tgid & 1;
}

static struct folded_key fkey(uint32_t tgid, uint64_t ustack, const char *comm)
{
	struct folded_key k = {.tgid = tgid, .kind = 3, .user_stack = ustack, .kernel_stack = 7};

	strncpy(k.comm, comm, sizeof(k.comm));
	return k;
}

static const struct folded_entry *ffind(const struct folded_table *t, struct folded_key k)
{
	return ktable_find(&t->t, &k);
}

static void folded_merges_processes_gone(void)
{
	struct folded_table t = {.gone = odd_gone};
	struct folded_value v = {.count = 2, .latency_ns = 10};
	uint64_t total = 0, held = 0;
	const struct folded_entry *e;

	/* 3000 short processes of one command, the same two stacks each; 10 live ones too */
	for (uint32_t pid = 1; pid < 6000; pid += 2) {
		struct folded_key a = fkey(pid, 0x101, "true"), b = fkey(pid, 0x201, "true");

		folded_table_add(&t, &a, &v);
		folded_table_add(&t, &b, &v);
		total += 4;
	}
	for (uint32_t pid = 2; pid <= 20; pid += 2) {
		struct folded_key a = fkey(pid, 0x101, "true");

		folded_table_add(&t, &a, &v);
		total += 2;
	}
	/* Past FOLDED_MERGE_FIRST records the processes gone were merged: room stays. */
	EXPECT(t.merged > 0);
	folded_table_merge_gone(&t);
	e = ffind(&t, fkey(0, 0x101, "true"));
	EXPECT(e && e->v.count == 6000 && e->v.latency_ns == 30000 && (e->sym_tgid & 1));
	e = ffind(&t, fkey(0, 0x201, "true"));
	EXPECT(e && e->v.count == 6000);
	e = ffind(&t, fkey(4, 0x101, "true")); /* a live process keeps its own record */
	EXPECT(e && e->v.count == 2 && e->sym_tgid == 0);
	EXPECT(ffind(&t, fkey(5, 0x101, "true")) == NULL);
	EXPECT_EQ_U64(t.t.n, 2 + 10);
	for (size_t i = 0; i < t.t.cap; i++) {
		e = ktable_at(&t.t, i);
		held += e ? e->v.count : 0;
	}
	EXPECT_EQ_U64(held + t.lost, total);
	EXPECT_EQ_U64(t.lost, 0);
	/* Another command's stacks stay apart. */
	struct folded_key other = fkey(7, 0x101, "sh");

	folded_table_add(&t, &other, &v);
	folded_table_merge_gone(&t);
	e = ffind(&t, fkey(0, 0x101, "sh"));
	EXPECT(e && e->v.count == 2 && e->sym_tgid == 7);
	folded_table_free(&t);
}

/* A stand-in for the mmap log: process 4's image maps ip 0x7000 + x at offset 0x100 + x of
 * build ID 0xab...; nothing else is known. */
static bool fake_to_code(void *arg, uint32_t tgid, const unsigned char *image, uint64_t ip,
			 unsigned char *build_id, uint64_t *offset)
{
	(void)arg;
	(void)image;
	if (tgid != 4 || ip < 0x7000)
		return false;
	memset(build_id, 0xab, MMSCOPE_BUILD_ID_SIZE);
	*offset = 0x100 + (ip - 0x7000);
	return true;
}

static void note_tgid(uint32_t tgid, void *arg)
{
	*(uint32_t *)arg = tgid;
}

/* A record's raw frames settled in place by its process's image (a merged record's by its
 * sym_tgid); a frame not known stays raw and names the process that still needs its records. */
static void stacks_settle_in_place(void)
{
	struct stack_table st = {0};
	struct folded_table t = {0};
	struct folded_value v = {.count = 1};
	struct user_stack us = {.nr = 3};
	const struct user_stack *got;
	struct folded_entry *e;
	uint32_t needs = 0;

	us.f[0] = (struct user_frame){.status = LOC_MMAP_RECORDS, .offset_or_ip = 0x7010};
	us.f[1] = (struct user_frame){.status = LOC_MMAP_RECORDS, .offset_or_ip = 0x100};
	us.f[2] = (struct user_frame){.status = BPF_STACK_BUILD_ID_VALID, .offset_or_ip = 0x42};
	stacks_add(&st, 0x11, &us, sizeof(us));
	folded_table_add(&t, &(struct folded_key){.tgid = 0, .user_stack = 0x11}, &v);
	e = ktable_find(&t.t, &(struct folded_key){.tgid = 0, .user_stack = 0x11});
	if (e)
		e->sym_tgid = 4; /* merged: named by process 4 */
	folded_settle_stacks(&t, &st, fake_to_code, NULL, note_tgid, &needs);
	got = stacks_find(&st, 0x11);
	EXPECT(got != NULL);
	if (got) {
		EXPECT_EQ_U64(got->f[0].status, BPF_STACK_BUILD_ID_VALID);
		EXPECT_EQ_U64(got->f[0].offset_or_ip, 0x110);
		EXPECT(got->f[0].build_id[0] == 0xab && got->f[0].build_id[19] == 0xab);
		EXPECT_EQ_U64(got->f[1].status, LOC_MMAP_RECORDS);
		EXPECT_EQ_U64(got->f[2].offset_or_ip, 0x42);
	}
	EXPECT_EQ_U64(needs, 4);
	stacks_free(&st);
	folded_table_free(&t);
}

TEST_MAIN(T(copies_by_id), T(grows_then_caps), T(folded_merges_processes_gone),
	  T(stacks_settle_in_place))
