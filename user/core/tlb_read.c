// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/proc_table.h"
#include "core/session.h"
#include "core/tlb_read.h"
#include "mmscope.skel.h"

static int cmp_tlb_proc(const void *a, const void *b)
{
	const struct tlb_proc_row *x = a, *y = b;

	return x->total < y->total ? 1 : x->total > y->total ? -1 : 0;
}

static int cmp_syscall(const void *a, const void *b)
{
	const struct tlb_syscall_row *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

/* The per-CPU tlb_syscalls array summed: one row per (system call, reason) seen; *n rows. */
static struct tlb_syscall_row *read_syscalls(struct session *s, int *n)
{
	struct tlb_syscall_counts *v = calloc((size_t)s->ncpus, sizeof(*v));
	int fd = bpf_map__fd(s->skel->maps.tlb_syscalls), cap = 0;
	struct tlb_syscall_row *rows = NULL;

	*n = 0;
	if (!v) {
		warn_msg("TLB events by system call not read: out of memory");
		return NULL;
	}
	for (__u32 idx = 0; idx < bpf_map__max_entries(s->skel->maps.tlb_syscalls); idx++) {
		if (bpf_map_lookup_elem(fd, &idx, v)) {
			warn_msg("TLB events by system call not read: %s", strerror(errno));
			break;
		}
		for (__u32 reason = 0; reason < TLB_SYSCALL_REASONS; reason++) {
			uint64_t count = 0;

			for (int c = 0; c < s->ncpus; c++)
				count += v[c].reason[reason];
			if (!count)
				continue;
			if (*n == cap) {
				int ncap = cap ? cap * 2 : 64;
				struct tlb_syscall_row *nr =
					realloc(rows, (size_t)ncap * sizeof(*nr));

				if (!nr) {
					warn_msg("TLB events by system call past %d not read: out "
						 "of memory",
						 *n);
					free(v);
					return rows;
				}
				rows = nr;
				cap = ncap;
			}
			rows[*n].k.nr = (__s32)idx - TLB_SYSCALL_BIAS;
			rows[*n].k.reason = reason;
			rows[*n].count = count;
			(*n)++;
		}
	}
	free(v);
	return rows;
}

void tlb_details_read(struct session *s, struct tlb_details *d)
{
	d->procs = proc_table_read(s, s->skel->maps.tlb_procs, s->skel->maps.tlb_proc_pending,
				   sizeof(*d->procs), offsetof(struct tlb_proc_row, p), &d->nprocs);
	for (int i = 0; d->procs && i < d->nprocs; i++) {
		d->procs[i].total = 0;
		for (int v = 0; v < TLB_REASON_SLOTS; v++)
			d->procs[i].total += d->procs[i].p.reason[v];
	}
	if (d->procs)
		qsort(d->procs, (size_t)d->nprocs, sizeof(*d->procs), cmp_tlb_proc);
	d->syscalls = read_syscalls(s, &d->nsyscalls);
	if (d->syscalls)
		qsort(d->syscalls, (size_t)d->nsyscalls, sizeof(*d->syscalls), cmp_syscall);
}

void tlb_details_free(struct tlb_details *d)
{
	free(d->procs);
	free(d->syscalls);
	memset(d, 0, sizeof(*d));
}

static int cmp_switch(const void *a, const void *b)
{
	const struct switch_proc_row *x = a, *y = b;

	return x->p.total < y->p.total ? 1 : x->p.total > y->p.total ? -1 : 0;
}

void switch_details_read(struct session *s, struct switch_details *d)
{
	d->procs =
		proc_table_read(s, s->skel->maps.switch_procs, s->skel->maps.switch_proc_pending,
				sizeof(*d->procs), offsetof(struct switch_proc_row, p), &d->nprocs);
	if (d->procs)
		qsort(d->procs, (size_t)d->nprocs, sizeof(*d->procs), cmp_switch);
}

void switch_details_free(struct switch_details *d)
{
	free(d->procs);
	memset(d, 0, sizeof(*d));
}
