// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>

#include "cmd/opts.h"
#include "out/serve_series.h"
#include "lib/util.h"

struct series_tgid {
	uint32_t tgid;
	char *value; /* resolved once (cgroup), NULL otherwise */
	uint64_t last[SF_NR];
	struct series_tgid *next;
};

int series_init(struct series_table *t, int labels, int max_series)
{
	memset(t, 0, sizeof(*t));
	t->labels = labels;
	t->max_series = max_series;
	t->nbuckets = 4096;
	t->rows = calloc((size_t)max_series + 1, sizeof(*t->rows));
	t->buckets = calloc(t->nbuckets, sizeof(struct series_tgid *));
	if (!t->rows || !t->buckets) {
		series_free(t);
		return -1;
	}
	return 0;
}

void series_free(struct series_table *t)
{
	for (int i = 0; t->rows && i < t->nrows; i++)
		free(t->rows[i].value);
	if (t->rows && t->rows[t->max_series].value)
		free(t->rows[t->max_series].value);
	for (unsigned int b = 0; t->buckets && b < t->nbuckets; b++) {
		struct series_tgid *e = t->buckets[b], *next;

		for (; e; e = next) {
			next = e->next;
			free(e->value);
			free(e);
		}
	}
	free(t->rows);
	free(t->buckets);
	memset(t, 0, sizeof(*t));
}

struct series_row *series_row_for(struct series_table *t, const char *value)
{
	struct series_row *other = &t->rows[t->max_series];

	for (int i = 0; i < t->nrows; i++)
		if (strcmp(t->rows[i].value, value) == 0)
			return &t->rows[i];
	if (t->nrows < t->max_series && strcmp(value, SERIES_OTHER) != 0) {
		struct series_row *r = &t->rows[t->nrows];

		r->value = strdup(value);
		if (r->value) {
			t->nrows++;
			return r;
		}
	}
	if (!t->capped && t->nrows >= t->max_series)
		err_msg("serve: --max-series %d reached: further %s values are summed under "
			"\"%s\" (mmscope_label_values_capped is 1)",
			t->max_series, t->labels == LABELS_CGROUP ? "cgroup" : "comm",
			SERIES_OTHER);
	if (t->nrows >= t->max_series)
		t->capped = true;
	if (!other->value)
		other->value = strdup(SERIES_OTHER);
	t->refused++;
	return other;
}

static struct series_tgid **slot_of(struct series_table *t, uint32_t tgid)
{
	struct series_tgid **p = &t->buckets[(tgid * 2654435761u) % t->nbuckets];

	while (*p && (*p)->tgid != tgid)
		p = &(*p)->next;
	return p;
}

void series_update(struct series_table *t, uint32_t tgid, const char *value, const int *fields,
		   const uint64_t *vals, int n)
{
	struct series_tgid **p = slot_of(t, tgid), *e = *p;
	struct series_row *row;

	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->tgid = tgid;
		if (!value && t->resolve) {
			char buf[512];

			t->resolve(tgid, buf, sizeof(buf));
			e->value = strdup(buf);
		}
		*p = e;
	}
	if (!value)
		value = e->value ? e->value : SERIES_OTHER;
	row = series_row_for(t, value);
	for (int i = 0; i < n; i++) {
		int f = fields[i];

		/* A counter below what was read last time is a new process under a reused pid
		 * whose entry was made before the old one's was deleted: count from zero. */
		if (vals[i] >= e->last[f])
			row->v[f] += vals[i] - e->last[f];
		else
			row->v[f] += vals[i];
		e->last[f] = vals[i];
	}
}

void series_forget(struct series_table *t, uint32_t tgid)
{
	struct series_tgid **p = slot_of(t, tgid), *e = *p;

	if (!e)
		return;
	*p = e->next;
	free(e->value);
	free(e);
}
