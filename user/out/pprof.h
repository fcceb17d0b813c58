/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Profiles in pprof's format (--pprof FILE): a gzipped perftools.profiles.Profile message, as
 * `go tool pprof`, Parca, Pyroscope and Grafana read it, written from the same stack records
 * as --folded and --svg.
 *
 * What goes where:
 * - sample types: the events (faults/count, invalidations/count) and, where faults have a
 *   latency, latency/nanoseconds (entry hook to completion; faults that never completed have
 *   none and add 0 to it: their class label says "incomplete");
 * - one sample per stack and process, location ids leaf first; the process (comm) and the
 *   event kind (the leaf frame of --folded) are labels, not frames: "comm", "pid" (numeric)
 *   and the class (key class_label: "write minor anon", "local_mm_shootdown");
 * - kernel frames: mapping "[kernel.kallsyms]" with the running kernel's build ID; addresses
 *   are kernel addresses (memory_start is the lowest one seen, file_offset = memory_start, so
 *   address - start + offset is the address itself, as perf records the kernel map);
 * - user frames: one mapping per file (path, hex build ID); addresses are offsets in the
 *   file (memory_start 0, file_offset 0), the only address a frame has when the kernel gave a
 *   build ID and an offset; a frame without a symbol has a location but no function, so
 *   that a symbolizer (Parca's, by build ID) can name it;
 * - frames of no mapping ([unknown], [truncated], [in execve], [in exit]): a function of
 *   that name, without a mapping.
 * Addresses above the leaf are of the call (return address - 1), as they were symbolized.
 * Names (comm, symbols, paths) are shown as in --folded (control characters, invalid UTF-8,
 * ';' and '\\' as \xNN), and the comments (the command line among them) without the ';' and
 * '\\': proto3 strings must be UTF-8.
 */
#ifndef MMSCOPE_PPROF_H
#define MMSCOPE_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "out/svg.h"

#define PPROF_KERNEL_MAPPING "[kernel.kallsyms]"

struct pprof_opts {
	const char *events, *unit; /* first sample type: "faults", "count" */
	bool latency;		   /* a second sample type, latency/nanoseconds */
	bool default_latency;	   /* which one a viewer shows first */
	const char *class_label;   /* label key of the event kind: "fault_class" */
	const char *class_prefix;  /* cut from the kind's name: "tlb " of "[tlb local_...]" */
	uint64_t time_nanos;	   /* start, wall clock */
	uint64_t duration_nanos;
	const unsigned char *kernel_build_id;
	size_t kernel_build_id_len;
	const char *comment[4]; /* what, where, how (and the sampling): NULL-terminated */
	uint64_t period;	/* events a sample's count stands for (--sample N); 0: 1 */
};

/* Write the gzipped profile of recs to f. 0, or -errno (memory, write error). */
int pprof_write(FILE *f, const struct stack_record *recs, int n, const struct pprof_opts *o);

/* ---- the protobuf encoding, for the unit test ---- */

struct pb_buf {
	unsigned char *p;
	size_t len, cap;
	bool failed; /* out of memory: the contents are incomplete */
};

void pb_varint(struct pb_buf *b, uint64_t v);
/* Fields: tag (number << 3 | wire type), then the value. */
void pb_field_varint(struct pb_buf *b, uint32_t field, uint64_t v);
void pb_field_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len);
/* A packed repeated varint field of n values. */
void pb_field_packed(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n);
void pb_free(struct pb_buf *b);

/* Strings by index: "" is 0, each distinct string once, in order of first use. */
struct pb_strtab {
	char **s;
	size_t *len;
	uint32_t *next; /* chains of equal hashes, through index+1 */
	size_t n, cap;
	uint32_t *head; /* by hash: index+1 of a chain's first string */
	size_t nhead;
	bool failed;
};

int pb_strtab_init(struct pb_strtab *t);
uint64_t pb_str(struct pb_strtab *t, const char *s, size_t len);
void pb_strtab_free(struct pb_strtab *t);

#endif
