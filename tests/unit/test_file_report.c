/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests of the faults-on-files writer (out/file_report.c) over a result built by hand:
 * which rows each table shows, the [other] rows that make them add up to the totals, the mean
 * latency, the processes, and the n/a form, in text and JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "report_mem.h"
#include "out/file_report.h"

static struct run_result res;

static void setup(struct report *r, struct mem *m, bool json)
{
	memset(&res, 0, sizeof(res));
	report_mem_begin(r, &res, m, json);
}

/* Ends the report; m->buf holds its text until free() (report_mem_end()). */
static void finish(struct report *r, struct mem *m)
{
	report_mem_end(r, m);
}

static struct file_proc procs_a[2] = {{5, "cat", {8, 2, 0}}, {6, "sh", {2, 0, 0}}};
static struct file_proc procs_b[1] = {{7, "a;b", {3, 0, 1}}};
static struct file_proc procs_c[1] = {{8, "dd", {1, 1, 0}}};
static struct file_row rows[3];
static struct file_major_ref bymajor[2];
static struct mm_stats st;

/*
 * Three files, by faults: a (12), b (4, not placed: no path), c (2). With --top 2 the text's
 * table by faults shows a and b and counts c in [other]; c has a major fault, so the table
 * by majors shows it, and JSON lists it among the files shown.
 */
static struct file_result files(void)
{
	memset(rows, 0, sizeof(rows));
	rows[0] = (struct file_row){.key = {.ino = 12, .dev = 8u << 20 | 1},
				    .n = {10, 2, 0},
				    .lat_sum = 1200,
				    .lat_max = 500,
				    .procs = procs_a,
				    .nprocs = 2,
				    .path = "/usr/lib/libc.so.6",
				    .name = "libc.so.6",
				    .shown = true};
	rows[1] = (struct file_row){.key = {.ino = 77, .dev = 5},
				    .n = {3, 0, 1},
				    .lat_sum = 300,
				    .lat_max = 150,
				    .procs = procs_b,
				    .nprocs = 1,
				    .name = "memfd:x",
				    .shown = true};
	rows[2] = (struct file_row){.key = {.ino = 3, .dev = 8u << 20 | 2},
				    .n = {1, 1, 0},
				    .lat_sum = 40,
				    .lat_max = 30,
				    .procs = procs_c,
				    .nprocs = 1,
				    .path = "/tmp/x y",
				    .name = "x y",
				    .shown = true};
	bymajor[0].row = &rows[0];
	bymajor[1].row = &rows[2];
	memset(&st, 0, sizeof(st));
	/* 6 minor faults more, on files the table had no room for. */
	st.c[CNT_FILE_MINOR] = 20;
	st.c[CNT_FILE_MAJOR] = 3;
	st.c[CNT_FILE_INCOMPLETE] = 1;
	st.c[CNT_FILE_OTHER_MINOR] = 6;
	st.c[CNT_FILE_OTHER_LAT_SUM] = 60;
	return (struct file_result){
		.top = 2, .rows = rows, .n = 3, .bymajor = bymajor, .nmajor = 2};
}

static void test_files_text(void)
{
	struct file_result f = files();
	struct report r;
	struct mem m;

	setup(&r, &m, false);
	faults_report_files(&r, &st, &f);
	finish(&r, &m);
	/* [other]: c's 2 faults and the 6 untabled ones. */
	EXPECT_STREQ(m.buf,
		     "\nfiles faulted: 24 faults on 3 files (top 2 by faults)\n"
		     "     FAULTS     MINOR   MAJOR INCOMP    AVG NS FILE  (PROCESSES: FAULTS)\n"
		     "         12        10       2      0       100 /usr/lib/libc.so.6  (cat[5] "
		     "10, sh[6] 2)\n"
		     "          4         3       0      1       100 memfd:x (0:5 inode 77)  "
		     "(a\\x3bb[7] 4)\n"
		     "          8         7       1      0         - [other]\n"
		     "\nfiles by major faults (page-cache misses)\n"
		     "     FAULTS     MINOR   MAJOR INCOMP    AVG NS FILE  (PROCESSES: FAULTS)\n"
		     "         12        10       2      0       100 /usr/lib/libc.so.6  (cat[5] "
		     "10, sh[6] 2)\n"
		     "          2         1       1      0        20 /tmp/x y  (dd[8] 2)\n");
	free(m.buf);

	/* An untimed run has no mean latency. */
	f.untimed = true;
	f.n = 1;
	f.nmajor = 0;
	setup(&r, &m, false);
	faults_report_files(&r, &st, &f);
	finish(&r, &m);
	EXPECT(strstr(m.buf, "      0         - /usr/lib/libc.so.6") != NULL);
	free(m.buf);
}

static void test_files_json(void)
{
	struct file_result f = files();
	struct report r;
	struct mem m;

	rows[1].shown = false; /* then b is in [other] */
	setup(&r, &m, true);
	faults_report_files(&r, &st, &f);
	finish(&r, &m);
	EXPECT_STREQ(
		m.buf,
		"{\"by_file\":[{\"path\":\"/usr/lib/libc.so.6\",\"name\":\"libc.so.6\",\"device\":"
		"\"8:1\",\"inode\":12,\"faults\":12,\"minor\":10,\"major\":2,\"incomplete\":0,"
		"\"latency_ns\":{\"mean\":100,\"max\":500},\"processes\":[{\"pid\":5,\"comm\":"
		"\"cat\",\"faults\":10,\"minor\":8,\"major\":2,\"incomplete\":0},{\"pid\":6,"
		"\"comm\":\"sh\",\"faults\":2,\"minor\":2,\"major\":0,\"incomplete\":0}]},"
		"{\"path\":\"/tmp/x y\",\"name\":\"x "
		"y\",\"device\":\"8:2\",\"inode\":3,\"faults\":2,"
		"\"minor\":1,\"major\":1,\"incomplete\":0,\"latency_ns\":{\"mean\":20,\"max\":30},"
		"\"processes\":[{\"pid\":8,\"comm\":\"dd\",\"faults\":2,\"minor\":1,\"major\":1,"
		"\"incomplete\":0}]},"
		"{\"path\":null,\"name\":\"[other]\",\"device\":null,\"inode\":null,\"faults\":10,"
		"\"minor\":9,\"major\":0,\"incomplete\":1,\"latency_ns\":{\"mean\":40,\"max\":null}"
		","
		"\"processes\":[]}],"
		"\"files_total\":{\"faults\":24,\"minor\":20,\"major\":3,\"incomplete\":1,"
		"\"files\":3}}\n");
	free(m.buf);
}

static void test_files_unavailable(void)
{
	struct file_result f = {.why = "no hook"};
	struct report r;
	struct mem m;

	memset(&st, 0, sizeof(st));
	setup(&r, &m, false);
	faults_report_files(&r, &st, &f);
	finish(&r, &m);
	EXPECT_STREQ(m.buf, "\nfiles faulted (the file each fault's mapping maps)\n"
			    "  n/a (no hook)\n");
	free(m.buf);
	setup(&r, &m, true);
	faults_report_files(&r, &st, &f);
	EXPECT_EQ_U64(r.nunavail, 2);
	EXPECT_STREQ(r.unavail_key[0], "faults.by_file");
	finish(&r, &m);
	EXPECT_STREQ(m.buf, "{\"by_file\":null,\"files_total\":null}\n");
	free(m.buf);
}

TEST_MAIN(T(test_files_text), T(test_files_json), T(test_files_unavailable))
