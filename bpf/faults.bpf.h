/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault state shared with other BPF files (TLB events are attributed to the fault open on
 * their thread), and the per-architecture decoding of the perf software page-fault event's
 * registers.
 */
#ifndef MMSCOPE_FAULTS_BPF_H
#define MMSCOPE_FAULTS_BPF_H

#include "state.bpf.h"

/*
 * A thread's fault entered and not completed yet. The entry stays when its fault completes,
 * closed (ts 0), for the thread's next fault to reuse. An open one is counted incomplete when
 * its thread exits.
 */
struct open_fault {
	__u64 ts; /* entry time; 0: closed */
	__u32 cls;
	__u32 tgid;
	__u32 tlb;   /* OF_TLB_*: invalidations issued while handling it */
	__u32 calls; /* handle_mm_fault() calls made for it (retries + 1), where hooked */
	__u64 user_stack;
	__u64 kernel_stack;
	char comm[MMSCOPE_COMM_LEN];
	__u64 loc_ip; /* a new user location whose build ID handle_mm_fault()'s hook reads */
	/* The file the fault's mapping maps (handle_mm_fault()'s vma: where hooked), or 0. */
	__u64 file_ino;
	__u32 file_dev;
	__u32 stacked; /* its stacks were taken (--sample: not every fault's are) */
};

#if MMSCOPE_TASK_STORAGE
/*
 * In the thread's own task storage (v5.11: 4cf1bc1f1045 "bpf: Implement task local storage"
 * for tracing programs): found from the task in a few loads, where a hash by thread ID took a
 * hash and a bucket walk, at the fault's entry and again at its completion. Freed with the
 * thread. A kernel without task storage (compat.bpf.h has_task_storage) gets the hash below:
 * userspace retypes this map before the load (user/core/session.c configure()).
 */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct open_fault);
} open_faults SEC(".maps");
#else
/* By thread ID; deleted when the thread exits, so that it holds live threads only. */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct open_fault);
} open_faults SEC(".maps");
#endif

/* The current thread's entry in open_faults (created with create: NULL when it cannot be). */
static __always_inline struct open_fault *thread_open_fault(bool create)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct open_fault *of, zero = {};

#if MMSCOPE_TASK_STORAGE
	if (task_storage_on())
		return bpf_task_storage_get(&open_faults, bpf_get_current_task_btf(), NULL,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
#endif
	of = bpf_map_lookup_elem(&open_faults, &tid);
	if (of || !create)
		return of;
	bpf_map_update_elem(&open_faults, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&open_faults, &tid);
}

/*
 * With open_fault_percpu: the open fault of the thread running on this CPU (task: its
 * task_struct, 0 for none). A fault is entered, completed and its invalidations issued on one
 * CPU unless its thread sleeps in it, and every thread leaves the CPU through the switch hook,
 * which moves a fault still open to the thread's own entry (open_fault_switch_out()). The
 * entry of open_faults is a helper call with a per-CPU busy count and ~3 dependent loads, at
 * the fault's entry, at its completion and at every invalidation; this slot is an inlined
 * array lookup, and stays in this CPU's cache.
 */
struct cpu_open_fault {
	__u64 task;
	struct open_fault of;
};

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_open_fault);
} cpu_open_faults SEC(".maps");

static __always_inline struct cpu_open_fault *cpu_open_fault_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_open_faults, &zero);
}

/*
 * Where the current thread's new fault goes (NULL when nowhere): its ts is nonzero when it
 * holds a fault left open, which the new one replaces. The first fault of a thread since it
 * came to this CPU takes the slot, unless the thread left a CPU with a fault open: that one is
 * in its own entry, and the new one goes there too, so that the old one is replaced (never
 * found open later). Another thread's fault still open in the slot means that its switch went
 * unseen: it is replaced.
 */
static __always_inline struct open_fault *open_fault_slot_for_entry(void)
{
	struct cpu_open_fault *c;
	struct open_fault *of;
	__u64 task;

	if (!open_fault_percpu)
		return thread_open_fault(true);
	c = cpu_open_fault_get();
	if (!c)
		return NULL;
	task = bpf_get_current_task();
	if (c->task == task)
		return &c->of;
	of = thread_open_fault(false);
	if (of && of->ts)
		return of;
	c->task = task;
	return &c->of;
}

/* The current thread's open fault, or NULL. */
static __always_inline struct open_fault *open_fault_of(void)
{
	struct cpu_open_fault *c;
	struct open_fault *of;

	if (open_fault_percpu) {
		c = cpu_open_fault_get();
		if (c && c->task == bpf_get_current_task())
			return c->of.ts ? &c->of : NULL;
	}
	of = thread_open_fault(false);
	return of && of->ts ? of : NULL;
}

