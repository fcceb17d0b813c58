/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fault_anatomy - a known number of page faults of each type of memory, then one summary line.
 *
 * In order, each phase in a function of its own (tests find them in stacks):
 *  - touch_anon_pages: writes A pages of private anonymous memory (mmap): A faults on "anon";
 *  - touch_heap_pages: writes B pages the brk heap grew by (sbrk): B faults on "heap";
 *  - read_file_pages (pass 1): reads F pages of a file it wrote, in the page cache: F minor
 *    faults on "file" (or "shmem" when the directory is on tmpfs: the summary says which);
 *  - read_file_pages (pass 2): the same after fsync() and posix_fadvise(POSIX_FADV_DONTNEED)
 *    dropped those pages from the page cache: one major fault for each page mincore() shows
 *    evicted (file_evicted=; on ramfs or tmpfs nothing is, and they are minor again);
 *  - write_shmem_pages: writes S pages of a memfd mapped shared: S faults on "shmem";
 *  - touch_cow_pages: the parent writes C pages, forks, and the child writes the same C pages
 *    (write-protected by fork(): C copy-on-write faults on "cow"; the parent's C first writes
 *    are "anon");
 *  - touch_hugetlb_pages: writes H huge pages of a MAP_HUGETLB mapping, where the kernel has H
 *    free huge pages (hugetlb=skipped:REASON otherwise).
 *
 * One fault per page: THP is off on the anonymous ranges, and every file page is a one-page
 * mapping of its own with MADV_RANDOM, so neither fault-around (which maps the neighbours
 * that are already cached, within the mapping) nor read-ahead (which would turn all but the
 * first pass-2 read into a minor fault) changes the count.
 *
 * Each phase's getrusage() minor/major fault deltas are printed too (rusage_*): the kernel's
 * own accounting of the same faults (mm_account_fault() -> current->min_flt/maj_flt), which
 * a test can use as an oracle beside the arithmetic. The child's faults are its own:
 * rusage_cow_* is RUSAGE_CHILDREN's delta around the wait.
 */
#define _GNU_SOURCE
#define WL_NAME "fault_anatomy"
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include "wl_common.h"

#define TMPFS_MAGIC_ 0x01021994
#define RAMFS_MAGIC_ 0x858458f6

struct opts {
	uint64_t anon, heap, file, shmem, cow, hugetlb;
	const char *dir;
};

static size_t page_size;

/* The parts of --help around the option lines. */
static const struct wl_usage usage = {
	.about = "Take a known number of page faults on each type of memory, then print one\n"
		 "summary line.\n",
	.notes = "Summary: fault_anatomy: page_size= file_fs= file_type= file_evicted=\n"
		 "hugetlb= expected_anon= expected_heap= expected_file_minor=\n"
		 "expected_file_major= expected_shmem= expected_cow= expected_hugetlb=\n"
		 "rusage_<phase>_minor= rusage_<phase>_major= loop_ns= cpu_ns=\n",
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	uint64_t max = wl_max_pages(page_size);
	const struct wl_option options[] = {
		WL_OPT_U64("anon", 'a', "A", &o->anon, 0, max,
			   "write A pages of private anonymous memory (default 0)"),
		WL_OPT_U64("heap", 'b', "B", &o->heap, 0, max,
			   "grow the brk heap by B pages and write them (default 0)"),
		/* one mapping per page: stay well under vm.max_map_count (65530) */
		WL_OPT_U64("file", 'f', "F", &o->file, 0, 30000,
			   "read F pages of a file in the page cache (minor), then\n"
			   "again after dropping them from it (major) (default 0)"),
		WL_OPT_U64("shmem", 's', "S", &o->shmem, 0, max,
			   "write S pages of a memfd mapped shared (default 0)"),
		WL_OPT_U64("cow", 'c', "C", &o->cow, 0, max,
			   "write C pages, fork, write them in the child: C\n"
			   "copy-on-write faults (default 0)"),
		WL_OPT_U64("hugetlb", 'H', "H", &o->hugetlb, 0, 1u << 20,
			   "write H huge pages of MAP_HUGETLB memory, if the kernel\n"
			   "has H free ones (default 0)"),
		WL_OPT_STR("dir", 'd', "DIR", &o->dir, "where to write the file (default .)"),
		WL_OPT_END,
	};

	*o = (struct opts){.dir = "."};
	wl_parse_options(argc, argv, options, &usage);
}

/* This process's (or its waited-for children's) minor and major faults so far. */
static void rusage_faults(int who, uint64_t *minor, uint64_t *major)
{
	struct rusage ru;

	if (getrusage(who, &ru))
		wl_die("getrusage");
	*minor = (uint64_t)ru.ru_minflt;
	*major = (uint64_t)ru.ru_majflt;
}

struct phase {
	uint64_t min0, maj0, minor, major;
};

static void phase_begin(struct phase *p, int who)
{
	rusage_faults(who, &p->min0, &p->maj0);
}

static void phase_end(struct phase *p, int who)
{
	uint64_t mn, mj;

	rusage_faults(who, &mn, &mj);
	p->minor = mn - p->min0;
	p->major = mj - p->maj0;
}

