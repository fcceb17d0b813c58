/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pingpong - two tasks on one CPU passing a byte back and forth over two pipes.
 *
 * Tests context-switch counting: each round trip is ping writing a byte to pong and blocking
 * on the reply, pong waking, reading and writing the byte back, and blocking again, so with
 * both pinned to the same CPU every round trip is at least two context switches (ping -> pong
 * -> ping), R round trips at least 2R. With two processes (the default) every switch also
 * changes mm (a CR3 write / ASID switch, the case TLB tracking cares about); with --threads
 * the two share one mm and the switches keep it.
 *
 * ping_nvcsw/ping_nivcsw are the ping side's voluntary and involuntary context switches
 * during the loop as getrusage() tells them, for comparison with a tracer's counts. Ping is
 * switched out once per round trip, so their sum is about R: voluntarily when it blocks in
 * read(), involuntarily when the pong it just woke preempts it inside write() (wakeup
 * preemption; on an idle machine the two come out about half and half).
 *
 * --sleep-us US: each side sleeps US microseconds before it sends, so the CPU goes idle
 * between them: every round trip is then ping -> idle -> ping -> pong -> idle -> pong -> ping,
 * two switches from idle back to the address space the CPU still has loaded (no CR3 load on
 * x86) and two changes of address space (a CR3 load each). The switch tests attach while it
 * runs, to check that every counted change is matched to its CR3 load from the start.
 */
#define _GNU_SOURCE
#define WL_NAME "pingpong"
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include "wl_common.h"

struct opts {
	int threads;
	long cpu;
	uint64_t round_trips;
	uint64_t pause_ms;
	uint64_t sleep_us;
};

/* The pong side's end of the pipes and its report of its CPU time in the loop. */
struct pong {
	int rfd;
	int wfd;
	long cpu;
	uint64_t round_trips;
	uint64_t sleep_us;
	uint64_t cpu_ns;
};

/* The parts of --help around the option lines. */
static const struct wl_usage usage = {
	.about =
		"Two processes (or threads) pinned to one CPU pass a byte back and forth over two\n"
		"pipes; every round trip is at least two context switches.\n",
	.notes = "Summary: pingpong: mode=process|thread cpu= round_trips=\n"
		 "min_context_switches= ping_nvcsw= ping_nivcsw= loop_ns= cpu_ns=\n"
		 "cpu_ns includes the pong side's CPU time in the loop.\n",
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	uint64_t cpu = 0;
	const struct wl_option options[] = {
		WL_OPT_U64("round-trips", 'r', "R", &o->round_trips, 1, UINT64_MAX / 2,
			   "round trips (default 100000)"),
		WL_OPT_FLAG("threads", 0, &o->threads, 1,
			    "two threads of one process instead of two processes"),
		WL_OPT_U64("cpu", 0, "N", &cpu, 0, CPU_SETSIZE - 1,
			   "the CPU both are pinned to (default 0)"),
		WL_OPT_U64("sleep-us", 0, "US", &o->sleep_us, 0, 1000000,
			   "each side sleeps US microseconds before it sends, so\n"
			   "the CPU idles between them (default 0: no sleep)"),
		WL_PAUSE_OPTION(&o->pause_ms),
		WL_OPT_END,
	};

	*o = (struct opts){.round_trips = 100000};
	wl_parse_options(argc, argv, options, &usage);
	o->cpu = wl_usable_cpu(cpu);
}

static void write_byte(int fd, char b)
{
	if (write(fd, &b, 1) != 1)
		wl_die("pipe write");
}

static char read_byte(int fd)
{
	char b;
	ssize_t n = read(fd, &b, 1);

	if (n == 0)
		wl_fail("the other side closed its pipe");
	if (n != 1)
		wl_die("pipe read");
	return b;
}

/* --sleep-us: the CPU idles with this side's address space still loaded. */
static void pause_us(uint64_t us)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(us * 1000)};

	if (us)
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
}

/* Ping: send, block until the reply; the block is where pong gets the CPU. */
static WL_NOINLINE void ping_loop(int wfd, int rfd, uint64_t round_trips, uint64_t sleep_us)
{
	char b = 0;

	for (uint64_t i = 0; i < round_trips; i++) {
		pause_us(sleep_us);
		write_byte(wfd, b);
		b = read_byte(rfd);
	}
}

