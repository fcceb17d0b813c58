/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cow_fork - N first-touch write faults, then N copy-on-write faults in a child.
 *
 * The parent writes one byte to each of N pages of fresh anonymous memory (N not-present
 * write faults), then forks. fork() write-protects those pages in both processes, so when the
 * child writes the same N pages each write is a protection fault on a present, read-only pte:
 * a copy-on-write fault. The page is still mapped by the parent, so the kernel copies it, and
 * replacing the old read-only pte needs a TLB invalidation of the old translation
 * (ptep_clear_flush()): N COW faults, N flushes. Those flushes are local to the child's CPU
 * unless the kernel thinks its mm has run elsewhere. The parent does not write the pages again
 * (that would turn its writes, not the child's, into the COW faults), only waits.
 *
 * perf stat (inherit is on by default) should see about 2N faults more than a run with -n 0,
 * which measures the process's startup and the copy-on-write faults fork() causes on the
 * stack and libc data of both processes.
 */
#define _GNU_SOURCE
#define WL_NAME "cow_fork"
#include <inttypes.h>
#include <stdint.h>
#include <sys/wait.h>
#include "wl_common.h"

struct opts {
	uint64_t pages;
	uint64_t pause_ms;
};

static size_t page_size;

/* The parts of --help around the option lines. */
static const struct wl_usage usage = {
	.about = "Write N pages, fork, write the same pages again in the child (one\n"
		 "copy-on-write fault each), wait for the child; then one summary line.\n",
	.notes = "Summary: cow_fork: pages= page_size= first_touch_faults= cow_faults=\n"
		 "expected_faults= first_touch_ns= cow_ns= loop_ns= cpu_ns=\n"
		 "loop_ns covers first touch, fork, the child's writes and exit, and the wait;\n"
		 "cow_ns is the child's write loop alone; cpu_ns includes the child's CPU time.\n",
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	const struct wl_option options[] = {
		WL_OPT_U64("pages", 'n', "N", &o->pages, 0, wl_max_pages(page_size),
			   "pages to write, 0 for a baseline run (default 1000)"),
		WL_PAUSE_OPTION(&o->pause_ms),
		WL_OPT_END,
	};

	*o = (struct opts){.pages = 1000};
	wl_parse_options(argc, argv, options, &usage);
}

/* N not-present write faults in the parent, before the fork. */
static WL_NOINLINE void touch_first_pages(char *base, uint64_t pages)
{
	wl_write_pages(base, pages, page_size, 1);
}

/* N copy-on-write faults in the child: same pages, now shared and write-protected. */
static WL_NOINLINE void touch_cow_pages(char *base, uint64_t pages)
{
	wl_write_pages(base, pages, page_size, 2);
}

/* The child: time its COW loop and send the time back on the pipe. */
static WL_NOINLINE __attribute__((noreturn)) void run_cow_child(char *base, uint64_t pages, int wfd)
{
	uint64_t t0 = wl_now_ns(CLOCK_MONOTONIC), ns;

	touch_cow_pages(base, pages);
	ns = wl_now_ns(CLOCK_MONOTONIC) - t0;
	if (write(wfd, &ns, sizeof(ns)) != (ssize_t)sizeof(ns))
		_exit(1);
	_exit(0);
}

int main(int argc, char **argv)
{
	uint64_t t1, loop_ns = 0, cpu_ns = 0, cow_ns = 0;
	struct wl_clock clk;
	char *base = NULL;
	struct opts o;
	int pfd[2], status;
	ssize_t n;
	pid_t pid;

	page_size = wl_page_size();
	parse_args(argc, argv, &o);

	if (o.pages)
		base = wl_map_anon(o.pages * page_size);
	if (pipe(pfd))
		wl_die("pipe");
	if (o.pause_ms)
		wl_sleep_ms(o.pause_ms);
	fflush(NULL);

	wl_clock_start(&clk, 1);
	touch_first_pages(base, o.pages);
	t1 = wl_now_ns(CLOCK_MONOTONIC);
	pid = fork();
	if (pid < 0)
		wl_die("fork");
	if (pid == 0) {
		close(pfd[0]);
		run_cow_child(base, o.pages, pfd[1]);
	}
	close(pfd[1]);
	n = read(pfd[0], &cow_ns, sizeof(cow_ns));
	if (waitpid(pid, &status, 0) < 0)
		wl_die("waitpid");
	wl_clock_stop(&clk, &loop_ns, &cpu_ns);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || n != (ssize_t)sizeof(cow_ns))
		wl_fail("the child failed (status 0x%x)", status);

	printf("cow_fork: pages=%" PRIu64 " page_size=%zu first_touch_faults=%" PRIu64
	       " cow_faults=%" PRIu64 " expected_faults=%" PRIu64 " first_touch_ns=%" PRIu64
	       " cow_ns=%" PRIu64 " loop_ns=%" PRIu64 " cpu_ns=%" PRIu64 "\n",
	       o.pages, page_size, o.pages, o.pages, 2 * o.pages, t1 - clk.t0, cow_ns, loop_ns,
	       cpu_ns);
	return 0;
}
