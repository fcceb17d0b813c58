/* SPDX-License-Identifier: GPL-2.0 */
/*
 * page_touch - take an exactly known number of page faults of each kind.
 *
 * This is the arithmetic check for the fault counters: the measured loop takes
 *   W write faults      (-w): one byte written per page of untouched private anonymous memory;
 *                             each is a not-present write fault that allocates a zeroed page.
 *   R read faults       (-r): one byte read per page of other, never touched private anonymous
 *                             pages. A read of an untouched private anonymous page allocates
 *                             nothing: the kernel maps the shared zero page read-only, still
 *                             one (read, not-present) fault per page. (Where the zero page is
 *                             not used, e.g. s390 guests, the read allocates a page instead:
 *                             still one fault.)
 *   X exec faults       (-x): one call per page into pages of a memfd mapped PROT_READ|EXEC;
 *                             each call is an instruction fetch from a not-present page.
 *   K kernel-mode faults (-k): read() from /dev/zero, one page per call, into untouched
 *                             anonymous pages. The kernel's copy to user memory faults; the
 *                             fault is on a user address but taken in kernel mode (x86 error
 *                             code without X86_PF_USER), so tracers count it as a kernel fault.
 * and nothing else: all mappings are made, and the exec pages written, before the loop, and
 * unmapped after it; mmap(), munmap(), memfd_create(), ftruncate() and pwrite() take no page
 * faults in our address space. THP is off on every mapping (MADV_NOHUGEPAGE) so that one
 * fault maps exactly one page.
 *
 * The process's own startup (ld.so, libc, stack, stdio) and exit add faults on top that no
 * option controls. Tests subtract them by running "-w 0 -r 0 -x 0" (-k is 0 by default) as a
 * baseline: its setup takes the same faults, since no step of the setup depends on the counts
 * except mmap()/memfd calls that fault nothing. Measured with perf stat on x86-64, the
 * difference comes out within +-3 of the expected count.
 */
#define _GNU_SOURCE
#define WL_NAME "page_touch"
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/mman.h>
#include "wl_common.h"

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_EXEC
/* Linux 6.3+: asks for an executable memfd even where vm.memfd_noexec defaults to noexec. */
#define MFD_EXEC 0x0010U
#endif

/*
 * One "return to caller" instruction in memory order; the exec pages hold nothing else, so a
 * call into one returns at once. Instructions are little-endian on AArch64 whatever the data
 * byte order, and ppc64le uses ELFv2, where a function pointer is the code address itself (on
 * ELFv1, big-endian ppc64, it would point at a function descriptor, so that is left out).
 */
#if defined(__x86_64__) || defined(__i386__)
#define RET_INSN 0xc3 /* ret */
#elif defined(__aarch64__)
#define RET_INSN 0xc0, 0x03, 0x5f, 0xd6 /* ret: 0xd65f03c0 */
#elif defined(__powerpc64__) && defined(_CALL_ELF) && _CALL_ELF == 2 && defined(__BYTE_ORDER__) && \
	__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RET_INSN 0x20, 0x00, 0x80, 0x4e /* blr: 0x4e800020 */
#elif defined(__riscv) && __riscv_xlen == 64
#define RET_INSN 0x67, 0x80, 0x00, 0x00 /* ret: jalr x0, 0(ra) */
#else
#define WL_NO_EXEC_PAGES
#endif

typedef void (*ret_fn_t)(void);

struct opts {
	uint64_t write_pages;
	uint64_t read_pages;
	uint64_t exec_pages;
	uint64_t kernel_pages;
	uint64_t repeat;
	uint64_t pause_ms;
};

/* One round's mappings; each is NULL when its count is 0, since mmap() rejects length 0. */
struct regions {
	char *write;
	char *read;
	char *kernel;
	char *exec; /* reservation of 2 * exec_pages pages, see map_exec_pages() */
};

static size_t page_size;
static int memfd = -1;
static int zero_fd = -1;

/* Keeps the values read from zero pages alive, so the compiler cannot drop the reads. */
static volatile unsigned long read_sink;

