// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <string.h>

#include "faults_report.h"

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

const char *faults_latency_method(const struct session *s, char *buf, size_t len)
{
	const struct hook_candidate *done = session_hook(s, EV_FAULT_DONE);
	const struct hook_candidate *entry = session_hook(s, EV_FAULT_ENTRY);
	char where[160];

	if (!done)
		return NULL;
	switch (done->method) {
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
			 "pairing: fault entry (%s %s) to completion (perf minor-faults/major-faults) "
			 "per thread",
			 hook_method_name(entry->method), where);
		break;
	}
	return buf;
}

void faults_report_counts(struct report *r, const struct mm_stats *st, uint64_t open_at_end,
			  bool histograms)
{
	const struct session *s = r->s;
	bool have_entry = session_hook(s, EV_FAULT_ENTRY) != NULL;
	bool have_done = session_hook(s, EV_FAULT_DONE) != NULL;
	const char *no_class = faults_class_unavailable(s);
	const char *no_entry = "no fault-entry hook on this kernel (see 'mmscope probes')";
	const char *no_done = "no fault-completion hook on this kernel (see 'mmscope probes')";
	char method[256];
	const char *lat_method = faults_latency_method(s, method, sizeof(method));

	report_section(r, "faults");
	if (!r->jw)
		fprintf(r->out, "\nfaults%*s\n", 35, "count");
	report_counter(r, "faults.user", "user", have_entry, st->c[CNT_FAULT_USER], no_entry);
	report_counter(r, "faults.kernel", "kernel", have_entry, st->c[CNT_FAULT_KERNEL], no_entry);
	report_counter(r, "faults.read", "read", !no_class, st->c[CNT_FAULT_READ], no_class);
	report_counter(r, "faults.write", "write", !no_class, st->c[CNT_FAULT_WRITE], no_class);
	report_counter(r, "faults.exec", "exec", !no_class, st->c[CNT_FAULT_EXEC], no_class);
	report_counter(r, "faults.protection", "protection", !no_class, st->c[CNT_FAULT_PROT],
		       no_class);
	report_counter(r, "faults.minor", "minor", have_done, st->c[CNT_FAULT_MINOR], no_done);
	report_counter(r, "faults.major", "major", have_done, st->c[CNT_FAULT_MAJOR], no_done);
	report_counter(r, "faults.incomplete", "incomplete (no completion)", have_done && have_entry,
		       st->c[CNT_FAULT_REPLACED] + open_at_end, have_entry ? no_done : no_entry);
	if (histograms) {
		const char *why = "no latency method on this kernel (see 'mmscope probes')";
		bool lat = lat_method != NULL;

		if (r->jw) {
			jw_key(r->jw, "latency_method");
			if (lat_method)
				jw_string(r->jw, lat_method);
			else
				jw_null(r->jw);
		} else if (lat_method) {
			fprintf(r->out, "\nlatency: %s\n", lat_method);
		}
		report_hist(r, "faults.latency_ns", "fault latency, all faults", "nsecs",
			    (const uint64_t *)st->lat[LAT_ALL], lat, why);
		report_hist(r, "faults.latency_ns_minor", "fault latency, minor faults", "nsecs",
			    (const uint64_t *)st->lat[LAT_MINOR], lat, why);
		report_hist(r, "faults.latency_ns_major", "fault latency, major faults", "nsecs",
			    (const uint64_t *)st->lat[LAT_MAJOR], lat, why);
	}
}
