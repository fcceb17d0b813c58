// SPDX-License-Identifier: GPL-2.0
/*
 * Does a BTF describe the running kernel? Loaded with that BTF as libbpf's btf_custom_path
 * (user/core/btfcheck.c), this program reads, through the BTF's offsets (CO-RE), the fields of the
 * current task that mmscope's programs read, and userspace compares each value with what the
 * kernel reports about the same task without any BTF: getpid(), gettid(), getppid(),
 * /proc/self/comm, /proc/self/stat (the mm_struct's code, data, brk, stack, argument and
 * environment bounds; the thread count), stat() of /, /proc/self/ns/mnt and /proc/self/exe.
 * A BTF of another kernel puts these fields elsewhere: the values read disagree (or a field it
 * lacks fails the load), and mmscope refuses it instead of printing wrong numbers.
 *
 * It is a raw tracepoint program run once by BPF_PROG_TEST_RUN (v5.10: 1b4d60ec162f "bpf:
 * Enable BPF_PROG_TEST_RUN for raw_tracepoint"), in the calling thread: no attach, no kernel
 * BTF, the JIT or the interpreter alike.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "btfcheck_facts.h"

char LICENSE[] SEC("license") = "GPL";

struct btfcheck_facts facts;

SEC("raw_tp")
int btfcheck(void *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct mm_struct *mm = BPF_CORE_READ(t, mm);
	struct dentry *root = BPF_CORE_READ(t, fs, root.dentry);
	struct file *exe = BPF_CORE_READ(mm, exe_file);

	facts.pid = BPF_CORE_READ(t, pid);
	facts.tgid = BPF_CORE_READ(t, tgid);
	facts.ppid = BPF_CORE_READ(t, real_parent, tgid);
	facts.leader_pid = BPF_CORE_READ(t, group_leader, pid);
	facts.nr_threads = BPF_CORE_READ(t, signal, nr_threads);
	BPF_CORE_READ_STR_INTO(&facts.comm, t, comm);
	facts.mnt_ns = BPF_CORE_READ(t, nsproxy, mnt_ns, ns.inum);
	facts.root_ino = BPF_CORE_READ(root, d_inode, i_ino);
	facts.root_dev = BPF_CORE_READ(root, d_sb, s_dev);
	facts.exe_ino = BPF_CORE_READ(exe, f_inode, i_ino);
	facts.mm[BTFCHECK_START_CODE] = BPF_CORE_READ(mm, start_code);
	facts.mm[BTFCHECK_END_CODE] = BPF_CORE_READ(mm, end_code);
	facts.mm[BTFCHECK_START_STACK] = BPF_CORE_READ(mm, start_stack);
	facts.mm[BTFCHECK_START_DATA] = BPF_CORE_READ(mm, start_data);
	facts.mm[BTFCHECK_END_DATA] = BPF_CORE_READ(mm, end_data);
	facts.mm[BTFCHECK_START_BRK] = BPF_CORE_READ(mm, start_brk);
	facts.mm[BTFCHECK_ARG_START] = BPF_CORE_READ(mm, arg_start);
	facts.mm[BTFCHECK_ARG_END] = BPF_CORE_READ(mm, arg_end);
	facts.mm[BTFCHECK_ENV_START] = BPF_CORE_READ(mm, env_start);
	facts.mm[BTFCHECK_ENV_END] = BPF_CORE_READ(mm, env_end);
#if defined(__TARGET_ARCH_powerpc)
	/* The user registers mmscope finds through thread.regs (bpf/compat.bpf.h), whose r0 holds
	 * the system call being made: bpf() itself. */
	facts.syscall_nr = BPF_CORE_READ(t, thread.regs, gpr[0]);
#else
	facts.syscall_nr = -1; /* their place is not read through the BTF here */
#endif
	facts.done = 1;
	return 0;
}
