/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether a BTF file describes the running kernel: the current task's fields read through its
 * offsets by a BPF program, compared with what the kernel reports without BTF
 * (user/core/btfcheck.c).
 */
#ifndef MMSCOPE_BTFCHECK_USER_H
#define MMSCOPE_BTFCHECK_USER_H

#include <stddef.h>

/*
 * 0: the BTF at path agrees with the running kernel on every fact checked (*nfacts of them);
 * 1: it does not: why names the first fact that differs; negative errno: the check could not
 * run (why says why).
 */
int btf_check_running(const char *path, char *why, size_t len, int *nfacts);

#endif