/*
 * The switch hook, current switched out: a fault it has open in this CPU's slot moves to its
 * own entry of open_faults (it sleeps in it; it may complete on another CPU), and the slot is
 * released either way. So a thread owns a slot only while it runs there, and a slot of its own
 * answers for it: one kept across the switch would say "no fault open" to the thread back on
 * this CPU completing a fault it had moved out from another.
 */
static __always_inline void open_fault_switch_out(void)
{
	struct cpu_open_fault *c;
	struct open_fault *of;
	struct mm_stats *s;

	if (!open_fault_percpu)
		return;
	c = cpu_open_fault_get();
	if (!c || c->task != bpf_get_current_task())
		return;
	if (c->of.ts) {
		of = thread_open_fault(true);
		if (of) {
			*of = c->of;
		} else {
			s = stats_get();
			if (s)
				s->c[CNT_LOST_OPEN_FAULT]++;
		}
		c->of.ts = 0;
	}
	c->task = 0;
}

/* latency_ns: entry hook to completion; 0 for a fault that never completed. */
static __always_inline void folded_count(struct open_fault *of, __u32 kind, __u64 latency_ns)
{
	struct folded_key key = {};

	key.tgid = of->tgid;
	key.user_stack = of->user_stack;
	key.kernel_stack = of->kernel_stack;
	key.kind = kind;
	__builtin_memcpy(key.comm, of->comm, sizeof(key.comm));
	folded_add(&key, latency_ns);
}

/* The fault's class, and whether it issued local or broadcast invalidations. */
static __always_inline void fault_tlb_count(struct mm_stats *s, __u32 cls, __u32 tlb)
{
	__u32 i = fault_class_index(cls);

	/* The compiler can prove i < FAULT_CLASS_SLOTS and drop the test, but older verifiers
	 * (6.1) cannot follow its arithmetic: keep the test, after a barrier. */
	barrier_var(i);
	if (i >= FAULT_CLASS_SLOTS)
		return;
	s->fault_tlb[i][FT_FAULTS]++;
	if (tlb & OF_TLB_LOCAL)
		s->fault_tlb[i][FT_LOCAL]++;
	if (tlb & OF_TLB_BROADCAST)
		s->fault_tlb[i][FT_BROADCAST]++;
}

/* Faults on files by file and process (struct file_key); where it is full, the stats'
 * CNT_FILE_OTHER_* count what it had no room for. */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct file_key);
	__type(value, struct file_faults);
} files SEC(".maps");

/*
 * A fault on a file's mapping ended (col: enum type_col) under its file and process. Every one
 * is in the totals (CNT_FILE_*), and in the files map or, when it is full, in the remainder
 * (CNT_FILE_OTHER_*): the rows userspace shows and [other] add up to the totals.
 */
static __always_inline void file_count(struct mm_stats *s, const struct open_fault *of, __u32 col,
				       __u64 lat, bool timed)
{
	struct file_key key = {.ino = of->file_ino, .dev = of->file_dev, .tgid = of->tgid};
	struct file_faults *f, init = {};

	if (!collect_files || (!key.ino && !key.dev) || col >= TY_NR)
		return;
	s->c[CNT_FILE_MINOR + col]++;
	if (!timed)
		lat = 0;
	f = bpf_map_lookup_elem(&files, &key);
	if (!f) {
		bpf_get_current_comm(init.comm, sizeof(init.comm));
		bpf_map_update_elem(&files, &key, &init, BPF_NOEXIST);
		f = bpf_map_lookup_elem(&files, &key);
	}
	if (!f) {
		s->c[CNT_FILE_OTHER_MINOR + col]++;
		s->c[CNT_FILE_OTHER_LAT_SUM] += lat;
		return;
	}
	__sync_fetch_and_add(&f->n[col], 1);
	if (lat) {
		__sync_fetch_and_add(&f->lat_sum, lat);
		/* Not atomic: two CPUs racing on one file's new maximum may keep the smaller. */
		if (lat > f->lat_max)
			f->lat_max = lat;
	}
}

/*
 * An open fault that will never complete: the thread's next fault entry replaced it (a retry,
 * a failure, a signal), or the thread exited. Counted incomplete, with its class, its TLB
 * work and its stacks.
 */
/* How a fault ended (enum type_col) under its type, with the handle_mm_fault() calls it took,
 * and its latency when it completed and was timed. Only where handle_mm_fault() is hooked
 * (lat_from_calls), which alone tells the type: elsewhere every fault would be FTY_NONE, and
 * the histogram bump cost the completion ~20-30 ns for nothing (bpf_stats, 4 runs). */
