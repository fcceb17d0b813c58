// SPDX-License-Identifier: GPL-2.0
/*
 * TLB invalidations. x86: tlb:tlb_flush(reason, pages) fires once per flush on each CPU that
 * flushes: the sender's local part (LOCAL_MM_SHOOTDOWN, or LOCAL_SHOOTDOWN for batched unmap),
 * the IPI send (REMOTE_SEND_IPI, once per shootdown), each receiving CPU (REMOTE_SHOOTDOWN), and
 * CR3 loads at context switch (TASK_SWITCH). Initiating events are attributed to the issuing
 * thread: its process, the system call in progress, its stack, and the page fault it is
 * handling if any. Received shootdowns and task-switch flushes are not the interrupted
 * thread's doing and are not attributed to its fault.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "state.bpf.h"
#include "faults.bpf.h"
#include "compat.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Per CPU: the processes issuing invalidations and their pending counts (proc_counters()). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROC_SLOTS);
	__type(key, __u32);
	__type(value, struct proc_slot);
} tlb_proc_pending SEC(".maps");

/* Invalidations by the system call in progress and reason slot (mmscope.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TLB_SYSCALL_SLOTS);
	__type(key, __u32);
	__type(value, struct tlb_syscall_counts);
} tlb_syscalls SEC(".maps");

/* Shootdown sender calls in flight, by thread (fentry/kprobe on native_flush_tlb_multi). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} send_calls SEC(".maps");

#define TLB_FLUSH_ALL_PAGES (~0UL)

static __always_inline void tlb_proc_count(__u32 tgid, __u32 slot)
{
	bool atomic;
	__u64 *n = proc_counters(&tlb_procs, &tlb_proc_pending, TLB_REASON_SLOTS, tgid, NULL, true,
				 CNT_LOST_TLB_PROC, &atomic);

	if (n)
		proc_counter_inc(n, slot, atomic);
}

static __always_inline void tlb_syscall_count(int nr, __u32 slot)
{
	__u32 idx = (__u32)(nr + TLB_SYSCALL_BIAS);
	struct tlb_syscall_counts *c;

	if (idx >= TLB_SYSCALL_SLOTS)
		idx = TLB_SYSCALL_OTHER;
	c = bpf_map_lookup_elem(&tlb_syscalls, &idx);
	if (c)
		c->reason[slot < TLB_SYSCALL_REASONS ? slot : TLB_SYSCALL_REASONS - 1]++;
}

static __always_inline void tlb_stack_count(void *ctx, __u32 tgid, __u32 reason)
{
	struct folded_key key = {};

	if (!stack_sampled())
		return;
	key.tgid = tgid;
	key.kind = KIND_TLB | reason;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	capture_stacks(ctx, &key.kernel_stack, &key.user_stack);
	folded_add(&key, 0);
}

/*
 * Attribution of one invalidation issued by the current thread, the same on every
 * architecture: to the fault it is handling, its process, its system call, its stack.
 */
static __always_inline void attribute_invalidation(void *ctx, __u64 id, bool broadcast, __u32 slot)
{
	struct open_fault *of = open_fault_of();

	if (of)
		of->tlb |= broadcast ? OF_TLB_BROADCAST : OF_TLB_LOCAL;
	if (collect_tlb_detail) {
		tlb_proc_count(id >> 32, slot);
		tlb_syscall_count(of ? SYSCALL_FAULT : current_syscall(), slot);
	}
	if (collect_tlb_stacks)
		tlb_stack_count(ctx, id >> 32, slot);
}

#if defined(__TARGET_ARCH_x86)
static __always_inline void tlb_flush_event(void *ctx, int reason, unsigned long pages)
{
	__u64 id = bpf_get_current_pid_tgid();
	bool initiating, broadcast;
	struct mm_stats *s;
	__u32 slot;

	if (!trace_allowed(id))
		return;
	s = stats_get();
	if (!s)
		return;
	/* A negative or new reason lands in the last slot; the mask keeps the verifier sure of
	 * the bound (TLB_REASON_SLOTS is a power of two). */
	slot = (__u32)reason;
	if (slot >= TLB_REASON_SLOTS)
		slot = TLB_REASON_SLOTS - 1;
	barrier_var(slot);
	slot &= TLB_REASON_SLOTS - 1;
	s->c[CNT_TLB_EVENTS]++;
	s->tlb_reason[slot]++;
	if (pages == TLB_FLUSH_ALL_PAGES)
		s->c[CNT_TLB_FULL]++;
	else {
		hist_bump(s->tlb_pages, pages);
		s->tlb_pages_sum += pages;
	}
	if (pages == 0)
		s->c[CNT_TLB_ZERO]++;

	broadcast = reason == bpf_core_enum_value(enum tlb_flush_reason, TLB_REMOTE_SEND_IPI);
	initiating = broadcast ||
		     reason == bpf_core_enum_value(enum tlb_flush_reason, TLB_LOCAL_SHOOTDOWN) ||
		     reason == bpf_core_enum_value(enum tlb_flush_reason, TLB_LOCAL_MM_SHOOTDOWN);
	if (!initiating)
		return;
	s->c[broadcast ? CNT_TLB_BROADCAST : CNT_TLB_LOCAL]++;

	if (count_only)
		return;
	attribute_invalidation(ctx, id, broadcast, slot);
}

