/* SPDX-License-Identifier: GPL-2.0 */
/* What the fault hooks chosen for a run can tell (classes, types, latency), and why not. */
#ifndef MMSCOPE_FAULTS_AVAIL_H
#define MMSCOPE_FAULTS_AVAIL_H

#include <stddef.h>

#include "core/session.h"

/* Why read/write/exec cannot be told with the chosen entry hook, or NULL when they can. */
const char *faults_class_unavailable(const struct session *s);

/* Why a fault on a present page cannot be told from one on a missing page, or NULL. */
const char *faults_prot_unavailable(const struct session *s);

/* The latency method in words ("pairing: ..."), or NULL when there is none. */
const char *faults_latency_method(const struct session *s, char *buf, size_t len);

/* Why fault types cannot be told on this kernel, or NULL. */
const char *faults_type_unavailable(const struct session *s);

/* Why copy-on-write faults cannot be told from other writes on this machine (their type is
 * then their mapping's), or NULL. */
const char *faults_cow_unavailable(const struct session *s);

#endif
