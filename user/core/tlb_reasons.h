/* SPDX-License-Identifier: GPL-2.0 */
/* The JSON keys of the tlb_flush reason slots (bpf/tlb.bpf.c), per architecture. */
#ifndef MMSCOPE_TLB_REASONS_H
#define MMSCOPE_TLB_REASONS_H

#include <stdbool.h>

#include "core/run_result.h"

/*
 * keys[i]: the key of slot i for arch (enum arch_bits). On x86, the kernel's names of enum
 * tlb_flush_reason ("remote_ipi_send"), from the BTF at btf_path (NULL: the kernel's own) or
 * the tracepoint's format, read once and only when from_kernel; "reason_N" for the slots it
 * does not name, and the last slot "reason_N_up" (every larger reason). Elsewhere the
 * architecture's operation kinds ("tlbie"), then "kind_N".
 */
void tlb_reason_keys(char keys[TLB_REASON_SLOTS][RUN_TLB_REASON_LEN], unsigned int arch,
		     const char *btf_path, bool from_kernel);

#endif
