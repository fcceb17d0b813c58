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
 *    and exits 2 (wl_usage_error()); a failure at run time exits 1 (wl_die()). The options
 *    are declared once, in a struct wl_option table that wl_parse_options() parses with and
 *    prints --help from.
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

/* Every message starts with the program's name; the callers add the end of the line. */
static inline void __attribute__((format(printf, 1, 0))) wl_vwarn(const char *fmt, va_list ap)
{
	fputs(WL_NAME ": ", stderr);
	vfprintf(stderr, fmt, ap);
}

static inline void __attribute__((noreturn, format(printf, 1, 2)))
wl_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	wl_vwarn(fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(WL_EXIT_USAGE);
}

/* A run-time failure: the message, then strerror() of the errno the failing call left. */
static inline void __attribute__((noreturn, format(printf, 1, 2))) wl_die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	wl_vwarn(fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(err));
	exit(1);
}

/* A run-time failure with no errno to tell. */
static inline void __attribute__((noreturn, format(printf, 1, 2))) wl_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	wl_vwarn(fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
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

/*
 * Options. A workload declares each option once, in a table of struct wl_option ended by an
 * entry without a name; the getopt string, the long options, the synopsis and the option
 * lines of --help all come from that table, so they cannot drift apart. -h/--help is added to
 * every table. The WL_OPT_*() macros make the entries:
 *
 *	WL_OPT_U64("write", 'w', "W", &o->write_pages, 0, max,
 *		   "write one byte per page into W untouched anonymous\n"
 *		   "pages (W not-present write faults, default 0)"),
 *
 * A value's error messages name the option by its long name ("--write"), whatever the
 * spelling on the command line, as the hand-written parsers did.
 */
enum wl_opt_kind {
	WL_OPT_U64,  /* a decimal number from min to max, into *u64 */
	WL_OPT_SIZE, /* a byte count with an optional K, M or G suffix, from min to max, into *u64
		      */
	WL_OPT_STR,  /* the value itself (it stays in argv), into *str */
	WL_OPT_FLAG, /* no value: stores flag_value into *flag */
	WL_OPT_CALL, /* call(value, data): a value with a syntax of its own, such as a list */
};

struct wl_option {
	const char *name;  /* the long name, without "--" */
	int key;	   /* the short option's letter, 0 for a long option only */
	const char *value; /* what --help calls the value; NULL for a flag */
	enum wl_opt_kind kind;
	uint64_t min, max;
	uint64_t *u64;
	const char **str;
	int *flag;
	int flag_value;
	void (*call)(const char *value, void *data);
	void *data;
	int *given;	  /* if set, becomes 1 when the option is on the command line */
	int internal;	  /* passed by the program to itself: listed apart, not in the synopsis */
	const char *help; /* each '\n' starts a line indented to the help column */
};

/*
 * One table entry each; a trailing argument adds designators such as .given = &seen. key is 0
 * for a long option only, value NULL for a flag.
 */
#define WL_OPT_U64(name_, key_, value_, dest, lo, hi, help_, ...)                                  \
	{                                                                                          \
		.name = (name_), .key = (key_), .value = (value_), .kind = WL_OPT_U64,             \
		.u64 = (dest), .min = (lo), .max = (hi), .help = (help_), __VA_ARGS__              \
	}
#define WL_OPT_SIZE(name_, key_, value_, dest, lo, hi, help_, ...)                                 \
	{                                                                                          \
		.name = (name_), .key = (key_), .value = (value_), .kind = WL_OPT_SIZE,            \
		.u64 = (dest), .min = (lo), .max = (hi), .help = (help_), __VA_ARGS__              \
	}
#define WL_OPT_STR(name_, key_, value_, dest, help_, ...)                                          \
	{                                                                                          \
		.name = (name_), .key = (key_), .value = (value_), .kind = WL_OPT_STR,             \
		.str = (dest), .help = (help_), __VA_ARGS__                                        \
	}
#define WL_OPT_FLAG(name_, key_, dest, v, help_, ...)                                              \
	{                                                                                          \
		.name = (name_), .key = (key_), .kind = WL_OPT_FLAG, .flag = (dest),               \
		.flag_value = (v), .help = (help_), __VA_ARGS__                                    \
	}
#define WL_OPT_CALL(name_, key_, value_, fn, arg, help_, ...)                                      \
	{                                                                                          \
		.name = (name_), .key = (key_), .value = (value_), .kind = WL_OPT_CALL,            \
		.call = (fn), .data = (arg), .help = (help_), __VA_ARGS__                          \
	}
#define WL_OPT_END                                                                                 \
	{                                                                                          \
		0                                                                                  \
	}

/* The longest --pause-before-ms: a day. */
#define WL_MAX_PAUSE_MS 86400000

/* --pause-before-ms as most workloads have it: a sleep before the measured loop. */
#define WL_PAUSE_OPTION(dest)                                                                      \
	WL_OPT_U64("pause-before-ms", 0, "MS", dest, 0, WL_MAX_PAUSE_MS,                           \
		   "sleep MS milliseconds before the loop, so that a\n"                            \
		   "tracer can attach to the pid (default 0)")

#define WL_STRINGIFY_(x) #x
/* A macro's value in a string literal: "1 to " WL_STRINGIFY(MAX_LEVELS). */
#define WL_STRINGIFY(x) WL_STRINGIFY_(x)

/* What --help prints around the lines made from the options. */
struct wl_usage {
	const char *operands; /* e.g. "[N]": the caller reads them; NULL: none are allowed */
	const char *about;    /* between the synopsis and the options */
	const char *notes;    /* after the options: the summary line's keys and what they mean */
};

#define WL_MAX_OPTIONS 16
#define WL_LONG_ONLY   256 /* getopt_long()'s value for options[i] without a key: 256 + i */
#define WL_HELP_COLUMN 25
#define WL_USAGE_WIDTH 80

static inline int wl_option_has_value(const struct wl_option *opt)
{
	return opt->kind != WL_OPT_FLAG;
}

/* The synopsis, wrapped before WL_USAGE_WIDTH and aligned under the first option. */
static inline void wl_print_synopsis(const struct wl_option *options, const struct wl_usage *usage)
{
	int indent = printf("Usage: %s", WL_NAME), col = indent;

	for (const struct wl_option *opt = options; opt->name; opt++) {
		char item[64];
		int len;

		if (opt->internal)
			continue;
		if (opt->key)
			len = snprintf(item, sizeof(item), "[-%c%s%s]", opt->key,
				       opt->value ? " " : "", opt->value ? opt->value : "");
		else
			len = snprintf(item, sizeof(item), "[--%s%s%s]", opt->name,
				       opt->value ? " " : "", opt->value ? opt->value : "");
		if (col + 1 + len >= WL_USAGE_WIDTH)
			col = printf("\n%*s", indent, "") - 1;
		col += printf(" %s", item);
	}
	if (usage->operands)
		printf(" %s", usage->operands);
	putchar('\n');
}

/* "  -w, --write W" then the help, its first line from WL_HELP_COLUMN or two spaces on. */
static inline void wl_print_option(const char *key, const char *name, const char *value,
				   const char *help)
{
	int len = printf("  %s%s--%s%s%s", key[0] ? key : "  ", key[0] ? ", " : "  ", name,
			 value ? " " : "", value ? value : "");
	const char *nl;

	printf("%*s", len < WL_HELP_COLUMN - 1 ? WL_HELP_COLUMN - len : 2, "");
	while ((nl = strchr(help, '\n')) != NULL) {
		printf("%.*s\n%*s", (int)(nl - help), help, WL_HELP_COLUMN, "");
		help = nl + 1;
	}
	printf("%s\n", help);
}

static inline void wl_print_options(const struct wl_option *options, int internal)
{
	for (const struct wl_option *opt = options; opt->name; opt++) {
		char key[3] = {0};

		if (opt->internal != internal)
			continue;
		if (opt->key) {
			key[0] = '-';
			key[1] = (char)opt->key;
		}
		wl_print_option(key, opt->name, opt->value, opt->help);
	}
}

static inline void wl_print_help(const struct wl_option *options, const struct wl_usage *usage)
{
	int internal = 0;

	wl_print_synopsis(options, usage);
	printf("\n%s\n", usage->about);
	wl_print_options(options, 0);
	wl_print_option("-h", "help", NULL, "print this help and exit");
	for (const struct wl_option *opt = options; opt->name; opt++)
		internal |= opt->internal;
	if (internal) {
		printf("\nInternal, passed down by the program to itself:\n");
		wl_print_options(options, 1);
	}
	printf("\n%s", usage->notes);
}

/*
 * Report what getopt_long() rejected. The option string starts with ':' and opterr is 0, so
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

static inline void wl_take_option(const struct wl_option *opt, const char *value)
{
	char name[64];

	snprintf(name, sizeof(name), "--%s", opt->name);
	switch (opt->kind) {
	case WL_OPT_U64:
		*opt->u64 = wl_parse_u64(name, value, opt->min, opt->max);
		break;
	case WL_OPT_SIZE:
		*opt->u64 = wl_parse_size(name, value, opt->min, opt->max);
		break;
	case WL_OPT_STR:
		*opt->str = value;
		break;
	case WL_OPT_FLAG:
		*opt->flag = opt->flag_value;
		break;
	case WL_OPT_CALL:
		opt->call(value, opt->data);
		break;
	}
	if (opt->given)
		*opt->given = 1;
}

/*
 * Parse argv against options (their defaults already in place). Without usage->operands,
 * an operand is an error; with them, the caller reads argv from optind on.
 */
static inline void wl_parse_options(int argc, char **argv, const struct wl_option *options,
				    const struct wl_usage *usage)
{
	struct option longopts[WL_MAX_OPTIONS + 2];
	char shortopts[2 * WL_MAX_OPTIONS + 3], *s = shortopts;
	int n = 0, c;

	*s++ = ':';
	for (const struct wl_option *opt = options; opt->name; opt++, n++) {
		if (n == WL_MAX_OPTIONS)
			wl_fail("more than %d options: raise WL_MAX_OPTIONS", WL_MAX_OPTIONS);
		longopts[n] = (struct option){
			.name = opt->name,
			.has_arg = wl_option_has_value(opt) ? required_argument : no_argument,
			.val = opt->key ? opt->key : WL_LONG_ONLY + n,
		};
		if (opt->key) {
			*s++ = (char)opt->key;
			if (wl_option_has_value(opt))
				*s++ = ':';
		}
	}
	longopts[n] = (struct option){.name = "help", .has_arg = no_argument, .val = 'h'};
	longopts[n + 1] = (struct option){0};
	*s++ = 'h';
	*s = '\0';

	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		int i;

		for (i = 0; i < n; i++) {
			if (longopts[i].val == c)
				break;
		}
		if (i < n) {
			wl_take_option(&options[i], optarg);
		} else if (c == 'h') {
			wl_print_help(options, usage);
			exit(0);
		} else {
			wl_bad_option(c, argv);
		}
	}
	if (!usage->operands && optind < argc)
		wl_usage_error("unexpected argument '%s'", argv[optind]);
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

/*
 * The touch loops: one byte written to (or read from) each of pages pages, stride bytes
 * apart. Always inlined, so that the faults are taken in the caller: the WL_NOINLINE function
 * with a descriptive name that tests look for in stacks. Callers that must stay distinct
 * functions write different values: gcc's identical code folding (-fipa-icf, on at -O2) would
 * otherwise merge them into one, named after one of them in every stack.
 */
static inline __attribute__((always_inline)) void wl_write_pages(char *base, uint64_t pages,
								 size_t stride, char value)
{
	for (uint64_t i = 0; i < pages; i++)
		((volatile char *)base)[i * stride] = value;
}

static inline __attribute__((always_inline)) unsigned long
wl_read_pages(const char *base, uint64_t pages, size_t stride)
{
	unsigned long sum = 0;

	for (uint64_t i = 0; i < pages; i++)
		sum += ((const volatile char *)base)[i * stride];
	return sum;
}

/*
 * The clocks of a measured loop: loop_ns from CLOCK_MONOTONIC, cpu_ns from the process's CPU
 * time plus, with children set, that of the children it waited for in the loop (a workload
 * without children leaves getrusage() out of its loop).
 */
struct wl_clock {
	int children;
	uint64_t t0, c0, cc0;
};

static inline void wl_clock_start(struct wl_clock *clk, int children)
{
	clk->children = children;
	clk->t0 = wl_now_ns(CLOCK_MONOTONIC);
	clk->c0 = wl_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	clk->cc0 = children ? wl_children_cpu_ns() : 0;
}

/* Adds the loop's times to *loop_ns and *cpu_ns (so that repeated loops sum up). */
static inline void wl_clock_stop(const struct wl_clock *clk, uint64_t *loop_ns, uint64_t *cpu_ns)
{
	*cpu_ns += wl_now_ns(CLOCK_PROCESS_CPUTIME_ID) - clk->c0;
	if (clk->children)
		*cpu_ns += wl_children_cpu_ns() - clk->cc0;
	*loop_ns += wl_now_ns(CLOCK_MONOTONIC) - clk->t0;
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

/* A --cpu value checked as a usage error: the CPU must be one this process may run on. */
static inline long wl_usable_cpu(uint64_t cpu)
{
	if (!wl_cpu_allowed((long)cpu))
		wl_usage_error("CPU %ld is not available to this process", (long)cpu);
	return (long)cpu;
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
