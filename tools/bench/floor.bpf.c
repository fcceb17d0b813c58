// SPDX-License-Identifier: GPL-2.0
/*
 * Empty programs, of the same types and on the same hooks as mmscope's programs on x86: what
 * the kernel's own timing of a run (kernel.bpf_stats_enabled) reads for a program that does
 * nothing. The benchmark's profile pass takes it out of mmscope's per-program times. Short
 * names: bpftool shows 15 characters. c_pf_user is the smallest counting program (one per-CPU
 * counter), shown for scale.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* The smallest counting program, for scale: one per-CPU counter. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} counter SEC(".maps");

SEC("tp_btf/page_fault_user")
int c_pf_user(void *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&counter, &zero);

	if (n)
		(*n)++;
	return 0;
}

SEC("tp_btf/page_fault_user")
int f_pf_user(void *ctx)
{
	return 0;
}

SEC("tp_btf/page_fault_kernel")
int f_pf_kernel(void *ctx)
{
	return 0;
}

SEC("tp_btf/tlb_flush")
int f_tlb_flush(void *ctx)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int f_switch(void *ctx)
{
	return 0;
}

SEC("tp_btf/sched_process_fork")
int f_fork(void *ctx)
{
	return 0;
}

SEC("tp_btf/sched_process_exec")
int f_exec(void *ctx)
{
	return 0;
}

SEC("tp_btf/sched_process_exit")
int f_exit(void *ctx)
{
	return 0;
}

/* attached to the minor-faults software event on every CPU, as mmscope's completion is */
SEC("perf_event")
int f_minor(void *ctx)
{
	return 0;
}
