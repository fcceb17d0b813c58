/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types shared by the BPF programs and userspace: counter indices, fault class bits, and the
 * keys and values of every map userspace reads. Only fixed-width types, so the layout is the
 * same on both sides and on every architecture.
 */
#ifndef MMSCOPE_SHARED_H
#define MMSCOPE_SHARED_H

#ifndef __bpf__
#include <linux/types.h> /* BPF programs get these types from vmlinux.h */
#endif
#include "hist.h"

#define MMSCOPE_COMM_LEN      16
#define MMSCOPE_MAX_CPUS      1024
#define MMSCOPE_BUILD_ID_SIZE 20
/* Frames kept per stack; a stack that fills them is shown as [truncated] at its root. */
#define KERNEL_STACK_DEPTH 127
#define USER_STACK_DEPTH   48

/*
 * Fault class bits, set at the fault-entry event (access and mode) and completed at the
 * completion event (minor / major / incomplete). READ is "neither WRITE nor EXEC" and is only
 * meaningful when FC_ACCESS_KNOWN is set: the portable perf software page-fault event carries
 * no error code on x86 and arm64.
 */
enum fault_class_bits {
	FC_WRITE = 1u << 0,
	FC_EXEC = 1u << 1,
	FC_USER = 1u << 2,  /* fault taken in user mode (x86 error code USER, ppc MSR_PR) */
	FC_PROT = 1u << 3,  /* protection fault on a present page (x86 PROT bit, ppc DSISR) */
	FC_MAJOR = 1u << 4, /* completed as major (VM_FAULT_MAJOR or FAULT_FLAG_TRIED) */
	FC_DONE = 1u << 5,  /* completed: accounted minor or major by mm_account_fault() */
	FC_ACCESS_KNOWN = 1u << 6,
	FC_PROT_KNOWN = 1u << 7,
};

/*
 * The type of memory a fault hit (the mapping handle_mm_fault() was given), kept in bits
 * FC_TYPE_SHIFT.. of the fault class and of a folded record's kind, so that flame graphs split
 * by it. FTY_NONE: no handle_mm_fault() call was seen for the fault (no mapping at the address,
 * an access the mapping does not allow, a kernel address, a spurious fault), or no hook sees
 * that call on this kernel (userspace then reports every type n/a). FTY_COW: a write to a
 * present page of a private mapping (x86's error code, powerpc's DSISR say the page was
 * present; arm64's fault event does not, and its copy-on-write faults stay under their
 * region).
 */
enum fault_type {
	FTY_NONE,
	FTY_HEAP,	 /* anonymous, the brk heap */
	FTY_STACK,	 /* anonymous, the main thread's stack (or any VM_GROWSDOWN mapping) */
	FTY_ANON,	 /* other anonymous memory (mmap, thread stacks) */
	FTY_FILE,	 /* a private mapping of a file (page cache, until written) */
	FTY_FILE_SHARED, /* a shared mapping of a file */
	FTY_SHMEM,	 /* tmpfs, memfd, SysV shm, shared anonymous */
	FTY_HUGETLB,	 /* hugetlbfs, MAP_HUGETLB */
	FTY_SPECIAL,	 /* vDSO and other special mappings, device and PFN maps */
	FTY_COW,	 /* copy-on-write: a write-protection fault on a private mapping */
	FTY_NR,
};
#define FC_TYPE_SHIFT 8
#define FC_TYPE_MASK  (0xfu << FC_TYPE_SHIFT)
#define FC_TYPE(cls)  (((cls)&FC_TYPE_MASK) >> FC_TYPE_SHIFT)

/* Per fault type: how its faults ended, by struct mm_stats.type_n[type][...]. */
enum type_col { TY_MINOR, TY_MAJOR, TY_INCOMPLETE, TY_NR };

