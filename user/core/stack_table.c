// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>

#include "core/stack_table.h"

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

void folded_table_add(struct folded_table *t, const struct folded_key *key,
		      const struct folded_value *v)
{
	struct folded_entry *e;
	bool created;

	if (!v->count)
		return;
	if (!t->t.entry_size)
		t->t = KEYED_TABLE(struct folded_entry, sizeof(*key), FOLDED_TABLE_MAX);
	e = ktable_get(&t->t, key, &created);
	if (!e) {
		t->lost += v->count;
		return;
	}
	e->v.count += v->count;
	e->v.latency_ns += v->latency_ns;
}

void folded_table_free(struct folded_table *t)
{
	ktable_free(&t->t);
	t->lost = 0;
}
