/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests of the tlb and switch writers (out/tlb_report.c) over results built by hand: the
 * end-of-run tables (by_process, by_syscall, by_cpu) in text and JSON, with no BPF map behind
 * them. The result is an arm64 one, whose reason names are fixed (bpf/tlb.bpf.c's operation
 * kinds), so the expected text does not depend on the running kernel's BTF.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "report_mem.h"
#include "core/tlb_reasons.h"
#include "out/tlb_report.h"

static struct run_result res;
static struct mm_opts opts;

static void setup(struct report *r, struct mem *m, bool json)
{
	memset(&res, 0, sizeof(res));
	memset(&opts, 0, sizeof(opts));
	opts.top = 2;
	res.opts = &opts;
	res.arch = ARCH_ARM64;
	tlb_reason_keys(res.tlb_reasons, ARCH_ARM64, NULL, false);
	report_mem_begin(r, &res, m, json);
}

/* Ends the report; m->buf holds its text until free() (report_mem_end()). */
static void finish(struct report *r, struct mem *m)
{
	report_mem_end(r, m);
}

static struct tlb_proc_row procs[3];
static struct tlb_syscall_row syscalls[3];

/* Three processes and three (system call, reason) rows, heaviest first as the reader sorts. */
static struct tlb_details tlb_details(void)
{
	memset(procs, 0, sizeof(procs));
	procs[0].tgid = 100;
	strcpy(procs[0].p.comm, "writer");
	procs[0].p.reason[0] = 7;
	procs[0].p.reason[2] = 3;
	procs[0].total = 10;
	procs[1].tgid = 200;
	strcpy(procs[1].p.comm, "a;b");
	procs[1].p.reason[1] = 4;
	procs[1].total = 4;
	procs[2].tgid = 300;
	strcpy(procs[2].p.comm, "third");
	procs[2].p.reason[0] = 1;
	procs[2].total = 1;
	syscalls[0] = (struct tlb_syscall_row){{SYSCALL_FAULT, 0}, 9};
	syscalls[1] = (struct tlb_syscall_row){{SYSCALL_KTHREAD, 1}, 5};
	syscalls[2] = (struct tlb_syscall_row){{SYSCALL_NONE, 3}, 2};
	return (struct tlb_details){procs, 3, syscalls, 3};
}

static void test_tlb_details_text(void)
{
	struct tlb_details d = tlb_details();
	struct report r;
	struct mem m;

	setup(&r, &m, false);
	tlb_report_details(&r, &d);
	finish(&r, &m);
	/* --top 2 of 3; a comm is escaped as in folded stacks. */
	EXPECT_STREQ(m.buf, "\nissuing processes (local and broadcast flushes; top 2 of 3)\n"
			    "      PID COMM                FLUSHES BY REASON\n"
			    "      100 writer                   10 tlb_flush_mmu=7 "
			    "ptep_set_access_flags=3\n"
			    "      200 a\\x3bb                    4 ptep_clear_flush=4\n"
			    "\nby system call in progress (issuing side)\n"
			    "  SYSCALL              REASON                    COUNT\n"
			    "  [page fault]         tlb_flush_mmu                 9\n"
			    "  [kernel thread]      ptep_clear_flush              5\n");
	free(m.buf);
}

static void test_tlb_details_json(void)
{
	struct tlb_details d = tlb_details();
	struct report r;
	struct mem m;

	setup(&r, &m, true);
	tlb_report_details(&r, &d);
	finish(&r, &m);
	/* JSON has every row, --top apart. */
	EXPECT_STREQ(m.buf,
		     "{\"by_process\":[{\"pid\":100,\"comm\":\"writer\",\"total\":10,"
		     "\"tlb_flush_mmu\":7,\"ptep_set_access_flags\":3},"
		     "{\"pid\":200,\"comm\":\"a;b\",\"total\":4,\"ptep_clear_flush\":4},"
		     "{\"pid\":300,\"comm\":\"third\",\"total\":1,\"tlb_flush_mmu\":1}],"
		     "\"by_syscall\":[{\"syscall\":\"[page fault]\",\"nr\":-2,\"reason\":"
		     "\"tlb_flush_mmu\",\"count\":9},{\"syscall\":\"[kernel thread]\",\"nr\":-3,"
		     "\"reason\":\"ptep_clear_flush\",\"count\":5},{\"syscall\":\"[no system "
		     "call]\",\"nr\":-1,\"reason\":\"change_protection\",\"count\":2}]}\n");
	free(m.buf);
}

static void test_tlb_details_empty(void)
{
	struct tlb_details d = {0};
	struct report r;
	struct mem m;

	/* Text says nothing of empty tables; JSON keeps its keys. */
	setup(&r, &m, false);
	tlb_report_details(&r, &d);
	finish(&r, &m);
	EXPECT_STREQ(m.buf, "");
	free(m.buf);
	setup(&r, &m, true);
	tlb_report_details(&r, &d);
	finish(&r, &m);
	EXPECT_STREQ(m.buf, "{\"by_process\":[],\"by_syscall\":[]}\n");
	free(m.buf);
}

static void test_switch_details(void)
{
	struct switch_proc_row rows[1] = {{.tgid = 42}};
	struct switch_details d = {rows, 1};
	struct mm_stats percpu[2];
	struct report r;
	struct mem m;

	memset(percpu, 0, sizeof(percpu));
	/* CPU 0 saw nothing and is left out. */
	percpu[1].c[CNT_SW_TOTAL] = 8;
	percpu[1].c[CNT_SW_SAME_MM] = 1;
	percpu[1].c[CNT_SW_MM_CHANGE] = 5;
	percpu[1].c[CNT_SW_KERNEL] = 2;
	strcpy(rows[0].p.comm, "sw");
	rows[0].p.total = 8;
	rows[0].p.same_mm = 1;
	rows[0].p.mm_change = 5;
	rows[0].p.kernel = 2;
	setup(&r, &m, false);
	switch_report_details(&r, percpu, 2, &d);
	finish(&r, &m);
	EXPECT_STREQ(m.buf,
		     "\nby CPU\n"
		     "   CPU        TOTAL      SAME_MM    MM_CHANGE       KERNEL\n"
		     "     1            8            1            5            2\n"
		     "\nby process (top 2 of 1)\n"
		     "      PID COMM                  TOTAL    SAME_MM  MM_CHANGE     KERNEL\n"
		     "       42 sw                        8          1          5          2\n");
	free(m.buf);
	setup(&r, &m, true);
	switch_report_details(&r, percpu, 2, &d);
	finish(&r, &m);
	EXPECT_STREQ(m.buf,
		     "{\"by_cpu\":[{\"cpu\":1,\"total\":8,\"same_mm\":1,\"mm_changes\":5,"
		     "\"kernel\":2}],\"by_process\":[{\"pid\":42,\"comm\":\"sw\",\"total\":8,"
		     "\"same_mm\":1,\"mm_changes\":5,\"kernel\":2}]}\n");
	free(m.buf);
}

TEST_MAIN(T(test_tlb_details_text), T(test_tlb_details_json), T(test_tlb_details_empty),
	  T(test_switch_details))
