/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tests of the chunk arrays' ranges (user/core/extent.c): first-fit allocation, a range freed
 * held until its grace period ends (never handed out before: a BPF walk may still read it),
 * then merged with its free neighbours, and the high-water mark lowered when the last ranges
 * come back. The oracle is a shadow array of owners, one per element, checked after each step:
 * no element is given twice, and what is counted used is what the shadow holds.
 */
#include "test.h"
#include "core/extent.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#define CAP   1000
#define GRACE 100

static int owner[CAP]; /* 0: free; -1: held; else the range's id */

static void mark(uint32_t start, uint32_t len, int id, int expect)
{
	for (uint32_t i = start; i < start + len; i++) {
		EXPECT(owner[i] == expect);
		owner[i] = id;
	}
}

static uint64_t shadow_used(void)
{
	uint64_t n = 0;

	for (int i = 0; i < CAP; i++)
		n += owner[i] != 0;
	return n;
}

static void test_alloc_free_grace(void)
{
	struct extent_pool p;
	uint32_t a, b, c, d;

	memset(owner, 0, sizeof(owner));
	extent_pool_init(&p, CAP);
	EXPECT_EQ_U64(extent_alloc(&p, 400, &a), 0);
	mark(a, 400, 1, 0);
	EXPECT_EQ_U64(extent_alloc(&p, 300, &b), 0);
	mark(b, 300, 2, 0);
	EXPECT_EQ_U64(extent_alloc(&p, 200, &c), 0);
	mark(c, 200, 3, 0);
	EXPECT(!extent_fits(&p, 101));
	EXPECT_EQ_U64(extent_alloc(&p, 101, &d), (uint64_t)-ENOSPC);
	EXPECT(extent_fits(&p, 0));

	/* Freed at time 10: held, not given out before 10 + GRACE. */
	EXPECT_EQ_U64(extent_free(&p, b, 300, 10), 0);
	mark(b, 300, -1, 2);
	EXPECT_EQ_U64(extent_held(&p), 300);
	EXPECT_EQ_U64(extent_used(&p), shadow_used());
	EXPECT(!extent_fits(&p, 250));
	extent_release(&p, 10 + GRACE - 1, GRACE);
	EXPECT(!extent_fits(&p, 250));
	EXPECT_EQ_U64(extent_held(&p), 300);
	extent_release(&p, 10 + GRACE, GRACE);
	EXPECT_EQ_U64(extent_held(&p), 0);
	mark(b, 300, 0, -1);
	EXPECT_EQ_U64(extent_used(&p), shadow_used());

	/* First fit: the hole left by b, not the 100 at the end. */
	EXPECT_EQ_U64(extent_alloc(&p, 250, &d), 0);
	EXPECT_EQ_U64(d, b);
	mark(d, 250, 4, 0);
	EXPECT_EQ_U64(extent_used(&p), shadow_used());
	extent_pool_fini(&p);
}

static void test_merge_and_mark(void)
{
	struct extent_pool p;
	uint32_t s[5], big;

	memset(owner, 0, sizeof(owner));
	extent_pool_init(&p, CAP);
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ_U64(extent_alloc(&p, 200, &s[i]), 0);
		mark(s[i], 200, i + 1, 0);
	}
	EXPECT(!extent_fits(&p, 1));
	/* Free 1 and 3, then 2: the three merge into one range of 600. */
	extent_free(&p, s[1], 200, 0);
	extent_free(&p, s[3], 200, 0);
	extent_release(&p, GRACE, GRACE);
	EXPECT(extent_fits(&p, 200));
	EXPECT(!extent_fits(&p, 201));
	extent_free(&p, s[2], 200, GRACE);
	extent_release(&p, 2 * GRACE, GRACE);
	EXPECT(extent_fits(&p, 600));
	EXPECT(!extent_fits(&p, 601));
	EXPECT_EQ_U64(extent_used(&p), 400);
	/* The last range back lowers the mark: 4's 200 and the 600 before it make 800 at the end.
	 */
	extent_free(&p, s[4], 200, 0);
	extent_release(&p, GRACE, GRACE);
	EXPECT_EQ_U64(p.end, 200);
	EXPECT_EQ_U64(p.nfree, 0);
	EXPECT_EQ_U64(extent_alloc(&p, 800, &big), 0);
	EXPECT_EQ_U64(big, 200);
	EXPECT_EQ_U64(extent_used(&p), CAP);
	extent_pool_fini(&p);
}

/* Random allocations and frees against the shadow: nothing given twice, nothing held reused
 * early, the used count exact. */
static void test_random(void)
{
	struct extent_pool p;
	struct {
		uint32_t start, len;
		uint64_t freed; /* 0: allocated */
		bool live;
	} r[200];
	size_t nr = 0;
	uint64_t now = 1;

	memset(owner, 0, sizeof(owner));
	memset(r, 0, sizeof(r));
	srand(24);
	extent_pool_init(&p, CAP);
	for (int step = 0; step < 5000; step++, now += 7) {
		int op = rand() % 3;

		if (op == 0 && nr < 200) {
			uint32_t len = 1 + (uint32_t)(rand() % 120), st;
			bool fits = extent_fits(&p, len);
			int err = extent_alloc(&p, len, &st);

			EXPECT_EQ_U64(err == 0, fits);
			if (!err) {
				mark(st, len, (int)nr + 1, 0);
				r[nr].start = st;
				r[nr].len = len;
				r[nr].freed = 0; /* the slot may have been a range compacted away */
				r[nr].live = true;
				nr++;
			}
		} else if (op == 1 && nr) {
			size_t i = (size_t)rand() % nr;

			if (r[i].live && !r[i].freed) {
				extent_free(&p, r[i].start, r[i].len, now);
				mark(r[i].start, r[i].len, -1, (int)i + 1);
				r[i].freed = now;
			}
		} else {
			extent_release(&p, now, GRACE);
			for (size_t i = 0; i < nr; i++)
				if (r[i].live && r[i].freed && now - r[i].freed >= GRACE) {
					mark(r[i].start, r[i].len, 0, -1);
					r[i].live = false;
				}
		}
		EXPECT_EQ_U64(extent_used(&p), shadow_used());
		/* Compact the record list now and then: ids are indexes, so relabel. */
		if (nr == 200) {
			size_t k = 0;

			for (size_t i = 0; i < nr; i++) {
				if (!r[i].live)
					continue;
				r[k] = r[i];
				if (!r[k].freed)
					mark(r[k].start, r[k].len, (int)k + 1, (int)i + 1);
				k++;
			}
			nr = k;
		}
		if (t_case_failures)
			break;
	}
	extent_pool_fini(&p);
}

TEST_MAIN(T(test_alloc_free_grace), T(test_merge_and_mark), T(test_random))
