/* SPDX-License-Identifier: GPL-2.0 */
/*
 * deep_stack - page faults at the bottom of known, deep call chains, in a program built
 * without frame pointers: the arithmetic check for user-stack unwinding from DWARF CFI.
 *
 * The Makefile builds this file twice, both with -O2 -fomit-frame-pointer:
 *   deep_stack           call-frame information in .eh_frame (+ .eh_frame_hdr), as every
 *                        distribution builds its programs;
 *   deep_stack_dbgframe  -fno-asynchronous-unwind-tables -fno-unwind-tables -g: this file's
 *                        functions have their CFI only in .debug_frame (the C runtime's _start
 *                        and libc keep their .eh_frame).
 * A frame-pointer walk cannot get through either: no function here keeps a frame chain, except
 * the levels with a variable-length array, which need %rbp (x29 on arm64) as their frame base.
 *
 * For each depth D of -d, one pass runs main -> level_a -> level_b -> ... -> (the D-th level),
 * and the D-th level then calls, in this order:
 *   touch_pages(P)              P not-present write faults on fresh private anonymous pages;
 *   read_pages(R)               through a function pointer: R not-present read faults on other
 *                               fresh pages (each maps the shared zero page);
 *   signal_self(), when S > 0   raise(SIGUSR1): the handler on_signal() calls
 *                               touch_in_handler(S), S write faults taken in a signal handler,
 *                               whose stack goes on through the signal frame (libc's
 *                               sigreturn trampoline) into raise(), signal_self() and back up
 *                               to the D-th level.
 * The levels have frames of different sizes: odd levels hold a variable-length array whose
 * size grows with the level (their CFA is based on the frame register), even ones a fixed
 * array of their own size (their CFA is based on the stack pointer).
 *
 * Each pass runs twice: first a warm-up with no pages, which faults in the stack below the
 * levels, the signal frame and the code, then (after all the warm-ups and --pause-before-ms)
 * the measured run, whose faults are exactly the ones above.
 * Before the summary line, one line per expected stack:
 *   expect KIND COUNT main;level_a;...;touch_pages
 * KIND is write or read (user-mode, not-present); the frames are root-first from main down to
 * the faulting function; a '*' frame stands for any number (0 or more) of frames, in libc
 * (raise() and the signal trampoline). What calls main (_start, __libc_start_main, ...) is left
 * out, since it depends on the C library.
 */
#define _GNU_SOURCE
#define WL_NAME "deep_stack"
#include <inttypes.h>
#include <signal.h>
#include "wl_common.h"

#define MAX_LEVELS 26

struct opts {
	unsigned int depths[MAX_LEVELS];
	unsigned int ndepths;
	uint64_t write_pages;
	uint64_t read_pages;
	uint64_t signal_pages;
	uint64_t frame_bytes;
	uint64_t pause_ms;
};

/* What one pass does at the bottom of its chain. */
struct pass {
	unsigned int depth;
	size_t frame_bytes;
	char *write;
	uint64_t write_pages;
	char *read;
	uint64_t read_pages;
	int raise_signal;
};

static size_t page_size;

/* The pages the signal handler writes: set before raise(), read by the handler. */
static char *volatile signal_base;
static volatile uint64_t signal_npages;

/* Keeps the values read, and the frames' padding, alive. */
static volatile unsigned long sink;

static const char *const level_names[MAX_LEVELS] = {
	"level_a", "level_b", "level_c", "level_d", "level_e", "level_f", "level_g",
	"level_h", "level_i", "level_j", "level_k", "level_l", "level_m", "level_n",
	"level_o", "level_p", "level_q", "level_r", "level_s", "level_t", "level_u",
	"level_v", "level_w", "level_x", "level_y", "level_z",
};

