/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mprotect_toggle - flip a region between read-only and read/write, over and over.
 *
 * Default mode (threads): TLB shootdowns. Thread A, pinned to CPU 0, does I iterations of
 * { mprotect(region, PROT_READ); mprotect(region, PROT_READ | PROT_WRITE) } while thread B,
 * pinned to CPU 1, keeps reading one byte per page of the same region. Both threads share the
 * mm and B is always running it, so when A's mprotect() takes write permission away from
 * present ptes the kernel must invalidate CPU 1's TLB entries too: each read-only switch costs
 * an IPI (or a broadcast TLBI) to CPU 1. The switch back to read/write only adds permission,
 * which needs no flush in principle, but kernels may flush anyway: on x86 with Linux 6.18 both
 * calls were seen to send the IPI (tlb:tlb_flush "remote IPI send" twice per iteration). The region
 * is written once before the loop, so the loop itself takes no page faults: B only reads, which
 * either permission allows, and mprotect() back to read/write makes the ptes of these exclusive
 * anonymous pages writable directly. This is what a tracer's TLB-invalidation and IPI counters are
 * tested against.
 *
 * --single: one thread, the benchmark from the powerpc radix pte thread (which used 16 GB):
 * repeat { protect read-only, read a byte per page, protect read/write, write a byte per page }
 * over SIZE bytes. It measures the cost of changing protection on many ptes, with the pages
 * pre-faulted so that the loop takes no faults (--no-prefault: the first iteration then takes
 * one read fault per page, mapping the zero page, and one copy-on-write fault per page).
 *
 * In threads mode --no-prefault defeats the purpose: B then maps the zero page, whose
 * read-only ptes mprotect() never changes, so there is nothing to shoot down.
 *
 * THP is off on the region: one 2M pmd would make the toggles change one entry, not 512.
 */
#define _GNU_SOURCE
#define WL_NAME "mprotect_toggle"
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "wl_common.h"

struct opts {
	int single;
	int prefault;
	uint64_t iterations;
	uint64_t size;
	uint64_t pause_ms;
};

/* What the reader thread B shares with A. */
struct reader {
	char *base;
	size_t len;
	atomic_int stop;
	atomic_uint_least64_t passes;
};

static size_t page_size;

/* Keeps the values B reads alive, so the compiler cannot drop the reads. */
static volatile unsigned long read_sink;

/* The parts of --help around the option lines. */
static const struct wl_usage usage = {
	.about = "Default: thread A on CPU 0 toggles the region read-only and back, thread B on\n"
		 "CPU 1 keeps reading it, so every read-only switch needs a TLB shootdown on\n"
		 "CPU 1. Needs CPUs 0 and 1. --single: one thread toggles and reads/writes every\n"
		 "page.\n",
	.notes = "Summary: mprotect_toggle: mode=threads|single page_size= size= pages=\n"
		 "iterations= mprotect_calls= prefault= reader_passes= loop_ns= cpu_ns=\n"
		 "reader_passes (threads mode) counts B's passes over the region during the loop;\n"
		 "cpu_ns is the whole process's, B's spinning included.\n",
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	const struct wl_option options[] = {
		WL_OPT_FLAG("single", 0, &o->single, 1,
			    "one-thread mode (protect read-only, read each page,\n"
			    "protect read/write, write each page)"),
		WL_OPT_U64("iterations", 'i', "I", &o->iterations, 1, UINT64_MAX / 2,
			   "toggle iterations, two mprotect() calls each (default\n"
			   "1000 with threads, 10 with --single)"),
		WL_OPT_SIZE("size", 's', "SIZE", &o->size, 1, SIZE_MAX / 4,
			    "region size in bytes, optional K, M or G suffix,\n"
			    "rounded up to whole pages (default 64 pages with\n"
			    "threads, 64M with --single)"),
		WL_OPT_FLAG("no-prefault", 0, &o->prefault, 0,
			    "do not write the region before the loop"),
		WL_PAUSE_OPTION(&o->pause_ms),
		WL_OPT_END,
	};

	*o = (struct opts){.prefault = 1};
	wl_parse_options(argc, argv, options, &usage);
	if (!o->iterations)
		o->iterations = o->single ? 10 : 1000;
	if (!o->size)
		o->size = o->single ? 64ULL << 20 : 64ULL * page_size;
	o->size = (o->size + page_size - 1) / page_size * page_size;
}

