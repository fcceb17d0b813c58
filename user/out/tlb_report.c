// SPDX-License-Identifier: GPL-2.0
/*
 * Units, as the output says them: x86 counts TLB flush *operations* as the kernel traces
 * them, one per CPU that flushes (tlb:tlb_flush), with the pages each covered (or a full
 * flush); a shootdown is one REMOTE_SEND_IPI on the sender plus one REMOTE_SHOOTDOWN on each
 * target CPU.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <asm/unistd.h>

#include "lib/escape.h"
#include "out/tlb_report.h"

static const struct {
	int nr;
	const char *name;
} syscall_table[] = {
#include "syscall_names.h"
};

const char *syscall_name(int nr)
{
	for (size_t i = 0; i < sizeof(syscall_table) / sizeof(syscall_table[0]); i++)
		if (syscall_table[i].nr == nr)
			return syscall_table[i].name;
	return NULL;
}

/* Slots past the last: on x86 the last slot counts them all (reason_N_up), elsewhere each is an
 * operation kind bpf/tlb.bpf.c does not know. */
const char *tlb_reason_key(const struct run_result *res, unsigned int reason)
{
	static char other[24];

	if (reason < TLB_REASON_SLOTS)
		return res->tlb_reasons[reason];
	if (res->arch != ARCH_POWERPC && res->arch != ARCH_ARM64)
		return res->tlb_reasons[TLB_REASON_SLOTS - 1];
	snprintf(other, sizeof(other), "kind_%u", reason);
	return other;
}

static bool reason_known(const struct run_result *res, unsigned int reason)
{
	return strncmp(tlb_reason_key(res, reason), "reason_", 7) != 0;
}

/* The fixed keys: always present, null where this kernel has no such reason. */
static const char *const standard_reasons[] = {"task_switch",	  "remote_shootdown",
					       "local_shootdown", "local_mm_shootdown",
					       "remote_ipi_send", "remote_wrong_cpu"};

/* names[i] with bit i of gone set: not observable (null, why_gone), the others counted. */
static void report_kv_section_gone(struct report *r, const char *key, const char *title,
				   const char *const *names, const __u64 *values, int n,
				   bool available, const char *why, unsigned int gone,
				   const char *why_gone)
{
	char sub[96];

	if (!available) {
		report_counter(r, key, title, false, 0, why);
		return;
	}
	if (r->jw) {
		jw_key(r->jw, strrchr(key, '.') + 1);
		jw_begin_object(r->jw);
		for (int i = 0; i < n; i++) {
			if (gone & (1u << i)) {
				snprintf(sub, sizeof(sub), "%s.%s", key, names[i]);
				report_counter(r, sub, names[i], false, 0, why_gone);
				continue;
			}
			jw_key(r->jw, names[i]);
			jw_u64(r->jw, values[i]);
		}
		jw_end_object(r->jw);
		return;
	}
	fprintf(r->out, "  %s:", title);
	for (int i = 0; i < n; i++)
		if (gone & (1u << i))
			fprintf(r->out, " %s=n/a (%s)", names[i], why_gone);
		else
			fprintf(r->out, " %s=%llu", names[i], (unsigned long long)values[i]);
	fputc('\n', r->out);
}

static void report_kv_section(struct report *r, const char *key, const char *title,
			      const char *const *names, const __u64 *values, int n, bool available,
			      const char *why)
{
	report_kv_section_gone(r, key, title, names, values, n, available, why, 0, NULL);
}