/* -d: a comma-separated list of depths. */
static void parse_depths(const char *arg, void *data)
{
	struct opts *o = data;
	size_t len = strlen(arg);
	char buf[256], *p = buf, *tok;

	if (len >= sizeof(buf))
		wl_usage_error("invalid value '%s' for --depth: too long", arg);
	memcpy(buf, arg, len + 1);
	o->ndepths = 0;
	while ((tok = strsep(&p, ",")) != NULL) {
		if (o->ndepths == MAX_LEVELS)
			wl_usage_error("invalid value '%s' for --depth: more than %d depths", arg,
				       MAX_LEVELS);
		o->depths[o->ndepths++] = (unsigned int)wl_parse_u64("--depth", tok, 1, MAX_LEVELS);
	}
}

/* The parts of --help around the option lines. */
static const struct wl_usage usage = {
	.about = "For each depth D, call main -> level_a -> level_b -> ... through D levels of\n"
		 "distinct functions (frames of different sizes), and at the bottom take known\n"
		 "page faults (THP off, one fault per page), then print the expected stacks and\n"
		 "one summary line.\n",
	.notes = "Before the summary, one line per expected stack:\n"
		 "  expect KIND COUNT main;level_a;...;LEAF\n"
		 "(frames root-first from main, '*' for any frames of libc in between).\n"
		 "Summary: deep_stack: page_size= depths= write_pages= read_pages= signal_pages=\n"
		 "expected_write= expected_read= loop_ns= cpu_ns=\n"
		 "expected_* count only the measured passes' faults.\n",
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	uint64_t max = wl_max_pages(page_size);
	const struct wl_option options[] = {
		WL_OPT_CALL(
			"depth", 'd', "D[,D...]", parse_depths, o,
			"the depths, 1 to " WL_STRINGIFY(MAX_LEVELS) ", one pass each (default 8)"),
		WL_OPT_U64("pages", 'p', "P", &o->write_pages, 0, max,
			   "touch_pages writes one byte per page of P fresh\n"
			   "anonymous pages (P write faults a pass, default 1000)"),
		WL_OPT_U64("read", 'r', "R", &o->read_pages, 0, max,
			   "read_pages, called through a function pointer, reads\n"
			   "one byte per page of R other fresh pages (R read\n"
			   "faults a pass, default 0)"),
		WL_OPT_U64("signal", 's', "S", &o->signal_pages, 0, max,
			   "signal_self raises SIGUSR1 at the bottom; its handler\n"
			   "on_signal calls touch_in_handler, which writes S fresh\n"
			   "pages (S write faults a pass, default 0: no signal)"),
		/* level y (25) holds 25 * B: at most 100K of stack. */
		WL_OPT_U64("frame-bytes", 0, "B", &o->frame_bytes, 0, 4096,
			   "stack bytes of each odd level's variable-length\n"
			   "array, times its level number (default 48)"),
		WL_OPT_U64("pause-before-ms", 0, "MS", &o->pause_ms, 0, WL_MAX_PAUSE_MS,
			   "sleep MS milliseconds after the warm-up passes,\n"
			   "before the measured ones (default 0)"),
		WL_OPT_END,
	};

	*o = (struct opts){.depths = {8}, .ndepths = 1, .write_pages = 1000, .frame_bytes = 48};
	wl_parse_options(argc, argv, options, &usage);
}

/* P not-present write faults: each allocates and zeroes one anonymous page. */
static WL_NOINLINE void touch_pages(char *base, uint64_t pages)
{
	wl_write_pages(base, pages, page_size, 1);
}

/* R not-present read faults, each mapping the shared zero page. */
static WL_NOINLINE void read_pages(const char *base, uint64_t pages)
{
	sink = wl_read_pages(base, pages, page_size);
}

/* Called through this pointer: an indirect call the compiler cannot turn into a direct one. */
static void (*volatile read_fn)(const char *, uint64_t) = read_pages;

/* S write faults inside the signal handler. */
static WL_NOINLINE void touch_in_handler(char *base, uint64_t pages)
{
	wl_write_pages(base, pages, page_size, 2);
}

