// SPDX-License-Identifier: GPL-2.0
/*
 * The catalog rows: per event, the best hook first (docs/kernels.md shows what each tested
 * kernel allows; mmscope probes shows the running one).
 * Why these orders:
 * - fault entry: the x86 exceptions tracepoints carry the error code (the class); tp_btf is
 *   the cheapest way to run on them; the perf software page-fault event fires in every
 *   architecture's fault handler and on powerpc its registers hold trap and DSISR.
 * - fault completion: handle_mm_fault() entry/exit adds the latency of every call; where it
 *   cannot be hooked (no kprobes, fentry refused: this host, many locked-down kernels), the
 *   perf software minor/major events fire in mm_account_fault() when a fault completes, and
 *   latency comes from pairing them with the entry per thread. A run that only counts
 *   (mmscope stat) has them counted by the kernel instead, as perf stat does: a program on
 *   a perf software event takes the event's overflow path on every fault (the issue measured
 *   17% on a page-touch loop), a counter adds to a number.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/catalog.h"
#include "mmscope.skel.h"

/*
 * A point's program is the place of its pointer in the skeleton, so that a renamed or removed
 * BPF program fails to compile here instead of leaving its hook silently unloaded. bpf/
 * builds some programs for one architecture only (#if defined(__TARGET_ARCH_...)): on the
 * others their rows stay (probes lists them, the tests' fake kernels select them) with
 * PROG_OTHER_ARCH, which hook_prog() answers with no program.
 */
#define PROG(name) offsetof(struct mmscope, progs.name)
#if defined(__x86_64__)
#define PROG_X86(name) PROG(name)
#else
#define PROG_X86(name) PROG_OTHER_ARCH
#endif
#if defined(__aarch64__)
#define PROG_ARM64(name) PROG(name)
#else
#define PROG_ARM64(name) PROG_OTHER_ARCH
#endif
#if defined(__powerpc64__)
#define PROG_POWERPC(name) PROG(name)
#else
#define PROG_POWERPC(name) PROG_OTHER_ARCH
#endif

static const struct hook_candidate fault_entry_cands[] = {
	{HM_TP_BTF,
	 ARCH_X86,
	 {{PROG_X86(pf_user_btf), "exceptions:page_fault_user"},
	  {PROG_X86(pf_kernel_btf), "exceptions:page_fault_kernel"}},
	 "error code: user/kernel, read/write/exec, protection",
	 NULL,
	 0},
	{HM_TRACEPOINT,
	 ARCH_X86,
	 {{PROG_X86(pf_user_tp), "exceptions:page_fault_user"},
	  {PROG_X86(pf_kernel_tp), "exceptions:page_fault_kernel"}},
	 "error code: user/kernel, read/write/exec, protection",
	 NULL,
	 0},
	{HM_PERF_SW,
	 ARCH_ALL,
	 {{PROG(pf_perf), "page-faults"}},
	 "registers: user/kernel; powerpc trap/DSISR also read/write/exec, protection",
	 NULL,
	 0},
};

static const struct hook_candidate fault_done_cands[] = {
	{HM_PERF_COUNT,
	 ARCH_ALL,
	 {{0, "minor-faults"}, {0, "major-faults"}},
	 "minor/major counted by the kernel in mm_account_fault() (perf stat's counters), no "
	 "program: counting runs only (no latency, no attribution)",
	 NULL,
	 0},
	{HM_FENTRY,
	 ARCH_ALL,
	 {{PROG(mm_fault_fentry), "handle_mm_fault"}, {PROG(mm_fault_fexit), "handle_mm_fault"}},
	 "minor/major from the return value; latency of each handle_mm_fault() call",
	 NULL,
	 0},
	{HM_KPROBE,
	 ARCH_ALL,
	 {{PROG(mm_fault_kprobe), "handle_mm_fault"},
	  {PROG(mm_fault_kretprobe), "handle_mm_fault"}},
	 "minor/major from the return value; latency of each handle_mm_fault() call",
	 NULL,
	 0},
	{HM_PERF_SW,
	 ARCH_ALL,
	 {{PROG(pf_done_minor), "minor-faults"}, {PROG(pf_done_major), "major-faults"}},
	 "minor/major when mm_account_fault() accounts the fault; latency by pairing with the "
	 "fault entry per thread",
	 NULL,
	 0},
};