SEC("tp_btf/tlb_flush")
int BPF_PROG(tlb_flush_btf, int reason, unsigned long pages)
{
	tlb_flush_event(ctx, reason, pages);
	return 0;
}

SEC("tracepoint/tlb/tlb_flush")
int tlb_flush_tp(struct trace_event_raw_tlb_flush *ctx)
{
	tlb_flush_event(ctx, ctx->reason, ctx->pages);
	return 0;
}

/*
 * x86 shootdown sender (kernels with fentry or kprobes): how many CPUs each shootdown
 * targeted, and how long the sender waited for them (native_flush_tlb_multi() returns when
 * every target has flushed).
 */
static __always_inline __u32 cpumask_weight_of(const struct cpumask *mask)
{
	__u32 n = 0;

	/* The first MMSCOPE_MAX_CPUS bits: 16 words. */
	for (int i = 0; i < MMSCOPE_MAX_CPUS / 64; i++) {
		__u64 w = 0;

		bpf_probe_read_kernel(&w, sizeof(w), (const char *)mask + i * 8);
		/* popcount without builtins */
		w = w - ((w >> 1) & 0x5555555555555555ULL);
		w = (w & 0x3333333333333333ULL) + ((w >> 2) & 0x3333333333333333ULL);
		w = (w + (w >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
		n += (__u32)((w * 0x0101010101010101ULL) >> 56);
	}
	return n;
}

static __always_inline void send_enter(const struct cpumask *mask)
{
	__u64 id = bpf_get_current_pid_tgid(), ts = bpf_ktime_get_ns();
	__u32 tid = (__u32)id;
	struct mm_stats *s;

	if (!trace_allowed(id))
		return;
	s = stats_get();
	if (!s)
		return;
	hist_bump(s->send_targets, cpumask_weight_of(mask));
	bpf_map_update_elem(&send_calls, &tid, &ts, BPF_ANY);
}

static __always_inline void send_exit(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *ts = bpf_map_lookup_elem(&send_calls, &tid);
	struct mm_stats *s;

	if (!ts)
		return;
	s = stats_get();
	if (s) {
		__u64 wait = bpf_ktime_get_ns() - *ts;

		hist_bump(s->send_wait, wait);
		s->send_wait_sum += wait;
		s->c[CNT_TLB_SEND_CALLS]++;
	}
	bpf_map_delete_elem(&send_calls, &tid);
}

SEC("fentry/native_flush_tlb_multi")
int BPF_PROG(send_fentry, const struct cpumask *cpumask)
{
	send_enter(cpumask);
	return 0;
}

SEC("fexit/native_flush_tlb_multi")
int BPF_PROG(send_fexit)
{
	send_exit();
	return 0;
}

SEC("kprobe/native_flush_tlb_multi")
int BPF_KPROBE(send_kprobe, const struct cpumask *cpumask)
{
	send_enter(cpumask);
	return 0;
}

SEC("kretprobe/native_flush_tlb_multi")
int BPF_KRETPROBE(send_kretprobe)
{
	send_exit();
	return 0;
}
#endif /* __TARGET_ARCH_x86 */

/* ---- powerpc and arm64: invalidation operations, attributed like x86's ---- */

/* A broadcast is avoidable when its mm has, as far as we saw, only ever run on this CPU:
 * the arm64 "skip tlbi broadcast" opportunity, and what radix's local-flush logic is for. */
static __always_inline bool broadcast_avoidable(__u64 mm)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 *mask, bit;

	if (!mm)
		return false;
	mask = bpf_map_lookup_elem(&mm_cpus, &mm);
	if (!mask)
		return false;
	bit = cpu < 63 ? 1ULL << cpu : 1ULL << 63;
	return *mask == bit && cpu < 63;
}

/*
 * One invalidation operation issued by the current thread: local or broadcast, for mm.
 * kind: folded leaf and by_process slot (TLB_REASON_SLOTS-indexed: the arch's op kinds).
 */
static __always_inline void tlb_op(void *ctx, bool broadcast, __u32 kind, __u64 mm)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mm_stats *s;

	if (!trace_allowed(id))
		return;
	s = stats_get();
	if (!s)
		return;
	s->c[broadcast ? CNT_TLB_BROADCAST : CNT_TLB_LOCAL]++;
	s->tlb_reason[kind & (TLB_REASON_SLOTS - 1)]++;
	if (broadcast && broadcast_avoidable(mm))
		s->c[CNT_TLB_AVOIDABLE]++;
	if (count_only)
		return;
	attribute_invalidation(ctx, id, broadcast, kind & (TLB_REASON_SLOTS - 1));
}

