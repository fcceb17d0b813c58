/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unwind tables compiled from an ELF file's call-frame information (.eh_frame, or .debug_frame
 * where the file has no .eh_frame), for a BPF unwinder to search: user stacks of code built
 * without frame pointers are walked by finding, for each PC, how to get the CFA, the return
 * address and the caller's frame pointer.
 *
 * The CFA programs of all FDEs are run here, in user space, keeping only what an unwinder
 * needs; the BPF side only searches a sorted array and follows one small rule per frame.
 *
 * Format, per file:
 *  - rows sorted by address, 4 bytes each: the low 16 bits of the row's start (its offset from
 *    `base`, the file's lowest PT_LOAD vaddr) and a 16-bit index into the file's rule table;
 *    a row covers its start up to the next row's start;
 *  - a page index: page_first[p] is the first row starting at or after offset p << 16, for
 *    p = 0..npages (the last entry is nrows). Rows of one 64 KiB page share their high bits, so
 *    16 bits of address per row suffice, and the search within a page takes at most 17 steps
 *    (a bound the BPF verifier can see). A PC before the first row of its page is covered by
 *    the row before it (the previous page's last row);
 *  - the rules, deduplicated: 20 bytes each (struct cfi_rule).
 * Offsets are 32-bit: a file spanning more than 4 GiB of addresses is refused (-E2BIG).
 *
 * Every address is covered: before the first FDE, between FDEs and after the last one there
 * are gap rows (an unwind that reaches one must stop). Consecutive rows with the same rule are
 * merged.
 *
 * The ELF file is untrusted input (a traced process's binary): every read is bounds-checked, a
 * malformed section is an error, and an FDE whose program cannot be run becomes unsupported
 * rows.
 */
#ifndef MMSCOPE_CFI_H
#define MMSCOPE_CFI_H

#include <stddef.h>
#include <stdint.h>

/* What a row says to an unwinder. A zeroed rule is a gap. */
enum cfi_kind {
	CFI_GAP = 0, /* no FDE covers the address: stop */
	CFI_NORMAL,  /* follow cfa, ra and fp below */
	CFI_END,     /* the return address is undefined: the outermost frame (_start, clone) */
	CFI_SIGNAL,  /* a signal trampoline (CIE augmentation 'S'): registers are in the frame */
	CFI_UNSUPPORTED, /* a rule the BPF side cannot follow (see cfi_why): count, stop */
	CFI_KIND_COUNT
};

/* How to compute the CFA of a CFI_NORMAL row. SP and FP are rsp/rbp (x86_64), sp/x29 (arm64). */
enum cfi_cfa {
	CFI_CFA_SP = 0,	  /* SP + cfa_off */
	CFI_CFA_FP,	  /* FP + cfa_off */
	CFI_CFA_DEREF_SP, /* *(u64 *)(SP + cfa_off) + cfa_add: stack realignment */
	CFI_CFA_DEREF_FP, /* *(u64 *)(FP + cfa_off) + cfa_add */
	CFI_CFA_PLT, /* SP + cfa_off + ((PC & 15) >= cfa_add ? 8 : 0): x86_64 lazy PLT entries */
};

/* Where the return address is. */
enum cfi_ra {
	CFI_RA_AT_CFA = 0, /* *(u64 *)(CFA + ra_off) */
	CFI_RA_IN_LR,	   /* still in x30 (arm64 leaf or prologue): usable in the top frame only */
};

/* Where the caller's frame pointer is. */
enum cfi_fp {
	CFI_FP_SAME = 0,  /* unchanged: the caller's FP is the current FP */
	CFI_FP_AT_CFA,	  /* *(u64 *)(CFA + fp_off) */
	CFI_FP_UNDEFINED, /* lost: a caller whose CFA is FP-based cannot be unwound */
};

/* Why a row is CFI_UNSUPPORTED. */
enum cfi_why {
	CFI_WHY_NONE = 0,
	CFI_WHY_CFA_REG,  /* CFA based on a register other than SP and FP (longjmp, setcontext) */
	CFI_WHY_CFA_EXPR, /* a CFA expression that is neither a PLT entry nor SP/FP deref */
	CFI_WHY_RA,	  /* RA in another register, an expression, or a value rule */
	CFI_WHY_FP,	  /* FP in another register, an expression, or a value rule */
	CFI_WHY_RANGE,	  /* an offset too large for the rule's fields */
	CFI_WHY_BAD_FDE,  /* the FDE's program is malformed (unknown opcode, overrun, ...) */
	CFI_WHY_COUNT
};

#define CFI_RA_SIGNED 0x01 /* arm64: the saved RA carries a PAC (negate_ra_state): strip it */

struct cfi_rule {
	int32_t cfa_off;
	int32_t ra_off;	 /* CFI_RA_AT_CFA */
	int32_t fp_off;	 /* CFI_FP_AT_CFA: arm64 frames of 32 KiB and more save x29 farther down */
	int16_t cfa_add; /* CFI_CFA_DEREF_*: added after the load; CFI_CFA_PLT: the PC threshold */
	uint8_t kind;	 /* enum cfi_kind */
	uint8_t cfa;	 /* enum cfi_cfa */
	uint8_t ra;	 /* enum cfi_ra */
	uint8_t fp;	 /* enum cfi_fp */
	uint8_t flags;	 /* CFI_RA_SIGNED */
	uint8_t why;	 /* enum cfi_why, for CFI_UNSUPPORTED */
};

struct cfi_row {
	uint16_t addr_lo; /* low 16 bits of the start's offset from base */
	uint16_t rule;
};

struct cfi_stats {
	const char *section; /* ".eh_frame" or ".debug_frame" */
	uint32_t cies;
	uint32_t fdes;		   /* FDEs in the section */
	uint32_t fdes_empty;	   /* of which covering no address (empty, or at address 0) */
	uint32_t fdes_overlapping; /* of which starting inside the previous one (it is cut there) */
	uint32_t fdes_bad;	   /* of which with a malformed program (CFI_WHY_BAD_FDE rows) */
	uint32_t rows_raw;	   /* rows the programs define, gaps included, before merging */
	uint32_t rows;		   /* rows of the table */
	uint32_t rules;
	uint32_t kind_rows[CFI_KIND_COUNT];
	uint32_t why_rows[CFI_WHY_COUNT];
	uint32_t plt_rows, deref_rows, lr_rows, signed_rows;
};

struct cfi_table {
	uint16_t machine; /* EM_X86_64 or EM_AARCH64 */
	uint64_t base;	  /* the lowest PT_LOAD p_vaddr: row offsets are from here */
	uint32_t nrows;
	struct cfi_row *rows;
	uint32_t npages;
	uint32_t *page_first; /* npages + 1 entries */
	uint32_t nrules;
	struct cfi_rule *rules;
	struct cfi_stats stats;
};

/*
 * Compile the table of a 64-bit little-endian x86_64 or arm64 ELF file. 0 and *out set, or
 * -errno: -ENOENT (no CFI section), -ENOTSUP (another class, byte order or machine), -EINVAL
 * (malformed), -E2BIG (addresses spanning more than 4 GiB), -ENOMEM.
 */
int cfi_table_from_file(const char *path, struct cfi_table **out);
/* The same for an ELF image in memory (copied: the caller keeps data). */
int cfi_table_from_mem(const void *data, size_t size, struct cfi_table **out);
void cfi_table_free(struct cfi_table *t);

/*
 * The row covering file virtual address vaddr, or -1 if none does (before the first row or
 * after the table: a gap). The search the BPF side mirrors: the page index, then a binary
 * search over the page's rows.
 */
int64_t cfi_table_find(const struct cfi_table *t, uint64_t vaddr);
/* The file virtual address where row i starts. */
uint64_t cfi_table_row_addr(const struct cfi_table *t, uint32_t i);
/* Bytes of rows, page index and rules together. */
size_t cfi_table_bytes(const struct cfi_table *t);

#endif