/* Pong: block until ping's byte, send it back (plus one), block again. */
static WL_NOINLINE void pong_loop(int rfd, int wfd, uint64_t round_trips, uint64_t sleep_us)
{
	for (uint64_t i = 0; i < round_trips; i++) {
		char b = read_byte(rfd);

		pause_us(sleep_us);
		write_byte(wfd, (char)(b + 1));
	}
}

/*
 * The pong side, process or thread: pin, say it is ready (the loop must not start while pong
 * is still being set up or is on another CPU), run the loop, report its own CPU time in it.
 */
static void run_pong(struct pong *p)
{
	uint64_t c0;

	wl_pin_cpu(p->cpu);
	c0 = wl_now_ns(CLOCK_THREAD_CPUTIME_ID);
	write_byte(p->wfd, 'R');
	pong_loop(p->rfd, p->wfd, p->round_trips, p->sleep_us);
	p->cpu_ns = wl_now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
}

static void *pong_thread(void *arg)
{
	run_pong(arg);
	return NULL;
}

static uint64_t rusage_thread_csw(int voluntary)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		wl_die("getrusage(RUSAGE_THREAD)");
	return (uint64_t)(voluntary ? ru.ru_nvcsw : ru.ru_nivcsw);
}

int main(int argc, char **argv)
{
	uint64_t t0, c0, loop_ns, cpu_ns, nv0, niv0, nvcsw, nivcsw;
	int to_pong[2], to_ping[2], err, status;
	struct pong p;
	pthread_t thread;
	struct opts o;
	pid_t pid = -1;

	parse_args(argc, argv, &o);
	if (pipe(to_pong) || pipe(to_ping))
		wl_die("pipe");
	p = (struct pong){.rfd = to_pong[0],
			  .wfd = to_ping[1],
			  .cpu = o.cpu,
			  .round_trips = o.round_trips,
			  .sleep_us = o.sleep_us};
	wl_pin_cpu(o.cpu);
	fflush(NULL);

	if (o.threads) {
		err = pthread_create(&thread, NULL, pong_thread, &p);
		if (err) {
			errno = err;
			wl_die("pthread_create");
		}
	} else {
		pid = fork();
		if (pid < 0)
			wl_die("fork");
		if (pid == 0) {
			close(to_pong[1]);
			close(to_ping[0]);
			run_pong(&p);
			/* The parent reads this after the loop, outside its timing. */
			if (write(p.wfd, &p.cpu_ns, sizeof(p.cpu_ns)) != (ssize_t)sizeof(p.cpu_ns))
				_exit(1);
			_exit(0);
		}
		/* Without these, a dead pong would leave ping blocked instead of seeing EOF. */
		close(to_pong[0]);
		close(to_ping[1]);
	}
	if (read_byte(to_ping[0]) != 'R')
		wl_fail("pong did not start");
	if (o.pause_ms)
		wl_sleep_ms(o.pause_ms);

	nv0 = rusage_thread_csw(1);
	niv0 = rusage_thread_csw(0);
	t0 = wl_now_ns(CLOCK_MONOTONIC);
	c0 = wl_now_ns(CLOCK_THREAD_CPUTIME_ID);
	ping_loop(to_pong[1], to_ping[0], o.round_trips, o.sleep_us);
	cpu_ns = wl_now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	loop_ns = wl_now_ns(CLOCK_MONOTONIC) - t0;
	nvcsw = rusage_thread_csw(1) - nv0;
	nivcsw = rusage_thread_csw(0) - niv0;

	if (o.threads) {
		err = pthread_join(thread, NULL);
		if (err) {
			errno = err;
			wl_die("pthread_join");
		}
	} else {
		if (read(to_ping[0], &p.cpu_ns, sizeof(p.cpu_ns)) != (ssize_t)sizeof(p.cpu_ns))
			wl_fail("pong did not report its CPU time");
		if (waitpid(pid, &status, 0) < 0)
			wl_die("waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			wl_fail("pong failed (status 0x%x)", status);
	}
	cpu_ns += p.cpu_ns;

	printf("pingpong: mode=%s cpu=%ld round_trips=%" PRIu64 " min_context_switches=%" PRIu64
	       " ping_nvcsw=%" PRIu64 " ping_nivcsw=%" PRIu64 " loop_ns=%" PRIu64 " cpu_ns=%" PRIu64
	       "\n",
	       o.threads ? "thread" : "process", o.cpu, o.round_trips, 2 * o.round_trips, nvcsw,
	       nivcsw, loop_ns, cpu_ns);
	return 0;
}
