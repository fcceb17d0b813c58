/* SPDX-License-Identifier: GPL-2.0 */
/* What bpf/btfcheck.bpf.c reads through a BTF's offsets, for user/core/btfcheck.c to compare. */
#ifndef MMSCOPE_BTFCHECK_FACTS_H
#define MMSCOPE_BTFCHECK_FACTS_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* mm_struct fields that /proc/PID/stat shows (fields 26-28 and 45-51, proc(5)). */
enum btfcheck_mm {
	BTFCHECK_START_CODE,
	BTFCHECK_END_CODE,
	BTFCHECK_START_STACK,
	BTFCHECK_START_DATA,
	BTFCHECK_END_DATA,
	BTFCHECK_START_BRK,
	BTFCHECK_ARG_START,
	BTFCHECK_ARG_END,
	BTFCHECK_ENV_START,
	BTFCHECK_ENV_END,
	BTFCHECK_MM_NR,
};

struct btfcheck_facts {
	__u64 mm[BTFCHECK_MM_NR];
	__u64 root_ino, exe_ino;
	__s64 syscall_nr; /* -1: not read on this architecture */
	__u32 pid, tgid, ppid, leader_pid, root_dev, mnt_ns;
	__s32 nr_threads;
	__u32 done;
	char comm[16];
};

#endif
