/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The writers need only a run's result: one built here by hand (no BPF, no session) for a
 * powerpc hash-MMU machine, with a hook chosen for most events and none for one, goes through
 * the JSON envelope and the faults, tlb and hash sections, in JSON and text. What they print
 * must be that result: the hooks with their method, the reasons the others lost, the n/a
 * counters and why, and powerpc's sections rather than x86's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "report_mem.h"
#include "core/tlb_reasons.h"
#include "out/faults_report.h"
#include "out/tlb_report.h"

static const struct command cmd = {.name = "stat"};
static char *argv[] = {"./app", "-x", NULL};
static struct mm_opts opts;
static struct selection sel;
static struct run_result res;
static struct mm_stats st;

/* Event e wanted, candidate chosen (-1: none works), and each other candidate's reason. */
static void want(enum mm_event_id e, int chosen, const char *why_not)
{
	struct event_selection *es = &sel.events[e];

	es->wanted = true;
	es->chosen = chosen;
	for (int i = 0; i < es->ev->ncands; i++) {
		es->results[i].status = i == chosen ? CAND_CHOSEN : CAND_REFUSED;
		if (i != chosen)
			snprintf(es->results[i].reason, sizeof(es->results[i].reason), "%s",
				 why_not);
	}
}

static void build_result(bool json)
{
	memset(&opts, 0, sizeof(opts));
	opts.cmd = &cmd;
	opts.argv = argv;
	opts.json = json;
	opts.top = 5;
	memset(&sel, 0, sizeof(sel));
	for (int e = 0; e < EV_NR; e++) {
		sel.events[e].ev = catalog_event((enum mm_event_id)e);
		sel.events[e].chosen = -1;
	}
	want(EV_FAULT_ENTRY, 2, "x86 only");		      /* perf page-faults */
	want(EV_FAULT_DONE, 0, "fallback");		      /* counted minor/major */
	want(EV_TLBIE, 0, "available as a fallback");	      /* raw_tp powerpc:tlbie */
	want(EV_HCALL, -1, "powerpc:hcall_entry: not found"); /* not pseries */
	want(EV_HASH_FAULT, 0, "available as a fallback");    /* raw_tp powerpc:hash_fault */

	memset(&res, 0, sizeof(res));
	res.opts = &opts;
	res.cfg.count_only = true;
	res.arch = ARCH_POWERPC;
	res.mmu = MMU_HASH;
	snprintf(res.kernel, sizeof(res.kernel), "6.1.0-test");
	snprintf(res.machine, sizeof(res.machine), "ppc64le");
	res.sel = &sel;
	res.child = 4242;
	res.self_left_out = run_self_left_out(&opts);
	res.self_pid = 99;
	run_target_line(&res);
	res.duration_s = 2.5;
	tlb_reason_keys(res.tlb_reasons, res.arch, NULL, false);

	memset(&st, 0, sizeof(st));
	st.c[CNT_FAULT_USER] = 20;
	st.c[CNT_FAULT_KERNEL] = 2;
	st.c[CNT_FAULT_READ] = 12;
	st.c[CNT_FAULT_WRITE] = 10;
	st.c[CNT_FAULT_MINOR] = 21;
	st.c[CNT_TLBIE_LOCAL] = 3;
	st.c[CNT_TLBIE_GLOBAL] = 4;
	st.c[CNT_TLB_LOCAL] = 1;
	st.c[CNT_TLB_BROADCAST] = 2;
	st.c[CNT_HASH_FAULTS] = 9;
	st.c[CNT_HASH_USER] = 7;
}

/* The whole report of a stat run: envelope, faults, tlb, hash, and the end. */
static void write_report(struct mem *m, bool json)
{
	struct report r;

	build_result(json);
	mem_open(m);
	report_init(&r, &res, m->f);
	report_begin(&r, -1, 0, 0);
	faults_report_counts(&r, &st, 0, false);
	report_section_end(&r);
	tlb_report_counts(&r, &st, false);
	report_section_end(&r);
	hash_report_counts(&r, &st);
	report_end(&r, &st);
	mem_close(m);
}

#define EXPECT_HAS(buf, s)                                                                         \
	do {                                                                                       \
		if (!strstr(buf, s)) {                                                             \
			fprintf(stderr, "%s:%d: no \"%s\" in:\n%s\n", __FILE__, __LINE__, s, buf); \
			t_case_failures++;                                                         \
		}                                                                                  \
	} while (0)

