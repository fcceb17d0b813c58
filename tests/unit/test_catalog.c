// SPDX-License-Identifier: GPL-2.0
/* Hook selection against fake kernels: which hook wins, and the reasons the others lost. */
#include <errno.h>
#include <string.h>

#include "test.h"
#include "core/catalog.h"

struct fake {
	bool fentry, kprobes, tracefs_exceptions, perf;
};

static int fake_fentry(const struct kcaps *k, const char *f, const char **why)
{
	(void)f;
	*why = "fentry programs refused by this kernel (load: Operation not permitted)";
	return ((struct fake *)k->priv)->fentry ? 0 : -EPERM;
}

/* A function the fake kernel does not have (inlined), where it has kprobes. */
static const char *fake_absent;

static int fake_kprobe(const struct kcaps *k, const char *f, const char **why)
{
	if (fake_absent && strcmp(f, fake_absent) == 0) {
		*why = "not in kallsyms (inlined or absent in this kernel)";
		return -ENOENT;
	}
	*why = "this kernel has no kprobes";
	return ((struct fake *)k->priv)->kprobes ? 0 : -EOPNOTSUPP;
}

static bool fake_tp(const struct kcaps *k, const char *cat, const char *name)
{
	(void)name;
	if (strcmp(cat, "exceptions") == 0)
		return ((struct fake *)k->priv)->tracefs_exceptions;
	return true;
}

static int fake_perf(const struct kcaps *k, const char *ev, const char **why)
{
	(void)ev;
	*why = "cannot be opened (No such file or directory)";
	return ((struct fake *)k->priv)->perf ? 0 : -ENOENT;
}

static struct kcaps make_caps(struct fake *f, unsigned int arch, bool kernel_btf)
{
	struct kcaps k = {
		.arch = arch,
		.btf = kernel_btf,
		.kernel_btf = kernel_btf,
		.fentry_ok = fake_fentry,
		.kprobe_ok = fake_kprobe,
		.tracepoint_exists = fake_tp,
		.perf_sw_ok = fake_perf,
		.priv = f,
	};
	return k;
}

#define ALL_FAULTS (1u << EV_FAULT_ENTRY | 1u << EV_FAULT_DONE)

static enum hook_method chosen(const struct selection *s, enum mm_event_id e)
{
	const struct hook_candidate *c = selection_chosen(s, e);

	return c ? c->method : HM_NONE;
}

/* The result of event e's first candidate of method m (candidates are found by method, not
 * by position, so that adding one does not renumber every test). */
static struct cand_result *res(struct selection *s, enum mm_event_id e, enum hook_method m)
{
	const struct event_desc *ev = catalog_event(e);

	for (int i = 0; i < ev->ncands; i++)
		if (ev->cands[i].method == m)
			return &s->events[e].results[i];
	return NULL;
}

static int cand_index(enum mm_event_id e, enum hook_method m)
{
	const struct event_desc *ev = catalog_event(e);

	for (int i = 0; i < ev->ncands; i++)
		if (ev->cands[i].method == m)
			return i;
	return -1;
}

static void this_host(void)
{
	/* 6.18 here: BTF, tracepoints, perf; no kprobes; fentry refused. */
	struct fake f = {
		.fentry = false, .kprobes = false, .tracefs_exceptions = true, .perf = true};
	struct kcaps k = make_caps(&f, ARCH_X86, true);
	struct selection s;

	catalog_select(&s, &k, ALL_FAULTS, -1, NULL, NULL);
	EXPECT(chosen(&s, EV_FAULT_ENTRY) == HM_TP_BTF);
	EXPECT(chosen(&s, EV_FAULT_DONE) == HM_PERF_SW);
	EXPECT(strstr(res(&s, EV_FAULT_DONE, HM_FENTRY)->reason, "refused") != NULL);
	EXPECT(strstr(res(&s, EV_FAULT_DONE, HM_KPROBE)->reason, "no kprobes") != NULL);
	EXPECT(res(&s, EV_FAULT_DONE, HM_FENTRY)->status == CAND_REFUSED);
	/* Not a counting run: the kernel's counters do not stand in for the program. */
	EXPECT(res(&s, EV_FAULT_DONE, HM_PERF_COUNT)->status == CAND_REFUSED);
	EXPECT(strstr(res(&s, EV_FAULT_DONE, HM_PERF_COUNT)->reason, "counting runs only") != NULL);
	EXPECT(s.events[EV_FAULT_ENTRY].results[1].status == CAND_UNTRIED);
	EXPECT(!s.events[EV_TASK_FORK].wanted);
}

static void full_kernel(void)
{
	/* bookworm amd64: fentry works, so latency comes from fentry/fexit. */
	struct fake f = {true, true, true, true};
	struct kcaps k = make_caps(&f, ARCH_X86, true);
	struct selection s;

	catalog_select(&s, &k, ALL_FAULTS, -1, NULL, NULL);
	EXPECT(chosen(&s, EV_FAULT_DONE) == HM_FENTRY);
	EXPECT(chosen(&s, EV_FAULT_ENTRY) == HM_TP_BTF);
}

