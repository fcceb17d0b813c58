// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <string.h>

#include "out/faults_report.h"

/*
 * powerpc kernels up to v5.8 read the faulting instruction (store_updates_sp) while handling
 * faults; later ones never do. Where the function exists it is counted by kprobe; on a kernel
 * from v5.9 on, the count is 0 by construction and said so.
 */
static void insn_reads_report(struct report *r, const struct mm_stats *st)
{
	const struct run_result *res = r->res;
	const struct hook_candidate *c = run_hook(res, EV_INSN_READ);
	int major = 0, minor = 0;
	const char *why = NULL, *note = NULL;
	bool known;

	if (res->arch != ARCH_POWERPC)
		why = "powerpc only (store_updates_sp)";
	sscanf(res->kernel, "%d.%d", &major, &minor);
	known = c || (!why && (major > 5 || (major == 5 && minor >= 9)));
	if (!why && !known)
		why = "store_updates_sp is not probe-able on this kernel (inlined?)";
	if (known && !c)
		note = "no fault path reads the faulting instruction on this kernel: "
		       "store_updates_sp was removed upstream in v5.9 (773b3e53df5b)";
	if (r->jw) {
		if (!known) {
			report_counter(r, "faults.instruction_reads", "", false, 0, why);
			return;
		}
		jw_key(r->jw, "instruction_reads");
		jw_begin_object(r->jw);
		jw_key(r->jw, "read");
		jw_u64(r->jw, st->c[CNT_INSN_READ_READ]);
		jw_key(r->jw, "write");
		jw_u64(r->jw, st->c[CNT_INSN_READ_WRITE]);
		jw_key(r->jw, "exec");
		jw_u64(r->jw, st->c[CNT_INSN_READ_EXEC]);
		jw_key(r->jw, "note");
		jw_string(r->jw, note);
		jw_end_object(r->jw);
		return;
	}
	if (res->arch != ARCH_POWERPC)
		return;
	if (!known)
		fprintf(r->out, "  %-26s %14s (%s)\n", "faults reading their insn", "n/a", why);
	else
		fprintf(r->out, "  %-26s %14llu%s%s%s\n", "faults reading their insn",
			(unsigned long long)(st->c[CNT_INSN_READ_READ] +
					     st->c[CNT_INSN_READ_WRITE] +
					     st->c[CNT_INSN_READ_EXEC]),
			note ? " (" : "", note ? note : "", note ? ")" : "");
}

void faults_report_counts(struct report *r, const struct mm_stats *st, uint64_t open_at_end,
			  bool histograms)
{
	const struct run_result *res = r->res;
	bool have_entry = run_hook(res, EV_FAULT_ENTRY) != NULL;
	bool have_done = run_hook(res, EV_FAULT_DONE) != NULL;
	const char *no_class = res->no_fault_class;
	const char *no_prot = res->no_fault_prot;
	const char *no_entry = "no fault-entry hook on this kernel (see 'mmscope probes')";
	const char *no_done = "no fault-completion hook on this kernel (see 'mmscope probes')";
	const char *lat_method = res->fault_latency_method[0] ? res->fault_latency_method : NULL;

	report_section(r, "faults");
	if (!r->jw)
		fprintf(r->out, "\nfaults%*s\n", 35, "count");
	report_counter(r, "faults.user", "user", have_entry, st->c[CNT_FAULT_USER], no_entry);
	report_counter(r, "faults.kernel", "kernel", have_entry, st->c[CNT_FAULT_KERNEL], no_entry);
	report_counter(r, "faults.read", "read", !no_class, st->c[CNT_FAULT_READ], no_class);
	report_counter(r, "faults.write", "write", !no_class, st->c[CNT_FAULT_WRITE], no_class);
	report_counter(r, "faults.exec", "exec", !no_class, st->c[CNT_FAULT_EXEC], no_class);
	report_counter(r, "faults.protection", "protection", !no_prot, st->c[CNT_FAULT_PROT],
		       no_prot);
	report_counter(r, "faults.minor", "minor", have_done, st->c[CNT_FAULT_MINOR], no_done);
	report_counter(r, "faults.major", "major", have_done, st->c[CNT_FAULT_MAJOR], no_done);
	if (res->cfg.count_only) {
		/* No pairing: what entered and was not accounted (completions of faults that
		 * entered before the hooks were attached make this an estimate, clamped at 0). */
		uint64_t in = st->c[CNT_FAULT_USER] + st->c[CNT_FAULT_KERNEL];
		uint64_t done = st->c[CNT_FAULT_MINOR] + st->c[CNT_FAULT_MAJOR];

		report_counter(r, "faults.incomplete", "incomplete (no completion)",
			       have_done && have_entry, in > done ? in - done : 0,
			       have_entry ? no_done : no_entry);
	} else {
		report_counter(r, "faults.incomplete", "incomplete (no completion)",
			       have_done && have_entry, st->c[CNT_FAULT_REPLACED] + open_at_end,
			       have_entry ? no_done : no_entry);
	}
	report_counter(r, "faults.nofault_excluded", "probe reads (excluded)",
		       res->arch == ARCH_X86 && have_entry, st->c[CNT_FAULT_NOFAULT],
		       "only x86's exceptions tracepoints see faults taken with page faults "
		       "disabled");
	insn_reads_report(r, st);
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
			    (const uint64_t *)st->lat[LAT_ALL],
			    (const uint64_t *)&st->lat_sum[LAT_ALL], lat, why);
		report_hist(r, "faults.latency_ns_minor", "fault latency, minor faults", "nsecs",
			    (const uint64_t *)st->lat[LAT_MINOR],
			    (const uint64_t *)&st->lat_sum[LAT_MINOR], lat, why);
		report_hist(r, "faults.latency_ns_major", "fault latency, major faults", "nsecs",
			    (const uint64_t *)st->lat[LAT_MAJOR],
			    (const uint64_t *)&st->lat_sum[LAT_MAJOR], lat, why);
	}
}