static WL_NOINLINE void touch_anon_pages(char *base, uint64_t pages)
{
	wl_write_pages(base, pages, page_size, 1);
}

/* Each phase writes its own value, so that identical code folding keeps them apart. */
static WL_NOINLINE void touch_heap_pages(char *base, uint64_t pages)
{
	wl_write_pages(base, pages, page_size, 3);
}

static WL_NOINLINE void write_shmem_pages(char *base, uint64_t pages)
{
	wl_write_pages(base, pages, page_size, 4);
}

static WL_NOINLINE void touch_hugetlb_pages(char *base, uint64_t pages, size_t huge)
{
	wl_write_pages(base, pages, huge, 1);
}

/* One read per page, each page in a one-page mapping of its own (no fault-around). */
static WL_NOINLINE uint64_t read_file_pages(char **maps, uint64_t pages)
{
	uint64_t sum = 0;

	for (uint64_t i = 0; i < pages; i++)
		sum += ((volatile char *)maps[i])[0];
	return sum;
}

static void map_file_pages(int fd, char **maps, uint64_t pages)
{
	for (uint64_t i = 0; i < pages; i++) {
		maps[i] = mmap(NULL, page_size, PROT_READ, MAP_PRIVATE, fd, (off_t)(i * page_size));
		if (maps[i] == MAP_FAILED)
			wl_die("mmap of file page %" PRIu64, i);
		if (madvise(maps[i], page_size, MADV_RANDOM))
			wl_die("madvise(MADV_RANDOM)");
	}
}

static void unmap_file_pages(char **maps, uint64_t pages)
{
	for (uint64_t i = 0; i < pages; i++)
		munmap(maps[i], page_size);
}

/* Pages of the file's first pages not in the page cache. */
static uint64_t evicted_pages(int fd, uint64_t pages)
{
	unsigned char *vec = calloc(pages, 1);
	uint64_t n = 0;
	void *m;

	if (!vec)
		wl_die("calloc");
	m = mmap(NULL, pages * page_size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		wl_die("mmap for mincore");
	if (mincore(m, pages * page_size, vec))
		wl_die("mincore");
	for (uint64_t i = 0; i < pages; i++)
		n += !(vec[i] & 1);
	munmap(m, pages * page_size);
	free(vec);
	return n;
}

struct file_result {
	const char *fs, *type;
	uint64_t evicted;
	struct phase minor, major;
};

static void file_phases(const struct opts *o, struct file_result *r)
{
	char path[4096];
	char **maps;
	struct statfs sf;
	uint32_t magic;
	char *buf;
	int fd;

	r->fs = "none";
	r->type = "file";
	if (!o->file)
		return;
	snprintf(path, sizeof(path), "%s/fault_anatomy.XXXXXX", o->dir);
	fd = mkstemp(path);
	if (fd < 0)
		wl_die("mkstemp in %s", o->dir);
	unlink(path);
	if (fstatfs(fd, &sf))
		wl_die("fstatfs");
	/* The magic numbers are 32-bit; f_type is a signed int on 32-bit targets. */
	magic = (uint32_t)sf.f_type;
	r->fs = magic == TMPFS_MAGIC_ ? "tmpfs" : magic == RAMFS_MAGIC_ ? "ramfs" : "other";
	if (magic == TMPFS_MAGIC_)
		r->type = "shmem";
	buf = malloc(page_size);
	maps = calloc(o->file, sizeof(*maps));
	if (!buf || !maps)
		wl_die("malloc");
	memset(buf, 'x', page_size);
	for (uint64_t i = 0; i < o->file; i++)
		if (write(fd, buf, page_size) != (ssize_t)page_size)
			wl_die("write");
	/* Clean pages: the second pass's POSIX_FADV_DONTNEED drops only clean ones. */
	if (fsync(fd))
		wl_die("fsync");
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);

	map_file_pages(fd, maps, o->file);
	phase_begin(&r->minor, RUSAGE_SELF);
	read_file_pages(maps, o->file);
	phase_end(&r->minor, RUSAGE_SELF);
	unmap_file_pages(maps, o->file); /* mapped pages are not dropped */

	if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		wl_fail("posix_fadvise(POSIX_FADV_DONTNEED) failed");
	r->evicted = evicted_pages(fd, o->file);
	map_file_pages(fd, maps, o->file);
	phase_begin(&r->major, RUSAGE_SELF);
	read_file_pages(maps, o->file);
	phase_end(&r->major, RUSAGE_SELF);
	unmap_file_pages(maps, o->file);
	free(maps);
	free(buf);
	close(fd);
}

