// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/proc_table.h"
#include "core/session.h"
#include "lib/util.h"
#include "bpf/mmscope.h"
#include "mmscope.skel.h"

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
			/* A row folded away (proc_fold_sweep()) while counts pended for it: they
			 * are the remainder row's, as when the BPF side flushes them. */
			if (!row) {
				uint32_t other = PROC_OTHER_TGID;

				row = bsearch(&other, rows, (size_t)n, elem_size, cmp_tgid);
			}
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

static uint64_t row_weight(const struct proc_faults *f)
{
	return f->user + f->kernel;
}

static void add_counts(struct proc_faults *to, const struct proc_faults *from)
{
	for (int k = 0; k < PC_NR; k++)
		to->n[k] += from->n[k];
}

static void heap_swap(struct proc_fold_row *h, int a, int b)
{
	struct proc_fold_row t = h[a];

	h[a] = h[b];
	h[b] = t;
}

void proc_fold_keep(struct proc_fold *pf, const struct proc_fold_row *row)
{
	struct proc_fold_row *h = pf->rows;
	int i;

	if (pf->n == pf->max) {
		if (!pf->max || row_weight(&row->f) <= row_weight(&h[0].f)) {
			add_counts(&pf->other, &row->f);
			return;
		}
		add_counts(&pf->other, &h[0].f);
		h[0] = *row;
		for (i = 0;;) {
			int l = 2 * i + 1, r = l + 1, m = i;

			if (l < pf->n && row_weight(&h[l].f) < row_weight(&h[m].f))
				m = l;
			if (r < pf->n && row_weight(&h[r].f) < row_weight(&h[m].f))
				m = r;
			if (m == i)
				break;
			heap_swap(h, i, m);
			i = m;
		}
		return;
	}
	h[pf->n] = *row;
	for (i = pf->n++; i > 0 && row_weight(&h[i].f) < row_weight(&h[(i - 1) / 2].f);
	     i = (i - 1) / 2)
		heap_swap(h, i, (i - 1) / 2);
}

int proc_fold_init(struct proc_fold *pf, int max)
{
	memset(pf, 0, sizeof(*pf));
	pf->rows = calloc((size_t)max, sizeof(*pf->rows));
	if (!pf->rows)
		return -ENOMEM;
	pf->max = max;
	return 0;
}

void proc_fold_free(struct proc_fold *pf)
{
	free(pf->rows);
	memset(pf, 0, sizeof(*pf));
}

/* Whether a CPU's slot holds counts of process tgid (slots: every CPU's of every slot). */
static bool pending_for(const struct proc_slot *slots, size_t n, uint32_t tgid)
{
	for (size_t i = 0; i < n; i++)
		if (slots[i].valid && slots[i].tgid == tgid)
			return true;
	return false;
}

int proc_fold_sweep(struct proc_fold *pf, const struct bpf_map *rows_map,
		    const struct bpf_map *slots_map, int ncpus)
{
	int fd = bpf_map__fd(rows_map), ngone = 0, capgone = 0, err = 0;
	uint32_t key, next, *prev = NULL, *gone = NULL;
	__u32 nslots = bpf_map__max_entries(slots_map);
	struct proc_slot *slots;

	if (pf->unsupported || !pf->rows)
		return 0;
	/*
	 * A process whose counts still pend in a CPU's slot keeps its row until another process
	 * takes the slot (its counts then go to the row, not to [other]). A process gone (ESRCH:
	 * reaped) takes no slot again, so a row found free of them here stays so.
	 */
	slots = calloc((size_t)nslots * (size_t)ncpus, sizeof(*slots));
	if (!slots)
		return 0;
	for (__u32 i = 0; i < nslots; i++) {
		if (bpf_map_lookup_elem(bpf_map__fd(slots_map), &i, slots + (size_t)i * ncpus)) {
			free(slots);
			return 0;
		}
	}
	/* The processes gone first: a hash map's walk restarts where its key was deleted. */
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (key == PROC_OTHER_TGID || kill((pid_t)key, 0) == 0 || errno != ESRCH ||
		    pending_for(slots, (size_t)nslots * (size_t)ncpus, key))
			continue;
		if (ngone == capgone) {
			int ncap = capgone ? capgone * 2 : 256;
			uint32_t *ng = realloc(gone, (size_t)ncap * sizeof(*ng));

			if (!ng)
				break;
			gone = ng;
			capgone = ncap;
		}
		gone[ngone++] = key;
	}
	for (int i = 0; i < ngone; i++) {
		struct proc_fold_row row = {.tgid = gone[i]};

		/* At once, so that nothing the BPF side adds in between is lost (v5.14:
		 * 3e87f192b405 "bpf: Add lookup_and_delete_elem support to hashtab"). */
		if (bpf_map_lookup_and_delete_elem(fd, &gone[i], &row.f)) {
			if (errno == ENOENT)
				continue;
			err = -errno;
			pf->unsupported = true;
			break;
		}
		proc_fold_keep(pf, &row);
		pf->folded++;
	}
	free(gone);
	free(slots);
	return err;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;
	uint64_t tx = x->f.user + x->f.kernel, ty = y->f.user + y->f.kernel;

	return tx < ty ? 1 : tx > ty ? -1 : (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

struct proc_row *read_procs(struct session *s, int *n, struct proc_row *other)
{
	struct proc_row *rows = proc_table_read(s, s->skel->maps.procs, s->skel->maps.proc_pending,
						sizeof(*rows), offsetof(struct proc_row, f), n);

	const struct proc_fold *gone = &s->gone_procs;
	struct proc_row *all;

	memset(other, 0, sizeof(*other));
	/* The remainder row (bpf/state.bpf.h proc_other_row()) apart. */
	for (int i = 0; i < *n; i++) {
		if (rows[i].tgid != PROC_OTHER_TGID)
			continue;
		*other = rows[i];
		memmove(&rows[i], &rows[i + 1], (size_t)(*n - i - 1) * sizeof(*rows));
		(*n)--;
		break;
	}
	/* With the rows of the processes gone that the run kept (proc_fold_sweep()). */
	for (int k = 0; k < PC_NR; k++)
		other->f.n[k] += gone->other.n[k];
	all = gone->n ? realloc(rows, (size_t)(*n + gone->n) * sizeof(*rows)) : rows;
	if (!all && gone->n) {
		warn_msg("the rows of %d processes gone not shown: out of memory", gone->n);
		for (int i = 0; i < gone->n; i++)
			for (int k = 0; k < PC_NR; k++)
				other->f.n[k] += gone->rows[i].f.n[k];
		all = rows;
	} else {
		for (int i = 0; i < gone->n; i++) {
			all[*n].tgid = gone->rows[i].tgid;
			all[*n].f = gone->rows[i].f;
			(*n)++;
		}
	}
	if (all)
		qsort(all, (size_t)*n, sizeof(*all), cmp_proc);
	return all;
}

static bool process_gone(uint32_t tgid)
{
	return kill((pid_t)tgid, 0) != 0 && errno == ESRCH;
}

/* Gone processes seen in this pass, deleted from every map at its end. */
struct gone_list {
	uint32_t *tgids;
	size_t n, cap;
};

static void gone_add(struct gone_list *g, uint32_t tgid)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 256;
		uint32_t *p = realloc(g->tgids, cap * sizeof(*p));

		if (!p)
			return;
		g->tgids = p;
		g->cap = cap;
	}
	g->tgids[g->n++] = tgid;
}

