// SPDX-License-Identifier: GPL-2.0
/*
 * Ranges of a chunk array for the unwind tables (see extent.h). The free list is kept sorted
 * and merged, and a free range that reaches the array's high-water mark lowers it instead, so
 * that files loaded and evicted in turn reuse the same space rather than scattering it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/extent.h"

void extent_pool_init(struct extent_pool *p, uint64_t cap)
{
	memset(p, 0, sizeof(*p));
	p->cap = cap;
}

void extent_pool_fini(struct extent_pool *p)
{
	free(p->free);
	free(p->held);
	memset(p, 0, sizeof(*p));
}

static int grow(struct extent **v, size_t n, size_t *cap)
{
	struct extent *nv;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	nv = realloc(*v, ncap * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

bool extent_fits(const struct extent_pool *p, uint64_t n)
{
	if (!n || p->cap - p->end >= n)
		return true;
	for (size_t i = 0; i < p->nfree; i++)
		if (p->free[i].len >= n)
			return true;
	return false;
}

int extent_alloc(struct extent_pool *p, uint64_t n, uint32_t *start)
{
	*start = 0;
	if (!n)
		return 0;
	/* First fit below the mark: the lowest hole, so the high end stays free for big files. */
	for (size_t i = 0; i < p->nfree; i++) {
		struct extent *e = &p->free[i];

		if (e->len < n)
			continue;
		*start = e->start;
		e->start += (uint32_t)n;
		e->len -= (uint32_t)n;
		if (!e->len) {
			memmove(e, e + 1, (p->nfree - i - 1) * sizeof(*e));
			p->nfree--;
		}
		return 0;
	}
	if (p->cap - p->end < n)
		return -ENOSPC;
	*start = (uint32_t)p->end;
	p->end += n;
	return 0;
}

int extent_free(struct extent_pool *p, uint32_t start, uint32_t len, uint64_t now)
{
	if (!len)
		return 0;
	if (grow(&p->held, p->nheld, &p->capheld))
		return -ENOMEM;
	p->held[p->nheld++] = (struct extent){.start = start, .len = len, .since = now};
	return 0;
}

/* Put [start, start + len) back on the free list, merged with its neighbours. */
static int put_free(struct extent_pool *p, uint32_t start, uint32_t len)
{
	size_t i = 0;

	while (i < p->nfree && p->free[i].start < start)
		i++;
	if (i > 0 && p->free[i - 1].start + p->free[i - 1].len == start) {
		p->free[i - 1].len += len;
		if (i < p->nfree && start + len == p->free[i].start) {
			p->free[i - 1].len += p->free[i].len;
			memmove(&p->free[i], &p->free[i + 1],
				(p->nfree - i - 1) * sizeof(*p->free));
			p->nfree--;
		}
	} else if (i < p->nfree && start + len == p->free[i].start) {
		p->free[i].start = start;
		p->free[i].len += len;
	} else {
		if (grow(&p->free, p->nfree, &p->capfree))
			return -ENOMEM;
		memmove(&p->free[i + 1], &p->free[i], (p->nfree - i) * sizeof(*p->free));
		p->free[i] = (struct extent){.start = start, .len = len};
		p->nfree++;
	}
	/* The last free range ends at the mark: it is the never-used space again. */
	if (p->nfree && p->free[p->nfree - 1].start + p->free[p->nfree - 1].len == p->end) {
		p->end = p->free[p->nfree - 1].start;
		p->nfree--;
	}
	return 0;
}

void extent_release(struct extent_pool *p, uint64_t now, uint64_t grace)
{
	size_t kept = 0;

	for (size_t i = 0; i < p->nheld; i++) {
		struct extent e = p->held[i];

		/* Kept held when the free list cannot grow: lost for reuse, never reused early. */
		if (now - e.since < grace || put_free(p, e.start, e.len))
			p->held[kept++] = e;
	}
	p->nheld = kept;
}

uint64_t extent_used(const struct extent_pool *p)
{
	uint64_t n = p->end;

	for (size_t i = 0; i < p->nfree; i++)
		n -= p->free[i].len;
	return n;
}

uint64_t extent_held(const struct extent_pool *p)
{
	uint64_t n = 0;

	for (size_t i = 0; i < p->nheld; i++)
		n += p->held[i].len;
	return n;
}