static void tlb_report_x86(struct report *r, const struct mm_stats *st, bool histograms)
{
	const struct run_result *res = r->res;
	const struct hook_candidate *c = run_hook(res, EV_TLB_FLUSH);
	const char *no_hook = "no tlb:tlb_flush hook on this kernel (see 'mmscope probes')";
	char key[64];

	if (!r->jw)
		fprintf(r->out, "\nTLB flush operations (tlb:tlb_flush, one per flushing CPU)\n");
	report_counter(r, "tlb.events", "all flushes", c != NULL, st->c[CNT_TLB_EVENTS], no_hook);
	for (size_t i = 0; i < sizeof(standard_reasons) / sizeof(standard_reasons[0]); i++) {
		int found = -1;

		for (unsigned int v = 0; v < TLB_REASON_SLOTS - 1; v++)
			if (strcmp(tlb_reason_key(res, v), standard_reasons[i]) == 0)
				found = (int)v;
		snprintf(key, sizeof(key), "tlb.%s", standard_reasons[i]);
		if (!c)
			report_counter(r, key, standard_reasons[i], false, 0, no_hook);
		else if (found < 0)
			report_counter(r, key, standard_reasons[i], false, 0,
				       "this kernel has no such tlb_flush reason");
		else
			report_counter(r, key, standard_reasons[i], true, st->tlb_reason[found],
				       NULL);
	}
	/* Reasons beyond the known ones (a newer kernel's), by number: never dropped. */
	for (unsigned int v = 0; c && v < TLB_REASON_SLOTS; v++) {
		bool standard = false;

		for (size_t i = 0; i < sizeof(standard_reasons) / sizeof(standard_reasons[0]); i++)
			standard |= strcmp(tlb_reason_key(res, v), standard_reasons[i]) == 0;
		if (standard || (!st->tlb_reason[v] && !reason_known(res, v)))
			continue;
		snprintf(key, sizeof(key), "tlb.%s", tlb_reason_key(res, v));
		report_counter(r, key, tlb_reason_key(res, v), true, st->tlb_reason[v], NULL);
	}
	report_counter(r, "tlb.local", "local (issuing CPU only)", c != NULL, st->c[CNT_TLB_LOCAL],
		       no_hook);
	report_counter(r, "tlb.broadcast", "broadcast (shootdown IPIs)", c != NULL,
		       st->c[CNT_TLB_BROADCAST], no_hook);
	report_counter(r, "tlb.full_flushes", "full flushes (pages -1)", c != NULL,
		       st->c[CNT_TLB_FULL], no_hook);
	report_counter(r, "tlb.avoidable_broadcast", "avoidable broadcasts", false, 0,
		       "x86 sends shootdown IPIs only to the other CPUs in mm_cpumask");
	if (histograms) {
		const struct hook_candidate *send = run_hook(res, EV_TLB_SEND);
		const char *no_send = "needs fentry or a kprobe on native_flush_tlb_multi (see "
				      "'mmscope probes')";

		report_hist(r, "tlb.pages", "pages per flush (full flushes apart)", "pages",
			    (const uint64_t *)st->tlb_pages, (const uint64_t *)&st->tlb_pages_sum,
			    c != NULL, no_hook);
		report_hist(r, "tlb.shootdown_targets", "CPUs targeted per shootdown", "cpus",
			    (const uint64_t *)st->send_targets, NULL, send != NULL, no_send);
		report_hist(r, "tlb.shootdown_wait_ns", "sender wait per shootdown", "nsecs",
			    (const uint64_t *)st->send_wait, (const uint64_t *)&st->send_wait_sum,
			    send != NULL, no_send);
	}
}

/* The x86-only keys, null elsewhere: same JSON shape on every architecture. */
static void tlb_report_x86_keys_na(struct report *r)
{
	const char *why = "tlb:tlb_flush and its reasons are x86's; this architecture reports "
			  "tlb.local/tlb.broadcast operations";
	char key[64];

	for (size_t i = 0; i < sizeof(standard_reasons) / sizeof(standard_reasons[0]); i++) {
		snprintf(key, sizeof(key), "tlb.%s", standard_reasons[i]);
		report_counter(r, key, standard_reasons[i], false, 0, why);
	}
	report_counter(r, "tlb.full_flushes", "full flushes", false, 0, why);
}

