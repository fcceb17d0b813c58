/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where the unwind tables go in their chunk arrays (user/core/unwind.c): ranges of elements
 * allocated first-fit from a free list, and freed in two steps. A range freed is held first,
 * and only after a grace period does it return to the free list: the BPF walker on another
 * CPU may still be reading through an entry it looked up before the range's file was
 * removed from the map of files, and its reads must not see another file's rows until it is
 * done.
 */
#ifndef MMSCOPE_EXTENT_H
#define MMSCOPE_EXTENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct extent {
	uint32_t start, len;
	uint64_t since; /* held: when it was freed */
};

struct extent_pool {
	uint64_t cap; /* elements */
	uint64_t end; /* elements from here on were never used (or came back, the last ones) */
	struct extent *free; /* below end, sorted by start, no two adjacent */
	size_t nfree, capfree;
	struct extent *held; /* freed, in order of time */
	size_t nheld, capheld;
};

void extent_pool_init(struct extent_pool *p, uint64_t cap);
void extent_pool_fini(struct extent_pool *p);
/* Whether n elements can be allocated now (0 always can). */
bool extent_fits(const struct extent_pool *p, uint64_t n);
/* Allocate n elements: the index of the first in *start (0 for n 0). -ENOSPC when they do
 * not fit, -ENOMEM. */
int extent_alloc(struct extent_pool *p, uint64_t n, uint32_t *start);
/* Free [start, start + len) at time now: held until extent_release() sees it grace old. */
int extent_free(struct extent_pool *p, uint32_t start, uint32_t len, uint64_t now);
/* Return the ranges held since grace or longer before now to the free list. */
void extent_release(struct extent_pool *p, uint64_t now, uint64_t grace);
/* Elements allocated or held. */
uint64_t extent_used(const struct extent_pool *p);
/* Elements held. */
uint64_t extent_held(const struct extent_pool *p);

#endif