static void test_json_envelope(void)
{
	struct mem m;

	write_report(&m, true);
	EXPECT_HAS(m.buf, "\"command\":\"stat\",\"kernel\":\"6.1.0-test\",\"arch\":\"ppc64le\","
			  "\"duration_s\":2.5,");
	/* A command: its pid, no mmscope left out. */
	EXPECT_HAS(m.buf, "\"target\":{\"type\":\"command\",\"command\":[\"./app\",\"-x\"],"
			  "\"pid\":4242,\"children\":true},");
	/* Each candidate of each wanted event, the chosen one marked, the others with why. */
	EXPECT_HAS(m.buf, "{\"event\":\"fault-entry\",\"method\":\"tp_btf\",\"attach\":"
			  "\"exceptions:page_fault_user+page_fault_kernel\",\"chosen\":false,"
			  "\"reason\":\"x86 only\"}");
	EXPECT_HAS(m.buf, "{\"event\":\"fault-entry\",\"method\":\"perf\",\"attach\":"
			  "\"page-faults\",\"chosen\":true}");
	EXPECT_HAS(m.buf, "{\"event\":\"fault-completion\",\"method\":\"perf-count\","
			  "\"attach\":\"minor-faults+major-faults\",\"chosen\":true}");
	EXPECT_HAS(m.buf, "{\"event\":\"tlbie\",\"method\":\"raw_tp\",\"attach\":"
			  "\"powerpc:tlbie\",\"chosen\":true}");
	EXPECT_HAS(m.buf, "{\"event\":\"hcall-invalidate\",\"method\":\"raw_tp\",\"attach\":"
			  "\"powerpc:hcall_entry\",\"chosen\":false,\"reason\":"
			  "\"powerpc:hcall_entry: not found\"}");
	/* Events not wanted are not listed. */
	EXPECT(!strstr(m.buf, "\"event\":\"tlb-flush\""));
	mem_free(&m);
}

static void test_json_sections(void)
{
	struct mem m;

	write_report(&m, true);
	/* The powerpc perf event tells read/write/exec; only x86's tracepoints see probe reads. */
	EXPECT_HAS(m.buf, "\"faults\":{\"user\":20,\"kernel\":2,\"read\":12,\"write\":10,"
			  "\"exec\":0,");
	EXPECT_HAS(m.buf, "\"nofault_excluded\":null");
	/* powerpc's TLB section: instructions counted, hcalls n/a (no hook), x86's keys null. */
	EXPECT_HAS(m.buf, "\"instructions\":{\"tlbiel\":3,\"tlbie\":4}");
	EXPECT_HAS(m.buf, "\"hcalls\":null");
	EXPECT_HAS(m.buf, "\"hash\":{\"faults\":9,\"read\":0,\"write\":0,\"exec\":0,\"user\":7,"
			  "\"kernel\":2}");
	/* Every null says why, in "unavailable". */
	EXPECT_HAS(m.buf, "\"faults.nofault_excluded\":\"only x86's exceptions tracepoints see "
			  "faults taken with page faults disabled\"");
	EXPECT_HAS(m.buf, "\"tlb.hcalls\":\"no powerpc:hcall_entry hook\"");
	EXPECT(!strstr(m.buf, "\"hash.faults\":"));
	mem_free(&m);
}

static void test_text(void)
{
	/* The header: the target, the duration, the kernel, and one line per event. */
	static const char header[] =
		"\nmmscope stat: command: ./app -x (pid 4242), 2.50 s, kernel 6.1.0-test "
		"(ppc64le)\n"
		"  fault-entry         perf page-faults\n"
		"  fault-completion    perf-count minor-faults+major-faults\n"
		"  tlbie               raw_tp powerpc:tlbie\n"
		"  hash-fault          raw_tp powerpc:hash_fault\n"
		"  hcall-invalidate    n/a (no usable hook; see 'mmscope probes')\n"
		"\nfaults";
	struct mem m;

	write_report(&m, false);
	EXPECT(strncmp(m.buf, header, strlen(header)) == 0);
	EXPECT_HAS(m.buf, "  read                                   12\n");
	/* The x86-only counter is n/a with its reason; powerpc's sections are there. */
	EXPECT_HAS(m.buf, "  probe reads (excluded)                n/a (only x86's exceptions "
			  "tracepoints see faults taken with page faults disabled)\n");
	EXPECT_HAS(m.buf, "  instructions: tlbiel=3 tlbie=4\n");
	EXPECT_HAS(m.buf, "\nhash MMU faults (powerpc:hash_fault, HPTE misses)\n");
	EXPECT_HAS(m.buf,
		   "  invalidation hcalls                   n/a (no powerpc:hcall_entry hook)\n");
	EXPECT_HAS(m.buf, "  kernel addresses                        2\n");
	mem_free(&m);
}

/* The same result on x86 (no hash MMU, so no hook for it): the hash section is gone from the
 * text, and kept in JSON as nulls. */
static void test_other_arch(void)
{
	struct mem m;
	struct report r;

	build_result(true);
	res.arch = ARCH_X86;
	res.mmu = 0;
	sel.events[EV_HASH_FAULT].chosen = -1;
	mem_open(&m);
	report_init(&r, &res, m.f);
	r.jw = jw_new(m.f, false);
	jw_begin_object(r.jw);
	hash_report_counts(&r, &st);
	jw_end_object(r.jw);
	jw_free(r.jw);
	mem_close(&m);
	EXPECT_STREQ(m.buf, "{\"hash\":{\"faults\":null,\"read\":null,\"write\":null,\"exec\":null,"
			    "\"user\":null,\"kernel\":null}}\n");
	mem_free(&m);
	res.opts = &opts;
	opts.json = false;
	report_mem_begin(&r, &res, &m, false);
	hash_report_counts(&r, &st);
	report_mem_end(&r, &m);
	EXPECT_STREQ(m.buf, "");
	mem_free(&m);
}

TEST_MAIN(T(test_json_envelope), T(test_json_sections), T(test_text), T(test_other_arch))