static const struct hook_candidate fork_cands[] = {
	{HM_TP_BTF,
	 ARCH_ALL,
	 {{PROG(fork_btf), "sched:sched_process_fork"}},
	 "parent and child tasks",
	 NULL,
	 0},
	{HM_RAW_TP,
	 ARCH_ALL,
	 {{PROG(fork_raw), "sched:sched_process_fork"}},
	 "parent and child tasks",
	 NULL,
	 0},
};

static const struct hook_candidate exit_cands[] = {
	{HM_TP_BTF,
	 ARCH_ALL,
	 {{PROG(exit_btf), "sched:sched_process_exit"}},
	 "exiting task",
	 NULL,
	 0},
	{HM_RAW_TP,
	 ARCH_ALL,
	 {{PROG(exit_raw), "sched:sched_process_exit"}},
	 "exiting task",
	 NULL,
	 0},
};

static const struct hook_candidate free_cands[] = {
	{HM_TP_BTF,
	 ARCH_ALL,
	 {{PROG(free_btf), "sched:sched_process_free"}},
	 "freed task",
	 NULL,
	 0},
	{HM_RAW_TP,
	 ARCH_ALL,
	 {{PROG(free_raw), "sched:sched_process_free"}},
	 "freed task",
	 NULL,
	 0},
};

static const struct hook_candidate exec_cands[] = {
	{HM_TP_BTF,
	 ARCH_ALL,
	 {{PROG(exec_btf), "sched:sched_process_exec"}},
	 "new image's path",
	 NULL,
	 0},
	{HM_RAW_TP,
	 ARCH_ALL,
	 {{PROG(exec_raw), "sched:sched_process_exec"}},
	 "new image's path",
	 NULL,
	 0},
};

static const struct hook_candidate tlb_flush_cands[] = {
	{HM_TP_BTF,
	 ARCH_X86,
	 {{PROG_X86(tlb_flush_btf), "tlb:tlb_flush"}},
	 "reason, pages (-1: full)",
	 NULL,
	 0},
	{HM_TRACEPOINT,
	 ARCH_X86,
	 {{PROG_X86(tlb_flush_tp), "tlb:tlb_flush"}},
	 "reason, pages (-1: full)",
	 NULL,
	 0},
};

static const struct hook_candidate tlb_send_cands[] = {
	{HM_FENTRY,
	 ARCH_X86,
	 {{PROG_X86(send_fentry), "native_flush_tlb_multi"},
	  {PROG_X86(send_fexit), "native_flush_tlb_multi"}},
	 "CPUs targeted by each shootdown, time the sender waited",
	 NULL,
	 0},
	{HM_KPROBE,
	 ARCH_X86,
	 {{PROG_X86(send_kprobe), "native_flush_tlb_multi"},
	  {PROG_X86(send_kretprobe), "native_flush_tlb_multi"}},
	 "CPUs targeted by each shootdown, time the sender waited",
	 NULL,
	 0},
};

static const struct hook_candidate switch_cands[] = {
	{HM_TP_BTF,
	 ARCH_ALL,
	 {{PROG(switch_btf), "sched:sched_switch"}},
	 "prev and next tasks, their mm",
	 NULL,
	 0},
	{HM_RAW_TP,
	 ARCH_ALL,
	 {{PROG(switch_raw), "sched:sched_switch"}},
	 "prev and next tasks, their mm",
	 NULL,
	 0},
};

static const struct hook_candidate switch_flush_cands[] = {
	{HM_TP_BTF,
	 ARCH_X86,
	 {{PROG_X86(switch_flush_btf), "tlb:tlb_flush"}},
	 "CR3 loads at switch: flushed (pages -1) or kept (0)",
	 NULL,
	 0},
	{HM_TRACEPOINT,
	 ARCH_X86,
	 {{PROG_X86(switch_flush_tp), "tlb:tlb_flush"}},
	 "CR3 loads at switch: flushed (pages -1) or kept (0)",
	 NULL,
	 0},
};