/* Walk one per-process map: gone processes are read (their final values) and listed. */
static void pass_map(int fd, size_t value_size, struct gone_list *gone,
		     void (*row)(uint32_t tgid, const void *value))
{
	uint32_t key, next;
	bool first = true;
	char value[sizeof(struct tlb_proc) > sizeof(struct proc_faults)
			   ? sizeof(struct tlb_proc)
			   : sizeof(struct proc_faults)];

	if (fd < 0 || value_size > sizeof(value))
		return;
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		bool was_gone = process_gone(next);

		first = false;
		key = next;
		/* Gone before the read: this read is its last. */
		if (bpf_map_lookup_elem(fd, &key, value) != 0)
			continue;
		row(key, value);
		if (was_gone)
			gone_add(gone, key);
	}
}

/*
 * The per-process tables proc_tables_pass() walks, in enum proc_table_id order, with their
 * value sizes.
 */
static const struct bpf_map *pass_table(struct session *s, int t, size_t *value_size)
{
	switch (t) {
	case PROC_TABLE_FAULTS:
		*value_size = sizeof(struct proc_faults);
		return s->skel->maps.procs;
	case PROC_TABLE_TLB:
		*value_size = sizeof(struct tlb_proc);
		return s->skel->maps.tlb_procs;
	default:
		*value_size = sizeof(struct switch_proc);
		return s->skel->maps.switch_procs;
	}
}

void proc_tables_pass(struct session *s,
		      void (*const row[PROC_TABLES])(uint32_t tgid, const void *value),
		      void (*forget)(uint32_t tgid))
{
	char value[sizeof(struct tlb_proc)];
	struct gone_list gone = {0};
	int fds[PROC_TABLES];

	_Static_assert(sizeof(struct tlb_proc) >= sizeof(struct proc_faults) &&
			       sizeof(struct tlb_proc) >= sizeof(struct switch_proc),
		       "value buffer");

	for (int t = 0; t < PROC_TABLES; t++) {
		size_t value_size;
		const struct bpf_map *map = pass_table(s, t, &value_size);

		fds[t] = bpf_map__fd(map);
		pass_map(fds[t], value_size, &gone, row[t]);
	}
	/* A process found gone in one map may have been read alive in another: read each of
	 * its entries once more (final now), then delete them. A tgid can be listed by each
	 * map: the second time there is nothing left to read. */
	for (size_t i = 0; i < gone.n; i++) {
		for (int t = 0; t < PROC_TABLES; t++) {
			if (fds[t] >= 0 &&
			    bpf_map_lookup_elem(fds[t], &gone.tgids[i], value) == 0) {
				row[t](gone.tgids[i], value);
				bpf_map_delete_elem(fds[t], &gone.tgids[i]);
			}
		}
		forget(gone.tgids[i]);
	}
	free(gone.tgids);
}
