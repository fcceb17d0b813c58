/* SPDX-License-Identifier: GPL-2.0 */
/* The live capability set of the running kernel, probed by really loading and attaching. */
#ifndef MMSCOPE_KCAPS_H
#define MMSCOPE_KCAPS_H

#include <stdarg.h>
#include <stdint.h>
#include <bpf/libbpf.h>

#include "core/catalog.h"

/* btf_path: --btf, or NULL. Fills k; the callbacks cache their answers. */
void kcaps_init_live(struct kcaps *k, const char *btf_path);
void kcaps_free_live(struct kcaps *k);
/* Probe k->feat (enum bpf_feature) and k->thread_size; kcaps_init_live() calls it. */
void kcaps_bpf_features(struct kcaps *k);
/* Per feature: its name, what it is, and what is done without it. */
const char *bpf_feature_name(enum bpf_feature f);
const char *bpf_feature_what(enum bpf_feature f);
const char *bpf_feature_fallback(enum bpf_feature f);

/* The path of the kernel BTF libbpf should use, or NULL for the kernel's own. */
const char *kcaps_btf_path(const struct kcaps *k);

/* Raw PMU code of a named event on this CPU model; 0 or -ENOENT. */
int pmu_raw_code(const char *event, const char *model, uint64_t *code);
const char *kcaps_cpu_model(void);

/* libbpf's messages: shown with -v, otherwise only errors of the main load. */
int libbpf_print_fn(enum libbpf_print_level level, const char *fmt, va_list args);
extern bool libbpf_quiet;

#endif
