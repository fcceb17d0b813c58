// SPDX-License-Identifier: GPL-2.0
/*
 * Page faults: one fault-entry event per entry into the architecture's fault handler, and one
 * completion event when mm_account_fault() accounts it minor or major. A thread's open entry
 * waits in open_faults for its completion (latency, minor/major, and the class TLB events are
 * attributed to); the thread's next entry replaces it and counts it incomplete. Nothing is
 * dropped by a timeout, so slow major faults are kept.
 *
 * Every candidate hook of the catalog has a program here; userspace keeps the ones it chose
 * and disables the rest before load. Programs only decode their hook's fields into fault class
 * bits and call the shared fault_entry() / fault_complete().
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "state.bpf.h"
#include "faults.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Per CPU: the fault locations counted lately, by hash of their key (struct location_slot). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOC_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct location_slot);
} location_cache SEC(".maps");

/* The kernel's perf mmap records, read by userspace (user/core/mmap_log.c); no program writes it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} mmap_events SEC(".maps");

/* handle_mm_fault() calls in flight (fentry/kprobe latency), by thread. */
struct lat_call {
	__u64 ts;
	__u32 flags;
	__u32 has_regs;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct lat_call);
} lat_calls SEC(".maps");

/* x86 page-fault error code bits (arch/x86/include/asm/trap_pf.h). */
#define X86_PF_PROT  (1UL << 0)
#define X86_PF_WRITE (1UL << 1)
#define X86_PF_USER  (1UL << 2)
#define X86_PF_INSTR (1UL << 4)

/* include/linux/mm_types.h: vm_fault_t bits and fault flags used by mm_account_fault(). */
#define VM_FAULT_OOM		0x000001
#define VM_FAULT_SIGBUS		0x000002
#define VM_FAULT_MAJOR		0x000004
#define VM_FAULT_HWPOISON	0x000010
#define VM_FAULT_HWPOISON_LARGE 0x000020
#define VM_FAULT_SIGSEGV	0x000040
#define VM_FAULT_RETRY		0x000400
#define VM_FAULT_ERROR                                                                             \
	(VM_FAULT_OOM | VM_FAULT_SIGBUS | VM_FAULT_SIGSEGV | VM_FAULT_HWPOISON |                   \
	 VM_FAULT_HWPOISON_LARGE)
#define FAULT_FLAG_WRITE       0x01
#define FAULT_FLAG_USER	       0x40
#define FAULT_FLAG_TRIED       0x20
#define FAULT_FLAG_INSTRUCTION 0x100

/* Per CPU: the processes counting faults and their pending counts (procs_pending: not serve). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROC_SLOTS);
	__type(key, __u32);
	__type(value, struct proc_slot);
} proc_pending SEC(".maps");

/* The counters of a process row one fault event adds one to (bits of enum proc_counter). */
static __always_inline __u32 proc_counters_of(__u32 cls, bool completion)
{
	__u32 m;

	if (completion)
		return cls & FC_MAJOR ? 1u << PC_MAJOR : 1u << PC_MINOR;
	m = cls & FC_USER ? 1u << PC_USER : 1u << PC_KERNEL;
	if (cls & FC_ACCESS_KNOWN)
		m |= cls & FC_WRITE  ? 1u << PC_WRITE
		     : cls & FC_EXEC ? 1u << PC_EXEC
				     : 1u << PC_READ;
	return m;
}

/* Count a fault event in its process's row (through this CPU's slot for it: proc_counters()). A
 * completion whose entry found no row (the table was full) is not counted again. */
static __always_inline void proc_count(__u32 tgid, __u32 cls, bool completion)
{
	__u32 mask = proc_counters_of(cls, completion);
	bool atomic;
	__u64 *n = proc_counters(&procs, &proc_pending, PC_NR, tgid, NULL, !completion,
				 CNT_LOST_PROC, &atomic);

	if (!n)
		return;
	for (__u32 i = 0; i < PC_NR; i++)
		if (mask & (1u << i))
			proc_counter_inc(n, i, atomic);
}

