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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct tlb_proc);
} tlb_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct tlb_syscall_key);
	__type(value, __u64);
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
	struct tlb_proc *p, zero = {};

	p = bpf_map_lookup_elem(&tlb_procs, &tgid);
	if (!p) {
		bpf_map_update_elem(&tlb_procs, &tgid, &zero, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&tlb_procs, &tgid);
		if (!p) {
			count_lost(CNT_LOST_TLB_PROC);
			return;
		}
	}
	/* The latest comm: a process that exec'ed shows its new image. */
	bpf_get_current_comm(p->comm, sizeof(p->comm));
	if (slot < TLB_REASON_SLOTS)
		__sync_fetch_and_add(&p->reason[slot], 1);
}

static __always_inline void tlb_stack_count(void *ctx, __u32 tgid, __u32 reason)
{
	struct folded_key key = {};

	key.tgid = tgid;
	key.kind = KIND_TLB | reason;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	key.kernel_stack_id = bpf_get_stackid(ctx, &kernel_stacks, 0);
	self_enter();
	key.user_stack_id = bpf_get_stackid(ctx, &user_stacks, BPF_F_USER_STACK);
	self_exit();
	if (key.kernel_stack_id < 0 || key.user_stack_id < 0)
		count_lost(CNT_LOST_STACK);
	hash_add(&folded, &key, 1, CNT_LOST_FOLDED);
}

static __always_inline void tlb_flush_event(void *ctx, int reason, unsigned long pages)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, slot;
	bool initiating, broadcast;
	struct open_fault *of;
	struct mm_stats *s;

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
	else
		hist_bump(s->tlb_pages, pages);
	if (pages == 0)
		s->c[CNT_TLB_ZERO]++;

	broadcast = reason == bpf_core_enum_value(enum tlb_flush_reason, TLB_REMOTE_SEND_IPI);
	initiating = broadcast ||
		     reason == bpf_core_enum_value(enum tlb_flush_reason, TLB_LOCAL_SHOOTDOWN) ||
		     reason == bpf_core_enum_value(enum tlb_flush_reason, TLB_LOCAL_MM_SHOOTDOWN);
	if (!initiating)
		return;
	s->c[broadcast ? CNT_TLB_BROADCAST : CNT_TLB_LOCAL]++;

	/* The fault being handled on this thread issued it. */
	of = bpf_map_lookup_elem(&open_faults, &tid);
	if (of)
		of->tlb |= broadcast ? OF_TLB_BROADCAST : OF_TLB_LOCAL;
	if (collect_tlb_detail) {
		struct tlb_syscall_key key = {.nr = of ? SYSCALL_FAULT : current_syscall(),
					      .reason = slot};

		tlb_proc_count(id >> 32, slot);
		hash_add(&tlb_syscalls, &key, 1, CNT_LOST_SYSCALL);
	}
	if (collect_tlb_stacks)
		tlb_stack_count(ctx, id >> 32, slot);
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
		hist_bump(s->send_wait, bpf_ktime_get_ns() - *ts);
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
