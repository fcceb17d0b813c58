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

#include "core/unwind.h" /* the rows and rules, as the BPF walker reads them */

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

#define CFI_MAX_SEGMENTS 4
#define CFI_BUILD_ID_MAX 20

struct cfi_table {
	uint16_t machine; /* EM_X86_64 or EM_AARCH64 */
	uint64_t base;	  /* the lowest PT_LOAD p_vaddr: row offsets are from here */
	/* Its executable PT_LOAD segments (the first CFI_MAX_SEGMENTS): file offsets [off, end)
	 * are at virtual address offset + delta. A PC's mapping gives its file offset. */
	struct {
		uint64_t off, end;
		int64_t delta;
	} segs[CFI_MAX_SEGMENTS];
	uint32_t nsegs;
	uint32_t build_id_len; /* 0: none */
	unsigned char build_id[CFI_BUILD_ID_MAX];
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
/* The GNU build ID and machine of an ELF file (its note segments only, no CFI): the ID's
 * length (> 0), or -errno (-ENODATA: none). */
int cfi_file_build_id(const char *path, unsigned char id[CFI_BUILD_ID_MAX], uint16_t *machine);
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
