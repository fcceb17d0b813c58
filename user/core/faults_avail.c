// SPDX-License-Identifier: GPL-2.0
/*
 * What the fault hooks chosen for this run can tell, and why not: read from the selection and
 * from the choices configure() wrote into the BPF programs' read-only data before the load.
 */
#include <stdio.h>

#include "core/faults_avail.h"
#include "mmscope.skel.h"

const char *faults_class_unavailable(const struct session *s)
{
	const struct hook_candidate *c = session_hook(s, EV_FAULT_ENTRY);

	if (!c)
		return "no fault-entry hook on this kernel";
	if (c->method == HM_PERF_SW && s->caps.arch != ARCH_POWERPC)
		return s->caps.arch == ARCH_X86
			       ? "the perf page-fault event has no error code on x86 and the "
				 "exceptions tracepoints are unavailable"
			       : "the perf page-fault event has no ESR on arm64";
	return NULL;
}

const char *faults_prot_unavailable(const struct session *s)
{
	const char *no_class = faults_class_unavailable(s);

	if (no_class)
		return no_class;
	if (s->skel->rodata->prot_unknown)
		return "the hash MMU reports a write to a page whose HPTE was flushed (a fork's "
		       "write protection) as a missing HPTE, not as a protection fault";
	return NULL;
}

const char *faults_latency_method(const struct session *s, char *buf, size_t len)
{
	const struct hook_candidate *done = session_hook(s, EV_FAULT_DONE);
	const struct hook_candidate *entry = session_hook(s, EV_FAULT_ENTRY);
	char where[160];

	if (!done)
		return NULL;
	switch (done->method) {
	case HM_PERF_COUNT:
		return NULL; /* counted, no program: no latency */
	case HM_FENTRY:
		snprintf(buf, len, "fentry/fexit handle_mm_fault (each call, including GUP)");
		break;
	case HM_KPROBE:
		snprintf(buf, len, "kprobe/kretprobe handle_mm_fault (each call, including GUP)");
		break;
	default:
		if (!entry)
			return NULL;
		hook_cand_describe(entry, where, sizeof(where));
		snprintf(buf, len,
			 "pairing: fault entry (%s %s) to completion (perf "
			 "minor-faults/major-faults) "
			 "per thread",
			 hook_method_name(entry->method), where);
		break;
	}
	return buf;
}

const char *faults_type_unavailable(const struct session *s)
{
	if (!s->skel->rodata->lat_from_calls)
		return "the mapping a fault hit is read from handle_mm_fault()'s arguments, and "
		       "no hook on it (fentry, kprobe) is available on this kernel: see 'mmscope "
		       "probes'";
	return NULL;
}

/* Why copy-on-write cannot be told from a first write, or NULL when it can. */
const char *faults_cow_unavailable(const struct session *s)
{
	if (!faults_prot_unavailable(s))
		return NULL;
	if (s->caps.arch == ARCH_POWERPC)
		return "the hash MMU does not say whether the page was present (a write to a page "
		       "whose HPTE was flushed is a missing HPTE): copy-on-write faults are "
		       "counted under their mapping";
	return "the fault-entry event does not say whether the page was present (no error "
	       "code or ESR): copy-on-write faults are counted under their mapping";
}