static WL_NOINLINE void on_signal(int sig)
{
	(void)sig;
	touch_in_handler(signal_base, signal_npages);
	wl_keep_frame();
}

/*
 * The signal is raised one call below the D-th level, so that the expected stack names the
 * level exactly: main;...;level_D;signal_self, then raise() and the trampoline in libc.
 */
static WL_NOINLINE void signal_self(void)
{
	if (raise(SIGUSR1))
		wl_die("raise(SIGUSR1)");
	wl_keep_frame();
}

typedef void (*level_fn)(const struct pass *ps, unsigned int level);
static const level_fn levels[MAX_LEVELS];

/*
 * What every level does after setting up its frame: call the next level, or at the bottom
 * take the pass's faults. Inlined into each level, so the faulting functions' caller is the
 * D-th level itself.
 */
static inline __attribute__((always_inline)) void descend(const struct pass *ps, unsigned int level)
{
	if (level + 1 < ps->depth) {
		levels[level + 1](ps, level + 1);
	} else {
		touch_pages(ps->write, ps->write_pages);
		read_fn(ps->read, ps->read_pages);
		if (ps->raise_signal)
			signal_self();
	}
	wl_keep_frame();
}

/*
 * Level N (1-based) of a chain. Odd levels hold a variable-length array of N * frame_bytes
 * (+ N so that the sizes differ with --frame-bytes 0 too) bytes, as alloca() would, so their
 * frame size is known only at run time and their CFA is based on the frame register; even
 * levels keep a fixed array of 24 * N bytes. Both write their padding so that the compiler
 * keeps it.
 */
#define ODD_LEVEL(name, n)                                                                         \
	static WL_NOINLINE void name(const struct pass *ps, unsigned int level)                    \
	{                                                                                          \
		size_t len = ps->frame_bytes * (n) + (n);                                          \
		volatile char pad[len];                                                            \
                                                                                                   \
		pad[0] = (char)(n);                                                                \
		pad[len - 1] = (char)(n);                                                          \
		descend(ps, level);                                                                \
		sink += (unsigned long)pad[len - 1];                                               \
	}
#define EVEN_LEVEL(name, n)                                                                        \
	static WL_NOINLINE void name(const struct pass *ps, unsigned int level)                    \
	{                                                                                          \
		volatile char pad[24 * (n)];                                                       \
                                                                                                   \
		pad[0] = (char)(n);                                                                \
		pad[sizeof(pad) - 1] = (char)(n);                                                  \
		descend(ps, level);                                                                \
		sink += (unsigned long)pad[sizeof(pad) - 1];                                       \
	}

ODD_LEVEL(level_a, 1)
EVEN_LEVEL(level_b, 2)
ODD_LEVEL(level_c, 3)
EVEN_LEVEL(level_d, 4)
ODD_LEVEL(level_e, 5)
EVEN_LEVEL(level_f, 6)
ODD_LEVEL(level_g, 7)
EVEN_LEVEL(level_h, 8)
ODD_LEVEL(level_i, 9)
EVEN_LEVEL(level_j, 10)
ODD_LEVEL(level_k, 11)
EVEN_LEVEL(level_l, 12)
ODD_LEVEL(level_m, 13)
EVEN_LEVEL(level_n, 14)
ODD_LEVEL(level_o, 15)
EVEN_LEVEL(level_p, 16)
ODD_LEVEL(level_q, 17)
EVEN_LEVEL(level_r, 18)
ODD_LEVEL(level_s, 19)
EVEN_LEVEL(level_t, 20)
ODD_LEVEL(level_u, 21)
EVEN_LEVEL(level_v, 22)
ODD_LEVEL(level_w, 23)
EVEN_LEVEL(level_x, 24)
ODD_LEVEL(level_y, 25)
EVEN_LEVEL(level_z, 26)

static const level_fn levels[MAX_LEVELS] = {
	level_a, level_b, level_c, level_d, level_e, level_f, level_g, level_h, level_i,
	level_j, level_k, level_l, level_m, level_n, level_o, level_p, level_q, level_r,
	level_s, level_t, level_u, level_v, level_w, level_x, level_y, level_z,
};

