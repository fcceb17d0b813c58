// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>

#include "core/mmap_settle.h"
#include "lib/util.h"

/* The processes whose records are still needed: a sorted set once built. */
struct needed {
	uint32_t *tgid;
	size_t n, cap;
	bool failed; /* no memory: forget nothing */
};

static void need(uint32_t tgid, void *arg)
{
	struct needed *s = arg;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		uint32_t *t = realloc(s->tgid, cap * sizeof(*t));

		if (!t) {
			s->failed = true;
			return;
		}
		s->tgid = t;
		s->cap = cap;
	}
	s->tgid[s->n++] = tgid;
}

/* Alive (it may fault again, at code not settled yet), or named by what is left unsettled. */
static bool keep(uint32_t tgid, void *arg)
{
	const struct needed *s = arg;

	return !tgid_gone(tgid) || bsearch(&tgid, s->tgid, s->n, sizeof(tgid), cmp_u32);
}

void mmap_settle(struct mmap_log *l, struct location_table *locs, const struct folded_table *folded,
		 struct stack_table *ustacks)
{
	struct needed s = {0};

	if (!l)
		return;
	locations_settle(locs, true);
	if (!mmap_log_nearly_full(l))
		return;
	locations_each_raw(locs, need, &s);
	if (folded && ustacks)
		folded_settle_stacks(folded, ustacks, mmap_log_to_code, l, need, &s);
	if (!s.failed) {
		qsort(s.tgid, s.n, sizeof(*s.tgid), cmp_u32);
		mmap_log_forget(l, keep, &s);
	}
	free(s.tgid);
}