/* Flush functions hooked by kprobe: one program, attached to each with its index as cookie. */
SEC("kprobe/tlb_fn")
int tlb_fn_kprobe(struct pt_regs *ctx)
{
	__u64 idx = bpf_get_attach_cookie(ctx);
	struct mm_stats *s;

	if (!trace_allowed(bpf_get_current_pid_tgid()))
		return 0;
	s = stats_get();
	if (s && idx < TLB_FN_SLOTS)
		s->tlb_fn[idx]++;
	return 0;
}

#if defined(__TARGET_ARCH_powerpc)
/*
 * powerpc:tlbie fires once per tlbie/tlbiel instruction (a POWER9 local PID flush is 128
 * tlbiel, one per TLB set). Instructions are counted as such; consecutive instructions on a
 * CPU with the same scope, PID, RIC and IS, less than TLBIE_BURST_GAP_NS apart, form one
 * burst: one invalidation operation, which is what gets attributed. A burst never spans two
 * threads or two faults: a COW fault's one tlbiel can follow the previous fault's within the
 * gap, and merged with it the second fault would show no invalidation (by_fault_class; 7 of
 * 200 on a POWER9 guest). Every radix invalidation sequence is framed by two ptesync
 * (radix_tlb.c), so ptesyncs are derived as 2 per burst, not counting the POWER9 erratum
 * fixups' extra ones.
 */
#define TLBIE_BURST_GAP_NS 20000
/* op kinds for tlbie bursts (by_process / folded slots) */
#define TLB_KIND_TLBIEL 0
#define TLB_KIND_TLBIE	1

struct tlbie_cpu_state {
	__u64 last_ts;
	__u64 last_key;
	__u64 last_task;     /* the thread that issued the burst */
	__u64 last_fault_ts; /* the entry time of the fault it was handling, 0 for none */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tlbie_cpu_state);
} tlbie_cpu SEC(".maps");

static __always_inline void tlbie_event(void *ctx, unsigned long lpid, unsigned long local,
					unsigned long rb, unsigned long rs, unsigned long ric,
					unsigned long prs, unsigned long r)
{
	__u64 now = bpf_ktime_get_ns(), key, task, fault_ts;
	struct tlbie_cpu_state *cs;
	struct open_fault *of;
	struct mm_stats *s;
	__u32 zero = 0, is = (rb >> 10) & 3;
	bool broadcast = local == 0;

	if (!trace_allowed(bpf_get_current_pid_tgid()))
		return;
	s = stats_get();
	cs = bpf_map_lookup_elem(&tlbie_cpu, &zero);
	if (!s || !cs)
		return;
	s->c[broadcast ? CNT_TLBIE_GLOBAL : CNT_TLBIE_LOCAL]++;
	s->tlbie_ric[ric & 3]++;
	s->tlbie_is[is & 3]++;
	key = (rs >> 32) << 16 | (lpid & 0xfff) << 4 | (ric & 3) << 2 | (is & 3);
	key = key << 1 | broadcast;
	task = bpf_get_current_task();
	of = open_fault_of();
	fault_ts = of ? of->ts : 0;
	if (now - cs->last_ts < TLBIE_BURST_GAP_NS && key == cs->last_key &&
	    task == cs->last_task && fault_ts == cs->last_fault_ts) {
		cs->last_ts = now;
		return;
	}
	cs->last_ts = now;
	cs->last_key = key;
	cs->last_task = task;
	cs->last_fault_ts = fault_ts;
	s->c[broadcast ? CNT_TLBIE_BURSTS_GLOBAL : CNT_TLBIE_BURSTS_LOCAL]++;
	tlb_op(ctx, broadcast, broadcast ? TLB_KIND_TLBIE : TLB_KIND_TLBIEL, current_mm());
}

SEC("raw_tp/tlbie")
int BPF_PROG(tlbie_raw, unsigned long lpid, unsigned long local, unsigned long rb, unsigned long rs,
	     unsigned long ric, unsigned long prs, unsigned long r)
{
	tlbie_event(ctx, lpid, local, rb, rs, ric, prs, r);
	return 0;
}

