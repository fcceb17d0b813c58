/* SPDX-License-Identifier: GPL-2.0 */
/*
 * DWARF unwinding of user stacks, the layout both sides share: the rows and rules that
 * user/cfi/cfi.c compiles from a file's call-frame information (see user/cfi/cfi.h for the table's
 * format), and the maps through which userspace hands the tables to the BPF walker
 * (bpf/unwind.bpf.h), which are keyed by file so that every process mapping a file shares its
 * table.
 */
#ifndef MMSCOPE_UNWIND_H
#define MMSCOPE_UNWIND_H

#ifndef __bpf__
#include <linux/types.h>
#endif

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
	__s32 cfa_off;
	__s32 ra_off;  /* CFI_RA_AT_CFA */
	__s32 fp_off;  /* CFI_FP_AT_CFA: arm64 frames of 32 KiB and more save x29 farther down */
	__s16 cfa_add; /* CFI_CFA_DEREF_*: added after the load; CFI_CFA_PLT: the PC threshold */
	__u8 kind;     /* enum cfi_kind */
	__u8 cfa;      /* enum cfi_cfa */
	__u8 ra;       /* enum cfi_ra */
	__u8 fp;       /* enum cfi_fp */
	__u8 flags;    /* CFI_RA_SIGNED */
	__u8 why;      /* enum cfi_why, for CFI_UNSUPPORTED */
};

struct cfi_row {
	__u16 addr_lo; /* low 16 bits of the start's offset from base */
	__u16 rule;
};

/*
 * The tables of all files live in three arrays of fixed-size chunks (a BPF array's elements are
 * 8-byte aligned, so 4-byte rows one to an element would take twice the memory): rows, page
 * index entries and rules. A file's rows, page index and rules each start on a chunk of their
 * own, so userspace writes whole chunks.
 */
#define UNWIND_ROW_CHUNK  1024 /* rows (struct cfi_row as a __u32) per chunk: 4 KiB */
#define UNWIND_PAGE_CHUNK 1024 /* page index entries per chunk */
#define UNWIND_RULE_CHUNK 256  /* rules per chunk: 5 KiB */

struct unwind_row_chunk {
	__u32 w[UNWIND_ROW_CHUNK]; /* addr_lo in the low 16 bits, the rule index in the high */
};

struct unwind_page_chunk {
	__u32 first[UNWIND_PAGE_CHUNK];
};

struct unwind_rule_chunk {
	struct cfi_rule r[UNWIND_RULE_CHUNK];
};

/* A file as the kernel names it in a mapping: its superblock's device (the kernel's dev_t
 * encoding, MAJOR << 20 | MINOR) and inode number. */
struct unwind_file_key {
	__u32 dev;
	__u32 pad;
	__u64 ino;
};

enum unwind_file_state {
	UNWIND_FILE_PENDING = 0, /* asked for (a REC_UNWIND_FILE record), not loaded yet */
	UNWIND_FILE_READY,	 /* its table is in the chunk arrays */
	UNWIND_FILE_NONE,	 /* no table: no CFI, not ELF, over the memory budget, ... */
};

#define UNWIND_MAX_SEGMENTS 4

/* Where a file's executable PT_LOAD segments are: file offsets [off, end) are at virtual
 * address offset + delta. */
struct unwind_segment {
	__u64 off;
	__u64 end;
	__s64 delta;
};

struct unwind_file {
	__u32 state; /* enum unwind_file_state */
	__u32 nsegs;
	__u64 base; /* the table's rows are offsets from this virtual address */
	struct unwind_segment seg[UNWIND_MAX_SEGMENTS];
	__u32 rows_start; /* index of its first row in the row chunks */
	__u32 nrows;
	__u32 pages_start; /* of its page index (npages + 1 entries) */
	__u32 npages;
	__u32 rules_start; /* of its first rule */
	__u32 nrules;
	__u32 has_build_id;
	__u32 pad;
	unsigned char build_id[20]; /* frames in it are sent as (build ID, file offset) */
	__u32 pad2;
};

/* A walk met a file without a table: userspace is asked to load it (REC_UNWIND_FILE). The
 * mapping names it in /proc/TGID/map_files/START-END while the process lives; start and end 0
 * name the process's executable (/proc/TGID/exe), asked for at its exec. */
struct unwind_file_record {
	__u32 type; /* REC_UNWIND_FILE */
	__u32 tgid;
	struct unwind_file_key key;
	__u64 start;
	__u64 end;
};

#endif