/* Indices into struct mm_stats.c[]: the hot counters, one per-CPU slot each. */
enum mm_counter {
	CNT_FAULT_USER,
	CNT_FAULT_KERNEL,
	CNT_FAULT_READ,
	CNT_FAULT_WRITE,
	CNT_FAULT_EXEC,
	CNT_FAULT_PROT,
	CNT_FAULT_MINOR,
	CNT_FAULT_MAJOR,
	CNT_FAULT_REPLACED,  /* an open fault replaced by the thread's next entry, or whose
			      * thread exited: incomplete */
	CNT_FAULT_LAT_CALLS, /* latency samples taken (all methods) */
	CNT_FAULT_COMPLETIONS_UNPAIRED, /* completion with no open entry (started before attach) */
	CNT_FAULT_NOFAULT, /* kernel-mode faults with page faults disabled: probe reads */
	/* Things dropped; all reported under "lost". */
	CNT_LOST_OPEN_FAULT,  /* per-thread open-fault map full */
	CNT_LOST_STACK,	      /* stack unavailable, or the records ring full */
	CNT_LOST_PROC,	      /* per-process map full */
	CNT_LOST_LOCATION,    /* location map full */
	CNT_LOST_FOLDED,      /* folded-stack counts: ring or userspace table full */
	CNT_LOST_TRACKED,     /* tracked-process map full: a child could not be followed */
	CNT_LOST_RINGBUF,     /* ring buffer full */
	CNT_LOST_LAT,	      /* latency in-flight map full */
	CNT_LOST_TLB_PROC,    /* per-process TLB map full */
	CNT_LOST_SWITCH_PROC, /* per-process switch map full */
	/* TLB invalidations (x86 tlb:tlb_flush; counts per reason are in tlb_reason[]). */
	CNT_TLB_EVENTS,
	CNT_TLB_FULL,	    /* pages == TLB_FLUSH_ALL (-1): whole-TLB flushes */
	CNT_TLB_ZERO,	    /* pages == 0: nothing left to flush */
	CNT_TLB_LOCAL,	    /* invalidations on the issuing CPU only */
	CNT_TLB_BROADCAST,  /* invalidations sent to other CPUs */
	CNT_TLB_SEND_CALLS, /* shootdown sender calls timed (fentry/kprobe) */
	CNT_TLB_AVOIDABLE,  /* broadcasts for an mm that only ever ran on this CPU */
	/* powerpc:tlbie, one event per instruction; bursts derive invalidation operations. */
	CNT_TLBIE_LOCAL,  /* tlbiel instructions */
	CNT_TLBIE_GLOBAL, /* tlbie (broadcast) instructions */
	CNT_TLBIE_BURSTS_LOCAL,
	CNT_TLBIE_BURSTS_GLOBAL,
	/* powerpc:hash_fault (hash MMU: HPTE misses resolved by hash_page_mm) */
	CNT_HASH_FAULTS,
	CNT_HASH_READ,
	CNT_HASH_WRITE,
	CNT_HASH_EXEC,
	CNT_HASH_USER,
	/* Faults whose handling read the faulting instruction (store_updates_sp, <= v5.8) */
	CNT_INSN_READ_READ,
	CNT_INSN_READ_WRITE,
	CNT_INSN_READ_EXEC,
	CNT_LOST_MM_CPUS, /* per-mm CPU map full: avoidable broadcasts undercounted */
	/* pseries hypervisor calls that invalidate (no tlbie seen by the guest) */
	CNT_HCALL_REMOVE,	  /* H_REMOVE 0x04 */
	CNT_HCALL_PROTECT,	  /* H_PROTECT 0x18 */
	CNT_HCALL_BULK_REMOVE,	  /* H_BULK_REMOVE 0x124 */
	CNT_HCALL_RPT_INVALIDATE, /* H_RPT_INVALIDATE 0x448 */
	/* Context switches: total = same_mm + mm_change + kernel. */
	CNT_SW_TOTAL,
	CNT_SW_SAME_MM,
	CNT_SW_MM_CHANGE,
	CNT_SW_KERNEL,
	CNT_SW_MM_FLUSH,   /* mm change whose CR3 load flushed the TLB (x86 pages -1) */
	CNT_SW_MM_NOFLUSH, /* mm change that kept the TLB (x86 pages 0: ASID still valid) */
	CNT_SW_LAZY_FLUSH, /* flush at a switch without mm change (lazy TLB catch-up) */
	/* Of the switches: those switching a traced task out (perf's context-switches counts
	 * these), and those switching one in. A switch between two traced tasks is in both,
	 * once in total. */
	CNT_SW_OUT,
	CNT_SW_IN,
	/* DWARF unwinding of user stacks (bpf/unwind.bpf.h) */
	CNT_UNWIND_WALKS,	    /* user stacks walked with the tables */
	CNT_UNWIND_FRAMES_CFI,	    /* steps to a caller by a table's rule */
	CNT_UNWIND_FRAMES_FP,	    /* steps by the frame pointer (code without a table) */
	CNT_UNWIND_FRAMES_CACHED,   /* of the CFI steps, by a rule found in unwind_pcs */
	CNT_UNWIND_VMA_LOOKUPS,	    /* mappings looked up with bpf_find_vma() */
	CNT_UNWIND_VMA_BUSY,	    /* ... refused: the mm locked for writing (an FP step then) */
	CNT_UNWIND_FILE_REQUESTS,   /* files whose table was asked for */
	CNT_UNWIND_END_ROOT,	    /* walks that reached the outermost frame */
	CNT_UNWIND_END_FP,	    /* walks whose frame-pointer chain ended (FP 0) */
	CNT_UNWIND_END_DEPTH,	    /* walks that filled USER_STACK_DEPTH frames */
	CNT_UNWIND_END_NO_VMA,	    /* a return address in no executable mapping */
	CNT_UNWIND_END_GAP,	    /* a PC no CFI row covers */
	CNT_UNWIND_END_UNSUPPORTED, /* a row the walker cannot follow (cfi_why) */
	CNT_UNWIND_END_READ,	    /* a stack read failed, or a frame was not above its callee */
	CNT_UNWIND_END_NO_TABLE,    /* code without a table, and no usable frame pointer */
	CNT_UNWIND_END_PENDING,	    /* ... because its file's table was still being loaded */
	CNT_UNWIND_END_BUSY, /* a mapping could not be looked up then (mm locked, lookup pending) */
	/* handle_mm_fault()'s results, per call for a fault (regs set; GUP's calls apart), where
	 * its return is hooked (fexit, kretprobe): bits of vm_fault_t, a call may set several. */
	CNT_VMF_CALLS,	   /* calls returned */
	CNT_VMF_DONE,	   /* neither RETRY nor an error: accounted minor or major */
	CNT_VMF_RETRY,	   /* VM_FAULT_RETRY: the lock was dropped, the fault is tried again */
	CNT_VMF_MAJOR,	   /* VM_FAULT_MAJOR */
	CNT_VMF_NOPAGE,	   /* VM_FAULT_NOPAGE: the handler installed the PTE itself */
	CNT_VMF_LOCKLESS,  /* VM_FAULT_COMPLETED: done, and the lock already released */
	CNT_VMF_OOM,	   /* VM_FAULT_OOM */
	CNT_VMF_SIGBUS,	   /* VM_FAULT_SIGBUS */
	CNT_VMF_SIGSEGV,   /* VM_FAULT_SIGSEGV */
	CNT_VMF_HWPOISON,  /* VM_FAULT_HWPOISON or _LARGE */
	CNT_VMF_GUP_CALLS, /* calls without regs (get_user_pages() and the like), not faults */
	/* Faults by the handle_mm_fault() calls they took (1, 2, 3 or more: retries + 1), counted
	 * when they complete or are abandoned. */
	CNT_FAULT_CALLS_1,
	CNT_FAULT_CALLS_2,
	CNT_FAULT_CALLS_3PLUS,
	/* Faults on a file's mapping (the vma's vm_file), by how they ended, where
	 * handle_mm_fault() is hooked: counted whether or not the files map had room for them. */
	CNT_FILE_MINOR,
	CNT_FILE_MAJOR,
	CNT_FILE_INCOMPLETE,
	/* ... of those, the ones the files map was full for: by_file's [other] row. */
	CNT_FILE_OTHER_MINOR,
	CNT_FILE_OTHER_MAJOR,
	CNT_FILE_OTHER_INCOMPLETE,
	CNT_FILE_OTHER_LAT_SUM, /* their latency, for [other]'s mean */
	CNT_LOST_FILE_NAME,	/* a file whose name the file_names map had no room for */
	CNT_STACK_SAMPLES,	/* --sample N: events whose stacks were taken */
	CNT_NR,
};

