// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "proc_table.h"
#include "session.h"
#include "util.h"
#include "../bpf/mmscope.h"

static int cmp_tgid(const void *a, const void *b)
{
	uint32_t x, y;

	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return (x > y) - (x < y);
}

/* Add every valid slot's counts to its row (rows sorted by tgid). */
static void add_pending(struct session *s, const struct bpf_map *slots_map, unsigned char *rows,
			int n, size_t elem_size, size_t value_off, size_t ncounters)
{
	struct proc_slot *v = calloc((size_t)s->ncpus, sizeof(*v));
	int fd = bpf_map__fd(slots_map);

	if (!v) {
		warn_msg("per-process counts still pending per CPU not added: out of memory");
		return;
	}
	for (__u32 i = 0; i < bpf_map__max_entries(slots_map); i++) {
		if (bpf_map_lookup_elem(fd, &i, v)) {
			warn_msg("per-process counts still pending per CPU not added: %s",
				 strerror(errno));
			break;
		}
		for (int c = 0; c < s->ncpus; c++) {
			unsigned char *row;
			uint64_t count;

			if (!v[c].valid)
				continue;
			row = bsearch(&v[c].tgid, rows, (size_t)n, elem_size, cmp_tgid);
			/* Rows are not deleted while counts pend (bpf/state.bpf.h). */
			if (!row)
				continue;
			for (size_t k = 0; k < ncounters; k++) {
				unsigned char *at = row + value_off + MMSCOPE_COMM_LEN + k * 8;

				memcpy(&count, at, sizeof(count));
				count += v[c].n[k];
				memcpy(at, &count, sizeof(count));
			}
		}
	}
	free(v);
}

void *proc_table_read(struct session *s, const struct bpf_map *rows_map,
		      const struct bpf_map *slots_map, size_t elem_size, size_t value_off, int *n)
{
	size_t value_size = bpf_map__value_size(rows_map), ncounters;
	int fd = bpf_map__fd(rows_map), cap = 0;
	unsigned char *rows = NULL;
	uint32_t key, next, *prev = NULL;

	*n = 0;
	if (value_off + value_size > elem_size || value_size < MMSCOPE_COMM_LEN) {
		warn_msg("per-process rows of %s not read: %zu-byte rows do not fit",
			 bpf_map__name(rows_map), value_size);
		return NULL;
	}
	ncounters = (value_size - MMSCOPE_COMM_LEN) / 8;
	if (ncounters > PROC_SLOT_COUNTERS)
		ncounters = PROC_SLOT_COUNTERS;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (*n == cap) {
			int ncap = cap ? cap * 2 : 64;
			unsigned char *nr = realloc(rows, (size_t)ncap * elem_size);

			if (!nr) {
				warn_msg("per-process rows past %d not read: out of memory", *n);
				break;
			}
			rows = nr;
			cap = ncap;
		}
		memset(rows + (size_t)*n * elem_size, 0, elem_size);
		if (bpf_map_lookup_elem(fd, &key, rows + (size_t)*n * elem_size + value_off))
			continue; /* deleted since (serve) */
		memcpy(rows + (size_t)*n * elem_size, &key, sizeof(key));
		(*n)++;
	}
	if (!*n) {
		free(rows);
		return NULL;
	}
	qsort(rows, (size_t)*n, elem_size, cmp_tgid);
	add_pending(s, slots_map, rows, *n, elem_size, value_off, ncounters);
	return rows;
}