static const struct hook_candidate tlbie_cands[] = {
	{HM_RAW_TP,
	 ARCH_POWERPC,
	 {{PROG_POWERPC(tlbie_raw), "powerpc:tlbie"}},
	 "each tlbie/tlbiel instruction: local, RIC, PRS, R, IS, PID",
	 NULL,
	 0},
	{HM_TRACEPOINT,
	 ARCH_POWERPC,
	 {{PROG_POWERPC(tlbie_tp), "powerpc:tlbie"}},
	 "each tlbie/tlbiel instruction: local, RIC, PRS, R, IS, PID",
	 NULL,
	 0},
};

static const struct hook_candidate hash_fault_cands[] = {
	{HM_RAW_TP,
	 ARCH_POWERPC,
	 {{PROG_POWERPC(hash_fault_raw), "powerpc:hash_fault"}},
	 "HPTE misses: address, access, trap",
	 NULL,
	 MMU_HASH},
	{HM_TRACEPOINT,
	 ARCH_POWERPC,
	 {{PROG_POWERPC(hash_fault_tp), "powerpc:hash_fault"}},
	 "HPTE misses: address, access, trap",
	 NULL,
	 MMU_HASH},
};

/* The radix (and hash) functions that issue invalidations: the operations behind the tlbie
 * instructions. Out of line and ftrace-able in Debian's 6.1 (kernel-probes.md, symcheck). */
const char tlb_fn_list_powerpc[] =
	"radix__flush_tlb_mm,radix__flush_tlb_range,radix__flush_tlb_page_psize,"
	"radix__flush_tlb_kernel_range,radix__flush_all_mm,radix__local_flush_tlb_mm,"
	"radix__local_flush_tlb_page_psize,radix__flush_tlb_collapsed_pmd,"
	"radix__flush_pmd_tlb_range,do_tlbiel_pid,do_tlbiel_va,do_tlbiel_va_range,"
	"exit_lazy_flush_tlb,flush_hash_range,flush_hash_page,__flush_tlb_pending,hash__tlb_flush,"
	"radix__tlb_flush";

static const struct hook_candidate tlb_fn_cands[] = {
	{HM_KPROBE,
	 ARCH_POWERPC,
	 {{PROG(tlb_fn_kprobe), tlb_fn_list_powerpc}},
	 "calls of each flush function (operations, by kind)",
	 NULL,
	 0},
};

static const struct hook_candidate arm64_tlbi_cands[] = {
	{HM_KPROBE,
	 ARCH_ARM64,
	 {{PROG_ARM64(tlbi_gather_kprobe), "tlb_flush_mmu"},
	  {PROG_ARM64(tlbi_finish_kprobe), "tlb_finish_mmu"},
	  {PROG_ARM64(tlbi_finish_kretprobe), "tlb_finish_mmu"},
	  {PROG_ARM64(tlbi_change_kretprobe), "change_protection"},
	  {PROG_ARM64(tlbi_clear_kprobe), "ptep_clear_flush"},
	  {PROG_ARM64(tlbi_access_kprobe), "ptep_set_access_flags"},
	  {PROG_ARM64(tlbi_access_kretprobe), "ptep_set_access_flags"}},
	 "broadcast TLBI operations: mmu_gather flushes, ptep_clear_flush, dirty access-flag "
	 "updates",
	 NULL,
	 0},
};

/*
 * Candidates whose kprobe points are independent members of a group: one works with the
 * members this kernel has (cand_result.missing says which are gone), not only with all. The
 * arm64 TLBI functions each count their own operations: 6.12's ptep_set_access_flags() is an
 * inline wrapper (4602e5757bcc "arm64/mm: Wire up PTE_CONT for user mappings", v6.9), and
 * the others are still counted without it.
 */