/* Flush functions hooked by kprobe (attach cookie = index into the catalog's list). */
#define TLB_FN_SLOTS 32

/* Per-reason slots of tlb:tlb_flush (a power of two); reasons from the last slot up share it. */
#define TLB_REASON_SLOTS 16

/*
 * Faults by class and what invalidations they issued: class index =
 * (access * 2 + user) * 3 + completion, access 0 read, 1 write, 2 exec, 3 unknown;
 * completion 0 minor, 1 major, 2 incomplete.
 */
#define FAULT_CLASS_SLOTS 24
enum fault_tlb_col {
	FT_FAULTS,
	FT_LOCAL,     /* faults during which a local invalidation was issued */
	FT_BROADCAST, /* ... a broadcast (shootdown IPI, tlbie) */
	FT_NR,
};

/* open_fault.tlb bits: what the fault being handled issued. */
#define OF_TLB_LOCAL	 1u
#define OF_TLB_BROADCAST 2u

static inline unsigned int fault_class_index(unsigned int cls)
{
	unsigned int access = !(cls & FC_ACCESS_KNOWN) ? 3
			      : cls & FC_WRITE	       ? 1
			      : cls & FC_EXEC	       ? 2
						       : 0;
	unsigned int done = !(cls & FC_DONE) ? 2 : cls & FC_MAJOR ? 1 : 0;

	return (access * 2 + (cls & FC_USER ? 1 : 0)) * 3 + done;
}

