/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User stacks walked from DWARF call-frame information (x86_64, arm64), for code built without
 * frame pointers: Debian's binaries and libraries, whose frame-pointer walk stops at the leaf.
 *
 * Userspace compiles each executable file's .eh_frame (or .debug_frame) into a sorted table of
 * rows (user/cfi/cfi.c) and loads it into the chunk arrays below, keyed by the file (device and
 * inode), so every process that maps a file shares its table. Per frame the walk:
 *  1. finds the mapping of the PC: a per-CPU cache of mappings, filled by bpf_find_vma() (v5.17:
 *     7c7e3d31e785 "bpf: Introduce helper bpf_find_vma") on a miss, which takes the address
 *     space's lock (a trylock) once per mapping, process and CPU, not per event;
 *  2. writes the frame: (build ID, file offset) when the file's table is loaded (resolved at
 *     the end like the kernel's build-ID frames, after the process is gone), the raw address
 *     otherwise (resolved from the mmap records or a maps snapshot, as frame-pointer walks are);
 *  3. finds the row covering the PC (the return address minus one above the top frame: the
 *     call, which may be a function's last instruction) by the file's 64 KiB page index and a
 *     binary search of at most 17 steps;
 *  4. follows its rule: the CFA from SP or FP (or through a load, or glibc's PLT pattern), the
 *     return address and the caller's FP saved at CFA offsets; a signal trampoline's row takes
 *     the interrupted registers from the signal frame.
 * A file without a table yet (its first walk asks userspace for it: REC_UNWIND_FILE), without
 * CFI, or code in no file (JIT) is stepped by its frame pointer, as before. A walk that cannot
 * go on stops there, and why is counted (CNT_UNWIND_END_*), never guessed past.
 */
#ifndef MMSCOPE_UNWIND_BPF_H
#define MMSCOPE_UNWIND_BPF_H

#include "unwind.h"

/* Walk user stacks with the tables (faults --folded --unwind dwarf), where bpf_find_vma() and
 * bpf_loop() exist and the JIT is on. */
RODATA(bool, unwind_dwarf);
RODATA(__u32, unwind_page_shift); /* vm_pgoff is in pages of this size */

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct unwind_file_key);
	__type(value, struct unwind_file);
} unwind_files SEC(".maps");

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by userspace: the memory budget (--unwind-memory) */
	__type(key, __u32);
	__type(value, struct unwind_row_chunk);
} unwind_rows SEC(".maps");

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_page_chunk);
} unwind_pages SEC(".maps");

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_rule_chunk);
} unwind_rules SEC(".maps");

/* A new file's entry (from .rodata: it is too large for the walk's stack). Here, not with the
 * walk: the objects with and without callbacks keep the same .rodata. */
static const struct unwind_file unwind_file_pending = {.state = UNWIND_FILE_PENDING};

/* A mapping as a walk needs it. key.ino 0: not a file (anonymous memory, JIT code, vDSO). */
struct unwind_vma {
	__u64 mm;
	__u64 start;
	__u64 end;
	__u64 pgoff; /* in bytes */
	struct unwind_file_key key;
	__u32 exec; /* VM_EXEC: a PC anywhere else is not code, the walk went wrong */
	__u32 busy; /* a program on this CPU is using the slot (see unwind_vma_of()) */
};

/* Per CPU: the mappings walks met lately, by hash of (process, 2 MiB region). */
#define UNWIND_VMA_BITS 8
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1 << UNWIND_VMA_BITS);
	__type(key, __u32);
	__type(value, struct unwind_vma);
} unwind_vmas SEC(".maps");

/*
 * The mappings walks met, by process and 2 MiB region, shared by the CPUs: a lookup with
 * bpf_find_vma() where interrupts are off (x86's fault entry) must wait for an irq_work to
 * release the mm's lock before the next one on the CPU succeeds, so a walk through new mappings
 * gets one a fault; kept here, a process's mappings are looked up once, not once per CPU it
 * runs on. Entries of processes gone age out (LRU).
 */
struct unwind_vma_key {
	__u32 tgid;
	__u32 region; /* address >> 21 */
};

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct unwind_vma_key);
	__type(value, struct unwind_vma);
} unwind_proc_vmas SEC(".maps");

/*
 * Per CPU: what the walk found for a frame lately (its file's build ID, the offset, the rule),
 * by hash of (address space, PC): a stack seen before costs one lookup a frame, not a mapping,
 * a file and a row search (~200 ns a frame on the benchmark host). Frames of loaded files only.
 * Like the stack cache, a mapping replaced at the same address of the same address space
 * (dlclose, then dlopen of another file there) is not seen.
 */
struct unwind_pc_slot {
	__u64 mm;
	__u64 pc; /* pc << 1 | exact */
	__u64 off;
	struct cfi_rule rule;
	__u32 busy;
	unsigned char build_id[20];
	__u32 pad;
};

#define UNWIND_PC_BITS 10
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1 << UNWIND_PC_BITS);
	__type(key, __u32);
	__type(value, struct unwind_pc_slot);
} unwind_pcs SEC(".maps");

/* A walk's state, in the per-CPU stack scratch (bpf/unwind_walk.bpf.h). */
struct unwind_walk {
	__u64 mm;
	__u64 image; /* the process's exec_images name, for raw frames; 0: none */
	__u64 pc, sp, fp, lr;
	__u64 hash; /* of the frames' addresses: the ustack_cache key */
	__u32 tgid;
	__u32 n;      /* frames written */
	__u32 end;    /* the CNT_UNWIND_END_* counter of why the walk stopped */
	__u32 exact;  /* pc is where the thread was, not a return address (top, signal) */
	__u32 lo, hi; /* the row search's bounds (unwind_rule_at()) */
	__u32 frames_cfi, frames_fp, frames_cached; /* added to the counters at the end */
	__u32 pad;
	/* The frame's mapping and rule: here, not on the walk's stack (unwind_vma_found()). */
	struct unwind_vma vma;
	struct cfi_rule rule;
	__u32 pad2;
};

#endif