/* The parts of --help around the option lines. */
static const struct wl_usage usage = {
	.about = "Take a known number of page faults in a measured loop (THP off, one fault per\n"
		 "page), then print one summary line.\n",
	.notes =
		"Summary: page_touch: page_size= write_pages= read_pages= exec_pages=\n"
		"kernel_pages= repeat= expected_faults= expected_write= expected_read=\n"
		"expected_exec= expected_kernel= loop_ns= cpu_ns=\n"
		"expected_* count only the loop's faults; process startup and exit add a constant\n"
		"that a run with -w 0 -r 0 -x 0 -k 0 measures.\n",
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	uint64_t max = wl_max_pages(page_size);
	const struct wl_option options[] = {
		WL_OPT_U64("write", 'w', "W", &o->write_pages, 0, max,
			   "write one byte per page into W untouched anonymous\n"
			   "pages (W not-present write faults, default 0)"),
		WL_OPT_U64("read", 'r', "R", &o->read_pages, 0, max,
			   "read one byte per page of R other untouched anonymous\n"
			   "pages; each maps the shared zero page (R read faults,\n"
			   "default 0)"),
		/* Two VMAs per exec page (page + guard): beyond about vm.max_map_count / 2 the
		 * mmap() fails, with a hint. */
		WL_OPT_U64("exec", 'x', "X", &o->exec_pages, 0, 1000000,
			   "call into X pages of a memfd mapped read+exec, each in\n"
			   "a 1-page mapping of its own (X instruction fetch\n"
			   "faults, default 0)"),
		WL_OPT_U64("kernel", 'k', "K", &o->kernel_pages, 0, max,
			   "read() one page from /dev/zero into each of K untouched\n"
			   "anonymous pages (K faults taken in kernel mode,\n"
			   "default 0)"),
		WL_OPT_U64("repeat", 0, "N", &o->repeat, 1, UINT32_MAX,
			   "run the loop N times, each with fresh mappings\n"
			   "(default 1); expected_* and the times are totals\n"
			   "over all N"),
		WL_OPT_U64("pause-before-ms", 0, "MS", &o->pause_ms, 0, WL_MAX_PAUSE_MS,
			   "sleep MS milliseconds before the first loop, so\n"
			   "that a tracer can attach to the pid (default 0)"),
		WL_OPT_END,
	};

	*o = (struct opts){.repeat = 1};
	wl_parse_options(argc, argv, options, &usage);
#ifdef WL_NO_EXEC_PAGES
	if (o->exec_pages)
		wl_usage_error("--exec is not supported on this architecture");
#endif
}

/* W not-present write faults: each allocates and zeroes one anonymous page. */
static WL_NOINLINE void touch_write_pages(char *base, uint64_t pages)
{
	wl_write_pages(base, pages, page_size, 1);
}

/* R not-present read faults, each mapping the shared zero page (nothing is allocated). */
static WL_NOINLINE void touch_read_pages(const char *base, uint64_t pages)
{
	read_sink = wl_read_pages(base, pages, page_size);
}

/*
 * The call itself, one frame below touch_exec_pages(). At an instruction fetch fault the
 * instruction pointer is the exec page, which has no symbol, and frame-pointer unwinding
 * goes on from the frame pointer, which still belongs to the function that made the call:
 * that function's own frame is the one lost (its return address is only on top of the stack,
 * or in the link register). Calling through this function makes it the lost one, so that the
 * unwound stack reads exec page, touch_exec_pages, touch_all_pages, main.
 */
static WL_NOINLINE void call_exec_page(ret_fn_t fn)
{
	fn();
	wl_keep_frame();
}

/*
 * X instruction fetch faults: the first instruction of each exec page is fetched from a
 * not-present page. The exec pages sit two pages apart (see map_exec_pages()).
 */
static WL_NOINLINE void touch_exec_pages(char *base, uint64_t pages)
{
	for (uint64_t i = 0; i < pages; i++)
		call_exec_page((ret_fn_t)(uintptr_t)(base + 2 * i * page_size));
}

/*
 * One read() from /dev/zero into one page, one frame below touch_kernel_pages() for the same
 * reason as call_exec_page(): the user stack of a fault taken inside a system call starts in
 * the libc wrapper, which has no frame pointer of its own, so its caller's frame is lost.
 */
static WL_NOINLINE void read_zero_page(char *page)
{
	ssize_t n = read(zero_fd, page, page_size);

	if (n != (ssize_t)page_size)
		wl_die("read of /dev/zero returned %zd", n);
	wl_keep_frame();
}

/*
 * K faults taken by the kernel: read() copies (clears) a page of user memory that is not
 * mapped yet; the kernel's access faults, the fault handler maps the page and the copy goes
 * on, so each read() costs exactly one write fault on a user address in kernel mode.
 */
static WL_NOINLINE void touch_kernel_pages(char *base, uint64_t pages)
{
	for (uint64_t i = 0; i < pages; i++)
		read_zero_page(base + i * page_size);
}

/*
 * The exec pages' contents: written once through pwrite(), so they reach the page cache
 * without any fault in our address space (writing them through a mapping would take a write
 * fault per page first).
 */