enum lat_hist_kind {
	LAT_ALL,
	LAT_MINOR,
	LAT_MAJOR,
	LAT_NR,
};

/* The per-CPU aggregate: one lookup per event gives every hot counter and histogram. */
struct mm_stats {
	__u64 c[CNT_NR];
	/* Sums of the histograms' values (for means, and Prometheus' _sum), beside the hot
	 * counters. */
	__u64 lat_sum[LAT_NR];
	__u64 tlb_pages_sum; /* of tlb_pages */
	__u64 send_wait_sum; /* of send_wait */
	__u64 lat[LAT_NR][MMSCOPE_HIST_SLOTS];
	__u64 tlb_reason[TLB_REASON_SLOTS];
	__u64 tlb_pages[MMSCOPE_HIST_SLOTS]; /* pages per flush, full flushes apart */
	__u64 fault_tlb[FAULT_CLASS_SLOTS][FT_NR];
	__u64 send_targets[MMSCOPE_HIST_SLOTS]; /* CPUs a shootdown targeted */
	__u64 send_wait[MMSCOPE_HIST_SLOTS];	/* ns the sender waited */
	__u64 tlbie_ric[4];			/* RIC 0 TLB, 1 PWC, 2 all, 3 reserved */
	__u64 tlbie_is[4];			/* IS 0 VA, 1 PID, 2 LPID, 3 all */
	__u64 tlb_fn[TLB_FN_SLOTS];		/* calls of each hooked flush function */
	/* By fault type (enum fault_type): how the faults ended, and the latency of those that
	 * completed, from the fault-entry hook to completion (retries included). */
	__u64 type_n[FTY_NR][TY_NR];
	__u64 type_lat_sum[FTY_NR];
	__u64 type_lat[FTY_NR][MMSCOPE_HIST_SLOTS];
};

/* Per-process TLB events by reason (key: tgid). */
struct tlb_proc {
	char comm[MMSCOPE_COMM_LEN];
	__u64 reason[TLB_REASON_SLOTS];
};

/* TLB events by the system call in progress on the issuing thread. */
#define SYSCALL_NONE	(-1) /* not in a system call (or unknown) */
#define SYSCALL_FAULT	(-2) /* while handling a page fault */
#define SYSCALL_KTHREAD (-3) /* a kernel thread */
struct tlb_syscall_key {
	__s32 nr;
	__u32 reason;
};

