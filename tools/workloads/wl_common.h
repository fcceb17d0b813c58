/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the workload programs in tools/workloads/.
 *
 * The Makefile builds each tools/workloads/NAME.c on its own into one binary, so everything
 * here is static inline: there is no extra object to link, and a helper a workload does not
 * use trips no -Wunused-function under -Werror. A workload defines WL_NAME (its program name,
 * which prefixes its error messages and its summary line) before including this file.
 *
 * Conventions every workload follows, because tests and the benchmark harness rely on them:
 *  - --help prints the usage and exits 0; a bad option or value prints one line to stderr
 *    and exits 2 (wl_usage_error()); a failure at run time exits 1 (wl_die()).
 *  - the last line on stdout is "NAME: key=value ...", with loop_ns (CLOCK_MONOTONIC over the
 *    measured loop only) and cpu_ns (CPU time spent in that loop).
 *  - the functions that take the faults are WL_NOINLINE and have descriptive names, since
 *    tests look for them in symbolized stacks.
 *  - nothing assumes a 4K page: ppc64le and arm64 kernels often run with 64K or 16K pages.
 */
#ifndef MMSCOPE_WL_COMMON_H
#define MMSCOPE_WL_COMMON_H

#ifndef WL_NAME
#error "define WL_NAME before including wl_common.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/*
 * The faulting functions must show up under their own names in symbolized stacks: forbid
 * inlining and, with gcc, cloning too, since a .constprop/.isra copy carries a suffixed name.
 * A faulting function that calls nothing gets no frame of its own even with
 * -fno-omit-frame-pointer (seen with gcc 12 on x86-64, and arm64 omits leaf frames by
 * default): it still shows in a frame-pointer-unwound stack, as the instruction pointer, but
 * its caller does not.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define WL_NOINLINE __attribute__((noinline, noclone))
#else
#define WL_NOINLINE __attribute__((noinline))
#endif

/*
 * Put after a call that would otherwise be a tail call. At -O2 gcc turns a function's last
 * call into a jump, and the caller's frame disappears from the stack (and from the stacks
 * tests look at); an empty asm with a memory clobber after the call keeps it a real call.
 */
#define wl_keep_frame() __asm__ __volatile__("" ::: "memory")

#define WL_EXIT_USAGE	2
#define WL_NSEC_PER_SEC 1000000000ULL

static inline void __attribute__((noreturn, format(printf, 1, 2)))
wl_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(WL_NAME ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(WL_EXIT_USAGE);
}

/* A run-time failure: the message, then strerror() of the errno the failing call left. */
static inline void __attribute__((noreturn, format(printf, 1, 2))) wl_die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	fputs(WL_NAME ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(err));
	exit(1);
}