static bool members_group(const struct hook_candidate *c)
{
	return c == arm64_tlbi_cands;
}

static const struct hook_candidate insn_read_cands[] = {
	{HM_KPROBE,
	 ARCH_POWERPC,
	 {{PROG_POWERPC(insn_read_kprobe), "store_updates_sp"}},
	 "faults whose handling read the faulting instruction",
	 "v5.9 (773b3e53df5b)",
	 0},
};

static const struct hook_candidate slb_cands[] = {
	{HM_PMU,
	 ARCH_POWERPC,
	 {{0, "PM_DSLB_MISS"}, {0, "PM_ISLB_MISS"}},
	 "SLB misses (data, instruction) counted by the PMU",
	 NULL,
	 MMU_HASH},
};

static const struct hook_candidate hcall_cands[] = {
	{HM_RAW_TP,
	 ARCH_POWERPC,
	 {{PROG_POWERPC(hcall_raw), "powerpc:hcall_entry"}},
	 "pseries invalidation hypercalls (H_RPT_INVALIDATE, H_REMOVE, H_PROTECT, H_BULK_REMOVE)",
	 NULL,
	 0},
	{HM_TRACEPOINT,
	 ARCH_POWERPC,
	 {{PROG_POWERPC(hcall_tp), "powerpc:hcall_entry"}},
	 "pseries invalidation hypercalls (H_RPT_INVALIDATE, H_REMOVE, H_PROTECT, H_BULK_REMOVE)",
	 NULL,
	 0},
};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const struct event_desc events[EV_NR] = {
	[EV_FAULT_ENTRY] = {EV_FAULT_ENTRY, "fault-entry", "entry into the fault handler",
			    fault_entry_cands, N(fault_entry_cands)},
	[EV_FAULT_DONE] = {EV_FAULT_DONE, "fault-completion",
			   "fault accounted minor/major (and latency)", fault_done_cands,
			   N(fault_done_cands)},
	[EV_TASK_FORK] = {EV_TASK_FORK, "task-fork", "follow children of traced processes",
			  fork_cands, N(fork_cands), true},
	[EV_TASK_EXIT] = {EV_TASK_EXIT, "task-exit", "forget exited processes (pid reuse)",
			  exit_cands, N(exit_cands), true},
	[EV_TASK_EXEC] = {EV_TASK_EXEC, "task-exec", "register exec'ed binaries for symbols",
			  exec_cands, N(exec_cands), true},
	[EV_TASK_FREE] = {EV_TASK_FREE, "task-free",
			  "forget processes once their address space is gone (pid reuse)",
			  free_cands, N(free_cands), true},
	[EV_TLB_FLUSH] = {EV_TLB_FLUSH, "tlb-flush", "TLB flushes by reason, with pages",
			  tlb_flush_cands, N(tlb_flush_cands)},
	[EV_TLB_SEND] = {EV_TLB_SEND, "tlb-shootdown-send", "shootdown targets and sender wait",
			 tlb_send_cands, N(tlb_send_cands)},
	[EV_SWITCH] = {EV_SWITCH, "context-switch", "context switches and mm changes", switch_cands,
		       N(switch_cands)},
	[EV_SWITCH_FLUSH] = {EV_SWITCH_FLUSH, "switch-flush",
			     "whether an mm change flushed the TLB", switch_flush_cands,
			     N(switch_flush_cands)},
	[EV_TLBIE] = {EV_TLBIE, "tlbie", "powerpc tlbie/tlbiel instructions", tlbie_cands,
		      N(tlbie_cands)},
	[EV_HASH_FAULT] = {EV_HASH_FAULT, "hash-fault", "powerpc hash-MMU HPTE faults",
			   hash_fault_cands, N(hash_fault_cands)},
	[EV_TLB_FN] = {EV_TLB_FN, "tlb-flush-function", "powerpc flush functions (operations)",
		       tlb_fn_cands, N(tlb_fn_cands)},
	[EV_ARM64_TLBI] = {EV_ARM64_TLBI, "arm64-tlbi", "arm64 broadcast TLBI operations",
			   arm64_tlbi_cands, N(arm64_tlbi_cands)},
	[EV_INSN_READ] = {EV_INSN_READ, "fault-insn-read",
			  "fault handling reading the faulting instruction (store_updates_sp)",
			  insn_read_cands, N(insn_read_cands)},
	[EV_HCALL] = {EV_HCALL, "hcall-invalidate", "powerpc hypervisor invalidations (pseries)",
		      hcall_cands, N(hcall_cands)},
	[EV_SLB] = {EV_SLB, "slb-miss", "powerpc SLB misses (hash MMU, PMU)", slb_cands,
		    N(slb_cands)},
};