/*
 * tlb_syscalls is a per-CPU array indexed by the system call number plus TLB_SYSCALL_BIAS (the
 * three cases above first), of counts by reason slot: a plain add on the issuing CPU, where a
 * hash of (syscall, reason) cost a lookup and an atomic add per event. Numbers beyond the
 * table (none of the architectures' tables reaches 500 as of 6.18; x86's x32 numbers have bit
 * 30 set) share its last index, reported as such. Initiating events have reason slots below
 * TLB_SYSCALL_REASONS on every architecture (x86: 2-4, powerpc 0-2, arm64 0-3).
 */
#define TLB_SYSCALL_BIAS    3
#define TLB_SYSCALL_SLOTS   512
#define TLB_SYSCALL_OTHER   (TLB_SYSCALL_SLOTS - 1)
#define TLB_SYSCALL_REASONS 8
struct tlb_syscall_counts {
	__u64 reason[TLB_SYSCALL_REASONS];
};

/* Per-process context switches (key: tgid of the traced side). */
enum switch_proc_counter { SP_TOTAL, SP_SAME_MM, SP_MM_CHANGE, SP_KERNEL, SP_NR };

struct switch_proc {
	char comm[MMSCOPE_COMM_LEN];
	union {
		struct {
			__u64 total, same_mm, mm_change, kernel;
		};
		__u64 n[SP_NR]; /* the same, by enum switch_proc_counter */
	};
};

/* folded_key.kind for TLB events: this bit plus the reason. */
#define KIND_TLB 0x80000000u

/* Per-process fault breakdown (key: tgid). */
enum proc_counter { PC_USER, PC_KERNEL, PC_READ, PC_WRITE, PC_EXEC, PC_MINOR, PC_MAJOR, PC_NR };

/*
 * Faults on files (faults --json by_file): by the file (its device, in the kernel's encoding
 * MAJOR << 20 | MINOR, and inode) and the process that took them. Values: how the faults
 * ended (enum type_col), and the latency of those that completed.
 */
struct file_key {
	__u64 ino;
	__u32 dev;
	__u32 tgid;
};

struct file_faults {
	char comm[MMSCOPE_COMM_LEN];
	__u64 n[TY_NR];
	__u64 lat_sum, lat_max;
};

/*
 * A file's name as its dentries give it, leaf first, up to its filesystem's root: the kernel
 * allows bpf_d_path() only from a few hooks (none of the fault path's), so the walk is done
 * here and the mount point is found from the device in userspace. A name longer than
 * FILE_NAME_LEN - 1 is cut (FN_NAME_CUT); a path deeper than FILE_PATH_DEPTH keeps its last
 * FILE_PATH_DEPTH names (FN_DEEPER).
 */
