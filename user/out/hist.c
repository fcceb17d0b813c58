/* SPDX-License-Identifier: GPL-2.0 */
/*
 * log2 histograms in userspace (see hist.h). Slots are assigned by mmscope_hist_slot() from
 * bpf/hist.h, the same function the BPF programs use, so userspace bounds always describe the
 * buckets the kernel side filled.
 */
#include <inttypes.h>
#include "out/hist.h"

/* Stars of the largest row, as in bcc. */
#define HIST_STARS 40

/*
 * Slots past the last one are a caller bug; saturate rather than shift by 64 or more, which
 * is undefined.
 */
uint64_t hist_slot_lo(unsigned int s)
{
	if (s >= MMSCOPE_HIST_SLOTS)
		return UINT64_MAX;
	return s ? (uint64_t)1 << s : 0;
}

uint64_t hist_slot_hi(unsigned int s)
{
	/*
	 * For s == 63, 2 << 63 wraps to 0 and the - 1 back to UINT64_MAX: right, but only by
	 * wrap-around, so the top slot's bound is spelled out.
	 */
	if (s >= MMSCOPE_HIST_SLOTS - 1)
		return UINT64_MAX;
	return ((uint64_t)2 << s) - 1;
}

void hist_add(struct log2_hist *h, uint64_t value)
{
	h->slots[mmscope_hist_slot(value)]++;
}

void hist_merge(struct log2_hist *dst, const struct log2_hist *src)
{
	unsigned int s;

	for (s = 0; s < MMSCOPE_HIST_SLOTS; s++)
		dst->slots[s] += src->slots[s];
}

uint64_t hist_total(const struct log2_hist *h)
{
	uint64_t total = 0;
	unsigned int s;

	for (s = 0; s < MMSCOPE_HIST_SLOTS; s++)
		total += h->slots[s];
	return total;
}

unsigned int hist_used_slots(const struct log2_hist *h)
{
	unsigned int s = MMSCOPE_HIST_SLOTS;

	while (s && !h->slots[s - 1])
		s--;
	return s;
}

static int digits_u64(uint64_t v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* floor(count * 40 / max), for count <= max, without overflowing count * 40. */
static int hist_stars(uint64_t count, uint64_t max)
{
	/*
	 * Only counts above 2^64 / 40 need scaling; halving both keeps the ratio to far better
	 * than one star.
	 */
	while (count > UINT64_MAX / HIST_STARS) {
		count >>= 1;
		max >>= 1;
	}
	return (int)(count * HIST_STARS / max);
}

/*
 * bcc's print_log2_hist layout, with two differences. Rows start at the lowest non-empty slot,
 * not at slot 0: latencies in nanoseconds would otherwise open with ten empty rows. And the
 * column widths follow the numbers (at least bcc's 10 for bounds and 8 for counts) instead of
 * switching between two fixed layouts, so the columns stay aligned for any value up to
 * UINT64_MAX and the largest row always gets 40 stars.
 */
void hist_print(FILE *f, const struct log2_hist *h, const char *unit)
{
	static const char stars[HIST_STARS + 1] = "****************************************";
	unsigned int first = 0, last = hist_used_slots(h), s;
	uint64_t max = 0;
	int vw, cw, n;

	if (!last) {
		fputs("(no events)\n", f);
		return;
	}
	last--;
	while (!h->slots[first])
		first++;
	for (s = first; s <= last; s++) {
		if (h->slots[s] > max)
			max = h->slots[s];
	}
	vw = digits_u64(hist_slot_hi(last));
	if (vw < 10)
		vw = 10;
	cw = digits_u64(max);
	if (cw < 8)
		cw = 8;

	/* The unit sits over the bounds and " : " lines up with the rows' " : ". */
	fprintf(f, "%*s%-*s : %-*s distribution\n", vw - 5, "", vw + 9, unit ? unit : "value", cw,
		"count");
	for (s = first; s <= last; s++) {
		n = hist_stars(h->slots[s], max);
		fprintf(f, "%*" PRIu64 " -> %-*" PRIu64 " : %-*" PRIu64 " |%.*s%*s|\n", vw,
			hist_slot_lo(s), vw, hist_slot_hi(s), cw, h->slots[s], n, stars,
			HIST_STARS - n, "");
	}
}
