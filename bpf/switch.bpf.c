// SPDX-License-Identifier: GPL-2.0
/*
 * Context switches and address-space changes. Every switch is exactly one of:
 * - same_mm:   between two user tasks of one address space;
 * - mm_change: the CPU goes on to run a user address space other than the last one it ran.
 *   Idle and kernel threads borrow the previous mm lazily, so the last *user* mm is tracked
 *   per CPU: A -> kthread -> B is one change, at the switch to B;
 * - kernel:    to or from idle or a kernel thread, without a change.
 * On x86 the CR3 load that follows an mm change shows as tlb:tlb_flush(TASK_SWITCH): pages -1
 * when it flushed (new or stale ASID), 0 when the ASID was still valid. sched_switch fires
 * before switch_mm_irqs_off(), so the per-CPU class of the last switch tells which switch a
 * TASK_SWITCH flush belongs to.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "state.bpf.h"
#include "faults.bpf.h"

char LICENSE[] SEC("license") = "GPL";

enum switch_class {
	SWC_NONE,
	SWC_SAME_MM,
	SWC_MM_CHANGE,
	SWC_KERNEL,
};

/* Per CPU: the processes switching and their pending counts (proc_counters()). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROC_SLOTS);
	__type(key, __u32);
	__type(value, struct proc_slot);
} switch_proc_pending SEC(".maps");

/* t: the traced side of the switch, whose comm its row takes. */
static __always_inline void switch_proc_count(__u32 tgid, struct task_struct *t, __u32 cls)
{
	bool atomic;
	__u64 *n = proc_counters(&switch_procs, &switch_proc_pending, SP_NR, tgid, t, true,
				 CNT_LOST_SWITCH_PROC, &atomic);

	if (!n)
		return;
	proc_counter_inc(n, SP_TOTAL, atomic);
	proc_counter_inc(n,
			 cls == SWC_SAME_MM	? SP_SAME_MM
			 : cls == SWC_MM_CHANGE ? SP_MM_CHANGE
						: SP_KERNEL,
			 atomic);
}

static __always_inline void note_mm_cpu(__u64 mm)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 bit = cpu < 63 ? 1ULL << cpu : 1ULL << 63, *mask;

	mask = bpf_map_lookup_elem(&mm_cpus, &mm);
	if (mask) {
		if (!(*mask & bit))
			atomic_set_own_bit(mask, bit);
		return;
	}
	if (bpf_map_update_elem(&mm_cpus, &mm, &bit, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&mm_cpus, &mm))
		count_lost(CNT_LOST_MM_CPUS);
}

/*
 * prev is current. A switch counts when a traced task is on either side, once in the total
 * and the classes; as a switch out when prev is traced and a switch in when next is (both for
 * one between two traced tasks). Both sides are always tested: perf's context-switches, the
 * number users compare with, counts the switches out only. prev_mm, next_mm and next_tgid are
 * read by the caller: direct loads from tp_btf's BTF pointers, probe reads from raw_tp's.
 */