static void tlb_report_powerpc(struct report *r, const struct mm_stats *st)
{
	const struct run_result *res = r->res;
	bool tlbie = run_hook(res, EV_TLBIE) != NULL, fn = run_hook(res, EV_TLB_FN) != NULL;
	bool hcall = run_hook(res, EV_HCALL) != NULL;
	static const char *const hcall_names[] = {"h_remove", "h_protect", "h_bulk_remove",
						  "h_rpt_invalidate"};
	__u64 hcalls[4] = {st->c[CNT_HCALL_REMOVE], st->c[CNT_HCALL_PROTECT],
			   st->c[CNT_HCALL_BULK_REMOVE], st->c[CNT_HCALL_RPT_INVALIDATE]};
	const char *no_tlbie = "no powerpc:tlbie hook on this kernel (see 'mmscope probes')";
	static const char *const insn_names[] = {"tlbiel", "tlbie"};
	static const char *const ric_names[] = {"tlb", "pwc", "all", "reserved"};
	static const char *const is_names[] = {"va", "pid", "lpid", "all"};
	__u64 insns[2] = {st->c[CNT_TLBIE_LOCAL], st->c[CNT_TLBIE_GLOBAL]};
	__u64 bursts = st->c[CNT_TLBIE_BURSTS_LOCAL] + st->c[CNT_TLBIE_BURSTS_GLOBAL];
	const char *derivation = "2 per invalidation burst (every radix tlbie/tlbiel sequence is "
				 "framed by two ptesync; POWER9 erratum fixups add more)";

	if (!r->jw)
		fprintf(r->out, "\nTLB invalidations (powerpc:tlbie; operations = bursts of "
				"instructions)\n");
	tlb_report_x86_keys_na(r);
	/* Operations: bursts of tlbie/tlbiel, and invalidation hypercalls (pseries hash, or
	 * radix without GTSE), which the hypervisor broadcasts as needed. */
	report_counter(r, "tlb.local", "local operations (tlbiel)", tlbie, st->c[CNT_TLB_LOCAL],
		       no_tlbie);
	report_counter(r, "tlb.broadcast", "broadcast operations (tlbie, hcall)", tlbie || hcall,
		       st->c[CNT_TLB_BROADCAST], no_tlbie);
	report_kv_section(r, "tlb.hcalls", "invalidation hcalls", hcall_names, hcalls, 4, hcall,
			  "no powerpc:hcall_entry hook");
	report_kv_section(r, "tlb.instructions", "instructions", insn_names, insns, 2, tlbie,
			  no_tlbie);
	report_kv_section(r, "tlb.ric", "RIC", ric_names, st->tlbie_ric, 4, tlbie, no_tlbie);
	report_kv_section(r, "tlb.is", "IS", is_names, st->tlbie_is, 4, tlbie, no_tlbie);
	report_counter(r, "tlb.ptesync_derived", "ptesync (derived)", tlbie, 2 * bursts, no_tlbie);
	if (r->jw) {
		jw_key(r->jw, "ptesync_derivation");
		jw_string(r->jw, tlbie ? derivation : NULL);
	} else if (tlbie) {
		fprintf(r->out, "    (ptesync: %s)\n", derivation);
	}
	report_counter(r, "tlb.avoidable_broadcast", "avoidable broadcasts",
		       tlbie && run_hook(res, EV_SWITCH), st->c[CNT_TLB_AVOIDABLE],
		       "needs powerpc:tlbie and sched_switch");
	if (r->jw) {
		jw_key(r->jw, "functions");
		if (!fn) {
			jw_null(r->jw);
		} else {
			char name[64];

			jw_begin_object(r->jw);
			for (int i = 0; i < TLB_FN_SLOTS; i++) {
				if (!(res->fn_attached & (1u << i)) ||
				    !list_item(tlb_fn_list_powerpc, i, name, sizeof(name)))
					continue;
				jw_key(r->jw, name);
				jw_u64(r->jw, st->tlb_fn[i]);
			}
			jw_end_object(r->jw);
		}
	} else if (fn) {
		char name[64];

		fprintf(r->out, "  flush functions called:");
		for (int i = 0; i < TLB_FN_SLOTS; i++)
			if ((res->fn_attached & (1u << i)) && st->tlb_fn[i] &&
			    list_item(tlb_fn_list_powerpc, i, name, sizeof(name)))
				fprintf(r->out, " %s=%llu", name,
					(unsigned long long)st->tlb_fn[i]);
		fputc('\n', r->out);
	}
}