static void shmem_phase(uint64_t pages, struct phase *p)
{
	char *m;
	int fd;

	if (!pages)
		return;
	fd = memfd_create("fault_anatomy", MFD_CLOEXEC);
	if (fd < 0)
		wl_die("memfd_create");
	if (ftruncate(fd, (off_t)(pages * page_size)))
		wl_die("ftruncate");
	m = mmap(NULL, pages * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		wl_die("mmap of the memfd");
	wl_no_thp(m, pages * page_size);
	phase_begin(p, RUSAGE_SELF);
	write_shmem_pages(m, pages);
	phase_end(p, RUSAGE_SELF);
	munmap(m, pages * page_size);
	close(fd);
}

static WL_NOINLINE void touch_cow_pages(char *base, uint64_t pages)
{
	wl_write_pages(base, pages, page_size, 2);
}

static void cow_phase(uint64_t pages, struct phase *parent, struct phase *child)
{
	char *base;
	int status;
	pid_t pid;

	if (!pages)
		return;
	base = wl_map_anon(pages * page_size);
	phase_begin(parent, RUSAGE_SELF);
	touch_anon_pages(base, pages);
	phase_end(parent, RUSAGE_SELF);
	fflush(NULL);
	phase_begin(child, RUSAGE_CHILDREN);
	pid = fork();
	if (pid < 0)
		wl_die("fork");
	if (pid == 0) {
		touch_cow_pages(base, pages);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0)
		wl_die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		wl_fail("the child failed (status 0x%x)", status);
	/* The child's whole life: its fork-time copy-on-write faults on the stack and libc's
	 * data, its exit, and the C pages. */
	phase_end(child, RUSAGE_CHILDREN);
	munmap(base, pages * page_size);
}

/* The huge page size, 0 when /proc/meminfo does not say (no hugetlb). */
static size_t huge_page_size(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Hugepagesize: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

static const char *hugetlb_phase(uint64_t pages, struct phase *p)
{
	size_t huge = huge_page_size();
	char *m;

	if (!pages)
		return "off";
	if (!huge)
		return "skipped:no_hugetlb_in_kernel";
	m = mmap(NULL, pages * huge, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (m == MAP_FAILED)
		return errno == ENOMEM ? "skipped:no_free_huge_pages" : "skipped:mmap_failed";
	phase_begin(p, RUSAGE_SELF);
	touch_hugetlb_pages(m, pages, huge);
	phase_end(p, RUSAGE_SELF);
	munmap(m, pages * huge);
	return "done";
}

int main(int argc, char **argv)
{
	struct phase anon = {0}, heap = {0}, shmem = {0}, cow_parent = {0}, cow_child = {0},
		     huge = {0};
	struct file_result file = {0};
	uint64_t loop_ns = 0, cpu_ns = 0;
	struct wl_clock clk;
	const char *hugetlb;
	char *a = NULL, *b = NULL;
	struct opts o;

	page_size = wl_page_size();
	parse_args(argc, argv, &o);
	if (o.anon)
		a = wl_map_anon(o.anon * page_size);
	if (o.heap) {
		/* Page-align the break first: the heap's B pages are then exactly B new ones. */
		uintptr_t cur = (uintptr_t)sbrk(0);
		uintptr_t pad = (page_size - cur % page_size) % page_size;

		if (sbrk((intptr_t)pad) == (void *)-1)
			wl_die("sbrk");
		b = sbrk((intptr_t)(o.heap * page_size));
		if (b == (void *)-1)
			wl_die("sbrk of %" PRIu64 " pages", o.heap);
		wl_no_thp(b, o.heap * page_size);
	}
	fflush(NULL);

	wl_clock_start(&clk, 1);
	phase_begin(&anon, RUSAGE_SELF);
	touch_anon_pages(a, o.anon);
	phase_end(&anon, RUSAGE_SELF);
	phase_begin(&heap, RUSAGE_SELF);
	touch_heap_pages(b, o.heap);
	phase_end(&heap, RUSAGE_SELF);
	file_phases(&o, &file);
	shmem_phase(o.shmem, &shmem);
	cow_phase(o.cow, &cow_parent, &cow_child);
	hugetlb = hugetlb_phase(o.hugetlb, &huge);
	wl_clock_stop(&clk, &loop_ns, &cpu_ns);

	printf("fault_anatomy: page_size=%zu file_fs=%s file_type=%s file_evicted=%" PRIu64
	       " hugetlb=%s expected_anon=%" PRIu64 " expected_heap=%" PRIu64
	       " expected_file_minor=%" PRIu64 " expected_file_major=%" PRIu64
	       " expected_shmem=%" PRIu64 " expected_cow=%" PRIu64 " expected_hugetlb=%" PRIu64,
	       page_size, file.fs, file.type, file.evicted, hugetlb, o.anon + o.cow, o.heap,
	       2 * o.file - file.evicted, file.evicted, o.shmem, o.cow,
	       strcmp(hugetlb, "done") ? 0 : o.hugetlb);
#define RU(name, p)                                                                                \
	printf(" rusage_" name "_minor=%" PRIu64 " rusage_" name "_major=%" PRIu64, (p).minor,     \
	       (p).major)
	RU("anon", anon);
	RU("heap", heap);
	RU("file1", file.minor);
	RU("file2", file.major);
	RU("shmem", shmem);
	RU("cow_parent", cow_parent);
	RU("cow_child", cow_child);
	RU("hugetlb", huge);
#undef RU
	printf(" loop_ns=%" PRIu64 " cpu_ns=%" PRIu64 "\n", loop_ns, cpu_ns);
	return 0;
}
