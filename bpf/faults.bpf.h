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
	__u32 tlb; /* OF_TLB_*: invalidations issued while handling it */
	__u32 pad;
	__u64 user_stack;
	__u64 kernel_stack;
	char comm[MMSCOPE_COMM_LEN];
	__u64 loc_ip; /* a new user location whose build ID handle_mm_fault()'s hook reads */
};

#if MMSCOPE_TASK_STORAGE
/*
 * In the thread's own task storage (v5.11: 4cf1bc1f1045 "bpf: Implement task local storage"
 * for tracing programs): found from the task in a few loads, where a hash by thread ID took a
 * hash and a bucket walk, at the fault's entry and again at its completion. Freed with the
 * thread.
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

/* The current thread's open-fault slot (created with create: NULL when it cannot be). */
static __always_inline struct open_fault *open_fault_slot(bool create)
{
#if MMSCOPE_TASK_STORAGE
	return bpf_task_storage_get(&open_faults, bpf_get_current_task_btf(), NULL,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
#else
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct open_fault *of = bpf_map_lookup_elem(&open_faults, &tid), zero = {};

	if (of || !create)
		return of;
	bpf_map_update_elem(&open_faults, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&open_faults, &tid);
#endif
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

/*
 * An open fault that will never complete: the thread's next fault entry replaced it (a retry,
 * a failure, a signal), or the thread exited. Counted incomplete, with its class, its TLB
 * work and its stacks.
 */
static __always_inline void fault_abandoned(struct mm_stats *s, struct open_fault *of)
{
	s->c[CNT_FAULT_REPLACED]++;
	fault_tlb_count(s, of->cls, of->tlb);
	if (of->loc_ip)
		want_maps(of->tgid); /* its location's build ID was never read: a raw address */
	if (collect_stacks)
		folded_count(of, of->cls, 0);
}

/* The current thread's open fault, or NULL. */
static __always_inline struct open_fault *open_fault_of(void)
{
	struct open_fault *of = open_fault_slot(false);

	return of && of->ts ? of : NULL;
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
	__u32 cls = FC_ACCESS_KNOWN | FC_PROT_KNOWN;

	if (regs->msr & PPC_MSR_PR)
		cls |= FC_USER;
	if (trap == 0x400)
		cls |= FC_EXEC;
	else if (dsisr & PPC_DSISR_ISSTORE)
		cls |= FC_WRITE;
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