/*
 * A pseries guest without GTSE (radix) or on the hash MMU does not issue tlbie itself: the
 * hypervisor invalidates for it (H_RPT_INVALIDATE; H_REMOVE, H_PROTECT, H_BULK_REMOVE for hash
 * PTEs, asm/hvcall.h). Each such call is one invalidation operation, broadcast by the
 * hypervisor as needed.
 */
#define TLB_KIND_HCALL 2
static __always_inline void hcall_event(void *ctx, unsigned long opcode)
{
	struct mm_stats *s;
	int c;

	switch (opcode) {
	case 0x04:
		c = CNT_HCALL_REMOVE;
		break;
	case 0x18:
		c = CNT_HCALL_PROTECT;
		break;
	case 0x124:
		c = CNT_HCALL_BULK_REMOVE;
		break;
	case 0x448:
		c = CNT_HCALL_RPT_INVALIDATE;
		break;
	default:
		return;
	}
	if (!trace_allowed(bpf_get_current_pid_tgid()))
		return;
	s = stats_get();
	if (!s)
		return;
	s->c[c]++;
	tlb_op(ctx, true, TLB_KIND_HCALL, current_mm());
}

SEC("raw_tp/hcall_entry")
int BPF_PROG(hcall_raw, unsigned long opcode, unsigned long *args)
{
	hcall_event(ctx, opcode);
	return 0;
}

SEC("tracepoint/powerpc/hcall_entry")
int hcall_tp(struct trace_event_raw_hcall_entry *ctx)
{
	hcall_event(ctx, ctx->opcode);
	return 0;
}

SEC("tracepoint/powerpc/tlbie")
int tlbie_tp(struct trace_event_raw_tlbie *ctx)
{
	tlbie_event(ctx, ctx->lpid, ctx->local, ctx->rb, ctx->rs, ctx->ric, ctx->prs, ctx->r);
	return 0;
}

/* powerpc:hash_fault(addr, access, trap): HPTE misses of the hash MMU, access in _PAGE_*
 * bits (book3s/64: _PAGE_EXEC 0x1, _PAGE_WRITE 0x2, _PAGE_READ 0x4). */
static __always_inline void hash_fault_event(unsigned long addr, unsigned long access,
					     unsigned long trap)
{
	struct mm_stats *s;

	if (!trace_allowed(bpf_get_current_pid_tgid()))
		return;
	s = stats_get();
	if (!s)
		return;
	s->c[CNT_HASH_FAULTS]++;
	s->c[access & 0x1 ? CNT_HASH_EXEC : access & 0x2 ? CNT_HASH_WRITE : CNT_HASH_READ]++;
	if (addr < 0xc000000000000000UL)
		s->c[CNT_HASH_USER]++;
}

SEC("raw_tp/hash_fault")
int BPF_PROG(hash_fault_raw, unsigned long addr, unsigned long access, unsigned long trap)
{
	hash_fault_event(addr, access, trap);
	return 0;
}

SEC("tracepoint/powerpc/hash_fault")
int hash_fault_tp(struct trace_event_raw_hash_fault *ctx)
{
	hash_fault_event(ctx->addr, ctx->access, ctx->trap);
	return 0;
}

/* Kernels up to v5.8 read the faulting instruction in store_updates_sp(); count the faults
 * whose handling did, by class (the 2017 thread's question). Removed in v5.9 (773b3e53df5b). */
SEC("kprobe/store_updates_sp")
int insn_read_kprobe(struct pt_regs *ctx)
{
	struct open_fault *of = open_fault_of();
	struct mm_stats *s = stats_get();

	if (!of || !s)
		return 0;
	s->c[of->cls & FC_EXEC	  ? CNT_INSN_READ_EXEC
	     : of->cls & FC_WRITE ? CNT_INSN_READ_WRITE
				  : CNT_INSN_READ_READ]++;
	return 0;
}
#endif /* __TARGET_ARCH_powerpc */

#if defined(__TARGET_ARCH_arm64)
/*
 * arm64 6.1 has no TLB tracepoint and its flush helpers are inline: the broadcast TLBIs are
 * seen through the out-of-line functions that issue them (kernel-probes.md section 6).
 */
#define TLB_KIND_GATHER	      0 /* tlb_flush_mmu: munmap, madvise, mprotect, exit */
#define TLB_KIND_CLEAR_FLUSH  1 /* ptep_clear_flush: COW, migration */
#define TLB_KIND_ACCESS_FLAGS 2 /* ptep_set_access_flags: dirty/young update */