#define FILE_PATH_DEPTH 12
#define FILE_NAME_LEN	64
#define FN_DELETED	1u /* unlinked: d_path()'s " (deleted)" */
#define FN_DEEPER	2u
#define FN_NAME_CUT	4u
#define FN_PSEUDO	8u /* a pseudo file (memfd, shmem): its one name, no mount */
struct file_name_key {
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

struct file_name {
	__u32 depth; /* names in comp[], comp[0] the file's own */
	__u32 flags;
	char comp[FILE_PATH_DEPTH][FILE_NAME_LEN];
};

struct proc_faults {
	char comm[MMSCOPE_COMM_LEN];
	union {
		struct {
			__u64 user, kernel, read, write, exec, minor, major;
		};
		__u64 n[PC_NR]; /* the same, by enum proc_counter */
	};
};

/*
 * Per-process tables (procs, tlb_procs, switch_procs: a BPF hash by tgid whose rows are the
 * comm and then up to PROC_SLOT_COUNTERS counters) count through PROC_SLOTS slots per CPU, by
 * hash of the tgid: a slot holds one process's counts since it took the slot, not yet added
 * to its row, and adds them when another process takes it (bpf/state.bpf.h, proc_counters()).
 * Userspace adds what the slots still hold when it reads the rows at the end.
 */
#define PROC_SLOT_BITS	   5
#define PROC_SLOTS	   (1u << PROC_SLOT_BITS)
#define PROC_SLOT_COUNTERS 16
/* The key of a per-process table's remainder row, [other] (never a pid: pid_max <= 2^22). */
#define PROC_OTHER_TGID 0xffffffffu
struct proc_slot {
	__u32 tgid;
	__u32 valid;		     /* 1: the counts below are tgid's */
	__u64 n[PROC_SLOT_COUNTERS]; /* the row's counters, in its order */
};

/*
 * A fault location, keyed by what the fault handler sees: the process, its address space and
 * the faulting instruction (a kernel address for faults taken in kernel mode, mm 0). One
 * lookup a fault; the build ID is read once per key (an exec gets a new mm, so a re-exec'ed
 * process never reuses another image's entries).
 */
struct fault_location_key {
	__u32 tgid;
	__u32 kernel; /* 1: a kernel-mode fault, ip is the kernel's */
	__u64 mm;
	__u64 ip;
};

/* The count, and the user instruction as (build ID, file offset), or as the raw address when
 * the build ID could not be read (status as in struct bpf_stack_build_id: 1 = build ID
 * valid, 2 = raw ip; 0 for kernel-mode faults), or as the raw address of an image whose
 * mappings the kernel's perf mmap records give (LOC_MMAP_RECORDS: user/core/mmap_log.c; the first 8
 * bytes of build_id then hold the image's exec time, struct exec_image). */
#define LOC_MMAP_RECORDS 3
/* A user stack's one frame where the thread is in execve() loading its new image
 * (current_in_exec_load()): the caller's stack is no longer mapped. */
#define LOC_EXEC_LOAD 4
/* A user stack's one frame where the thread is exiting and its address space is detached
 * (current_no_mm()): exit_mmap()'s unmapping and its invalidations. */
#define LOC_EXITING 5
struct fault_location {
	__u64 count;
	__u32 status;
	__u32 pad;
	__u64 offset_or_ip;
	unsigned char build_id[MMSCOPE_BUILD_ID_SIZE];
	__u32 pad2;
};

/*
 * Per CPU, the fault locations counted lately (bpf/faults.bpf.c, location_count()): a location
 * is counted in the slot its key hashes to, and the slot goes to userspace in a REC_LOCATION
 * record when another location takes it. Userspace adds those up, and the slots still held
 * when the hooks are detached (user/sym/stacks.c). A BPF hash of locations cost a cold insert per
 * new location (~900 ns a fault on an exec loop, where nearly every fault is at a new
 * location: a new process, a new mm); a ring-buffer record costs ~110 ns.
 */
#define LOC_CACHE_BITS	8
#define LOC_CACHE_SLOTS (1u << LOC_CACHE_BITS)
struct location_slot {
	struct fault_location_key key;
	struct fault_location loc; /* loc.count 0: empty */
};

struct location_record {
	__u32 type; /* REC_LOCATION */
	__u32 pad;
	struct location_slot slot;
};

/* One folded-stack record: process, both stacks, and the event kind of the leaf frame. */
struct folded_key {
	__u32 tgid;
	__u32 kind;	  /* fault class bits for faults */
	__u64 user_stack; /* stack ids: content hashes, 0 when not captured */
	__u64 kernel_stack;
	char comm[MMSCOPE_COMM_LEN];
};

/*
 * What a folded-stack record adds up: events, and for faults that completed the sum of their
 * latencies (fault-entry hook to completion, ns; 0 for incomplete faults and TLB events), which
 * `faults --weight latency` uses as the weight.
 */
struct folded_value {
	__u64 count;
	__u64 latency_ns;
};

/*
 * Per CPU: the folded-stack records counted lately, by hash of their key (bpf/state.bpf.h
 * folded_add()). A record that takes another's slot sends that one's counts to userspace in
 * a REC_FOLDED record; userspace adds them up, with the slots still held when the hooks are
 * detached. count 0: empty. busy: a program is updating the slot; a program that interrupts
 * it (a TLB flush's, in an IPI) sends its event in a record of its own.
 */
#define FOLDED_CACHE_BITS  8
#define FOLDED_CACHE_SLOTS (1u << FOLDED_CACHE_BITS)

struct folded_slot {
	struct folded_key key;
	struct folded_value v;
	__u64 busy;
};

struct folded_record {
	__u32 type; /* REC_FOLDED */
	__u32 pad;
	struct folded_key key;
	struct folded_value v;
};

/*
 * Stacks are named by a 64-bit hash of their frames (not BPF_MAP_TYPE_STACK_TRACE ids: that
 * map does not chain, so two stacks whose IPs land in one bucket lose one of them, several
 * per run at a few hundred distinct stacks), and kept in userspace (user/core/stack_table.c).
 */
struct kernel_stack {
	__u32 nr;
	__u32 pad;
	__u64 ip[KERNEL_STACK_DEPTH];
};

struct user_frame {   /* the layout of struct bpf_stack_build_id */
	__s32 status; /* 1: build_id + offset valid; 2: raw ip; 0: empty */
	unsigned char build_id[MMSCOPE_BUILD_ID_SIZE];
	__u64 offset_or_ip;
};

struct user_stack {
	__u32 nr;
	__u32 pad;
	struct user_frame f[USER_STACK_DEPTH];
};

/* Ring-buffer records: events userspace must react to while the process is alive, and counts
 * of fault locations the per-CPU slots give up. */
enum mm_record_type {
	REC_EXEC = 1, /* a tracked process exec'ed: register its new binary for symbols */
	REC_MAPS = 2, /* a stack of this process holds raw addresses: snapshot its mappings now */
	REC_LOCATION = 3,     /* struct location_record: counts of a fault location */
	REC_KERNEL_STACK = 4, /* struct stack_header, then a struct kernel_stack's nr frames */
	REC_USER_STACK = 5,   /* struct stack_header, then a struct user_stack's nr frames */
	REC_FOLDED = 6,	      /* struct folded_record: counts of a folded stack */
	REC_FORK = 7,	      /* struct fork_record: a process forked from a recorded image */
	REC_UNWIND_FILE = 8,  /* struct unwind_file_record: load this file's unwind table */
};

/*
 * A process forked by one whose image's mappings userspace has from the kernel's mmap records
 * (bpf/state.bpf.c fork_image()): its image is named by (tgid, ns), its mappings are its
 * parent image's up to ns and its own records after (user/core/mmap_log.c mmap_log_fork()).
 */
struct fork_record {
	__u32 type; /* REC_FORK */
	__u32 tgid;
	__u64 ns; /* the fork (CLOCK_MONOTONIC) */
	__u32 parent_tgid;
	__u32 pad;
	__u64 parent_ns; /* with parent_tgid, names the parent's image */
};

/*
 * A stack new to its CPU goes to userspace in a record: this header, then the stack's nr and
 * its first nr frames (bpf/state.bpf.h stack_send()). A BPF hash of stacks cost a cold insert
 * of a 1.5 KB value per new stack (an allocation, ~2.3 us a fault on an exec loop, where every
 * user stack is new), and filled at 16384 stacks.
 */
struct stack_header {
	__u32 type;
	__u32 pad;
	__u64 id;
};

struct mm_record {
	__u32 type;
	__u32 tgid;
	char comm[MMSCOPE_COMM_LEN];
	char filename[256];
	__u64 ns;	/* REC_EXEC: when (CLOCK_MONOTONIC); with tgid, names the image */
	__u32 recorded; /* REC_EXEC: 1 when the image's locations use the mmap records */
	__u32 pad;
};

/* An image exec'ed while the kernel's mmap records are read (bpf/state.bpf.h exec_images):
 * named by its process and the time of its exec record. */
struct exec_image {
	__u32 tgid;
	__u32 pad;
	__u64 ns;
};

/* A process running before the mmap records began (bpf/state.bpf.c seed_images_iter): its
 * address space (the exec_images key) and its process. */
struct running_image {
	__u32 tgid;
	__u32 pad;
	__u64 mm;
};

#endif
