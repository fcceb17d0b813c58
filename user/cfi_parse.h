/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The part of the unwind-table compiler that reads one .eh_frame or .debug_frame section (CIEs,
 * FDEs, pointer encodings, the CFA programs) and turns it into rows of rules, sorted and merged,
 * gaps included; user/cfi.c finds the section, deduplicates the rules and builds the table.
 */
#ifndef MMSCOPE_CFI_PARSE_H
#define MMSCOPE_CFI_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi.h"

struct cfi_section {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr; /* the section's address: pc-relative pointers are relative to it */
	uint64_t base;	/* the table's base: no FDE may start below it */
	uint16_t machine;
	bool is_eh; /* .eh_frame (else .debug_frame: other CIE ids and CIE pointers) */
};

struct cfi_raw_row {
	uint64_t addr;
	struct cfi_rule rule;
};

struct cfi_raw {
	struct cfi_raw_row *rows;
	size_t n, cap;
};

/*
 * Append the section's rows to out (empty on entry; the caller frees out->rows either way) and
 * fill the section's counters of st. 0, or -EINVAL (malformed), -ENOMEM.
 */
int cfi_parse_section(const struct cfi_section *sec, struct cfi_raw *out, struct cfi_stats *st);

#endif
