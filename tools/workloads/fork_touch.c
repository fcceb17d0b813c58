/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fork_touch - a parent and C children, each taking a known number of write faults.
 *
 * Tests counting per process tree: a tracer that follows children (or perf stat with
 * inherit) must see P + C * Q faults from the loop, one that watches only the parent pid
 * must see P. The parent writes one byte to each of P pages of fresh anonymous memory, then
 * forks C children; each child maps Q pages of its own fresh anonymous memory, writes one byte
 * to each and exits, while the parent waits for all of them. THP is off on both regions, so
 * every write is one not-present fault.
 *
 * On top come the faults fork() itself causes: after fork() the parent's and the children's
 * writable private pages are write-protected and shared, so the first write each side makes
 * to its stack, libc data and so on is a copy-on-write fault (the parent's P pages are not
 * written again, so they add none). That noise grows with C, not with P or Q: a run with
 * -p 0 -q 0 and the same -c measures it.
 */
#define _GNU_SOURCE
#define WL_NAME "fork_touch"
#include <inttypes.h>
#include <stdint.h>
#include <sys/wait.h>
#include "wl_common.h"

#define MAX_CHILDREN 100000

struct opts {
	uint64_t parent_pages;
	uint64_t children;
	uint64_t child_pages;
	uint64_t pause_ms;
};

static size_t page_size;

/* The parts of --help around the option lines. */
static const struct wl_usage usage = {
	.about = "The parent writes its pages, forks the children, each child writes pages of its\n"
		 "own and exits, the parent waits for them; then one summary line.\n",
	.notes =
		"Summary: fork_touch: page_size= children= parent_pages= child_pages=\n"
		"expected_faults= expected_parent_faults= expected_child_faults= loop_ns= cpu_ns=\n"
		"cpu_ns includes the children's CPU time.\n",
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	uint64_t max = wl_max_pages(page_size);
	const struct wl_option options[] = {
		WL_OPT_U64("parent-pages", 'p', "P", &o->parent_pages, 0, max,
			   "pages the parent writes, one byte each (default 1000)"),
		WL_OPT_U64("children", 'c', "C", &o->children, 0, MAX_CHILDREN,
			   "children to fork, 0 for none (default 4)"),
		WL_OPT_U64("child-pages", 'q', "Q", &o->child_pages, 0, max,
			   "pages of fresh anonymous memory each child writes\n"
			   "(default 1000)"),
		WL_PAUSE_OPTION(&o->pause_ms),
		WL_OPT_END,
	};

	*o = (struct opts){.parent_pages = 1000, .children = 4, .child_pages = 1000};
	wl_parse_options(argc, argv, options, &usage);
}

/* P not-present write faults in the parent. */
static WL_NOINLINE void touch_parent_pages(char *base, uint64_t pages)
{
	wl_write_pages(base, pages, page_size, 1);
}

/* Q not-present write faults in a child, on memory mapped after the fork. */
static WL_NOINLINE void touch_child_pages(uint64_t pages)
{
	char *base;

	if (!pages)
		return;
	base = wl_map_anon(pages * page_size);
	wl_write_pages(base, pages, page_size, 1);
}

/* Fork all children (they run concurrently), then reap them; any failed child fails the run. */
static WL_NOINLINE void fork_children(uint64_t children, uint64_t child_pages)
{
	uint64_t failed = 0;

	for (uint64_t i = 0; i < children; i++) {
		pid_t pid = fork();

		if (pid < 0)
			wl_die("fork");
		if (pid == 0) {
			touch_child_pages(child_pages);
			_exit(0);
		}
	}
	for (uint64_t i = 0; i < children; i++) {
		int status;

		if (wait(&status) < 0)
			wl_die("wait");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	if (failed)
		wl_fail("%" PRIu64 " of %" PRIu64 " children failed", failed, children);
}

int main(int argc, char **argv)
{
	uint64_t loop_ns = 0, cpu_ns = 0;
	struct wl_clock clk;
	char *parent = NULL;
	struct opts o;

	page_size = wl_page_size();
	parse_args(argc, argv, &o);

	if (o.parent_pages)
		parent = wl_map_anon(o.parent_pages * page_size);
	if (o.pause_ms)
		wl_sleep_ms(o.pause_ms);
	/* Nothing buffered may be inherited by the children (they _exit(), but be safe). */
	fflush(NULL);

	wl_clock_start(&clk, 1);
	touch_parent_pages(parent, o.parent_pages);
	fork_children(o.children, o.child_pages);
	wl_clock_stop(&clk, &loop_ns, &cpu_ns);

	printf("fork_touch: page_size=%zu children=%" PRIu64 " parent_pages=%" PRIu64
	       " child_pages=%" PRIu64 " expected_faults=%" PRIu64
	       " expected_parent_faults=%" PRIu64 " expected_child_faults=%" PRIu64
	       " loop_ns=%" PRIu64 " cpu_ns=%" PRIu64 "\n",
	       page_size, o.children, o.parent_pages, o.child_pages,
	       o.parent_pages + o.children * o.child_pages, o.parent_pages,
	       o.children * o.child_pages, loop_ns, cpu_ns);
	return 0;
}