static void tlb_report_arm64(struct report *r, const struct mm_stats *st)
{
	const struct run_result *res = r->res;
	bool ok = run_hook(res, EV_ARM64_TLBI) != NULL;
	const char *why = "needs kprobes on tlb_flush_mmu, ptep_clear_flush, ptep_set_access_flags";
	const char *arm64_kinds[4];
	unsigned int gone = 0;

	if (!r->jw)
		fprintf(r->out, "\nTLB invalidations (arm64 TLBI operations, by kprobe)\n");
	tlb_report_x86_keys_na(r);
	report_counter(
		r, "tlb.local", "local operations", false, 0,
		"arm64 6.1 issues local TLBI only on ASID rollover (check_and_switch_context), "
		"not observable without a trace point there");
	report_counter(r, "tlb.broadcast", "broadcast operations (...is)", ok,
		       st->c[CNT_TLB_BROADCAST], why);
	/* A member this kernel lacks (its kprobe points, catalog.c): that kind is not observed.
	 * The kinds are the functions hooked, named as the result's reason slots. */
	for (int k = 0; k < 4; k++)
		arm64_kinds[k] = res->tlb_reasons[k];
	if (ok) {
		const struct event_selection *es = &res->sel->events[EV_ARM64_TLBI];
		const struct hook_candidate *c = run_hook(res, EV_ARM64_TLBI);
		unsigned int missing = es->results[es->chosen].missing;

		for (int i = 0; i < HOOK_MAX_POINTS && c->points[i].target; i++)
			for (int k = 0; k < 4; k++)
				if ((missing & (1u << i)) &&
				    strcmp(c->points[i].target, arm64_kinds[k]) == 0)
					gone |= 1u << k;
	}
	report_kv_section_gone(r, "tlb.kinds", "by function", arm64_kinds, st->tlb_reason, 4, ok,
			       why, gone,
			       "its function is not in this kernel (see 'mmscope probes')");
	report_counter(r, "tlb.avoidable_broadcast", "avoidable broadcasts",
		       ok && run_hook(res, EV_SWITCH), st->c[CNT_TLB_AVOIDABLE],
		       "needs the TLBI kprobes and sched_switch");
}

void tlb_report_counts(struct report *r, const struct mm_stats *st, bool histograms)
{
	report_section(r, "tlb");
	if (r->res->arch == ARCH_POWERPC)
		tlb_report_powerpc(r, st);
	else if (r->res->arch == ARCH_ARM64)
		tlb_report_arm64(r, st);
	else
		tlb_report_x86(r, st, histograms);
}

void hash_report_counts(struct report *r, const struct mm_stats *st)
{
	bool ok = run_hook(r->res, EV_HASH_FAULT) != NULL;
	const char *why = r->res->arch != ARCH_POWERPC ? "powerpc hash MMU only"
			  : r->res->mmu == MMU_RADIX   ? "this CPU runs the radix MMU"
						       : "no powerpc:hash_fault hook";

	if (!r->jw && r->res->arch != ARCH_POWERPC)
		return; /* the text shows what this architecture has; JSON keeps its shape */
	report_section(r, "hash");
	if (!r->jw)
		fprintf(r->out, "\nhash MMU faults (powerpc:hash_fault, HPTE misses)\n");
	report_counter(r, "hash.faults", "faults", ok, st->c[CNT_HASH_FAULTS], why);
	report_counter(r, "hash.read", "read", ok, st->c[CNT_HASH_READ], why);
	report_counter(r, "hash.write", "write", ok, st->c[CNT_HASH_WRITE], why);
	report_counter(r, "hash.exec", "exec", ok, st->c[CNT_HASH_EXEC], why);
	report_counter(r, "hash.user", "user addresses", ok, st->c[CNT_HASH_USER], why);
	report_counter(r, "hash.kernel", "kernel addresses", ok,
		       st->c[CNT_HASH_FAULTS] - st->c[CNT_HASH_USER], why);
	report_section_end(r);
}

static const char *const access_names[] = {"read", "write", "exec", "unknown"};
static const char *const done_names[] = {"minor", "major", "incomplete"};