static void protect(char *base, size_t len, int prot)
{
	if (mprotect(base, len, prot))
		wl_die("mprotect");
}

/* Before the loop, so that the loop takes no faults. */
static WL_NOINLINE void prefault_pages(char *base, size_t len)
{
	wl_write_pages(base, len / page_size, page_size, 1);
}

static WL_NOINLINE unsigned long read_one_byte_per_page(const char *base, size_t len)
{
	return wl_read_pages(base, len / page_size, page_size);
}

static WL_NOINLINE void write_one_byte_per_page(char *base, size_t len)
{
	for (size_t off = 0; off < len; off += page_size)
		((volatile char *)base)[off]++;
}

/* Thread A: every read-only switch must shoot down B's TLB entries on CPU 1. */
static WL_NOINLINE void toggle_protection(char *base, size_t len, uint64_t iterations)
{
	for (uint64_t i = 0; i < iterations; i++) {
		protect(base, len, PROT_READ);
		protect(base, len, PROT_READ | PROT_WRITE);
	}
}

/* Thread B: keep the mm live on CPU 1 with the region's translations in its TLB. */
static WL_NOINLINE void read_region_loop(struct reader *r)
{
	unsigned long sum = 0;

	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		sum += read_one_byte_per_page(r->base, r->len);
		atomic_fetch_add_explicit(&r->passes, 1, memory_order_relaxed);
	}
	read_sink = sum;
}

static void *reader_thread(void *arg)
{
	struct reader *r = arg;

	wl_pin_cpu(1);
	read_region_loop(r);
	return NULL;
}

/* --single: the radix pte benchmark's loop. */
static WL_NOINLINE void single_toggle_loop(char *base, size_t len, uint64_t iterations)
{
	unsigned long sum = 0;

	for (uint64_t i = 0; i < iterations; i++) {
		protect(base, len, PROT_READ);
		sum += read_one_byte_per_page(base, len);
		protect(base, len, PROT_READ | PROT_WRITE);
		write_one_byte_per_page(base, len);
	}
	read_sink = sum;
}

int main(int argc, char **argv)
{
	uint64_t loop_ns = 0, cpu_ns = 0, passes = 0;
	struct wl_clock clk;
	struct reader r = {0};
	pthread_t thread;
	struct opts o;
	char *base;
	int err;

	page_size = wl_page_size();
	parse_args(argc, argv, &o);

	if (!o.single) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		if (!wl_cpu_allowed(0) || !wl_cpu_allowed(1))
			wl_usage_error("threads mode needs CPUs 0 and 1 (%ld CPU(s) online); "
				       "use --single",
				       ncpu);
		wl_pin_cpu(0);
	}

	base = wl_map_anon(o.size);
	if (o.prefault)
		prefault_pages(base, o.size);

	if (!o.single) {
		r.base = base;
		r.len = o.size;
		err = pthread_create(&thread, NULL, reader_thread, &r);
		if (err) {
			errno = err;
			wl_die("pthread_create");
		}
		/* Start only once B runs on CPU 1 and has been through the region. */
		while (atomic_load(&r.passes) < 1)
			sched_yield();
	}
	if (o.pause_ms)
		wl_sleep_ms(o.pause_ms);

	wl_clock_start(&clk, 0);
	if (o.single) {
		single_toggle_loop(base, o.size, o.iterations);
	} else {
		passes = atomic_load(&r.passes);
		toggle_protection(base, o.size, o.iterations);
		passes = atomic_load(&r.passes) - passes;
	}
	wl_clock_stop(&clk, &loop_ns, &cpu_ns);

	if (!o.single) {
		atomic_store(&r.stop, 1);
		err = pthread_join(thread, NULL);
		if (err) {
			errno = err;
			wl_die("pthread_join");
		}
	}

	printf("mprotect_toggle: mode=%s page_size=%zu size=%" PRIu64 " pages=%" PRIu64
	       " iterations=%" PRIu64 " mprotect_calls=%" PRIu64
	       " prefault=%d reader_passes=%" PRIu64 " loop_ns=%" PRIu64 " cpu_ns=%" PRIu64 "\n",
	       o.single ? "single" : "threads", page_size, o.size, o.size / page_size, o.iterations,
	       2 * o.iterations, o.prefault, passes, loop_ns, cpu_ns);
	return 0;
}