/*
 * The user leaf frame of a fault is the faulting instruction: its address comes from the saved
 * user registers (bpf_get_stack() for one frame costs a perf callchain setup). Its build ID
 * costs an mmap_read_trylock with interrupts off (an irq_work to unlock) and an ELF note parse,
 * ~9 us a fault on the benchmark VM: it is read when a location is first seen, and again only
 * while it could not be (a raw address, e.g. with the mm lock held for writing).
 */
static __always_inline void read_user_frame(void *ctx, struct fault_location *loc, __u32 tgid)
{
	struct bpf_stack_build_id frame;

	if (bpf_get_stack(ctx, &frame, sizeof(frame), BPF_F_USER_STACK | BPF_F_USER_BUILD_ID) <= 0)
		return;
	if (frame.status != BPF_STACK_BUILD_ID_VALID) {
		want_maps(tgid);
		if (loc->status == BPF_STACK_BUILD_ID_VALID)
			return;
	}
	loc->offset_or_ip = frame.offset;
	__builtin_memcpy(loc->build_id, frame.build_id, sizeof(loc->build_id));
	loc->status = frame.status;
}

/* The slot of location_cache a location key hashes to (the instruction and the process; the
 * mm is a pointer the verifier allows no arithmetic on). */
static __always_inline struct location_slot *location_slot_of(const struct fault_location_key *key)
{
	__u32 idx = cache_slot(key->ip ^ ((__u64)key->tgid << 40), LOC_CACHE_BITS);

	return bpf_map_lookup_elem(&location_cache, &idx);
}

/* Send a slot's counts to userspace (a REC_LOCATION record) and empty it. */
static __always_inline void location_give_up(struct location_slot *slot)
{
	struct location_record *r;

	if (!slot->loc.count)
		return;
	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (r) {
		r->type = REC_LOCATION;
		r->pad = 0;
		r->slot = *slot;
		bpf_ringbuf_submit(r, lazy_wakeup());
	} else {
		count_lost_n(CNT_LOST_LOCATION, slot->loc.count);
	}
	slot->loc.count = 0;
}

/*
 * Count a fault at its location (ip: the kernel's instruction for a kernel-mode fault, the
 * user's for a user-mode one), in this CPU's slot for it. A CPU takes a loop's faults in a
 * row at one instruction, and a process's few hundred locations fit the slots. A user location
 * new to its slot needs its build ID, which costs an mmap lock trylock and an ELF note parse;
 * with interrupts off, as in every fault-entry hook (and the perf software events), the lock
 * is released by an irq_work, a self-IPI: ~13 us a new location on the benchmark VM (2690
 * irq_work interrupts on one exec_loop run), which exec-heavy workloads pay for every location
 * of every new image. Images exec'ed while the kernel's mmap records are read need none (the
 * raw address, named by the image). Where handle_mm_fault() is hooked (fentry, kprobe:
 * lat_from_calls), that hook reads it instead, later in the same fault, with interrupts on
 * where the hook keeps them on (fentry, ftrace-based kprobes): this returns the instruction
 * for it (0: nothing to read).
 */
static __always_inline __u64 location_count(void *ctx, __u32 tgid, __u32 cls, __u64 ip)
{
	struct fault_location_key key = {.tgid = tgid, .ip = ip};
	struct location_slot *slot;
	__u64 build_id_ip = 0;

	if (!(cls & FC_USER))
		key.kernel = 1;
	else
		key.mm = current_mm();
	slot = location_slot_of(&key);
	if (!slot)
		return 0;
	if (slot->loc.count && key_words_eq(&slot->key, &key, sizeof(key))) {
		slot->loc.count++;
		if (key.kernel || slot->loc.status == BPF_STACK_BUILD_ID_VALID ||
		    slot->loc.status == LOC_MMAP_RECORDS)
			return 0;
		/* A raw address (the mm lock was held, say): try the build ID again. */
		if (lat_from_calls)
			return ip;
		read_user_frame(ctx, &slot->loc, tgid);
		return 0;
	}
	location_give_up(slot);
	slot->key = key;
	slot->loc = (struct fault_location){};
	if (!key.kernel) {
		__u64 image = image_in_mmap_records(tgid, key.mm);

		if (image) {
			/* An image whose mappings userspace has from the kernel's mmap records:
			 * the raw address, and the image's exec time in the build ID's place. */
			slot->loc.status = LOC_MMAP_RECORDS;
			slot->loc.offset_or_ip = ip;
			__builtin_memcpy(slot->loc.build_id, &image, sizeof(image));
		} else if (lat_from_calls) {
			slot->loc.status =
				BPF_STACK_BUILD_ID_IP; /* until handle_mm_fault()'s hook */
			slot->loc.offset_or_ip = ip;
			build_id_ip = ip;
		} else {
			read_user_frame(ctx, &slot->loc, tgid);
			if (!slot->loc.status) {
				count_lost(CNT_LOST_LOCATION);
				return 0;
			}
		}
	}
	slot->loc.count = 1;
	return build_id_ip;
}