/* By enum fault_type (names: opts.c fault_type_name()). */
static const char *const type_help[FTY_NR] = {
	[FTY_NONE] = "no mapping (no handle_mm_fault() call)",
	[FTY_HEAP] = "anonymous: the brk heap",
	[FTY_STACK] = "anonymous: the main stack",
	[FTY_ANON] = "anonymous: other (mmap, threads' stacks)",
	[FTY_FILE] = "file, private mapping",
	[FTY_FILE_SHARED] = "file, shared mapping",
	[FTY_SHMEM] = "shmem: tmpfs, memfd, SysV, shared anon",
	[FTY_HUGETLB] = "hugetlbfs, MAP_HUGETLB",
	[FTY_SPECIAL] = "vDSO, device, PFN maps, anon inodes",
	[FTY_COW] = "copy-on-write: write to a present page",
};

/*
 * Faults by the type of the mapping they hit: how they ended, and the latency of those that
 * completed (fault entry to completion, retries included). Faults still open at the end are
 * in no row.
 */
static void types_report(struct report *r, const struct mm_stats *st, bool histograms)
{
	const char *why = r->res->no_fault_type;
	const char *no_cow = r->res->no_fault_cow;
	char key[96], title[160];

	if (why) {
		if (r->jw)
			report_counter(r, "faults.by_type", "", false, 0, why);
		else
			fprintf(r->out, "\nfault types (the mapping each fault hit)\n  n/a (%s)\n",
				why);
		return;
	}
	if (r->jw) {
		jw_key(r->jw, "by_type");
		jw_begin_object(r->jw);
	} else {
		fprintf(r->out,
			"\nfault types (the mapping each fault hit: handle_mm_fault()'s vma)\n");
		fprintf(r->out, "  %-12s %10s %10s %8s %10s %10s  %s\n", "TYPE", "FAULTS", "MINOR",
			"MAJOR", "INCOMPLETE", "AVG NS", "WHAT");
	}
	for (int t = 0; t < FTY_NR; t++) {
		const uint64_t *n = (const uint64_t *)st->type_n[t];
		uint64_t done = n[TY_MINOR] + n[TY_MAJOR];
		uint64_t all = done + n[TY_INCOMPLETE];

		if (r->jw) {
			if (t == FTY_COW && no_cow) {
				snprintf(key, sizeof(key), "faults.by_type.%s", fault_type_key(t));
				report_counter(r, key, "", false, 0, no_cow);
				continue;
			}
			jw_key(r->jw, fault_type_key(t));
			jw_begin_object(r->jw);
			jw_key(r->jw, "faults");
			jw_u64(r->jw, all);
			jw_key(r->jw, "minor");
			jw_u64(r->jw, n[TY_MINOR]);
			jw_key(r->jw, "major");
			jw_u64(r->jw, n[TY_MAJOR]);
			jw_key(r->jw, "incomplete");
			jw_u64(r->jw, n[TY_INCOMPLETE]);
			if (histograms) {
				snprintf(key, sizeof(key), "faults.by_type.%s.latency_ns",
					 fault_type_key(t));
				report_hist(r, key, "", "nsecs", (const uint64_t *)st->type_lat[t],
					    (const uint64_t *)&st->type_lat_sum[t],
					    !r->res->cfg.untimed_faults, "untimed run");
			}
			jw_end_object(r->jw);
			continue;
		}
		if (t == FTY_COW && no_cow) {
			fprintf(r->out, "  %-12s %10s  (%s)\n", fault_type_name(t), "n/a", no_cow);
			continue;
		}
		if (!all)
			continue;
		fprintf(r->out, "  %-12s %10llu %10llu %8llu %10llu ", fault_type_name(t),
			(unsigned long long)all, (unsigned long long)n[TY_MINOR],
			(unsigned long long)n[TY_MAJOR], (unsigned long long)n[TY_INCOMPLETE]);
		if (done && !r->res->cfg.untimed_faults)
			fprintf(r->out, "%10llu", (unsigned long long)(st->type_lat_sum[t] / done));
		else
			fprintf(r->out, "%10s", "-");
		fprintf(r->out, "  %s\n", type_help[t]);
	}
	if (r->jw) {
		jw_end_object(r->jw);
		return;
	}
	if (!histograms || r->res->cfg.untimed_faults)
		return;
	for (int t = 0; t < FTY_NR; t++) {
		if (!st->type_n[t][TY_MINOR] && !st->type_n[t][TY_MAJOR])
			continue;
		snprintf(key, sizeof(key), "faults.by_type.%s.latency_ns", fault_type_key(t));
		snprintf(title, sizeof(title), "fault latency, %s faults (entry to completion)",
			 fault_type_name(t));
		report_hist(r, key, title, "nsecs", (const uint64_t *)st->type_lat[t],
			    (const uint64_t *)&st->type_lat_sum[t], true, NULL);
	}
}