bool list_item(const char *list, int index, char *buf, size_t len)
{
	const char *p = list;

	for (int i = 0; *p; i++) {
		size_t n = strcspn(p, ",");

		if (i == index) {
			if (n >= len)
				n = len - 1;
			memcpy(buf, p, n);
			buf[n] = '\0';
			return true;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}

const struct event_desc *catalog_event(enum mm_event_id id)
{
	return id < EV_NR ? &events[id] : NULL;
}

const char *hook_method_name(enum hook_method m)
{
	switch (m) {
	case HM_FENTRY:
		return "fentry";
	case HM_KPROBE:
		return "kprobe";
	case HM_TP_BTF:
		return "tp_btf";
	case HM_RAW_TP:
		return "raw_tp";
	case HM_TRACEPOINT:
		return "tracepoint";
	case HM_PERF_SW:
		return "perf";
	case HM_PMU:
		return "pmu";
	case HM_PERF_COUNT:
		return "perf-count";
	case HM_NONE:
		return "none";
	}
	return "?";
}

const char *arch_name(unsigned int arch_bit)
{
	switch (arch_bit) {
	case ARCH_X86:
		return "x86";
	case ARCH_ARM64:
		return "arm64";
	case ARCH_POWERPC:
		return "powerpc";
	}
	return "unknown";
}

unsigned int arch_from_uname(const char *machine)
{
	if (strcmp(machine, "x86_64") == 0)
		return ARCH_X86;
	if (strcmp(machine, "aarch64") == 0)
		return ARCH_ARM64;
	if (strncmp(machine, "ppc64", 5) == 0)
		return ARCH_POWERPC;
	return 0;
}

void hook_cand_describe(const struct hook_candidate *c, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < HOOK_MAX_POINTS && c->points[i].target; i++) {
		const char *t = c->points[i].target;
		bool dup = false;
		int n;

		/* A point of the same place as an earlier one (fentry+fexit): named once. */
		for (int j = 0; j < i; j++)
			dup |= strcmp(t, c->points[j].target) == 0;
		if (dup)
			continue;
		/* Second and later tracepoints of one category: name only the event. */
		if (i > 0 && strchr(t, ':') && strchr(c->points[0].target, ':') &&
		    strncmp(t, c->points[0].target, (size_t)(strchr(t, ':') - t)) == 0)
			t = strchr(t, ':') + 1;
		if (strchr(t, ',')) {
			int count = 1;

			for (const char *p = t; *p; p++)
				count += *p == ',';
			n = snprintf(buf + used, len - used, "%s%.*s+%d-more", used ? "+" : "",
				     (int)strcspn(t, ","), t, count - 1);
		} else {
			n = snprintf(buf + used, len - used, "%s%s", used ? "+" : "", t);
		}
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

static void refuse(struct cand_result *r, const char *fmt, const char *a, const char *b)
{
	r->status = CAND_REFUSED;
	snprintf(r->reason, sizeof(r->reason), fmt, a ? a : "", b ? b : "");
}

static const char *arch_list(unsigned int arches, char *buf, size_t len)
{
	buf[0] = '\0';
	for (unsigned int bit = 1; bit <= ARCH_POWERPC; bit <<= 1) {
		if (!(arches & bit))
			continue;
		if (buf[0])
			strncat(buf, "/", len - strlen(buf) - 1);
		strncat(buf, arch_name(bit), len - strlen(buf) - 1);
	}
	return buf;
}

/* A kprobe on a list of functions works when any of them can be probed. */
static bool kprobe_list_ok(const struct kcaps *k, const char *list, struct cand_result *r)
{
	const char *p = list, *why = NULL;
	char name[128];
	int ok = 0;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n < sizeof(name)) {
			memcpy(name, p, n);
			name[n] = '\0';
			if (k->kprobe_ok(k, name, &why) == 0)
				ok++;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	if (!ok) {
		refuse(r, "none of the functions can be probed (%s)%s", why ? why : "?", NULL);
		return false;
	}
	return true;
}

/* Check one candidate against the kernel; fills r and returns true when it can be used. */
static bool check_candidate(const struct hook_candidate *c, const struct kcaps *k,
			    struct cand_result *r)
{
	const char *why = NULL;
	char archs[48];

	r->missing = 0;
	r->missing_why[0] = '\0';
	if (!(c->arches & k->arch)) {
		refuse(r, "wrong architecture (%s only)%s",
		       arch_list(c->arches, archs, sizeof(archs)), NULL);
		return false;
	}
	if (c->mmu && !(c->mmu & k->mmu)) {
		refuse(r, "%s%s",
		       c->mmu == MMU_HASH ? "this CPU runs the radix MMU (hash only)"
					  : "this CPU runs the hash MMU (radix only)",
		       NULL);
		return false;
	}
	/* Counted events have no program: the loop below, over programs, does not see them. */
	if (c->method == HM_PERF_COUNT) {
		if (!k->perf_count_ok) {
			refuse(r, "%s%s",
			       k->perf_count_why ? k->perf_count_why
						 : "counting runs only (mmscope stat)",
			       NULL);
			return false;
		}
		for (int i = 0; i < HOOK_MAX_POINTS && c->points[i].target; i++)
			if (k->perf_sw_ok(k, c->points[i].target, &why)) {
				refuse(r, "perf event %s: %s", c->points[i].target, why);
				return false;
			}
	}
	for (int i = 0; i < HOOK_MAX_POINTS && c->points[i].prog && c->points[i].target; i++) {
		const char *t = c->points[i].target;
		char cat[64];
		const char *name = strchr(t, ':');

		switch (c->method) {
		case HM_FENTRY:
			if (!k->kernel_btf) {
				refuse(r,
				       "no kernel BTF (fentry needs /sys/kernel/btf/vmlinux)%s%s",
				       NULL, NULL);
				return false;
			}
			if (k->fentry_ok(k, t, &why)) {
				refuse(r, "%s: %s", t, why);
				return false;
			}
			break;
		case HM_KPROBE:
			if (strchr(t, ',')) {
				if (!kprobe_list_ok(k, t, r))
					return false;
				break;
			}
			if (k->kprobe_ok(k, t, &why)) {
				if (members_group(c)) {
					size_t n = strlen(r->missing_why);

					/* A kprobe and its kretprobe name the function once. */
					if (!strstr(r->missing_why, t))
						snprintf(r->missing_why + n,
							 sizeof(r->missing_why) - n, "%s%s: %s",
							 n ? "; " : "", t, why);
					r->missing |= 1u << i;
					break;
				}
				if (c->gone && strstr(why, "kallsyms"))
					refuse(r, "%s: not in this kernel: removed upstream in %s",
					       t, c->gone);
				else
					refuse(r, "%s: %s", t, why);
				return false;
			}
			break;
		case HM_PMU:
			if (!k->pmu_ok || k->pmu_ok(k, t, &why)) {
				refuse(r, "PMU event %s: %s", t, why ? why : "not supported");
				return false;
			}
			break;
		case HM_TP_BTF:
		case HM_RAW_TP:
		case HM_TRACEPOINT:
			if (!name || (size_t)(name - t) >= sizeof(cat)) {
				refuse(r, "bad tracepoint name %s%s", t, NULL);
				return false;
			}
			memcpy(cat, t, (size_t)(name - t));
			cat[name - t] = '\0';
			name++;
			if (c->method == HM_TP_BTF && !k->kernel_btf) {
				refuse(r,
				       "no kernel BTF (tp_btf needs /sys/kernel/btf/vmlinux)%s%s",
				       NULL, NULL);
				return false;
			}
			if (c->method == HM_RAW_TP && !k->btf) {
				refuse(r, "no BTF for CO-RE field offsets (give --btf)%s%s", NULL,
				       NULL);
				return false;
			}
			if (!k->tracepoint_exists(k, cat, name)) {
				refuse(r, "tracepoint %s not in this kernel%s", t, NULL);
				return false;
			}
			break;
		case HM_PERF_SW:
			if (k->perf_sw_ok(k, t, &why)) {
				refuse(r, "perf event %s: %s", t, why);
				return false;
			}
			break;
		case HM_PERF_COUNT:
		case HM_NONE:
			break;
		}
	}
	if (members_group(c) && r->missing) {
		int n = 0;

		while (n < HOOK_MAX_POINTS && c->points[n].prog && c->points[n].target)
			n++;
		if (r->missing == (1u << n) - 1) {
			r->status = CAND_REFUSED;
			snprintf(r->reason, sizeof(r->reason),
				 "none of its functions can be probed (%.120s)", r->missing_why);
			return false;
		}
	}
	r->status = CAND_CHOSEN;
	r->reason[0] = '\0';
	return true;
}

static void select_impl(struct selection *sel, const struct kcaps *k, unsigned int wanted,
			int force_method, const unsigned int *excluded,
			const struct selection *prev, bool all)
{
	memset(sel, 0, sizeof(*sel));
	for (int e = 0; e < EV_NR; e++) {
		struct event_selection *es = &sel->events[e];

		es->ev = &events[e];
		es->wanted = wanted & (1u << e);
		es->chosen = -1;
		if (!es->wanted)
			continue;
		for (int i = 0; i < es->ev->ncands && i < MAX_CANDS; i++) {
			const struct hook_candidate *c = &es->ev->cands[i];
			struct cand_result *r = &es->results[i];

			if (es->chosen >= 0) {
				if (all && !check_candidate(c, k, r))
					continue;
				r->status = CAND_UNTRIED;
				snprintf(r->reason, sizeof(r->reason), "%s: %s chosen",
					 all ? "works, as a fallback" : "not needed",
					 hook_method_name(es->ev->cands[es->chosen].method));
				continue;
			}
			if (excluded && (excluded[e] & (1u << i))) {
				*r = prev ? prev->events[e].results[i] : *r;
				r->status = CAND_REFUSED;
				if (!r->reason[0])
					snprintf(r->reason, sizeof(r->reason), "failed to attach");
				continue;
			}
			if (force_method >= 0 && !es->ev->infra && (int)c->method != force_method) {
				refuse(r, "not the forced method (--method %s)%s",
				       hook_method_name((enum hook_method)force_method), NULL);
				continue;
			}
			if (check_candidate(c, k, r))
				es->chosen = i;
		}
	}
}

void catalog_select(struct selection *sel, const struct kcaps *k, unsigned int wanted,
		    int force_method, const unsigned int *excluded, const struct selection *prev)
{
	select_impl(sel, k, wanted, force_method, excluded, prev, false);
}

void catalog_probe_all(struct selection *sel, const struct kcaps *k)
{
	select_impl(sel, k, (1u << EV_NR) - 1, -1, NULL, NULL, true);
}

struct bpf_program *hook_prog(const struct mmscope *skel, const struct hook_point *p)
{
	if (!p->prog || p->prog == PROG_OTHER_ARCH)
		return NULL;
	return *(struct bpf_program *const *)((const char *)skel + p->prog);
}

const struct hook_candidate *selection_chosen(const struct selection *sel, enum mm_event_id id)
{
	const struct event_selection *es = &sel->events[id];

	if (!es->wanted || es->chosen < 0)
		return NULL;
	return &es->ev->cands[es->chosen];
}
