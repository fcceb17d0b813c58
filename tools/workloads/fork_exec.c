/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fork_exec - N rounds of fork(), exec of a trivial program, and waitpid().
 *
 * The fork+exec benchmark of the powerpc radix pte thread: every round copies the parent's
 * page tables and write-protects its private pages (fork), throws the copy away and builds a
 * new mm (exec), runs a tiny program through its startup faults and tears that mm down
 * (exit). It is the process-creation path a shell or a build system hammers, and each round
 * produces page faults, TLB flushes and several context switches for a tracer to count.
 *
 * --parent-pages P gives the parent P written anonymous pages before the loop, so that each
 * fork() has P more ptes to copy and write-protect (and the parent's TLB to flush for them).
 * The parent never writes them again, so they add no copy-on-write faults to the loop.
 */
#define _GNU_SOURCE
#define WL_NAME "fork_exec"
#include <inttypes.h>
#include <stdint.h>
#include <sys/wait.h>
#include "wl_common.h"

struct opts {
	uint64_t rounds;
	uint64_t parent_pages;
	uint64_t pause_ms;
	const char *exec_path;
};

static size_t page_size;

/* The parts of --help around the option lines. */
static const struct wl_usage usage = {
	.about =
		"ROUNDS times: fork, exec PATH (no arguments) in the child, wait for it; then one\n"
		"summary line. Every child must exit with status 0.\n",
	.notes = "Summary: fork_exec: rounds= parent_pages= exec=PATH loop_ns= cpu_ns=\n"
		 "cpu_ns includes the children's CPU time.\n",
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	const struct wl_option options[] = {
		WL_OPT_U64("rounds", 'n', "ROUNDS", &o->rounds, 1, UINT64_MAX,
			   "rounds (default 1000)"),
		WL_OPT_STR("exec", 0, "PATH", &o->exec_path,
			   "program the children exec (default /bin/true)"),
		WL_OPT_U64("parent-pages", 0, "P", &o->parent_pages, 0, wl_max_pages(page_size),
			   "anonymous pages the parent writes before the loop, for\n"
			   "each fork to copy (default 0)"),
		WL_PAUSE_OPTION(&o->pause_ms),
		WL_OPT_END,
	};

	*o = (struct opts){.rounds = 1000, .exec_path = "/bin/true"};
	wl_parse_options(argc, argv, options, &usage);
	/* Catch a wrong path here rather than as N failed children. */
	if (access(o->exec_path, X_OK))
		wl_usage_error("cannot execute '%s': %s", o->exec_path, strerror(errno));
}

/* One round; the child's exec failing shows as exit status 127. */
static WL_NOINLINE void fork_exec_round(const char *path)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		wl_die("fork");
	if (pid == 0) {
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		wl_die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		wl_fail("'%s' failed (wait status 0x%x)", path, status);
}

static WL_NOINLINE void fork_exec_loop(const char *path, uint64_t rounds)
{
	for (uint64_t i = 0; i < rounds; i++)
		fork_exec_round(path);
}

int main(int argc, char **argv)
{
	uint64_t loop_ns = 0, cpu_ns = 0;
	struct wl_clock clk;
	struct opts o;

	page_size = wl_page_size();
	parse_args(argc, argv, &o);

	if (o.parent_pages) {
		char *p = wl_map_anon(o.parent_pages * page_size);

		wl_write_pages(p, o.parent_pages, page_size, 1);
	}
	if (o.pause_ms)
		wl_sleep_ms(o.pause_ms);
	fflush(NULL);

	wl_clock_start(&clk, 1);
	fork_exec_loop(o.exec_path, o.rounds);
	wl_clock_stop(&clk, &loop_ns, &cpu_ns);

	printf("fork_exec: rounds=%" PRIu64 " parent_pages=%" PRIu64 " exec=%s loop_ns=%" PRIu64
	       " cpu_ns=%" PRIu64 "\n",
	       o.rounds, o.parent_pages, o.exec_path, loop_ns, cpu_ns);
	return 0;
}