/* How handle_mm_fault() calls for faults ended, and the calls each fault took. */
static void results_report(struct report *r, const struct mm_stats *st)
{
	static const struct {
		int counter;
		const char *key, *label;
	} rows[] = {
		{CNT_VMF_CALLS, "calls", "calls (faults' tries)"},
		{CNT_VMF_DONE, "completed", "completed"},
		{CNT_VMF_RETRY, "retry", "retry (lock dropped)"},
		{CNT_VMF_MAJOR, "major", "major (waited on I/O)"},
		{CNT_VMF_NOPAGE, "nopage", "nopage (PTE set by driver)"},
		{CNT_VMF_LOCKLESS, "completed_unlocked", "completed, lock dropped"},
		{CNT_VMF_OOM, "oom", "OOM"},
		{CNT_VMF_SIGBUS, "sigbus", "SIGBUS"},
		{CNT_VMF_SIGSEGV, "sigsegv", "SIGSEGV"},
		{CNT_VMF_HWPOISON, "hwpoison", "HWPOISON"},
		{CNT_VMF_GUP_CALLS, "gup_calls", "GUP calls (not faults)"},
		{CNT_FAULT_CALLS_1, "faults_1_call", "faults with 1 call"},
		{CNT_FAULT_CALLS_2, "faults_2_calls", "faults with 2 calls"},
		{CNT_FAULT_CALLS_3PLUS, "faults_3plus_calls", "faults with 3+ calls"},
	};
	const char *why = r->res->no_fault_type ? "handle_mm_fault()'s return is not "
						  "hooked on this kernel (fexit, "
						  "kretprobe): see 'mmscope probes'"
						: NULL;
	char key[96];

	if (why) {
		if (r->jw)
			report_counter(r, "faults.results", "", false, 0, why);
		else
			fprintf(r->out,
				"\nhow faults ended (handle_mm_fault() results)\n  n/a (%s)\n",
				why);
		return;
	}
	if (!r->jw)
		fprintf(r->out, "\nhow faults ended%25s\n", "count");
	if (r->jw) {
		jw_key(r->jw, "results");
		jw_begin_object(r->jw);
	}
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(key, sizeof(key), "faults.results.%s", rows[i].key);
		report_counter(r, key, rows[i].label, true, st->c[rows[i].counter], NULL);
	}
	if (r->jw)
		jw_end_object(r->jw);
}

void faults_report_anatomy(struct report *r, const struct mm_stats *st, bool histograms)
{
	if (r->res->cfg.count_only)
		return;
	types_report(r, st, histograms);
	results_report(r, st);
}
