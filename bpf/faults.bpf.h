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
 * A thread's fault entered and not completed yet. The entry stays in the map when its fault
 * completes, closed (ts 0), for the thread's next fault to reuse: a fault then costs two
 * lookups, not an insertion and a deletion (each takes the bucket's lock). Closed entries are
 * deleted when their thread exits.
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
};

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct open_fault);
} open_faults SEC(".maps");

/* The current thread's open fault, or NULL. */
static __always_inline struct open_fault *open_fault_of(__u32 tid)
{
	struct open_fault *of = bpf_map_lookup_elem(&open_faults, &tid);

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