static void setup_exec_file(uint64_t pages)
{
#ifndef WL_NO_EXEC_PAGES
	/*
	 * On the stack rather than in .rodata: pwrite() reading a not yet mapped .rodata page
	 * would add a fault that the -x 0 baseline does not take.
	 */
	const unsigned char ret_insn[] = {RET_INSN};

	memfd = memfd_create("page_touch_exec", MFD_CLOEXEC | MFD_EXEC);
	if (memfd < 0 && errno == EINVAL) /* before Linux 6.3: no MFD_EXEC */
		memfd = memfd_create("page_touch_exec", MFD_CLOEXEC);
	if (memfd < 0)
		wl_die("memfd_create");
	if (ftruncate(memfd, (off_t)(pages * page_size)))
		wl_die("ftruncate of the exec memfd");
	for (uint64_t i = 0; i < pages; i++) {
		off_t off = (off_t)(i * page_size);

		if (pwrite(memfd, ret_insn, sizeof(ret_insn), off) != (ssize_t)sizeof(ret_insn))
			wl_die("pwrite of the exec memfd");
	}
	/*
	 * No __builtin___clear_cache(): the pages are not mapped yet, so cleaning them by
	 * virtual address (dc cvau/ic ivau on arm64, dcbst/icbi on powerpc) would itself fault
	 * them in. The kernel makes the icache coherent when it maps a page-cache page into an
	 * executable mapping (arm64 and powerpc sync on set_pte_at(); x86 needs nothing).
	 */
#else
	(void)pages;
#endif
}

/*
 * Each exec page gets a 1-page VMA of its own, with a PROT_NONE anonymous guard page
 * between neighbours. A memfd is shmem, whose read faults do "fault-around": one fault maps
 * up to fault_around_bytes (64K by default) of neighbouring page-cache pages that are
 * already there, which would make X calls take far fewer than X faults. Fault-around never
 * crosses the VMA, so 1-page VMAs defeat it. The guards matter because adjacent mappings of
 * consecutive file offsets would be merged back into one VMA, while an anonymous VMA never
 * merges with a file one.
 */
static char *map_exec_pages(uint64_t pages)
{
	char *base;

	base = mmap(NULL, 2 * pages * page_size, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		wl_die("mmap of the exec reservation");
	for (uint64_t i = 0; i < pages; i++) {
		char *want = base + 2 * i * page_size;
		void *p = mmap(want, page_size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED,
			       memfd, (off_t)(i * page_size));

		if (p == MAP_FAILED)
			wl_die("mmap of exec page %" PRIu64
			       " (too many mappings for vm.max_map_count?)",
			       i);
		wl_no_thp(p, page_size);
	}
	return base;
}

static void map_regions(const struct opts *o, struct regions *r)
{
	*r = (struct regions){0};
	if (o->write_pages)
		r->write = wl_map_anon(o->write_pages * page_size);
	if (o->read_pages)
		r->read = wl_map_anon(o->read_pages * page_size);
	if (o->kernel_pages)
		r->kernel = wl_map_anon(o->kernel_pages * page_size);
	if (o->exec_pages)
		r->exec = map_exec_pages(o->exec_pages);
}

static void unmap_regions(const struct opts *o, struct regions *r)
{
	if (r->write)
		munmap(r->write, o->write_pages * page_size);
	if (r->read)
		munmap(r->read, o->read_pages * page_size);
	if (r->kernel)
		munmap(r->kernel, o->kernel_pages * page_size);
	if (r->exec)
		munmap(r->exec, 2 * o->exec_pages * page_size);
}

/* The measured loop: every fault it takes is one of the expected ones. */
static WL_NOINLINE void touch_all_pages(const struct opts *o, struct regions *r)
{
	touch_write_pages(r->write, o->write_pages);
	touch_read_pages(r->read, o->read_pages);
	touch_exec_pages(r->exec, o->exec_pages);
	touch_kernel_pages(r->kernel, o->kernel_pages);
	wl_keep_frame();
}

int main(int argc, char **argv)
{
	uint64_t loop_ns = 0, cpu_ns = 0, n;
	struct regions r;
	struct opts o;

	page_size = wl_page_size();
	parse_args(argc, argv, &o);

	if (o.exec_pages)
		setup_exec_file(o.exec_pages);
	if (o.kernel_pages) {
		zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		if (zero_fd < 0)
			wl_die("open /dev/zero");
	}
	if (o.pause_ms)
		wl_sleep_ms(o.pause_ms);

	for (uint64_t i = 0; i < o.repeat; i++) {
		struct wl_clock clk;

		map_regions(&o, &r);
		wl_clock_start(&clk, 0);
		touch_all_pages(&o, &r);
		wl_clock_stop(&clk, &loop_ns, &cpu_ns);
		unmap_regions(&o, &r);
	}

	n = o.repeat;
	printf("page_touch: page_size=%zu write_pages=%" PRIu64 " read_pages=%" PRIu64
	       " exec_pages=%" PRIu64 " kernel_pages=%" PRIu64 " repeat=%" PRIu64
	       " expected_faults=%" PRIu64 " expected_write=%" PRIu64 " expected_read=%" PRIu64
	       " expected_exec=%" PRIu64 " expected_kernel=%" PRIu64 " loop_ns=%" PRIu64
	       " cpu_ns=%" PRIu64 "\n",
	       page_size, o.write_pages, o.read_pages, o.exec_pages, o.kernel_pages, n,
	       n * (o.write_pages + o.read_pages + o.exec_pages + o.kernel_pages),
	       n * o.write_pages, n * o.read_pages, n * o.exec_pages, n * o.kernel_pages, loop_ns,
	       cpu_ns);
	return 0;
}