/* Does this gather hold something to flush? asm-generic/tlb.h: nothing unless something was
 * cleared or freed; a full-mm teardown flushes only when page tables were freed. */
static __always_inline bool gather_flushes(struct mmu_gather *tlb)
{
	unsigned int fullmm = BPF_CORE_READ_BITFIELD_PROBED(tlb, fullmm);
	unsigned int freed = BPF_CORE_READ_BITFIELD_PROBED(tlb, freed_tables);
	unsigned int cleared = BPF_CORE_READ_BITFIELD_PROBED(tlb, cleared_ptes) |
			       BPF_CORE_READ_BITFIELD_PROBED(tlb, cleared_pmds) |
			       BPF_CORE_READ_BITFIELD_PROBED(tlb, cleared_puds) |
			       BPF_CORE_READ_BITFIELD_PROBED(tlb, cleared_p4ds);

	return fullmm ? freed : (freed | cleared);
}

/* tlb_finish_mmu() in flight, by thread: its own tlb_flush_mmu() call (when the compiler kept
 * it out of line) is the same operation, counted once. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} finishing SEC(".maps");

SEC("kprobe/tlb_finish_mmu")
int BPF_KPROBE(tlbi_finish_kprobe, struct mmu_gather *tlb)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 ptr = (__u64)tlb;
	struct mm_struct *mm = BPF_CORE_READ(tlb, mm);

	bpf_map_update_elem(&finishing, &tid, &ptr, BPF_ANY);
	/* mm_tlb_flush_nested(): another thread has a flush pending on this mm, so the gather
	 * becomes a full flush with tables freed, which always flushes. */
	if (gather_flushes(tlb) || BPF_CORE_READ(mm, tlb_flush_pending.counter) > 1)
		tlb_op(ctx, true, TLB_KIND_GATHER, (__u64)mm);
	return 0;
}

SEC("kretprobe/tlb_finish_mmu")
int BPF_KRETPROBE(tlbi_finish_kretprobe)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	bpf_map_delete_elem(&finishing, &tid);
	return 0;
}

SEC("kprobe/tlb_flush_mmu")
int BPF_KPROBE(tlbi_gather_kprobe, struct mmu_gather *tlb)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *fin = bpf_map_lookup_elem(&finishing, &tid);

	if (fin && *fin == (__u64)tlb)
		return 0;
	if (gather_flushes(tlb))
		tlb_op(ctx, true, TLB_KIND_GATHER, (__u64)BPF_CORE_READ(tlb, mm));
	return 0;
}

/*
 * mprotect: change_protection() flushes each VMA's range as it ends it (tlb_end_vma(), all
 * inline on arm64, which does not merge VMAs), leaving tlb_finish_mmu() an empty gather. It
 * returns the number of pages it changed: a nonzero return is one flush.
 */
#define TLB_KIND_CHANGE_PROT 3
SEC("kretprobe/change_protection")
int BPF_KRETPROBE(tlbi_change_kretprobe, long pages)
{
	if (pages > 0)
		tlb_op(ctx, true, TLB_KIND_CHANGE_PROT, current_mm());
	return 0;
}

SEC("kprobe/ptep_clear_flush")
int BPF_KPROBE(tlbi_clear_kprobe, struct vm_area_struct *vma)
{
	tlb_op(ctx, true, TLB_KIND_CLEAR_FLUSH, (__u64)BPF_CORE_READ(vma, vm_mm));
	return 0;
}

struct access_call {
	__u64 mm;
	__u32 dirty;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct access_call);
} access_calls SEC(".maps");

SEC("kprobe/ptep_set_access_flags")
int BPF_KPROBE(tlbi_access_kprobe, struct vm_area_struct *vma, unsigned long address, void *ptep,
	       unsigned long entry, int dirty)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct access_call c = {.mm = (__u64)BPF_CORE_READ(vma, vm_mm), .dirty = dirty != 0};

	bpf_map_update_elem(&access_calls, &tid, &c, BPF_ANY);
	return 0;
}

/* It flushes (flush_tlb_page) only when it changed the pte and the change is "dirty". */
SEC("kretprobe/ptep_set_access_flags")
int BPF_KRETPROBE(tlbi_access_kretprobe, int changed)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct access_call *c = bpf_map_lookup_elem(&access_calls, &tid);

	if (!c)
		return 0;
	if (changed && c->dirty)
		tlb_op(ctx, true, TLB_KIND_ACCESS_FLAGS, c->mm);
	bpf_map_delete_elem(&access_calls, &tid);
	return 0;
}
#endif /* __TARGET_ARCH_arm64 */
