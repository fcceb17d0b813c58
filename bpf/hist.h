/* SPDX-License-Identifier: GPL-2.0 */
/*
 * log2 histogram slots, shared by the BPF programs (which fill them) and userspace (which
 * prints them and tests them): one definition, so both sides always agree on the buckets.
 *
 * Slot s holds values in [2^s, 2^(s+1) - 1]; slot 0 also holds 0. So slot 0 is [0, 1],
 * slot 1 is [2, 3], slot 2 is [4, 7], ... as bcc's log2 histograms do.
 */
#ifndef MMSCOPE_HIST_H
#define MMSCOPE_HIST_H

#define MMSCOPE_HIST_SLOTS 64

/* Branch-free floor(log2(v)) for v > 0, 0 for v == 0; no builtins, so clang's BPF target
 * compiles it too. */
static inline unsigned int mmscope_log2_u64(unsigned long long v)
{
	unsigned int r = 0, shift;

	shift = (v > 0xffffffffULL) << 5;
	v >>= shift;
	r |= shift;
	shift = (v > 0xffffULL) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xffULL) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xfULL) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3ULL) << 1;
	v >>= shift;
	r |= shift;
	r |= (unsigned int)(v >> 1);
	return r;
}

static inline unsigned int mmscope_hist_slot(unsigned long long v)
{
	return mmscope_log2_u64(v);
}

#endif
