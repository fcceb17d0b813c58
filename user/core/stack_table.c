// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <linux/bpf.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/stack_table.h"
#include "lib/util.h"

int stacks_add(struct stack_table *t, uint64_t id, const void *stack, size_t size)
{
	struct stack_entry *s;
	bool created;

	if (!id)
		return -1;
	if (!t->t.entry_size)
		t->t = KEYED_TABLE(struct stack_entry, sizeof(id), STACK_TABLE_MAX);
	s = ktable_get(&t->t, &id, &created);
	if (s && !created)
		return 0; /* another CPU sent it too, or this one again after forgetting it */
	if (s)
		s->stack = malloc(size);
	if (!s || !s->stack) {
		t->dropped++;
		return -1; /* an entry without its stack is found as none */
	}
	memcpy(s->stack, stack, size);
	return 0;
}

const void *stacks_find(const struct stack_table *t, uint64_t id)
{
	const struct stack_entry *s = id ? ktable_find(&t->t, &id) : NULL;

	return s ? s->stack : NULL;
}

void stacks_free(struct stack_table *t)
{
	for (size_t i = 0; i < t->t.cap; i++) {
		struct stack_entry *s = ktable_at(&t->t, i);

		if (s)
			free(s->stack);
	}
	ktable_free(&t->t);
	t->dropped = 0;
}

#define FOLDED_MERGE_FIRST 4096 /* records before the first look for processes gone */

bool tgid_gone(uint32_t tgid)
{
	return tgid && kill((pid_t)tgid, 0) != 0 && errno == ESRCH;
}

struct merge_walk {
	uint32_t *gone; /* sorted */
	size_t ngone;
	struct folded_entry *out;
	size_t nout;
};

static bool entry_gone(const struct merge_walk *w, uint32_t tgid)
{
	return tgid && bsearch(&tgid, w->gone, w->ngone, sizeof(*w->gone), cmp_u32);
}

static bool keep_alive(const void *entry, void *arg)
{
	return !entry_gone(arg, ((const struct folded_entry *)entry)->key.tgid);
}

static void take_gone(const void *entry, void *arg)
{
	struct merge_walk *w = arg;

	w->out[w->nout++] = *(const struct folded_entry *)entry;
}

size_t folded_table_merge_gone(struct folded_table *t)
{
	struct merge_walk w = {0};
	size_t n = 0, before = t->t.n;
	bool (*gone)(uint32_t) = t->gone ? t->gone : tgid_gone;

	if (!t->t.n)
		return 0;
	/* The processes with records, each asked once. */
	w.gone = malloc(t->t.n * sizeof(*w.gone));
	w.out = malloc(t->t.n * sizeof(*w.out));
	if (!w.gone || !w.out)
		goto out;
	for (size_t i = 0; i < t->t.cap; i++) {
		const struct folded_entry *e = ktable_at(&t->t, i);

		if (e && e->key.tgid)
			w.gone[n++] = e->key.tgid;
	}
	qsort(w.gone, n, sizeof(*w.gone), cmp_u32);
	/* in place: each tgid once, kept when its process is gone (writes never pass reads) */
	for (size_t i = 0; i < n; i++) {
		uint32_t tgid = w.gone[i];

		if (i && tgid == w.gone[i - 1])
			continue;
		if (gone(tgid))
			w.gone[w.ngone++] = tgid;
	}
	if (!w.ngone)
		goto out;
	ktable_prune(&t->t, keep_alive, take_gone, &w);
	/* Back under tgid 0: records of one command and stacks add up; the room the pruning
	 * made is always enough. */
	for (size_t i = 0; i < w.nout; i++) {
		struct folded_entry *e, *in = &w.out[i];
		uint32_t sym = in->sym_tgid ? in->sym_tgid : in->key.tgid;
		bool created;

		in->key.tgid = 0;
		e = ktable_get(&t->t, &in->key, &created);
		if (!e) {
			t->lost += in->v.count;
			continue;
		}
		if (created)
			e->sym_tgid = sym;
		e->v.count += in->v.count;
		e->v.latency_ns += in->v.latency_ns;
	}
	t->merged += before - t->t.n;
out:
	free(w.gone);
	free(w.out);
	return before - t->t.n;
}

void folded_table_add(struct folded_table *t, const struct folded_key *key,
		      const struct folded_value *v)
{
	struct folded_entry *e;
	bool created;

	if (!v->count)
		return;
	if (!t->t.entry_size) {
		t->t = KEYED_TABLE(struct folded_entry, sizeof(*key), FOLDED_TABLE_MAX);
		t->next_merge = FOLDED_MERGE_FIRST;
	}
	if (t->t.n >= t->next_merge) {
		/* Amortized: the next look when the table has doubled again. */
		folded_table_merge_gone(t);
		t->next_merge =
			2 * (t->t.n > FOLDED_MERGE_FIRST / 2 ? t->t.n : FOLDED_MERGE_FIRST / 2);
	}
	e = ktable_get(&t->t, key, &created);
	if (!e) {
		t->lost += v->count;
		return;
	}
	e->v.count += v->count;
	e->v.latency_ns += v->latency_ns;
}

/* Settle a stack's frames in place: true when one is left unsettled. Its id stays: a stack is
 * found by id, and one id is one stack of one image. */
static bool settle_stack(struct user_stack *us, uint32_t tgid, to_code_fn to_code, void *arg)
{
	bool left = false;

	for (uint32_t i = 0; i < us->nr; i++) {
		struct user_frame *f = &us->f[i];
		unsigned char id[sizeof(f->build_id)];
		uint64_t offset;

		if (f->status != LOC_MMAP_RECORDS)
			continue;
		if (!to_code(arg, tgid, f->build_id, f->offset_or_ip, id, &offset)) {
			left = true;
			continue;
		}
		f->status = BPF_STACK_BUILD_ID_VALID;
		memcpy(f->build_id, id, sizeof(id));
		f->offset_or_ip = offset;
	}
	return left;
}

void folded_settle_stacks(const struct folded_table *t, struct stack_table *ustacks,
			  to_code_fn to_code, void *arg, void (*unsettled)(uint32_t tgid, void *a),
			  void *a)
{
	for (size_t i = 0; i < t->t.cap; i++) {
		const struct folded_entry *e = ktable_at(&t->t, i);
		const struct stack_entry *s;
		uint32_t tgid;

		if (!e || !e->key.user_stack ||
		    !(s = ktable_find(&ustacks->t, &e->key.user_stack)) || !s->stack)
			continue;
		tgid = e->key.tgid ? e->key.tgid : e->sym_tgid;
		if (settle_stack(s->stack, tgid, to_code, arg))
			unsettled(tgid, a);
	}
}

void folded_table_free(struct folded_table *t)
{
	ktable_free(&t->t);
	t->lost = 0;
	t->merged = 0;
	t->next_merge = 0;
}