/* handle_mm_fault() was called for the current thread's open fault: read the build ID of
 * its new location (location_count()), in its slot if no other location took it since (else
 * at its next fault). The leaf of its user stack is the faulting instruction. */
static __always_inline void location_build_id(void *ctx, struct open_fault *of)
{
	struct fault_location_key key = {};
	struct location_slot *slot;

	if (!of->loc_ip)
		return;
	key.tgid = of->tgid;
	key.mm = current_mm();
	key.ip = of->loc_ip;
	of->loc_ip = 0; /* once: a retried fault calls handle_mm_fault() again */
	slot = location_slot_of(&key);
	if (slot && slot->loc.count && key_words_eq(&slot->key, &key, sizeof(key)) &&
	    slot->loc.status != BPF_STACK_BUILD_ID_VALID)
		read_user_frame(ctx, &slot->loc, key.tgid);
}

/* ip: the faulting instruction (kernel-mode faults: the kernel's; user-mode: the user's). */
static __always_inline void fault_entry(void *ctx, __u32 cls, __u64 ip)
{
	__u64 id = bpf_get_current_pid_tgid(), loc_ip = 0;
	struct open_fault *of;
	struct mm_stats *s;

	if (!trace_allowed(id))
		return;
	s = stats_get();
	if (!s)
		return;
	s->c[cls & FC_USER ? CNT_FAULT_USER : CNT_FAULT_KERNEL]++;
	if (cls & FC_ACCESS_KNOWN)
		s->c[cls & FC_WRITE  ? CNT_FAULT_WRITE
		     : cls & FC_EXEC ? CNT_FAULT_EXEC
				     : CNT_FAULT_READ]++;
	if (cls & FC_PROT)
		s->c[CNT_FAULT_PROT]++;
	if (collect_procs)
		proc_count(id >> 32, cls, false);
	if (collect_locations)
		loc_ip = location_count(ctx, id >> 32, cls, ip);
	if (count_only)
		return;

	of = open_fault_slot_for_entry();
	if (!of) {
		s->c[CNT_LOST_OPEN_FAULT]++;
		return;
	}
	/* The previous entry never completed (retried, failed, or killed). */
	if (of->ts)
		fault_abandoned(s, of);
	of->cls = cls;
	of->tgid = id >> 32;
	of->tlb = 0;
	of->calls = 0;
	of->loc_ip = loc_ip;
	of->file_ino = 0;
	of->file_dev = 0;
	if (collect_stacks)
		of->stacked = stack_sampled();
	if (collect_stacks && of->stacked) {
		bpf_get_current_comm(of->comm, sizeof(of->comm));
		/* Kernel-mode faults too: the user stack shows the system call's caller. */
		capture_stacks_of(ctx, cls & FC_USER, cls & FC_EXEC, &of->kernel_stack,
				  &of->user_stack);
	}
	/* Last: the stack capture is not in the latency. Untimed, any nonzero value marks the
	 * fault open. */
	of->ts = untimed_faults ? 1 : bpf_ktime_get_ns();
}