static void no_btf_ppc(void)
{
	/* ppc64le 6.1: no kernel BTF (a --btf file gives CO-RE), kprobes, perf events. */
	struct fake f = {false, true, false, true};
	struct kcaps k = make_caps(&f, ARCH_POWERPC, false);
	struct selection s;

	k.btf = true; /* --btf */
	catalog_select(&s, &k, ALL_FAULTS | 1u << EV_TASK_FORK, -1, NULL, NULL);
	EXPECT(chosen(&s, EV_FAULT_ENTRY) == HM_PERF_SW);
	EXPECT(strstr(s.events[EV_FAULT_ENTRY].results[0].reason, "wrong architecture") != NULL);
	EXPECT(chosen(&s, EV_FAULT_DONE) == HM_KPROBE);
	EXPECT(strstr(res(&s, EV_FAULT_DONE, HM_FENTRY)->reason, "no kernel BTF") != NULL);
	EXPECT(chosen(&s, EV_TASK_FORK) == HM_RAW_TP);
}

static void no_tracepoints(void)
{
	struct fake f = {false, false, false, true};
	struct kcaps k = make_caps(&f, ARCH_X86, true);
	struct selection s;

	catalog_select(&s, &k, ALL_FAULTS, -1, NULL, NULL);
	EXPECT(chosen(&s, EV_FAULT_ENTRY) == HM_PERF_SW);
	EXPECT(strstr(s.events[EV_FAULT_ENTRY].results[1].reason, "not in this kernel") != NULL);
}

static void nothing_works(void)
{
	struct fake f = {false, false, false, false};
	struct kcaps k = make_caps(&f, ARCH_X86, true);
	struct selection s;

	catalog_select(&s, &k, ALL_FAULTS, -1, NULL, NULL);
	EXPECT(chosen(&s, EV_FAULT_ENTRY) == HM_NONE);
	EXPECT(chosen(&s, EV_FAULT_DONE) == HM_NONE);
	EXPECT(strstr(res(&s, EV_FAULT_DONE, HM_PERF_SW)->reason, "cannot be opened") != NULL);
}

static void forced_method(void)
{
	struct fake f = {true, true, true, true};
	struct kcaps k = make_caps(&f, ARCH_X86, true);
	struct selection s;

	catalog_select(&s, &k, ALL_FAULTS | 1u << EV_TASK_EXIT, HM_PERF_SW, NULL, NULL);
	EXPECT(chosen(&s, EV_FAULT_ENTRY) == HM_PERF_SW);
	EXPECT(chosen(&s, EV_FAULT_DONE) == HM_PERF_SW);
	EXPECT(strstr(s.events[EV_FAULT_ENTRY].results[0].reason, "--method perf") != NULL);
	/* Bookkeeping hooks are not forced. */
	EXPECT(chosen(&s, EV_TASK_EXIT) == HM_TP_BTF);
}

static void attach_failure_falls_back(void)
{
	/* fentry loads but attach fails (EBUSY, as for do_user_addr_fault): next candidate. */
	struct fake f = {true, true, true, true};
	struct kcaps k = make_caps(&f, ARCH_X86, true);
	struct selection first, second;
	unsigned int excluded[EV_NR] = {0};

	catalog_select(&first, &k, ALL_FAULTS, -1, NULL, NULL);
	snprintf(res(&first, EV_FAULT_DONE, HM_FENTRY)->reason,
		 sizeof(first.events[0].results[0].reason), "handle_mm_fault: attach failed: busy");
	excluded[EV_FAULT_DONE] = 1u << cand_index(EV_FAULT_DONE, HM_FENTRY);
	catalog_select(&second, &k, ALL_FAULTS, -1, excluded, &first);
	EXPECT(chosen(&second, EV_FAULT_DONE) == HM_KPROBE);
	EXPECT(res(&second, EV_FAULT_DONE, HM_FENTRY)->status == CAND_REFUSED);
	EXPECT_STREQ(res(&second, EV_FAULT_DONE, HM_FENTRY)->reason,
		     "handle_mm_fault: attach failed: busy");
}

