// SPDX-License-Identifier: GPL-2.0
#include <linux/bpf.h>

#include "core/loc_table.h"

_Static_assert(__builtin_offsetof(struct location_slot, key) == 0 &&
		       sizeof(struct fault_location_key) % 8 == 0,
	       "a location slot begins with its key, of whole words");

void locations_add(struct location_table *t, const struct location_slot *in)
{
	struct location_slot *s;
	bool created;

	if (!in->loc.count)
		return;
	if (!t->t.entry_size)
		t->t = KEYED_TABLE(struct location_slot, sizeof(in->key), LOCATION_TABLE_MAX);
	s = ktable_get(&t->t, &in->key, &created);
	if (!s) {
		t->lost += in->loc.count; /* full: only locations already there are counted */
		return;
	}
	if (created) {
		*s = *in;
		return;
	}
	/* The same instruction in the same address space: a build ID read since replaces a
	 * raw address. */
	if (s->loc.status != BPF_STACK_BUILD_ID_VALID &&
	    in->loc.status == BPF_STACK_BUILD_ID_VALID) {
		uint64_t count = s->loc.count;

		s->loc = in->loc;
		s->loc.count = count;
	}
	s->loc.count += in->loc.count;
}

void locations_free(struct location_table *t)
{
	ktable_free(&t->t);
	t->lost = 0;
}
