/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Flame graphs as self-contained SVG documents (--svg FILE): no script, no external font,
 * style sheet or link; hover titles are SVG <title> elements.
 *
 * Layout, as a reader of flamegraph.pl or inferno output expects it:
 * - the root "all" at the bottom, each frame above its caller, leaf frames on top;
 * - stacks merged by identical prefixes (frame name and frame type);
 * - siblings sorted alphabetically by name (byte order), so that the same data always gives
 *   the same picture and two pictures can be compared side by side (width, not position,
 *   is the weight);
 * - frame width proportional to its weight: events, or their latency (ns);
 * - frames narrower than FLAME_MIN_WIDTH pixels are not drawn, nor are their children, but
 *   their weight stays in their parent's width (the parent is wider than its drawn children);
 * - a frame's label is its name, cut to the frame's width and ended with ".." (at least
 *   three characters before the "..", else no label; the hover title has the whole name).
 *
 * Every name comes from the traced processes (comm, symbols). It is shown as in --folded
 * (control characters, invalid UTF-8, ';' and '\\' as \xNN), then escaped for XML, so any
 * bytes give a well-formed document.
 *
 * Colours say what kind a frame is (process, user, kernel, fault class, TLB invalidation);
 * the shade within a kind comes from a hash of the name, so re-runs look the same.
 */
#ifndef MMSCOPE_SVG_H
#define MMSCOPE_SVG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum frame_type {
	FRAME_PROCESS, /* comm */
	FRAME_USER,
	FRAME_KERNEL,
	FRAME_FAULT, /* leaf: fault class, "[write minor]" */
	FRAME_TLB,   /* leaf: invalidation kind, "[tlb local_mm_shootdown]" */
	FRAME_OTHER, /* [unknown], [truncated], [in execve], [in exit] */
	FRAME_TYPES,
};

#define STACK_BUILD_ID_MAX 20 /* as the BPF side reports build IDs */

struct stack_frame {
	char *name; /* raw bytes as read (NUL-terminated), not escaped; not the frame's to free */
	enum frame_type type;
	/* Where the frame's code is (--pprof's mappings): FRAME_KERNEL: addr is the kernel
	 * address that was symbolized; FRAME_USER: dso is the file (NULL: unknown), addr the
	 * offset in it that was symbolized, build_id its GNU build ID (build_id_len 0: none
	 * known, or longer than STACK_BUILD_ID_MAX). Both addresses are of the call, not the
	 * return address, above the leaf. */
	char *dso;
	uint64_t addr;
	unsigned char build_id[STACK_BUILD_ID_MAX];
	uint8_t build_id_len;
};

/* One stack: root (the process) first, leaf (the event kind) last. */
struct stack_record {
	struct stack_frame *frames;
	int nframes;
	uint32_t pid;	     /* the process (tgid) whose events these are */
	uint64_t count;	     /* events */
	uint64_t latency_ns; /* their summed latency (0: none) */
	/* The --folded text of the stack: its frames escaped, interned (equal names, one
	 * pointer), to be joined by ';' (sym/stacks.c folded_cmp(), write_folded()). */
	const char **folded;
	int nfolded;
};

#define FLAME_WIDTH	 1200 /* pixels */
#define FLAME_FRAME_H	 16
#define FLAME_FONT_SIZE	 12
#define FLAME_MIN_WIDTH	 0.1 /* pixels: narrower frames are elided */
#define FLAME_MAX_DEPTH	 1024
#define FLAME_CHAR_WIDTH (0.62 * FLAME_FONT_SIZE) /* monospace advance, with a margin */

struct flame_opts {
	const char *title;	 /* what was measured */
	const char *subtitle[4]; /* where, how, totals: lines, NULL-terminated */
	const char *unit;	 /* of a count: "faults", "invalidations" */
	bool latency;		 /* weight is latency_ns, not count */
};

/* Write the flame graph of recs (any order) to f. 0, or -errno (memory, write error). */
int flame_svg_write(FILE *f, const struct stack_record *recs, int n, const struct flame_opts *o);

/* "12.3 ms", "850 ns", "1.20 s": a latency for titles. */
void flame_format_ns(uint64_t ns, char *buf, size_t len);

#endif
