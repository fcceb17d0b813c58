/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fault_block - T threads, each blocked inside one page fault for as long as asked.
 *
 * Tests what a tracer does with faults that are entered and not completed: at the end of a
 * run (they are still open), at the exit of their threads (they never complete), and when
 * they complete late (their latency is the time they were held). Each thread reads one page of
 * a region registered with userfaultfd for missing pages; the kernel parks the fault until
 * this program resolves it (UFFDIO_ZEROPAGE), after --hold-ms milliseconds. With --exit, the
 * process exits instead while the faults are held: they never complete.
 *
 * A held fault is one entry into the fault handler. Resolved, the handler retries it
 * (VM_FAULT_RETRY) and completes it: T faults of at least --hold-ms each. Whether the kernel
 * accounts them minor or major depends on its version: where the fault was held under the
 * per-VMA lock (v6.4+), the retry finds the page and is minor; where it was held under the
 * mmap lock, the retry carries FAULT_FLAG_TRIED and is major.
 */
#define _GNU_SOURCE
#define WL_NAME "fault_block"
#include <fcntl.h>
#include <inttypes.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include "wl_common.h"

#define MAX_THREADS 256

struct opts {
	uint64_t threads;
	uint64_t hold_ms;
	int exit_blocked;
};

static size_t page_size;
static char *region;

/* The parts of --help around the option lines. */
static const struct wl_usage usage = {
	.about =
		"THREADS threads each take one page fault that userfaultfd holds; once all are\n"
		"held, the program prints 'fault_block: held=THREADS' and, MS milliseconds later,\n"
		"resolves them (or, with --exit, exits while they are held); then one summary\n"
		"line. Needs userfaultfd (root, or vm.unprivileged_userfaultfd=1).\n",
	.notes = "Summary: fault_block: threads= hold_ms= expected_held= expected_completed=\n"
		 "(expected_completed: the held faults that completed, each after at least\n"
		 "hold_ms; 0 with --exit)\n",
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	const struct wl_option options[] = {
		WL_OPT_U64("threads", 't', "T", &o->threads, 1, MAX_THREADS,
			   "threads, one held fault each (default 2, at most " WL_STRINGIFY(
				   MAX_THREADS) ")"),
		WL_OPT_U64("hold-ms", 0, "MS", &o->hold_ms, 0, WL_MAX_PAUSE_MS,
			   "how long the faults are held (default 500)"),
		WL_OPT_FLAG("exit", 0, &o->exit_blocked, 1,
			    "exit with the faults held: they never complete"),
		WL_OPT_END,
	};

	*o = (struct opts){.threads = 2, .hold_ms = 500};
	wl_parse_options(argc, argv, options, &usage);
}

/* One read of the thread's own page: the fault userfaultfd holds. */
static WL_NOINLINE void *read_held_page(void *arg)
{
	uintptr_t i = (uintptr_t)arg;

	(void)((volatile char *)region)[i * page_size];
	return NULL;
}

static int open_userfaultfd(uint64_t len)
{
	struct uffdio_api api = {.api = UFFD_API};
	struct uffdio_register reg = {
		.range = {.start = (uintptr_t)region, .len = len},
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);

	if (fd < 0)
		wl_die("userfaultfd (needs root or vm.unprivileged_userfaultfd=1)");
	if (ioctl(fd, UFFDIO_API, &api))
		wl_die("UFFDIO_API");
	if (ioctl(fd, UFFDIO_REGISTER, &reg))
		wl_die("UFFDIO_REGISTER");
	return fd;
}

/* Wait until every thread's fault is held: one missing-page message each. */
static void wait_held(int fd, uint64_t threads)
{
	for (uint64_t n = 0; n < threads;) {
		struct uffd_msg msg;
		ssize_t r = read(fd, &msg, sizeof(msg));

		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof(msg))
			wl_die("read userfaultfd");
		if (msg.event == UFFD_EVENT_PAGEFAULT)
			n++;
	}
}

int main(int argc, char **argv)
{
	pthread_t tids[MAX_THREADS];
	struct uffdio_zeropage zp;
	struct opts o;
	uint64_t len;
	int fd, err;

	page_size = wl_page_size();
	parse_args(argc, argv, &o);
	len = o.threads * page_size;
	region = wl_map_anon(len);
	fd = open_userfaultfd(len);
	for (uint64_t i = 0; i < o.threads; i++) {
		err = pthread_create(&tids[i], NULL, read_held_page, (void *)(uintptr_t)i);
		if (err) {
			errno = err;
			wl_die("pthread_create");
		}
	}
	wait_held(fd, o.threads);
	printf("fault_block: held=%" PRIu64 "\n", o.threads);
	fflush(stdout);
	wl_sleep_ms(o.hold_ms);
	if (o.exit_blocked) {
		printf("fault_block: threads=%" PRIu64 " hold_ms=%" PRIu64 " expected_held=%" PRIu64
		       " expected_completed=0\n",
		       o.threads, o.hold_ms, o.threads);
		fflush(stdout);
		_exit(0); /* exit_group: the held threads die inside their faults */
	}
	zp = (struct uffdio_zeropage){.range = {.start = (uintptr_t)region, .len = len}};
	if (ioctl(fd, UFFDIO_ZEROPAGE, &zp))
		wl_die("UFFDIO_ZEROPAGE");
	for (uint64_t i = 0; i < o.threads; i++)
		pthread_join(tids[i], NULL);
	close(fd);
	printf("fault_block: threads=%" PRIu64 " hold_ms=%" PRIu64 " expected_held=%" PRIu64
	       " expected_completed=%" PRIu64 "\n",
	       o.threads, o.hold_ms, o.threads, o.threads);
	return 0;
}
