/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exec_loop - re-exec the same binary N times in one process.
 *
 * Reproduces the exec benchmark of the powerpc "instruction miss reads the faulting
 * instruction" thread: every execve() throws the old mm away and builds a new one, and the new
 * image then faults its way through ld.so, libc, its stack and data, many of those faults
 * being instruction fetches from freshly mapped text. That made exec the case where the cost
 * of reading the faulting instruction on every instruction miss showed. Chaining N execs in
 * one pid also gives a tracer attached with -p a steady stream of mm teardowns, exec-time
 * faults and TLB flushes.
 *
 * The chain: the image the user started takes the start timestamps and execs /proc/self/exe
 * with --remaining N-1; each image execs again with one less, and the image that sees
 * --remaining 0 prints the summary. The timestamps travel through argv, so loop_ns covers all
 * N execs. CLOCK_PROCESS_CPUTIME_ID survives execve() (same process, same thread), so cpu_ns
 * is a plain difference too. The pid stays the same: execve() replaces the image, not the
 * process.
 *
 * With --touch P, each of the N exec'd images writes P pages of fresh anonymous memory before
 * moving on (N * P extra write faults), to give every new mm some anonymous memory to tear
 * down at the next exec.
 */
#define _GNU_SOURCE
#define WL_NAME "exec_loop"
#include <inttypes.h>
#include <stdint.h>
#include "wl_common.h"

/* How many execs a chain may take; well beyond any sensible run, but it bounds argv parsing. */
#define MAX_EXECS 100000000ULL

struct opts {
	uint64_t execs;
	uint64_t touch_pages;
	uint64_t pause_ms;
	/* Passed down the chain; only exec'd images have them (has_remaining). */
	int has_remaining;
	uint64_t remaining;
	uint64_t start_ns;
	uint64_t start_cpu_ns;
};

static size_t page_size;

/* The parts of --help around the option lines. */
static const struct wl_usage usage = {
	.operands = "[N]",
	.about =
		"Re-exec this binary (/proc/self/exe) N times in the same process, then print one\n"
		"summary line from the last image.\n",
	.notes = "Summary: exec_loop: execs= touch_pages= page_size= expected_touch_faults=\n"
		 "loop_ns= cpu_ns=\n",
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	int have_n = 0;
	const struct wl_option options[] = {
		WL_OPT_U64("execs", 'n', "N", &o->execs, 1, MAX_EXECS,
			   "number of execs, or as the operand N (default 1000)", .given = &have_n),
		WL_OPT_U64("touch", 0, "PAGES", &o->touch_pages, 0, wl_max_pages(page_size),
			   "in each exec'd image, write one byte to each of PAGES\n"
			   "pages of fresh anonymous memory (default 0)"),
		WL_OPT_U64("pause-before-ms", 0, "MS", &o->pause_ms, 0, WL_MAX_PAUSE_MS,
			   "sleep MS milliseconds before the first exec, so\n"
			   "that a tracer can attach to the pid (default 0)"),
		WL_OPT_U64("remaining", 0, "R", &o->remaining, 0, MAX_EXECS,
			   "execs still to do after this image", .given = &o->has_remaining,
			   .internal = 1),
		WL_OPT_U64("start-ns", 0, "NS", &o->start_ns, 0, UINT64_MAX,
			   "CLOCK_MONOTONIC when the chain started", .internal = 1),
		WL_OPT_U64("start-cpu-ns", 0, "NS", &o->start_cpu_ns, 0, UINT64_MAX,
			   "CLOCK_PROCESS_CPUTIME_ID when the chain started", .internal = 1),
		WL_OPT_END,
	};

	*o = (struct opts){.execs = 1000};
	wl_parse_options(argc, argv, options, &usage);
	if (optind < argc) {
		if (have_n)
			wl_usage_error("the number of execs is given twice ('%s')", argv[optind]);
		o->execs = wl_parse_u64("N", argv[optind], 1, MAX_EXECS);
		optind++;
	}
	if (optind < argc)
		wl_usage_error("unexpected argument '%s'", argv[optind]);
	if (o->has_remaining && o->remaining >= o->execs)
		wl_usage_error("--remaining %" PRIu64 " is not below the %" PRIu64 " execs",
			       o->remaining, o->execs);
}

/* P not-present write faults in this image's fresh mm; the memory goes away with the exec. */
static WL_NOINLINE void touch_anon_pages(uint64_t pages)
{
	char *p;

	if (!pages)
		return;
	p = wl_map_anon(pages * page_size);
	wl_write_pages(p, pages, page_size, 1);
}

/* The next link of the chain: same pid, new mm. Returns only on failure. */
static WL_NOINLINE void reexec_self(const char *argv0, const struct opts *o, uint64_t remaining)
{
	char execs[24], touch[24], rem[24], start[24], start_cpu[24];

	snprintf(execs, sizeof(execs), "%" PRIu64, o->execs);
	snprintf(touch, sizeof(touch), "%" PRIu64, o->touch_pages);
	snprintf(rem, sizeof(rem), "%" PRIu64, remaining);
	snprintf(start, sizeof(start), "%" PRIu64, o->start_ns);
	snprintf(start_cpu, sizeof(start_cpu), "%" PRIu64, o->start_cpu_ns);
	execl("/proc/self/exe", argv0, "-n", execs, "--touch", touch, "--remaining", rem,
	      "--start-ns", start, "--start-cpu-ns", start_cpu, (char *)NULL);
	wl_die("execl /proc/self/exe");
}

int main(int argc, char **argv)
{
	const char *argv0 = argc > 0 ? argv[0] : "exec_loop";
	uint64_t loop_ns, cpu_ns;
	struct opts o;

	page_size = wl_page_size();
	parse_args(argc, argv, &o);

	if (!o.has_remaining) {
		/* The image the user started: take the timestamps and start the chain. */
		if (o.pause_ms)
			wl_sleep_ms(o.pause_ms);
		o.start_cpu_ns = wl_now_ns(CLOCK_PROCESS_CPUTIME_ID);
		o.start_ns = wl_now_ns(CLOCK_MONOTONIC);
		reexec_self(argv0, &o, o.execs - 1);
	}

	touch_anon_pages(o.touch_pages);
	if (o.remaining)
		reexec_self(argv0, &o, o.remaining - 1);

	loop_ns = wl_now_ns(CLOCK_MONOTONIC) - o.start_ns;
	cpu_ns = wl_now_ns(CLOCK_PROCESS_CPUTIME_ID) - o.start_cpu_ns;
	printf("exec_loop: execs=%" PRIu64 " touch_pages=%" PRIu64 " page_size=%zu "
	       "expected_touch_faults=%" PRIu64 " loop_ns=%" PRIu64 " cpu_ns=%" PRIu64 "\n",
	       o.execs, o.touch_pages, page_size, o.execs * o.touch_pages, loop_ns, cpu_ns);
	return 0;
}