/* "main;level_a;...;" down to level D, then LEAF: one expected stack. */
static void print_expect(const char *kind, uint64_t count, unsigned int depth, const char *leaf)
{
	printf("expect %s %" PRIu64 " main;", kind, count);
	for (unsigned int i = 0; i < depth; i++)
		printf("%s;", level_names[i]);
	printf("%s\n", leaf);
}

/*
 * One pass down to depth: with measured 0 the warm-up, which takes no pages but faults in
 * whatever else the pass uses (the stack below the levels, the signal frame, the code, libc's
 * lazy bindings); with measured 1 the pass whose faults are exactly the expected ones.
 * Inlined into main, which is the caller of level_a.
 */
static inline __attribute__((always_inline)) void run_pass(const struct opts *o, unsigned int depth,
							   int measured)
{
	struct pass ps = {.depth = depth, .frame_bytes = o->frame_bytes};

	ps.raise_signal = o->signal_pages > 0;
	signal_base = NULL;
	signal_npages = 0;
	if (measured) {
		if (o->write_pages)
			ps.write = wl_map_anon(o->write_pages * page_size);
		if (o->read_pages)
			ps.read = wl_map_anon(o->read_pages * page_size);
		if (o->signal_pages)
			signal_base = wl_map_anon(o->signal_pages * page_size);
		ps.write_pages = o->write_pages;
		ps.read_pages = o->read_pages;
		signal_npages = o->signal_pages;
	}
	levels[0](&ps, 0);

	if (ps.write)
		munmap(ps.write, o->write_pages * page_size);
	if (ps.read)
		munmap(ps.read, o->read_pages * page_size);
	if (signal_base)
		munmap(signal_base, o->signal_pages * page_size);
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	uint64_t loop_ns = 0, cpu_ns = 0;
	struct wl_clock clk;
	struct opts o;

	page_size = wl_page_size();
	parse_args(argc, argv, &o);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		wl_die("sigaction(SIGUSR1)");

	for (unsigned int i = 0; i < o.ndepths; i++)
		run_pass(&o, o.depths[i], 0);
	if (o.pause_ms)
		wl_sleep_ms(o.pause_ms);
	wl_clock_start(&clk, 0);
	for (unsigned int i = 0; i < o.ndepths; i++)
		run_pass(&o, o.depths[i], 1);
	wl_clock_stop(&clk, &loop_ns, &cpu_ns);

	/* The same depth twice is one stack: its counts add up. */
	for (unsigned int i = 0; i < o.ndepths; i++) {
		unsigned int d = o.depths[i], n = 0;
		int first = 1;

		for (unsigned int j = 0; j < o.ndepths; j++) {
			if (o.depths[j] == d) {
				n++;
				first &= j >= i;
			}
		}
		if (!first)
			continue;
		if (o.write_pages)
			print_expect("write", n * o.write_pages, d, "touch_pages");
		if (o.read_pages)
			print_expect("read", n * o.read_pages, d, "read_pages");
		if (o.signal_pages)
			print_expect("write", n * o.signal_pages, d,
				     "signal_self;*;on_signal;touch_in_handler");
	}
	printf("deep_stack: page_size=%zu depths=", page_size);
	for (unsigned int i = 0; i < o.ndepths; i++)
		printf("%s%u", i ? "," : "", o.depths[i]);
	printf(" write_pages=%" PRIu64 " read_pages=%" PRIu64 " signal_pages=%" PRIu64
	       " expected_write=%" PRIu64 " expected_read=%" PRIu64 " loop_ns=%" PRIu64
	       " cpu_ns=%" PRIu64 "\n",
	       o.write_pages, o.read_pages, o.signal_pages,
	       o.ndepths * (o.write_pages + o.signal_pages), o.ndepths * o.read_pages, loop_ns,
	       cpu_ns);
	return 0;
}
