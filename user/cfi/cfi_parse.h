/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The parts of the unwind-table compiler that read one .eh_frame or .debug_frame section and
 * turn it into rows of rules, sorted and merged, gaps included: cfi_parse.c reads the CIEs and
 * FDEs, cfi_program.c runs their CFA programs; user/cfi/cfi.c finds the section, deduplicates the
 * rules and builds the table. Internal to those three files.
 */
#ifndef MMSCOPE_CFI_PARSE_H
#define MMSCOPE_CFI_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cfi/cfi.h"

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

/* Bounds-checked little-endian reader: an overrun sets bad and reads zeros. */
struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static inline uint64_t rd_fixed(struct rd *r, unsigned int n)
{
	uint64_t v = 0;

	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return 0;
	}
	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static inline uint8_t rd_u8(struct rd *r)
{
	return (uint8_t)rd_fixed(r, 1);
}

/*
 * The bits of a LEB128 number, and how many it had (*shift) and its last byte (*last), from
 * which rd_sleb() extends the sign. Bits past 64 must be zero for an unsigned number
 * (strict) and are ignored for a signed one, whose sign bits they repeat.
 */
static inline uint64_t rd_leb(struct rd *r, bool strict, unsigned int *shift, uint8_t *last)
{
	uint64_t v = 0;
	uint8_t b;

	*shift = 0;
	do {
		b = rd_u8(r);
		if (r->bad)
			return 0;
		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		else if (strict && (b & 0x7f))
			r->bad = true; /* more than 64 bits */
		*shift += 7;
	} while (b & 0x80);
	*last = b;
	return v;
}

static inline uint64_t rd_uleb(struct rd *r)
{
	unsigned int shift;
	uint8_t last;

	return rd_leb(r, true, &shift, &last);
}

static inline int64_t rd_sleb(struct rd *r)
{
	unsigned int shift;
	uint8_t last;
	uint64_t v = rd_leb(r, false, &shift, &last);

	if (!r->bad && shift < 64 && (last & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/* A block: a ULEB length, then that many bytes, returned as a reader of its own. */
static inline struct rd rd_block(struct rd *r)
{
	uint64_t len = rd_uleb(r);
	struct rd b = {r->p, r->p, true};

	if (r->bad || len > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		return b;
	}
	b.end = r->p + len;
	b.bad = false;
	r->p += len;
	return b;
}

/* DWARF pointer encodings (the DW_EH_PE_* values of the LSB). */
#define PE_ABSPTR   0x00
#define PE_ULEB128  0x01
#define PE_UDATA2   0x02
#define PE_UDATA4   0x03
#define PE_UDATA8   0x04
#define PE_SLEB128  0x09
#define PE_SDATA2   0x0a
#define PE_SDATA4   0x0b
#define PE_SDATA8   0x0c
#define PE_PCREL    0x10
#define PE_INDIRECT 0x80
#define PE_OMIT	    0xff

/*
 * A pointer in encoding enc, the field at section address field: for an FDE's address
 * (absolute or pc-relative; the other applications are not used by x86_64 and arm64
 * toolchains and are refused), or, with value_only, its range or a pointer skipped over.
 */
static inline uint64_t rd_ptr(struct rd *r, uint8_t enc, uint64_t field, bool value_only)
{
	uint64_t v;

	if (enc == PE_OMIT) {
		r->bad = true;
		return 0;
	}
	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		v = rd_fixed(r, 8);
		break;
	case PE_ULEB128:
		v = rd_uleb(r);
		break;
	case PE_UDATA2:
		v = rd_fixed(r, 2);
		break;
	case PE_UDATA4:
		v = rd_fixed(r, 4);
		break;
	case PE_SLEB128:
		v = (uint64_t)rd_sleb(r);
		break;
	case PE_SDATA2:
		v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2);
		break;
	case PE_SDATA4:
		v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4);
		break;
	default:
		r->bad = true;
		return 0;
	}
	if (value_only)
		return v;
	if (enc & PE_INDIRECT)
		r->bad = true;
	switch (enc & 0x70) {
	case 0:
		return v;
	case PE_PCREL:
		return v + field;
	default:
		r->bad = true;
		return 0;
	}
}

struct cie {
	uint64_t off; /* of the entry, in the section */
	const uint8_t *insn, *insn_end;
	uint64_t caf; /* code alignment factor */
	int64_t daf;  /* data alignment factor */
	uint64_t ra_col;
	uint8_t fde_enc;
	bool aug_z;  /* FDEs carry augmentation data (skipped) */
	bool signal; /* 'S': the FDEs are signal trampolines */
};

struct fde {
	uint64_t start, end;
	const struct cie *cie;
	const uint8_t *insn, *insn_end;
	uint32_t order; /* position in the section, for a stable sort */
};

/* A column's rule, for the two columns tracked. */
enum col_how { COL_UNSET = 0, COL_UNDEF, COL_SAME, COL_OFF, COL_VAL_OFF, COL_REG, COL_EXPR };

/*
 * The rows of the FDEs, sorted by start (cfi_program.c): overlapping ones cut, gaps between
 * them and after the last one. 0, or -ENOMEM.
 */
int cfi_run_fdes(const struct cfi_section *sec, const struct fde *fdes, size_t n,
		 struct cfi_raw *out, struct cfi_stats *st);

/*
 * Append the section's rows to out (empty on entry; the caller frees out->rows either way) and
 * fill the section's counters of st. 0, or -EINVAL (malformed), -ENOMEM.
 */
int cfi_parse_section(const struct cfi_section *sec, struct cfi_raw *out, struct cfi_stats *st);

#endif
