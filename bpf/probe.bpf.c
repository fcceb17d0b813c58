// SPDX-License-Identifier: GPL-2.0
/*
 * Capability probes, loaded on their own before the main object: can this kernel load and
 * attach an fentry program, a kprobe, a BTF tracepoint? Userspace retargets them with
 * bpf_program__set_attach_target() and learns from the kernel's answer, not from guesses.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("fentry/handle_mm_fault")
int BPF_PROG(probe_fentry)
{
	return 0;
}

SEC("kprobe/handle_mm_fault")
int probe_kprobe(void *ctx)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(probe_tp_btf)
{
	return 0;
}