static void counting_run(void)
{
	/* mmscope stat with a scope a counting event can have: the kernel counts, no program,
	 * ahead of even fentry (no latency is wanted). */
	struct fake f = {true, true, true, true};
	struct kcaps k = make_caps(&f, ARCH_X86, true);
	struct selection s;

	k.perf_count_ok = true;
	catalog_select(&s, &k, ALL_FAULTS, -1, NULL, NULL);
	EXPECT(chosen(&s, EV_FAULT_DONE) == HM_PERF_COUNT);
	EXPECT(chosen(&s, EV_FAULT_ENTRY) == HM_TP_BTF);
	/* The perf events cannot be opened: then a program. */
	f.perf = false;
	catalog_select(&s, &k, ALL_FAULTS, -1, NULL, NULL);
	EXPECT(chosen(&s, EV_FAULT_DONE) == HM_FENTRY);
	EXPECT(strstr(res(&s, EV_FAULT_DONE, HM_PERF_COUNT)->reason, "cannot be opened") != NULL);
	/* A filter it cannot express: refused with the run's reason. */
	f.perf = true;
	k.perf_count_ok = false;
	k.perf_count_why = "two target filters at once: a counting event has one scope";
	catalog_select(&s, &k, ALL_FAULTS, -1, NULL, NULL);
	EXPECT(chosen(&s, EV_FAULT_DONE) == HM_FENTRY);
	EXPECT_STREQ(res(&s, EV_FAULT_DONE, HM_PERF_COUNT)->reason, k.perf_count_why);
	/* --method perf forces the program on the perf event. */
	k.perf_count_ok = true;
	catalog_select(&s, &k, ALL_FAULTS, HM_PERF_SW, NULL, NULL);
	EXPECT(chosen(&s, EV_FAULT_DONE) == HM_PERF_SW);
}

static void probe_all_marks_fallbacks(void)
{
	struct fake f = {false, false, true, true};
	struct kcaps k = make_caps(&f, ARCH_X86, true);
	struct selection s;

	catalog_probe_all(&s, &k);
	EXPECT(chosen(&s, EV_FAULT_ENTRY) == HM_TP_BTF);
	EXPECT(s.events[EV_FAULT_ENTRY].results[2].status == CAND_UNTRIED);
	EXPECT(strstr(s.events[EV_FAULT_ENTRY].results[2].reason, "fallback") != NULL);
	for (int e = 0; e < EV_NR; e++)
		EXPECT(s.events[e].wanted);
}

/* A group of kprobe members (arm64's TLBI functions) with one member gone from the kernel
 * (6.12 inlines ptep_set_access_flags()): the others are used, and the gone one is named with
 * its reason; with every member gone, the group is refused. */
static void group_member_missing(void)
{
	struct fake f = {false, true, false, true};
	struct kcaps k = make_caps(&f, ARCH_ARM64, true);
	const struct hook_candidate *c;
	struct cand_result *r;
	struct selection s;

	fake_absent = "ptep_set_access_flags";
	catalog_select(&s, &k, 1u << EV_ARM64_TLBI, -1, NULL, NULL);
	fake_absent = NULL;
	c = selection_chosen(&s, EV_ARM64_TLBI);
	EXPECT(c != NULL && c->method == HM_KPROBE);
	r = res(&s, EV_ARM64_TLBI, HM_KPROBE);
	EXPECT(r->status == CAND_CHOSEN);
	/* points 5 and 6: the kprobe and kretprobe on ptep_set_access_flags */
	EXPECT(r->missing == (1u << 5 | 1u << 6));
	EXPECT_STREQ(r->missing_why,
		     "ptep_set_access_flags: not in kallsyms (inlined or absent in this kernel)");
	for (int i = 0; c && i < 5; i++)
		EXPECT(strcmp(c->points[i].target, "ptep_set_access_flags") != 0);

	f.kprobes = false;
	catalog_select(&s, &k, 1u << EV_ARM64_TLBI, -1, NULL, NULL);
	EXPECT(selection_chosen(&s, EV_ARM64_TLBI) == NULL);
	r = res(&s, EV_ARM64_TLBI, HM_KPROBE);
	EXPECT(r->status == CAND_REFUSED);
	EXPECT(strstr(r->reason, "none of its functions") != NULL);
}

static void describe_and_names(void)
{
	char buf[160];

	hook_cand_describe(&catalog_event(EV_FAULT_ENTRY)->cands[0], buf, sizeof(buf));
	EXPECT_STREQ(buf, "exceptions:page_fault_user+page_fault_kernel");
	hook_cand_describe(
		&catalog_event(EV_FAULT_DONE)->cands[cand_index(EV_FAULT_DONE, HM_FENTRY)], buf,
		sizeof(buf));
	EXPECT_STREQ(buf, "handle_mm_fault");
	EXPECT_STREQ(hook_method_name(HM_PERF_COUNT), "perf-count");
	EXPECT(arch_from_uname("x86_64") == ARCH_X86);
	EXPECT(arch_from_uname("ppc64le") == ARCH_POWERPC);
	EXPECT(arch_from_uname("aarch64") == ARCH_ARM64);
	EXPECT(arch_from_uname("riscv64") == 0);
}

TEST_MAIN(T(this_host), T(full_kernel), T(no_btf_ppc), T(no_tracepoints), T(nothing_works),
	  T(forced_method), T(attach_failure_falls_back), T(counting_run),
	  T(probe_all_marks_fallbacks), T(group_member_missing), T(describe_and_names))
