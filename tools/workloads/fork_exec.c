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

static void usage(void)
{
	printf("Usage: fork_exec [-n ROUNDS] [--exec PATH] [--parent-pages P]\n"
	       "                 [--pause-before-ms MS]\n"
	       "\n"
	       "ROUNDS times: fork, exec PATH (no arguments) in the child, wait for it; then one\n"
	       "summary line. Every child must exit with status 0.\n"
	       "\n"
	       "  -n, --rounds N         rounds (default 1000)\n"
	       "      --exec PATH        program the children exec (default /bin/true)\n"
	       "      --parent-pages P   anonymous pages the parent writes before the loop, for\n"
	       "                         each fork to copy (default 0)\n"
	       "      --pause-before-ms MS  sleep MS milliseconds before the loop, so that a\n"
	       "                         tracer can attach to the pid (default 0)\n"
	       "  -h, --help             print this help and exit\n"
	       "\n"
	       "Summary: fork_exec: rounds= parent_pages= exec=PATH loop_ns= cpu_ns=\n"
	       "cpu_ns includes the children's CPU time.\n");
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	enum { OPT_EXEC = 256, OPT_PARENT_PAGES, OPT_PAUSE };
	static const struct option longopts[] = {
		{"rounds", required_argument, NULL, 'n'},
		{"exec", required_argument, NULL, OPT_EXEC},
		{"parent-pages", required_argument, NULL, OPT_PARENT_PAGES},
		{"pause-before-ms", required_argument, NULL, OPT_PAUSE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct opts){.rounds = 1000, .exec_path = "/bin/true"};
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			o->rounds = wl_parse_u64("--rounds", optarg, 1, UINT64_MAX);
			break;
		case OPT_EXEC:
			o->exec_path = optarg;
			break;
		case OPT_PARENT_PAGES:
			o->parent_pages =
				wl_parse_u64("--parent-pages", optarg, 0, wl_max_pages(page_size));
			break;
		case OPT_PAUSE:
			o->pause_ms = wl_parse_u64("--pause-before-ms", optarg, 0, 86400000);
			break;
		default:
			wl_other_option(c, argv, usage);
		}
	}
	wl_no_operands(argc, argv);
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
	uint64_t t0, c0, cc0, loop_ns, cpu_ns;
	struct opts o;

	page_size = wl_page_size();
	parse_args(argc, argv, &o);

	if (o.parent_pages) {
		char *p = wl_map_anon(o.parent_pages * page_size);

		for (uint64_t i = 0; i < o.parent_pages; i++)
			((volatile char *)p)[i * page_size] = 1;
	}
	if (o.pause_ms)
		wl_sleep_ms(o.pause_ms);
	fflush(NULL);

	t0 = wl_now_ns(CLOCK_MONOTONIC);
	c0 = wl_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	cc0 = wl_children_cpu_ns();
	fork_exec_loop(o.exec_path, o.rounds);
	cpu_ns = wl_now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0 + wl_children_cpu_ns() - cc0;
	loop_ns = wl_now_ns(CLOCK_MONOTONIC) - t0;

	printf("fork_exec: rounds=%" PRIu64 " parent_pages=%" PRIu64 " exec=%s loop_ns=%" PRIu64
	       " cpu_ns=%" PRIu64 "\n",
	       o.rounds, o.parent_pages, o.exec_path, loop_ns, cpu_ns);
	return 0;
}
