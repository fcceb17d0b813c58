// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>

#include "stack_table.h"

static struct stack_entry *find(struct stack_entry *e, size_t cap, uint64_t id)
{
	/* ids are FNV hashes of the frames: their high bits are well mixed. */
	size_t i = (size_t)((id ^ (id >> 31)) * 0x9e3779b97f4a7c15ULL >> 20) & (cap - 1);

	while (e[i].id && e[i].id != id)
		i = (i + 1) & (cap - 1);
	return &e[i];
}

/* Twice the entries: the table stays under 3/4 full, so a probe always ends. */
static int grow(struct stack_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	struct stack_entry *e = calloc(cap, sizeof(*e));

	if (!e)
		return -1;
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].id)
			*find(e, cap, t->e[i].id) = t->e[i];
	free(t->e);
	t->e = e;
	t->cap = cap;
	return 0;
}

int stacks_add(struct stack_table *t, uint64_t id, const void *stack, size_t size)
{
	struct stack_entry *s;

	if (!id)
		return -1;
	s = t->cap ? find(t->e, t->cap, id) : NULL;
	if (s && s->id)
		return 0; /* another CPU sent it too, or this one again after forgetting it */
	if (t->n >= STACK_TABLE_MAX || ((t->n + 1) * 4 > t->cap * 3 && grow(t))) {
		t->dropped++;
		return -1;
	}
	s = find(t->e, t->cap, id);
	s->stack = malloc(size);
	if (!s->stack) {
		t->dropped++;
		return -1;
	}
	memcpy(s->stack, stack, size);
	s->id = id;
	t->n++;
	return 0;
}

const void *stacks_find(const struct stack_table *t, uint64_t id)
{
	const struct stack_entry *s;

	if (!id || !t->cap)
		return NULL;
	s = find(t->e, t->cap, id);
	return s->id ? s->stack : NULL;
}

void stacks_free(struct stack_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->e[i].stack);
	free(t->e);
	memset(t, 0, sizeof(*t));
}
