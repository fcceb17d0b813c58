// SPDX-License-Identifier: GPL-2.0
/* The rows of processes gone that a run keeps (user/core/proc_table.c proc_fold_keep()): the
 * heaviest max of them, whatever their order, and every count of the others in other. */
#include <stdlib.h>

#include "test.h"
#include "core/proc_table.h"

static struct proc_fold_row row(uint32_t tgid, uint64_t user, uint64_t minor)
{
	struct proc_fold_row r = {.tgid = tgid};

	r.f.user = user;
	r.f.kernel = 1;
	r.f.minor = minor;
	return r;
}

static uint64_t kept_sum(const struct proc_fold *pf, int counter)
{
	uint64_t s = 0;

	for (int i = 0; i < pf->n; i++)
		s += pf->rows[i].f.n[counter];
	return s;
}

static void keeps_heaviest(void)
{
	struct proc_fold pf;
	uint64_t total_user = 0, total_minor = 0;
	bool kept[1000] = {0};

	EXPECT_EQ_U64(proc_fold_init(&pf, 10), 0);
	/* 1000 rows of weights 1..1000 (+ 1 kernel), in a scrambled order (7 generates Z/1000). */
	for (uint32_t i = 0; i < 1000; i++) {
		uint32_t w = (i * 7) % 1000 + 1;
		struct proc_fold_row r = row(w, w, 2 * w);

		proc_fold_keep(&pf, &r);
		total_user += w;
		total_minor += 2 * w;
	}
	EXPECT_EQ_U64(pf.n, 10);
	for (int i = 0; i < pf.n; i++)
		if (pf.rows[i].tgid >= 1 && pf.rows[i].tgid <= 1000)
			kept[pf.rows[i].tgid - 1] = true;
	for (int w = 991; w <= 1000; w++)
		EXPECT(kept[w - 1]);
	EXPECT_EQ_U64(kept_sum(&pf, PC_USER) + pf.other.user, total_user);
	EXPECT_EQ_U64(kept_sum(&pf, PC_MINOR) + pf.other.minor, total_minor);
	EXPECT_EQ_U64(kept_sum(&pf, PC_KERNEL) + pf.other.kernel, 1000);
	proc_fold_free(&pf);
}

static void light_ones_to_other(void)
{
	struct proc_fold pf;
	struct proc_fold_row big = row(1, 100, 0), small = row(2, 3, 0), tie = row(3, 100, 0);

	EXPECT_EQ_U64(proc_fold_init(&pf, 1), 0);
	proc_fold_keep(&pf, &big);
	proc_fold_keep(&pf, &small); /* lighter than the lightest kept: other */
	proc_fold_keep(&pf, &tie);   /* as heavy: the one kept first stays */
	EXPECT_EQ_U64(pf.n, 1);
	EXPECT_EQ_U64(pf.rows[0].tgid, 1);
	EXPECT_EQ_U64(pf.other.user, 103);
	proc_fold_free(&pf);
}

TEST_MAIN(T(keeps_heaviest), T(light_ones_to_other))