void tlb_report_by_fault_class(struct report *r, const struct mm_stats *st)
{
	const struct run_result *res = r->res;
	bool tlb = run_hook(res, EV_TLB_FLUSH) || run_hook(res, EV_TLBIE) ||
		   run_hook(res, EV_ARM64_TLBI) || run_hook(res, EV_HCALL);
	bool ok = tlb && run_hook(res, EV_FAULT_ENTRY) && !res->cfg.count_only;

	if (r->jw) {
		if (!ok) {
			report_counter(r, "tlb.by_fault_class", "", false, 0,
				       !tlb ? "no TLB invalidation hook on this kernel"
					    : "needs the fault-entry hook");
			return;
		}
		jw_key(r->jw, "by_fault_class");
		jw_begin_array(r->jw);
	} else {
		if (!ok) {
			fprintf(r->out, "\ninvalidations by fault class: n/a (needs both a fault "
					"entry and a TLB hook)\n");
			return;
		}
		fprintf(r->out,
			"\ninvalidations issued while handling faults, by fault class\n"
			"  %-28s %10s %16s %16s\n",
			"CLASS", "FAULTS", "ISSUED LOCAL", "ISSUED BROADCAST");
	}
	for (unsigned int i = 0; i < FAULT_CLASS_SLOTS; i++) {
		unsigned int access = i / 6, user = (i / 3) % 2, done = i % 3;
		const __u64 *v = st->fault_tlb[i];

		if (!v[FT_FAULTS])
			continue;
		if (r->jw) {
			jw_begin_object(r->jw);
			jw_key(r->jw, "access");
			jw_string(r->jw, access_names[access]);
			jw_key(r->jw, "mode");
			jw_string(r->jw, user ? "user" : "kernel");
			jw_key(r->jw, "completion");
			jw_string(r->jw, done_names[done]);
			jw_key(r->jw, "faults");
			jw_u64(r->jw, v[FT_FAULTS]);
			jw_key(r->jw, "local");
			jw_u64(r->jw, v[FT_LOCAL]);
			jw_key(r->jw, "broadcast");
			jw_u64(r->jw, v[FT_BROADCAST]);
			jw_end_object(r->jw);
		} else {
			char cls[40];

			snprintf(cls, sizeof(cls), "%s %s %s", user ? "user" : "kernel",
				 access_names[access], done_names[done]);
			fprintf(r->out, "  %-28s %10llu %16llu %16llu\n", cls,
				(unsigned long long)v[FT_FAULTS], (unsigned long long)v[FT_LOCAL],
				(unsigned long long)v[FT_BROADCAST]);
		}
	}
	if (r->jw)
		jw_end_array(r->jw);
}

static void syscall_label(int nr, char *buf, size_t len)
{
	const char *name = syscall_name(nr);

	if (nr == SYSCALL_FAULT)
		snprintf(buf, len, "[page fault]");
	else if (nr == SYSCALL_KTHREAD)
		snprintf(buf, len, "[kernel thread]");
	else if (nr == SYSCALL_NONE)
		snprintf(buf, len, "[no system call]");
	else if (nr == TLB_SYSCALL_OTHER - TLB_SYSCALL_BIAS)
		snprintf(buf, len, "[system call %d or above]", nr);
	else if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "syscall_%d", nr);
}