static __always_inline void fault_type_count(struct mm_stats *s, const struct open_fault *of,
					     __u32 col, __u64 lat, bool timed)
{
	__u32 t = FC_TYPE(of->cls);

	if (!lat_from_calls)
		return;
	barrier_var(t); /* as in fault_tlb_count(): 6.1's verifier loses the mask's bound */
	if (t >= FTY_NR || col >= TY_NR)
		return;
	s->type_n[t][col]++;
	file_count(s, of, col, lat, timed);
	if (timed) {
		hist_bump(s->type_lat[t], lat);
		s->type_lat_sum[t] += lat;
	}
	if (of->calls)
		s->c[of->calls == 1   ? CNT_FAULT_CALLS_1
		     : of->calls == 2 ? CNT_FAULT_CALLS_2
				      : CNT_FAULT_CALLS_3PLUS]++;
}

/*
 * Not inlined: at a fault entry it runs before the stack walk, and inline its branches (the
 * files map, the folded record) multiplied the states the verifier carries into the walk's
 * loops, past its million instructions with --unwind dwarf or --pprof. A call leaves only the
 * caller's registers and stack to compare.
 */
static __noinline void fault_abandoned(struct mm_stats *s, struct open_fault *of)
{
	s->c[CNT_FAULT_REPLACED]++;
	fault_type_count(s, of, TY_INCOMPLETE, 0, false);
	fault_tlb_count(s, of->cls, of->tlb);
	if (of->loc_ip)
		want_maps(of->tgid); /* its location's build ID was never read: a raw address */
	/* An incomplete fault is neither major nor timed: not in a filtered run's stacks. */
	if (collect_stacks && of->stacked && !stack_major_only && !stack_min_latency_ns &&
	    (!stack_type_mask || (stack_type_mask & (1u << FC_TYPE(of->cls)))))
		folded_count(of, of->cls, 0);
}

/* A thread's fault that will never complete, if open: counted incomplete, and closed. */
static __always_inline void open_fault_close_abandoned(struct open_fault *of)
{
	struct mm_stats *s;

	if (!of->ts)
		return;
	s = stats_get();
	if (s)
		fault_abandoned(s, of);
	of->ts = 0;
}

/*
 * The perf software page-fault event hands BPF the faulting context's registers.
 * powerpc: trap 0x300 is a data access (DSISR has the store bit), 0x400 an instruction fetch,
 * MSR_PR says user mode (arch/powerpc/include/asm/reg.h). x86 and arm64: only the mode can be
 * told (the error code / ESR is not in the registers), so the access stays unknown.
 */
/*
 * ctx->regs is the perf context's register copy: read it with direct context accesses (the
 * verifier rewrites them), never with probe reads, which would read beside the context.
 */
#if defined(__TARGET_ARCH_powerpc)
#define PPC_MSR_PR	    0x4000UL
#define PPC_DSISR_ISSTORE   0x02000000UL
#define PPC_DSISR_PROTFAULT 0x08000000UL
static __always_inline __u32 perf_regs_class(bpf_user_pt_regs_t *regs)
{
	__u64 trap = regs->trap & ~0xfUL;
	__u64 dsisr = regs->dsisr;
	__u32 cls = FC_ACCESS_KNOWN;

	if (regs->msr & PPC_MSR_PR)
		cls |= FC_USER;
	if (trap == 0x400)
		cls |= FC_EXEC;
	else if (dsisr & PPC_DSISR_ISSTORE)
		cls |= FC_WRITE;
	/*
	 * Radix: DSISR_PROTFAULT is set for an access the present PTE does not allow. Hash: only
	 * where an HPTE with fewer rights exists; a write to a page whose HPTE was flushed (every
	 * page a fork write-protected) arrives as DSISR_NOHPTE, and hash_page_mm() passes it to
	 * do_page_fault() unchanged, so there the bit says nothing (prot_unknown).
	 */
	if (prot_unknown)
		return cls;
	cls |= FC_PROT_KNOWN;
	if (dsisr & PPC_DSISR_PROTFAULT)
		cls |= FC_PROT;
	return cls;
}
#elif defined(__TARGET_ARCH_arm64)
static __always_inline __u32 perf_regs_class(bpf_user_pt_regs_t *regs)
{
	/* PSR_MODE_EL0t == 0: the fault came from user mode. */
	return (regs->pstate & 0xf) == 0 ? FC_USER : 0;
}
#else
static __always_inline __u32 perf_regs_class(bpf_user_pt_regs_t *regs)
{
	/* x86 pt_regs.cs is a 16-bit field in a union; the context only allows 8-byte loads. */
	__u64 cs = *(__u64 *)((char *)regs + __builtin_offsetof(struct pt_regs, cs));

	return (cs & 3) == 3 ? FC_USER : 0;
}
#endif

#endif
