/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel BTF for kernels that ship none (Debian's ppc64le): mmscope carries detached BTF for
 * the kernels it is tested on (btf/<arch>/<uname -r>.btf.xz, built into the binary) and, when
 * the running kernel has no /sys/kernel/btf/vmlinux and matches one of them, hands it to
 * libbpf through an anonymous memory file: nothing is written to disk.
 */
#ifndef MMSCOPE_BTF_H
#define MMSCOPE_BTF_H

#include <stddef.h>

/* The BTF path libbpf should use for this kernel: NULL when the kernel has its own BTF or
 * mmscope carries none for it; else "/proc/self/fd/N" of a memfd. what says which. */
const char *btf_auto_path(const char **what);
/* Decompress an xz image into a new memfd; returns the fd or a negative errno. */
int btf_xz_to_memfd(const void *xz, size_t len);
/* The release names of the BTFs built in, for --version -v and probes. */
const char *btf_builtin_list(void);

#endif