/* The thread's open fault completed: accounted major or minor by mm_account_fault(). */
static __always_inline void fault_complete(bool major)
{
	struct open_fault *of;
	struct mm_stats *s;
	__u64 lat;
	__u32 cls;

	s = stats_get();
	if (!s)
		return;
	if (count_only) {
		/* Same filter as the entry's: the completing thread is the faulting one. */
		if (trace_allowed(bpf_get_current_pid_tgid()))
			s->c[major ? CNT_FAULT_MAJOR : CNT_FAULT_MINOR]++;
		return;
	}
	of = open_fault_of();
	if (!of) {
		s->c[CNT_FAULT_COMPLETIONS_UNPAIRED]++;
		return;
	}
	/* The time since the fault-entry hook: the histogram's when no handle_mm_fault() hooks
	 * time the calls, and always the folded weight (with those hooks it includes the
	 * retries, where the histogram counts each call). */
	lat = untimed_faults ? 0 : bpf_ktime_get_ns() - of->ts;
	cls = of->cls | FC_DONE | (major ? FC_MAJOR : 0);
	s->c[major ? CNT_FAULT_MAJOR : CNT_FAULT_MINOR]++;
	fault_tlb_count(s, cls, of->tlb);
	fault_type_count(s, of, major ? TY_MAJOR : TY_MINOR, lat, !untimed_faults);
	if (!lat_from_calls && !untimed_faults) {
		/* LAT_ALL is their sum, made in userspace (session_read_stats()). */
		hist_bump(s->lat[major ? LAT_MAJOR : LAT_MINOR], lat);
		s->lat_sum[major ? LAT_MAJOR : LAT_MINOR] += lat;
		s->c[CNT_FAULT_LAT_CALLS]++;
	}
	if (collect_procs)
		proc_count(of->tgid, cls, true);
	if (collect_stacks && of->stacked && (!stack_major_only || major) &&
	    (!stack_min_latency_ns || lat >= stack_min_latency_ns) &&
	    (!stack_type_mask || (stack_type_mask & (1u << FC_TYPE(cls)))))
		folded_count(of, cls, lat);
	of->ts = 0; /* closed */
}

/* ---- fault entry: x86 exceptions tracepoints (error code gives the class) ---- */
#if defined(__TARGET_ARCH_x86)

static __always_inline __u32 x86_class(unsigned long error_code)
{
	__u32 cls = FC_ACCESS_KNOWN | FC_PROT_KNOWN;

	if (error_code & X86_PF_USER)
		cls |= FC_USER;
	if (error_code & X86_PF_INSTR)
		cls |= FC_EXEC;
	else if (error_code & X86_PF_WRITE)
		cls |= FC_WRITE;
	if (error_code & X86_PF_PROT)
		cls |= FC_PROT;
	return cls;
}

/*
 * A kernel-mode fault taken with page faults disabled is a probe read that will be fixed up,
 * never handled: BPF's and perf's user-stack walks (this or any other tracer's), and other
 * *_nofault accesses. x86's exceptions tracepoint fires for them before the handler bails out
 * (the perf page-fault event, on every architecture, does not); they are counted apart, so
 * that one tracer's unwinding never shows up as another's workload faults.
 * The tracepoint machinery itself may hold page faults disabled (6.18 does, 6.1 does not), so
 * the level seen at a user-mode fault, which is never a probe read, is the baseline.
 */
__u32 pagefault_base = ~0u;

static __always_inline __u32 pagefault_level(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return (__u32)BPF_CORE_READ(t, pagefault_disabled);
}

static __always_inline void learn_pagefault_base(void)
{
	if (pagefault_base == ~0u)
		pagefault_base = pagefault_level();
}

