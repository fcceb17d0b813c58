/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The state every mmscope BPF program shares: configuration (const volatile rodata, fixed by
 * userspace before load, so the verifier prunes what a run does not use), maps, the target
 * filter, and the per-CPU statistics block.
 *
 * state.bpf.c defines everything here (it includes this header with MMSCOPE_DEFINE_STATE);
 * every other *.bpf.c sees extern declarations, and `bpftool gen object` links them into one
 * object with one skeleton.
 */
#ifndef MMSCOPE_STATE_BPF_H
#define MMSCOPE_STATE_BPF_H

#include "mmscope.h"

#ifdef MMSCOPE_DEFINE_STATE
#define STATE_DECL
#define RODATA(type, name)	    const volatile type name = 0
#define RODATA_ARRAY(type, name, n) const volatile type name[n] = {}
#else
#define STATE_DECL		    extern
#define RODATA(type, name)	    extern const volatile type name
#define RODATA_ARRAY(type, name, n) extern const volatile type name[n]
#endif

/* Target filter (see trace_allowed()). */
RODATA(bool, filter_cpu);
RODATA_ARRAY(__u64, cpu_mask, MMSCOPE_MAX_CPUS / 64);
RODATA(__u32, targ_tid);       /* kernel pid of one thread; 0: off */
RODATA(bool, filter_cgroup);   /* cgroup in cgroup_filter[0], descendants included */
RODATA(bool, filter_tgid);     /* processes in the tracked map */
RODATA(bool, follow_children); /* add children of tracked processes at fork */

/* What to collect beyond the hot counters. */
RODATA(bool, collect_procs);
RODATA(bool, collect_locations);
RODATA(bool, collect_stacks);	    /* fault stacks (faults --folded) */
RODATA(bool, collect_tlb_stacks);   /* TLB flush stacks (tlb --folded) */
RODATA(bool, collect_tlb_detail);   /* TLB events by process and by system call */
RODATA(bool, collect_switch_procs); /* context switches by process */
RODATA(bool, track_mm_cpus);	    /* CPUs each mm ran on (avoidable broadcasts) */
/*
 * Counting only (mmscope stat): no per-thread open fault, so no pairing, latency or
 * attribution; minor/major are counted where they are accounted and incomplete is derived.
 * Saves the hash-map updates that dominate the per-fault cost.
 */
RODATA(bool, count_only);
/* Latency comes from handle_mm_fault entry/exit (fentry or kprobe) rather than pairing. */
RODATA(bool, lat_from_calls);
/* With -c: the cgroup's id, to test the task switched in (not current) at sched_switch. */
RODATA(__u64, targ_cgroup_id);

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_stats);
} stats SEC(".maps");

/* Processes (tgid) traced with -p or --, grown at fork unless --no-children. */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} tracked SEC(".maps");

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} records SEC(".maps");

/* Kernel stacks and user stacks; userspace shrinks them to one entry when not collecting. */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 8192);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, KERNEL_STACK_DEPTH * sizeof(__u64));
} kernel_stacks SEC(".maps");

/* User frames as (build ID, file offset): valid after the process exits or re-execs. */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_STACK_BUILD_ID);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, USER_STACK_DEPTH * sizeof(struct bpf_stack_build_id));
} user_stacks SEC(".maps");

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct folded_key);
	__type(value, __u64);
} folded SEC(".maps");

/*
 * Set while a program of ours walks a user stack: that walk reads user memory with page
 * faults disabled, and a miss enters the fault handler in kernel mode, firing the exceptions
 * tracepoint inside our own program. Those faults are mmscope's, not the workload's: they are
 * counted apart and must not replace the thread's open fault.
 */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} self_busy SEC(".maps");

static __always_inline void self_enter(void)
{
	__u32 zero = 0, *b = bpf_map_lookup_elem(&self_busy, &zero);

	if (b)
		*b = 1;
}

static __always_inline void self_exit(void)
{
	__u32 zero = 0, *b = bpf_map_lookup_elem(&self_busy, &zero);

	if (b)
		*b = 0;
}

static __always_inline bool self_busy_now(void)
{
	__u32 zero = 0, *b = bpf_map_lookup_elem(&self_busy, &zero);

	return b && *b;
}

/* mm -> CPUs it was switched in on (bit per CPU below 63; bit 63: any CPU from 63 up), kept
 * at sched_switch when track_mm_cpus is set. */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} mm_cpus SEC(".maps");

static __always_inline struct mm_stats *stats_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stats, &zero);
}

static __always_inline void count_lost(int counter)
{
	struct mm_stats *s = stats_get();

	if (s)
		s->c[counter]++;
}

/*
 * One predicate for every target filter. pid_tgid is bpf_get_current_pid_tgid(): the upper
 * half is the kernel's tgid (what users call the PID), the lower half the kernel's pid (the
 * thread ID, TID).
 */
static __always_inline bool trace_allowed(__u64 pid_tgid)
{
	__u32 tgid = pid_tgid >> 32;

	if (filter_cpu) {
		__u32 cpu = bpf_get_smp_processor_id();

		if (cpu >= MMSCOPE_MAX_CPUS || !(cpu_mask[cpu / 64] & (1ULL << (cpu % 64))))
			return false;
	}
	if (targ_tid && (__u32)pid_tgid != targ_tid)
		return false;
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return false;
	if (filter_tgid && !bpf_map_lookup_elem(&tracked, &tgid))
		return false;
	return true;
}

/*
 * The same filter for a task that is not current (the task switched in at sched_switch).
 * The cgroup test is exact for that side (the task's own cgroup, not its descendants).
 */
static __always_inline bool task_allowed(struct task_struct *t)
{
	__u32 tgid = BPF_CORE_READ(t, tgid);

	if (filter_cpu) {
		__u32 cpu = bpf_get_smp_processor_id();

		if (cpu >= MMSCOPE_MAX_CPUS || !(cpu_mask[cpu / 64] & (1ULL << (cpu % 64))))
			return false;
	}
	if (targ_tid && (__u32)BPF_CORE_READ(t, pid) != targ_tid)
		return false;
	if (filter_cgroup && BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id) != targ_cgroup_id)
		return false;
	if (filter_tgid && !bpf_map_lookup_elem(&tracked, &tgid))
		return false;
	return true;
}

static __always_inline void hist_bump(__u64 *slots, __u64 value)
{
	__u32 slot = mmscope_hist_slot(value);

	if (slot < MMSCOPE_HIST_SLOTS)
		slots[slot]++;
}

/* Add to a u64 value in a hash map, creating it; count a loss when the map is full. */
static __always_inline void hash_add(void *map, const void *key, __u64 n, int lost_counter)
{
	__u64 *v = bpf_map_lookup_elem(map, key);

	if (v) {
		__sync_fetch_and_add(v, n);
		return;
	}
	if (bpf_map_update_elem(map, key, &n, BPF_NOEXIST) == 0)
		return;
	v = bpf_map_lookup_elem(map, key); /* lost a race with another CPU creating it */
	if (v)
		__sync_fetch_and_add(v, n);
	else
		count_lost(lost_counter);
}

#endif