void tlb_report_details(struct report *r, const struct tlb_details *d)
{
	const struct run_result *res = r->res;
	const struct tlb_proc_row *rows = d->procs;
	const struct tlb_syscall_row *srows = d->syscalls;
	int n = d->nprocs;

	if (r->jw) {
		jw_key(r->jw, "by_process");
		jw_begin_array(r->jw);
	} else if (n) {
		fprintf(r->out,
			"\nissuing processes (local and broadcast flushes; top %d of %d)\n"
			"  %7s %-16s %10s %s\n",
			res->opts->top, n, "PID", "COMM", "FLUSHES", "BY REASON");
	}
	for (int i = 0; rows && i < n && (r->jw || i < res->opts->top); i++) {
		const struct tlb_proc *p = &rows[i].p;
		size_t clen = bounded_strlen(p->comm, sizeof(p->comm));

		if (r->jw) {
			jw_begin_object(r->jw);
			jw_key(r->jw, "pid");
			jw_u64(r->jw, rows[i].tgid);
			jw_key(r->jw, "comm");
			jw_string_len(r->jw, p->comm, clen);
			jw_key(r->jw, "total");
			jw_u64(r->jw, rows[i].total);
			for (unsigned int v = 0; v < TLB_REASON_SLOTS; v++) {
				if (!p->reason[v])
					continue;
				jw_key(r->jw, tlb_reason_key(res, v));
				jw_u64(r->jw, p->reason[v]);
			}
			jw_end_object(r->jw);
		} else {
			char *comm = folded_escape(p->comm, clen);

			fprintf(r->out, "  %7u %-16s %10llu", rows[i].tgid, comm ? comm : "?",
				(unsigned long long)rows[i].total);
			for (unsigned int v = 0; v < TLB_REASON_SLOTS; v++)
				if (p->reason[v])
					fprintf(r->out, " %s=%llu", tlb_reason_key(res, v),
						(unsigned long long)p->reason[v]);
			fputc('\n', r->out);
			free(comm);
		}
	}
	if (r->jw)
		jw_end_array(r->jw);

	n = d->nsyscalls;
	if (r->jw) {
		jw_key(r->jw, "by_syscall");
		jw_begin_array(r->jw);
	} else if (n) {
		fprintf(r->out, "\nby system call in progress (issuing side)\n  %-20s %-20s %10s\n",
			"SYSCALL", "REASON", "COUNT");
	}
	for (int i = 0; srows && i < n && (r->jw || i < res->opts->top); i++) {
		char label[48];

		syscall_label(srows[i].k.nr, label, sizeof(label));
		if (r->jw) {
			jw_begin_object(r->jw);
			jw_key(r->jw, "syscall");
			jw_string(r->jw, label);
			jw_key(r->jw, "nr");
			jw_i64(r->jw, srows[i].k.nr);
			jw_key(r->jw, "reason");
			jw_string(r->jw, tlb_reason_key(res, srows[i].k.reason));
			jw_key(r->jw, "count");
			jw_u64(r->jw, srows[i].count);
			jw_end_object(r->jw);
		} else {
			fprintf(r->out, "  %-20s %-20s %10llu\n", label,
				tlb_reason_key(res, srows[i].k.reason),
				(unsigned long long)srows[i].count);
		}
	}
	if (r->jw)
		jw_end_array(r->jw);
}

void switch_report_counts(struct report *r, const struct mm_stats *st)
{
	const struct run_result *res = r->res;
	bool ok = run_hook(res, EV_SWITCH) != NULL;
	bool flush = run_hook(res, EV_SWITCH_FLUSH) != NULL;
	const char *no_hook = "no sched_switch hook with task access (see 'mmscope probes')";
	const char *no_flush = res->arch == ARCH_X86
				       ? "no tlb:tlb_flush hook on this kernel"
				       : "switch flushes are traced on x86 only (tlb:tlb_flush)";

	report_section(r, "switch");
	if (!r->jw)
		fprintf(r->out, "\ncontext switches%*s\n", 25, "count");
	report_counter(r, "switch.total", "total", ok, st->c[CNT_SW_TOTAL], no_hook);
	report_counter(r, "switch.switches_out", "switches out (= perf's)", ok, st->c[CNT_SW_OUT],
		       no_hook);
	report_counter(r, "switch.switches_in", "switches in", ok, st->c[CNT_SW_IN], no_hook);
	report_counter(r, "switch.same_mm", "same mm", ok, st->c[CNT_SW_SAME_MM], no_hook);
	report_counter(r, "switch.mm_changes", "mm changes", ok, st->c[CNT_SW_MM_CHANGE], no_hook);
	report_counter(r, "switch.kernel", "kernel (idle, kthreads)", ok, st->c[CNT_SW_KERNEL],
		       no_hook);
	report_counter(r, "switch.flushes", "mm changes that flushed", ok && flush,
		       st->c[CNT_SW_MM_FLUSH], ok ? no_flush : no_hook);
	report_counter(r, "switch.no_flush", "mm changes that kept TLB", ok && flush,
		       st->c[CNT_SW_MM_NOFLUSH], ok ? no_flush : no_hook);
	report_counter(r, "switch.lazy_flushes", "lazy catch-up flushes", ok && flush,
		       st->c[CNT_SW_LAZY_FLUSH], ok ? no_flush : no_hook);
}