static __always_inline void on_switch(struct task_struct *prev, struct task_struct *next,
				      __u64 prev_mm, __u64 next_mm, __u32 next_tgid)
{
	__u64 id = bpf_get_current_pid_tgid();
	bool prev_ok = trace_allowed(id);
	bool next_ok = task_allowed(next, next_tgid);
	struct cpu_switch_state *cs;
	struct mm_stats *s;
	__u32 zero = 0, cls;

	open_fault_switch_out();
	cs = bpf_map_lookup_elem(&cpu_switch, &zero);
	if (!cs)
		return;
	/* The first switch seen on this CPU: what it ran last is what prev has loaded (an idle
	 * or kernel thread's borrowed active_mm included). */
	if (!cs->last_user_mm)
		cs->last_user_mm = (__u64)BPF_CORE_READ(prev, active_mm);
	/* Classify every switch, counted or not: the per-CPU last user mm must stay true. */
	if (next_mm && next_mm != cs->last_user_mm)
		cls = SWC_MM_CHANGE;
	else if (next_mm && prev_mm == next_mm)
		cls = SWC_SAME_MM;
	else
		cls = SWC_KERNEL;
	if (next_mm)
		cs->last_user_mm = next_mm;
	if (track_mm_cpus && next_mm)
		note_mm_cpu(next_mm);
	cs->last_class = cls;
	cs->last_prev = (__u64)prev;
	cs->counted = prev_ok || next_ok;
	if (!cs->counted)
		return;
	s = stats_get();
	if (!s)
		return;
	s->c[CNT_SW_TOTAL]++;
	if (prev_ok)
		s->c[CNT_SW_OUT]++;
	if (next_ok)
		s->c[CNT_SW_IN]++;
	s->c[cls == SWC_SAME_MM	    ? CNT_SW_SAME_MM
	     : cls == SWC_MM_CHANGE ? CNT_SW_MM_CHANGE
				    : CNT_SW_KERNEL]++;
	if (collect_switch_procs) {
		struct task_struct *side = prev_ok ? prev : next;

		switch_proc_count(prev_ok ? id >> 32 : next_tgid, side, cls);
	}
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	on_switch(prev, next, (__u64)prev->mm, (__u64)next->mm, next->tgid);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	on_switch(prev, next, (__u64)BPF_CORE_READ(prev, mm), (__u64)BPF_CORE_READ(next, mm),
		  BPF_CORE_READ(next, tgid));
	return 0;
}

#if defined(__TARGET_ARCH_x86)
/* x86 TASK_SWITCH flushes, matched to the switch just classified on this CPU. */
static __always_inline void on_task_switch_flush(int reason, unsigned long pages)
{
	struct cpu_switch_state *cs;
	struct task_struct *t;
	struct mm_stats *s;
	__u32 zero = 0;

	if (reason != bpf_core_enum_value(enum tlb_flush_reason, TLB_FLUSH_ON_TASK_SWITCH))
		return;
	cs = bpf_map_lookup_elem(&cpu_switch, &zero);
	if (!cs)
		return;
	/*
	 * One CR3 load per switch, in switch_mm_irqs_off(), before switch_to(): current is still
	 * the task the switch is switching out. A CR3 load with another current, or with no
	 * switch before it, is not a switch's: exec's activate_mm() (which then runs on the CPU
	 * the task had, maybe not the one its exec tracepoint fires on), a kernel thread's
	 * kthread_use_mm(), text patching's temporary mm, left to tlb.task_switch. The CPU now
	 * runs current's mm: a later switch to it loads nothing and is no change. Matched by the
	 * class alone, such a load following a switch that loaded nothing was taken for that
	 * switch's and the CPU's mm was not updated, so that a later switch back to the loaded
	 * mm counted a change without a CR3 load (docs/reliability.md, B18).
	 */
	t = (struct task_struct *)bpf_get_current_task();
	if (cs->last_class == SWC_NONE || cs->last_prev != (__u64)t) {
		__u64 mm = (__u64)BPF_CORE_READ(t, mm);

		/*
		 * Not before the first switch seen on this CPU, which takes what the CPU runs
		 * from prev->active_mm. While the hooks are being attached, a switch whose own
		 * program was not yet there can have its CR3 load seen here, with current
		 * still prev: prev's mm, not the one loaded. Kept, it made that CPU's next
		 * switch back to the loaded mm a change without a CR3 load (B18 too).
		 */
		if (mm && cs->last_user_mm)
			cs->last_user_mm = mm;
		cs->last_class = SWC_NONE;
		return;
	}
	if (cs->counted) {
		s = stats_get();
		if (s) {
			if (cs->last_class != SWC_MM_CHANGE)
				s->c[CNT_SW_LAZY_FLUSH]++;
			else
				s->c[pages ? CNT_SW_MM_FLUSH : CNT_SW_MM_NOFLUSH]++;
		}
	}
	cs->last_class = SWC_NONE;
}

SEC("tp_btf/tlb_flush")
int BPF_PROG(switch_flush_btf, int reason, unsigned long pages)
{
	on_task_switch_flush(reason, pages);
	return 0;
}

SEC("tracepoint/tlb/tlb_flush")
int switch_flush_tp(struct trace_event_raw_tlb_flush *ctx)
{
	on_task_switch_flush(ctx->reason, ctx->pages);
	return 0;
}
#endif /* __TARGET_ARCH_x86 */