static __always_inline bool nofault_access(void)
{
	__u32 base = pagefault_base;

	/* Until a user fault has been seen (at once, on any live system), assume 6.18's 1. */
	return pagefault_level() > (base == ~0u ? 1 : base);
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(pf_user_btf, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	learn_pagefault_base();
	fault_entry(ctx, x86_class(error_code), regs->ip);
	return 0;
}

static __always_inline void kernel_fault(void *ctx, unsigned long error_code, __u64 ip)
{
	if (nofault_access()) {
		if (trace_allowed(bpf_get_current_pid_tgid()))
			count_lost(CNT_FAULT_NOFAULT);
		return;
	}
	fault_entry(ctx, x86_class(error_code), ip);
}

SEC("tp_btf/page_fault_kernel")
int BPF_PROG(pf_kernel_btf, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	kernel_fault(ctx, error_code, BPF_CORE_READ(regs, ip));
	return 0;
}

SEC("tracepoint/exceptions/page_fault_user")
int pf_user_tp(struct trace_event_raw_exceptions *ctx)
{
	learn_pagefault_base();
	fault_entry(ctx, x86_class(ctx->error_code), ctx->ip);
	return 0;
}

SEC("tracepoint/exceptions/page_fault_kernel")
int pf_kernel_tp(struct trace_event_raw_exceptions *ctx)
{
	kernel_fault(ctx, ctx->error_code, ctx->ip);
	return 0;
}

#endif /* __TARGET_ARCH_x86 */

/* ---- fault entry: the perf software page-fault event (every architecture) ---- */

SEC("perf_event")
int pf_perf(struct bpf_perf_event_data *ctx)
{
	__u32 cls = perf_regs_class(&ctx->regs);

	fault_entry(ctx, cls, PT_REGS_IP(&ctx->regs));
	return 0;
}

/* ---- completion: the perf software minor/major events, fired by mm_account_fault() ---- */

SEC("perf_event")
int pf_done_minor(struct bpf_perf_event_data *ctx)
{
	fault_complete(false);
	return 0;
}

SEC("perf_event")
int pf_done_major(struct bpf_perf_event_data *ctx)
{
	fault_complete(true);
	return 0;
}

/* ---- completion and latency: handle_mm_fault() entry and exit ---- */

/*
 * The entry hook could not tell the access (perf page-fault event on arm64, or on x86 without
 * the exceptions tracepoints): handle_mm_fault()'s flags can, once the fault gets that far.
 */
static __always_inline void learn_access(struct open_fault *of, unsigned int flags)
{
	struct mm_stats *s;
	__u32 cls;

	if (of->cls & FC_ACCESS_KNOWN)
		return;
	cls = FC_ACCESS_KNOWN;
	if (flags & FAULT_FLAG_INSTRUCTION)
		cls |= FC_EXEC;
	else if (flags & FAULT_FLAG_WRITE)
		cls |= FC_WRITE;
	of->cls |= cls;
	s = stats_get();
	if (s)
		s->c[cls & FC_WRITE  ? CNT_FAULT_WRITE
		     : cls & FC_EXEC ? CNT_FAULT_EXEC
				     : CNT_FAULT_READ]++;
	if (collect_procs) {
		__u32 other = PROC_OTHER_TGID;
		struct proc_faults *p = bpf_map_lookup_elem(&procs, &of->tgid);

		if (!p)
			p = bpf_map_lookup_elem(&procs, &other);

		if (p)
			__sync_fetch_and_add(cls & FC_WRITE  ? &p->write
					     : cls & FC_EXEC ? &p->exec
							     : &p->read,
					     1);
	}
}

/* include/linux/mm.h vm_flags (the same values since 2.6) and filesystem magics
 * (include/uapi/linux/magic.h). */
#define VM_SHARED	    0x00000008UL
#define VM_GROWSDOWN	    0x00000100UL
#define VM_PFNMAP	    0x00000400UL
#define VM_IO		    0x00004000UL
#define VM_HUGETLB	    0x00400000UL
#define VM_MIXEDMAP	    0x10000000UL
#define TMPFS_MAGIC	    0x01021994UL
#define ANON_INODE_FS_MAGIC 0x09041934UL

/*
 * The type of the mapping a fault hit (enum fault_type), from the vma handle_mm_fault() was
 * given: what /proc/PID/maps shows ([heap], [stack], a file, [vdso]), and for files what backs
 * them. Four to six loads a call: the flags, the file or the ops, then the file's filesystem
 * (tmpfs and memfd are shmem whatever the mapping's flags) or, for anonymous memory, the mm's
 * heap and stack bounds. READ is a direct load (fentry: a BTF pointer) or a probe read
 * (kprobe); the vma is stable while handle_mm_fault() runs (its caller holds the mmap lock or
 * the vma's lock).
 */
#define VMA_TYPE_BODY(READ, MAGIC)                                                                 \
	unsigned long vm_flags = READ(vma, vm_flags);                                              \
	struct file *file;                                                                         \
	__u32 t;                                                                                   \
                                                                                                   \
	if (vm_flags & VM_HUGETLB)                                                                 \
		t = FTY_HUGETLB;                                                                   \
	else if (vm_flags & (VM_IO | VM_PFNMAP | VM_MIXEDMAP))                                     \
		t = FTY_SPECIAL;                                                                   \
	else if ((file = READ(vma, vm_file))) {                                                    \
		unsigned long magic = MAGIC(file);                                                 \
                                                                                                   \
		t = magic == TMPFS_MAGIC	   ? FTY_SHMEM                                     \
		    : magic == ANON_INODE_FS_MAGIC ? FTY_SPECIAL                                   \
		    : vm_flags & VM_SHARED	   ? FTY_FILE_SHARED                               \
						   : FTY_FILE;                                             \
	} else if (READ(vma, vm_ops)) {                                                            \
		t = FTY_SPECIAL; /* _install_special_mapping(): the vDSO and the like */           \
	} else {                                                                                   \
		struct mm_struct *mm = READ(vma, vm_mm);                                           \
		unsigned long start = READ(vma, vm_start), end = READ(vma, vm_end);                \
		unsigned long stack = READ(mm, start_stack);                                       \
                                                                                                   \
		/* The tests of /proc/PID/maps' [heap] and [stack] (fs/proc/task_mmu.c). */        \
		if (start <= READ(mm, brk) && end >= READ(mm, start_brk))                          \
			t = FTY_HEAP;                                                              \
		else if ((vm_flags & VM_GROWSDOWN) || (start <= stack && end >= stack))            \
			t = FTY_STACK;                                                             \
		else                                                                               \
			t = FTY_ANON;                                                              \
	}                                                                                          \
	/* A write to a present page of a private mapping: copy-on-write (or its reuse of an       \
	 * exclusive page). Needs the protection bit of the fault entry. */                        \
	if (t != FTY_SPECIAL && t != FTY_SHMEM && !(vm_flags & VM_SHARED) &&                       \
	    (cls & (FC_PROT_KNOWN | FC_WRITE | FC_PROT)) == (FC_PROT_KNOWN | FC_WRITE | FC_PROT))  \
		t = FTY_COW;                                                                       \
	return t;

#define VMA_BTF(p, f)	   ((p)->f)
#define VMA_BTF_MAGIC(f)   ((f)->f_inode->i_sb->s_magic)
#define VMA_PROBE(p, f)	   BPF_CORE_READ(p, f)
#define VMA_PROBE_MAGIC(f) BPF_CORE_READ(f, f_inode, i_sb, s_magic)

static __always_inline __u32 vma_type_btf(struct vm_area_struct *vma, __u32 cls)
{
	VMA_TYPE_BODY(VMA_BTF, VMA_BTF_MAGIC)
}

static __always_inline __u32 vma_type_probe(struct vm_area_struct *vma, __u32 cls)
{
	VMA_TYPE_BODY(VMA_PROBE, VMA_PROBE_MAGIC)
}
/* Files' names, by device and inode, recorded at their first fault (struct file_name). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct file_name_key);
	__type(value, struct file_name);
} file_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct file_name);
} file_name_scratch SEC(".maps");

/*
 * Record the name of the file (device dev, inode ino) if it is new: its dentries' names up to
 * its filesystem's root, the walk d_path() makes (fs/d_path.c prepend_path()) short of the
 * mounts, which userspace adds from the device. A dentry that is its own parent at the leaf
 * is a pseudo file's (memfd, shared anonymous memory, SysV shm: d_alloc_pseudo()), named
 * "/" + its name as d_path() does. Unhashed: unlinked (d_unlinked()), or pseudo.
 */
static __always_inline void file_name_note(struct file *file, __u32 dev, __u64 ino)
{
	struct file_name_key key = {.ino = ino, .dev = dev};
	struct dentry *d, *parent;
	struct file_name *fn;
	__u32 zero = 0, i;
	long err;

	if (bpf_map_lookup_elem(&file_names, &key))
		return;
	fn = bpf_map_lookup_elem(&file_name_scratch, &zero);
	if (!fn)
		return;
	fn->depth = 0;
	fn->flags = 0;
	d = BPF_CORE_READ(file, f_path.dentry);
	if (!BPF_CORE_READ(d, d_hash.pprev))
		fn->flags |= FN_DELETED;
	for (i = 0; i < FILE_PATH_DEPTH; i++) {
		parent = BPF_CORE_READ(d, d_parent);
		if (parent == d && i > 0)
			break; /* the filesystem's root: not a name in the path */
		bpf_probe_read_kernel_str(fn->comp[i], FILE_NAME_LEN,
					  BPF_CORE_READ(d, d_name.name));
		if (BPF_CORE_READ(d, d_name.len) >= FILE_NAME_LEN)
			fn->flags |= FN_NAME_CUT;
		fn->depth = i + 1;
		if (parent == d) {
			fn->flags |= FN_PSEUDO;
			break;
		}
		d = parent;
	}
	if (i == FILE_PATH_DEPTH && BPF_CORE_READ(d, d_parent) != d)
		fn->flags |= FN_DEEPER;
	err = bpf_map_update_elem(&file_names, &key, fn, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST: another CPU's */)
		count_lost(CNT_LOST_FILE_NAME);
}

/* The file the vma maps (none: 0, 0) into the open fault, its name noted if new. */
static __always_inline void fault_file_note(struct open_fault *of, struct vm_area_struct *vma)
{
	struct file *file = BPF_CORE_READ(vma, vm_file);
	struct inode *inode;

	of->file_ino = 0;
	of->file_dev = 0;
	if (!file)
		return;
	inode = BPF_CORE_READ(file, f_inode);
	of->file_ino = BPF_CORE_READ(inode, i_ino);
	of->file_dev = BPF_CORE_READ(inode, i_sb, s_dev);
	file_name_note(file, of->file_dev, of->file_ino);
}

/*
 * A handle_mm_fault() call for the current thread's open fault (regs set: GUP's calls have
 * none and are no fault): the access where the entry could not tell it, the type of the
 * mapping (each call: a retry may find the mapping changed), the count of calls, and the
 * build ID of a new location. btf: the vma is a BTF pointer (fentry), else probe reads.
 */
static __always_inline void mm_fault_of_call(void *ctx, struct vm_area_struct *vma,
					     unsigned int flags, bool btf)
{
	struct open_fault *of = open_fault_of();
	__u32 t;

	if (!of)
		return;
	learn_access(of, flags);
	t = btf ? vma_type_btf(vma, of->cls) : vma_type_probe(vma, of->cls);
	of->cls = (of->cls & ~FC_TYPE_MASK) | (t << FC_TYPE_SHIFT);
	if (collect_files)
		fault_file_note(of, vma);
	of->calls++;
	if (collect_locations)
		location_build_id(ctx, of);
}

static __always_inline void mm_fault_call(void *ctx, struct vm_area_struct *vma, unsigned int flags,
					  void *regs, bool btf)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct lat_call call;

	if (!trace_allowed(id))
		return;
	if (regs)
		mm_fault_of_call(ctx, vma, flags, btf);
	call.ts = bpf_ktime_get_ns();
	call.flags = flags;
	call.has_regs = regs != NULL;
	if (bpf_map_update_elem(&lat_calls, &tid, &call, BPF_ANY))
		count_lost(CNT_LOST_LAT);
}

/* vm_fault_t bits beside mm_account_fault()'s: VM_FAULT_COMPLETED came with v5.17 (36090def7bad
 * "mm: Add a VM_FAULT_COMPLETED return code"; an older kernel never sets 0x4000); NOPAGE has
 * been 0x100 since v3.x. */
#define VM_FAULT_NOPAGE	   0x000100
#define VM_FAULT_COMPLETED 0x004000

/* How a handle_mm_fault() call ended (CNT_VMF_*: a call may set several bits). */
static __always_inline void mm_fault_result(struct mm_stats *s, unsigned int ret, bool has_regs)
{
	if (!has_regs) {
		s->c[CNT_VMF_GUP_CALLS]++;
		return;
	}
	s->c[CNT_VMF_CALLS]++;
	if (!(ret & (VM_FAULT_RETRY | VM_FAULT_ERROR)))
		s->c[CNT_VMF_DONE]++;
	if (ret & VM_FAULT_RETRY)
		s->c[CNT_VMF_RETRY]++;
	if (ret & VM_FAULT_MAJOR)
		s->c[CNT_VMF_MAJOR]++;
	if (ret & VM_FAULT_NOPAGE)
		s->c[CNT_VMF_NOPAGE]++;
	if (ret & VM_FAULT_COMPLETED)
		s->c[CNT_VMF_LOCKLESS]++;
	if (ret & VM_FAULT_OOM)
		s->c[CNT_VMF_OOM]++;
	if (ret & VM_FAULT_SIGBUS)
		s->c[CNT_VMF_SIGBUS]++;
	if (ret & VM_FAULT_SIGSEGV)
		s->c[CNT_VMF_SIGSEGV]++;
	if (ret & (VM_FAULT_HWPOISON | VM_FAULT_HWPOISON_LARGE))
		s->c[CNT_VMF_HWPOISON]++;
}

static __always_inline void mm_fault_return(unsigned int ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct lat_call *call;
	struct mm_stats *s;
	bool major, done;
	__u64 lat;

	call = bpf_map_lookup_elem(&lat_calls, &tid);
	if (!call)
		return;
	s = stats_get();
	if (!s)
		goto out;
	/* The same test as mm_account_fault(): retries and errors are not accounted. */
	done = !(ret & (VM_FAULT_RETRY | VM_FAULT_ERROR));
	major = (ret & VM_FAULT_MAJOR) || (call->flags & FAULT_FLAG_TRIED);
	lat = bpf_ktime_get_ns() - call->ts;
	hist_bump(s->lat[LAT_ALL], lat);
	s->lat_sum[LAT_ALL] += lat;
	if (done) {
		hist_bump(s->lat[major ? LAT_MAJOR : LAT_MINOR], lat);
		s->lat_sum[major ? LAT_MAJOR : LAT_MINOR] += lat;
	}
	s->c[CNT_FAULT_LAT_CALLS]++;
	mm_fault_result(s, ret, call->has_regs);
	/* Without regs (GUP) mm_account_fault() fires no completion event either. */
	if (done && call->has_regs)
		fault_complete(major);
out:
	bpf_map_delete_elem(&lat_calls, &tid);
}

SEC("fentry/handle_mm_fault")
int BPF_PROG(mm_fault_fentry, struct vm_area_struct *vma, unsigned long address, unsigned int flags,
	     struct pt_regs *regs)
{
	mm_fault_call(ctx, vma, flags, regs, true);
	return 0;
}

SEC("fexit/handle_mm_fault")
int BPF_PROG(mm_fault_fexit, struct vm_area_struct *vma, unsigned long address, unsigned int flags,
	     struct pt_regs *regs, vm_fault_t ret)
{
	mm_fault_return(ret);
	return 0;
}

SEC("kprobe/handle_mm_fault")
int BPF_KPROBE(mm_fault_kprobe, struct vm_area_struct *vma, unsigned long address,
	       unsigned int flags, struct pt_regs *regs)
{
	mm_fault_call(ctx, vma, flags, regs, false);
	return 0;
}

SEC("kretprobe/handle_mm_fault")
int BPF_KRETPROBE(mm_fault_kretprobe, vm_fault_t ret)
{
	mm_fault_return(ret);
	return 0;
}