void switch_report_details(struct report *r, const struct mm_stats *percpu, int ncpus,
			   const struct switch_details *d)
{
	const struct run_result *res = r->res;
	const struct switch_proc_row *rows = d->procs;
	int n = d->nprocs;

	if (r->jw) {
		jw_key(r->jw, "by_cpu");
		jw_begin_array(r->jw);
	} else {
		fprintf(r->out, "\nby CPU\n  %4s %12s %12s %12s %12s\n", "CPU", "TOTAL", "SAME_MM",
			"MM_CHANGE", "KERNEL");
	}
	for (int cpu = 0; percpu && cpu < ncpus; cpu++) {
		const __u64 *c = percpu[cpu].c;

		if (!c[CNT_SW_TOTAL])
			continue;
		if (r->jw) {
			jw_begin_object(r->jw);
			jw_key(r->jw, "cpu");
			jw_i64(r->jw, cpu);
			jw_key(r->jw, "total");
			jw_u64(r->jw, c[CNT_SW_TOTAL]);
			jw_key(r->jw, "same_mm");
			jw_u64(r->jw, c[CNT_SW_SAME_MM]);
			jw_key(r->jw, "mm_changes");
			jw_u64(r->jw, c[CNT_SW_MM_CHANGE]);
			jw_key(r->jw, "kernel");
			jw_u64(r->jw, c[CNT_SW_KERNEL]);
			jw_end_object(r->jw);
		} else {
			fprintf(r->out, "  %4d %12llu %12llu %12llu %12llu\n", cpu,
				(unsigned long long)c[CNT_SW_TOTAL],
				(unsigned long long)c[CNT_SW_SAME_MM],
				(unsigned long long)c[CNT_SW_MM_CHANGE],
				(unsigned long long)c[CNT_SW_KERNEL]);
		}
	}
	if (r->jw)
		jw_end_array(r->jw);

	if (r->jw) {
		jw_key(r->jw, "by_process");
		jw_begin_array(r->jw);
	} else if (n) {
		fprintf(r->out, "\nby process (top %d of %d)\n  %7s %-16s %10s %10s %10s %10s\n",
			res->opts->top, n, "PID", "COMM", "TOTAL", "SAME_MM", "MM_CHANGE",
			"KERNEL");
	}
	for (int i = 0; rows && i < n && (r->jw || i < res->opts->top); i++) {
		const struct switch_proc *p = &rows[i].p;
		size_t clen = bounded_strlen(p->comm, sizeof(p->comm));

		if (r->jw) {
			jw_begin_object(r->jw);
			jw_key(r->jw, "pid");
			jw_u64(r->jw, rows[i].tgid);
			jw_key(r->jw, "comm");
			jw_string_len(r->jw, p->comm, clen);
			jw_key(r->jw, "total");
			jw_u64(r->jw, p->total);
			jw_key(r->jw, "same_mm");
			jw_u64(r->jw, p->same_mm);
			jw_key(r->jw, "mm_changes");
			jw_u64(r->jw, p->mm_change);
			jw_key(r->jw, "kernel");
			jw_u64(r->jw, p->kernel);
			jw_end_object(r->jw);
		} else {
			char *comm = folded_escape(p->comm, clen);

			fprintf(r->out, "  %7u %-16s %10llu %10llu %10llu %10llu\n", rows[i].tgid,
				comm ? comm : "?", (unsigned long long)p->total,
				(unsigned long long)p->same_mm, (unsigned long long)p->mm_change,
				(unsigned long long)p->kernel);
			free(comm);
		}
	}
	if (r->jw)
		jw_end_array(r->jw);
}