/* A run-time failure with no errno to tell. */
static inline void __attribute__((noreturn, format(printf, 1, 2))) wl_fail(const char *fmt, ...)
{
	va_list ap;

	fputs(WL_NAME ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/*
 * Report what getopt_long() rejected. The option strings start with ':' and opterr is 0, so
 * getopt_long() prints nothing itself and returns ':' for a missing value. argv[optind - 1]
 * is the offending word except for an unknown short option inside a group like -wz, where
 * only optopt names it.
 */
static inline void __attribute__((noreturn)) wl_bad_option(int c, char *const argv[])
{
	const char *word = argv[optind - 1];

	if (c == ':')
		wl_usage_error("option '%s' needs a value", word);
	if (optopt && optopt < 256 && strncmp(word, "--", 2) != 0)
		wl_usage_error("unknown option '-%c'", optopt);
	wl_usage_error("unknown option '%s'", word);
}

/*
 * The cases every workload's option loop ends with: -h/--help prints the usage and exits 0,
 * anything else is what getopt_long() rejected.
 */
static inline void __attribute__((noreturn))
wl_other_option(int c, char *const argv[], void (*usage)(void))
{
	if (c == 'h') {
		usage();
		exit(0);
	}
	wl_bad_option(c, argv);
}

/* After the option loop of a workload that takes no operands. */
static inline void wl_no_operands(int argc, char *const argv[])
{
	if (optind < argc)
		wl_usage_error("unexpected argument '%s'", argv[optind]);
}

/*
 * Strict decimal parsing. strtoull() alone skips blanks, takes a sign (and "-1" wraps to
 * UINT64_MAX) and stops at the first non-digit, so check the first character and the end.
 */
static inline uint64_t wl_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		wl_usage_error("invalid value '%s' for %s: not a decimal number", s, opt);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0')
		wl_usage_error("invalid value '%s' for %s: not a decimal number", s, opt);
	if (errno == ERANGE || v < min || v > max)
		wl_usage_error("invalid value '%s' for %s: must be from %llu to %llu", s, opt,
			       (unsigned long long)min, (unsigned long long)max);
	return v;
}

/* A byte count with an optional binary suffix: 4096, 64K, 64M, 16G (case-insensitive). */
static inline uint64_t wl_parse_size(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		wl_usage_error("invalid size '%s' for %s", s, opt);
	errno = 0;
	v = strtoull(s, &end, 10);
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	default:
		wl_usage_error("invalid size '%s' for %s: suffix must be K, M or G", s, opt);
	}
	if (*end != '\0' && end[1] != '\0')
		wl_usage_error("invalid size '%s' for %s: suffix must be K, M or G", s, opt);
	if (errno == ERANGE || v > (max >> shift) || (v << shift) < min)
		wl_usage_error("invalid size '%s' for %s: must be from %llu to %llu bytes", s, opt,
			       (unsigned long long)min, (unsigned long long)max);
	return (uint64_t)v << shift;
}

static inline size_t wl_page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	if (ps <= 0)
		wl_die("sysconf(_SC_PAGESIZE)");
	return (size_t)ps;
}

/*
 * The largest page count an option may ask for: a quarter of the address space, so that
 * counts times the page size (and the doubled reservations some workloads make) never
 * overflow a size_t. mmap() turns anything the machine cannot hold into a clean ENOMEM.
 */
static inline uint64_t wl_max_pages(size_t ps)
{
	return (uint64_t)(SIZE_MAX / 4) / ps;
}

static inline uint64_t wl_now_ns(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		wl_die("clock_gettime");
	return (uint64_t)ts.tv_sec * WL_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline uint64_t wl_timeval_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * WL_NSEC_PER_SEC + (uint64_t)tv->tv_usec * 1000;
}

/* User+system time of the waited-for children: their CPU time, which cpu_ns must include. */
static inline uint64_t wl_children_cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_CHILDREN, &ru))
		wl_die("getrusage(RUSAGE_CHILDREN)");
	return wl_timeval_ns(&ru.ru_utime) + wl_timeval_ns(&ru.ru_stime);
}

static inline void wl_sleep_ms(uint64_t ms)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ms / 1000),
		.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * Keep transparent huge pages off a range: one 2M (or, with mTHP, 16K..1M) folio would turn
 * many page faults into one, and the workloads promise one fault per page. EINVAL means a
 * kernel built without THP, where every page is a base page anyway.
 */
static inline void wl_no_thp(void *p, size_t len)
{
	if (madvise(p, len, MADV_NOHUGEPAGE) && errno != EINVAL)
		wl_die("madvise(MADV_NOHUGEPAGE)");
}

/* Private anonymous memory, THP off, not touched: every page faults on first access. */
static inline char *wl_map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		wl_die("mmap of %zu bytes", len);
	wl_no_thp(p, len);
	return p;
}

/* Whether this thread may run on cpu; the usage checks call it before pinning. */
static inline int wl_cpu_allowed(long cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return 0;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set))
		wl_die("sched_getaffinity");
	return CPU_ISSET(cpu, &set);
}

/* Pin the calling thread (not the whole process: sched_setaffinity(0) is per thread). */
static inline void wl_pin_cpu(long cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		wl_die("sched_setaffinity to CPU %ld", cpu);
}

#endif /* MMSCOPE_WL_COMMON_H */
