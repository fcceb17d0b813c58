// SPDX-License-Identifier: GPL-2.0
/*
 * Loading DWARF unwind tables for the BPF walker (bpf/unwind_walk.bpf.h).
 *
 * Each array (rows, page index, rules) is filled from its start, file after file, with no gap:
 * the chunk being filled is kept here and rewritten whole as it grows, so a small library
 * takes a few hundred bytes, not a chunk of each. Nothing is ever freed: a run's tables only
 * grow, up to the budget, and a file that does not fit is left out (its frames are walked by
 * frame pointer, and counted in files_budget).
 *
 * A file is named to the BPF side by its device and inode, and opened here through
 * /proc/PID/map_files of a process mapping it: the very file mapped, even in another mount
 * namespace or deleted since.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cfi/cfi.h"
#include "cfi/cfi_cache.h"
#include "core/kcaps.h"
#include "sym/sym.h"
#include "core/unwind.h"

struct chunk_array {
	int fd;
	uint32_t elem_size;
	uint32_t per_chunk;
	uint32_t nchunks;
	uint64_t used;	     /* elements */
	unsigned char *fill; /* the chunk being filled (elem_size * per_chunk bytes) */
};

/* A mapping whose file's table is wanted: loaded in turn, a time budget a pass (the run's loop
 * keeps reading the ring meanwhile). */
struct wanted {
	int pid;
	bool requested; /* by a walk (its pending entry is ours to settle) */
	struct unwind_file_key key;
	uint64_t start, end;
};

#define WANTED_MAX 4096

struct unwind_tables {
	int files_fd;
	struct wanted *queue; /* WANTED_MAX entries: [head, tail) */
	uint32_t head, tail;
	const char *cache_dir; /* NULL: no cache */
	struct chunk_array rows, pages, rules;
	struct unwind_stats st;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void unwind_budget(int mb, uint32_t *row_chunks, uint32_t *page_chunks, uint32_t *rule_chunks)
{
	uint64_t bytes = (uint64_t)(mb > 0 ? mb : 1) << 20;

	/* Rows are nearly all of it: a rule is shared by thousands of rows (cc1: 478,579 rows,
	 * ~500 rules), a page entry covers 64 KiB of code. */
	*row_chunks = (uint32_t)(bytes * 85 / 100 / sizeof(struct unwind_row_chunk));
	*page_chunks = (uint32_t)(bytes * 5 / 100 / sizeof(struct unwind_page_chunk));
	*rule_chunks = (uint32_t)(bytes * 10 / 100 / sizeof(struct unwind_rule_chunk));
	if (!*row_chunks)
		*row_chunks = 1;
	if (!*page_chunks)
		*page_chunks = 1;
	if (!*rule_chunks)
		*rule_chunks = 1;
}

static int array_init(struct chunk_array *a, int fd, uint32_t elem_size, uint32_t per_chunk,
		      uint32_t nchunks)
{
	a->fd = fd;
	a->elem_size = elem_size;
	a->per_chunk = per_chunk;
	a->nchunks = nchunks;
	a->used = 0;
	a->fill = calloc(per_chunk, elem_size);
	return a->fill ? 0 : -ENOMEM;
}

static bool array_fits(const struct chunk_array *a, uint64_t n)
{
	return a->used + n <= (uint64_t)a->nchunks * a->per_chunk;
}

/* Append n elements; the index of the first. Its room was checked (array_fits()). */
static int array_append(struct chunk_array *a, const void *elems, uint64_t n, uint32_t *start)
{
	const unsigned char *p = elems;

	*start = (uint32_t)a->used;
	while (n) {
		uint32_t pos = (uint32_t)(a->used % a->per_chunk);
		uint32_t chunk = (uint32_t)(a->used / a->per_chunk);
		uint64_t take = a->per_chunk - pos < n ? a->per_chunk - pos : n;

		if (pos == 0)
			memset(a->fill, 0, (size_t)a->per_chunk * a->elem_size);
		memcpy(a->fill + (size_t)pos * a->elem_size, p, (size_t)take * a->elem_size);
		if (bpf_map_update_elem(a->fd, &chunk, a->fill, BPF_ANY))
			return -errno;
		a->used += take;
		p += take * a->elem_size;
		n -= take;
	}
	return 0;
}

struct unwind_tables *unwind_tables_new(int files_fd, int rows_fd, int pages_fd, int rules_fd,
					uint32_t row_chunks, uint32_t page_chunks,
					uint32_t rule_chunks, const char *cache_dir)
{
	struct unwind_tables *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->files_fd = files_fd;
	u->cache_dir = cache_dir;
	u->queue = calloc(WANTED_MAX, sizeof(*u->queue));
	if (!u->queue) {
		free(u);
		return NULL;
	}
	if (array_init(&u->rows, rows_fd, sizeof(uint32_t), UNWIND_ROW_CHUNK, row_chunks) ||
	    array_init(&u->pages, pages_fd, sizeof(uint32_t), UNWIND_PAGE_CHUNK, page_chunks) ||
	    array_init(&u->rules, rules_fd, sizeof(struct cfi_rule), UNWIND_RULE_CHUNK,
		       rule_chunks)) {
		unwind_tables_free(u);
		return NULL;
	}
	u->st.budget_bytes = (uint64_t)row_chunks * sizeof(struct unwind_row_chunk) +
			     (uint64_t)page_chunks * sizeof(struct unwind_page_chunk) +
			     (uint64_t)rule_chunks * sizeof(struct unwind_rule_chunk);
	return u;
}

void unwind_tables_free(struct unwind_tables *u)
{
	if (!u)
		return;
	free(u->rows.fill);
	free(u->pages.fill);
	free(u->rules.fill);
	free(u->queue);
	free(u);
}

const struct unwind_stats *unwind_tables_stats(const struct unwind_tables *u)
{
	return &u->st;
}

/* Whether the BPF side has key's file loaded, or given up on it (not pending, not absent). */
static bool settled(const struct unwind_tables *u, const struct unwind_file_key *key)
{
	struct unwind_file f;

	return bpf_map_lookup_elem(u->files_fd, key, &f) == 0 && f.state != UNWIND_FILE_PENDING;
}

static void set_none(struct unwind_tables *u, const struct unwind_file_key *key)
{
	struct unwind_file f = {.state = UNWIND_FILE_NONE};

	bpf_map_update_elem(u->files_fd, key, &f, BPF_ANY);
}

/* The table of the file at path: from the cache by its build ID, else compiled (and cached). */
static int table_of(struct unwind_tables *u, const char *path, struct cfi_table **t)
{
	unsigned char id[CFI_BUILD_ID_MAX];
	uint16_t machine = 0;
	int idlen = u->cache_dir ? cfi_file_build_id(path, id, &machine) : -ENODATA;
	int err;

	if (idlen > 0 && cfi_cache_load(u->cache_dir, id, (uint32_t)idlen, machine, t) == 0) {
		u->st.cache_hits++;
		return 0;
	}
	err = cfi_table_from_file(path, t);
	if (!err && idlen > 0 && (*t)->build_id_len && cfi_cache_store(u->cache_dir, *t) == 0)
		u->st.cache_stores++;
	return err;
}

/* Compile the file opened at path (shown as name) and hand its table to the BPF side. */
static void load_file(struct unwind_tables *u, struct usyms *us, const struct unwind_file_key *key,
		      const char *path, const char *name)
{
	struct unwind_file f = {.state = UNWIND_FILE_READY};
	uint64_t t0 = mono_ns();
	struct cfi_table *t = NULL;
	int err;

	err = table_of(u, path, &t);
	if (err || !t->nsegs || !t->nrows) {
		if (err == -ENOENT)
			u->st.files_no_cfi++;
		else
			u->st.files_unusable++;
		set_none(u, key);
		goto out;
	}
	if (!array_fits(&u->rows, t->nrows) || !array_fits(&u->pages, (uint64_t)t->npages + 1) ||
	    !array_fits(&u->rules, t->nrules)) {
		u->st.files_budget++;
		set_none(u, key);
		goto out;
	}
	if (array_append(&u->rows, t->rows, t->nrows, &f.rows_start) ||
	    array_append(&u->pages, t->page_first, (uint64_t)t->npages + 1, &f.pages_start) ||
	    array_append(&u->rules, t->rules, t->nrules, &f.rules_start)) {
		u->st.files_unusable++;
		set_none(u, key);
		goto out;
	}
	f.base = t->base;
	f.nsegs = t->nsegs;
	for (uint32_t i = 0; i < t->nsegs && i < UNWIND_MAX_SEGMENTS; i++) {
		f.seg[i].off = t->segs[i].off;
		f.seg[i].end = t->segs[i].end;
		f.seg[i].delta = t->segs[i].delta;
	}
	f.nrows = t->nrows;
	f.npages = t->npages;
	f.nrules = t->nrules;
	if (t->build_id_len) {
		f.has_build_id = 1;
		memcpy(f.build_id, t->build_id, sizeof(f.build_id));
	}
	if (bpf_map_update_elem(u->files_fd, key, &f, BPF_ANY)) {
		u->st.files_unusable++;
		goto out;
	}
	/* Its frames are named by build ID: the symbolizer must know the file by it. After the
	 * table is in use: reading cc1's symbols takes ~30 ms, which walks need not wait for. */
	if (t->build_id_len)
		usyms_add_file_named(us, path, name);
	u->st.files++;
	u->st.rows += t->nrows;
	u->st.rules += t->nrules;
	u->st.pages += t->npages + 1ULL;
	u->st.bytes = u->rows.used * sizeof(uint32_t) + u->pages.used * sizeof(uint32_t) +
		      u->rules.used * sizeof(struct cfi_rule);
out:
	cfi_table_free(t);
	u->st.load_ns += mono_ns() - t0;
}

/* A mapping of pid, opened as /proc/PID/map_files/START-END, named as the process sees it. */
static void load_mapping(struct unwind_tables *u, struct usyms *us, int pid,
			 const struct unwind_file_key *key, uint64_t start, uint64_t end,
			 bool requested)
{
	char path[96], name[4096];
	struct stat st;
	ssize_t n;

	if (settled(u, key))
		return;
	/* No mapping named: the process's executable, asked for at its exec. */
	if (!start && !end)
		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	else
		snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, start,
			 end);
	n = readlink(path, name, sizeof(name) - 1);
	if (n <= 0 || stat(path, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != key->ino) {
		/* Gone (or its pid reused): a later walk in a living process asks again. */
		if (requested) {
			u->st.files_gone++;
			bpf_map_delete_elem(u->files_fd, key);
		}
		return;
	}
	name[n] = '\0';
	load_file(u, us, key, path, name);
}

/* Queue a mapping's file; a request that finds the queue full is forgotten (its pending
 * entry deleted: a later walk asks again). */
static void want(struct unwind_tables *u, int pid, const struct unwind_file_key *key,
		 uint64_t start, uint64_t end, bool requested)
{
	struct wanted *w;

	for (uint32_t i = u->head; i != u->tail; i = (i + 1) % WANTED_MAX)
		if (!memcmp(&u->queue[i].key, key, sizeof(*key)))
			return;
	if ((u->tail + 1) % WANTED_MAX == u->head) {
		if (requested)
			bpf_map_delete_elem(u->files_fd, key);
		return;
	}
	w = &u->queue[u->tail];
	w->pid = pid;
	w->requested = requested;
	w->key = *key;
	w->start = start;
	w->end = end;
	u->tail = (u->tail + 1) % WANTED_MAX;
}

void unwind_tables_request(struct unwind_tables *u, const struct unwind_file_record *r)
{
	if (r->end > r->start || (!r->start && !r->end))
		want(u, (int)r->tgid, &r->key, r->start, r->end, true);
}

bool unwind_tables_busy(const struct unwind_tables *u)
{
	return u && u->head != u->tail;
}

void unwind_tables_work(struct unwind_tables *u, struct usyms *us, uint64_t budget_ns)
{
	uint64_t t0 = mono_ns();

	/* At least one a pass, however long it takes (cc1: ~140 ms), so that the queue drains. */
	while (u->head != u->tail) {
		struct wanted w = u->queue[u->head];

		u->head = (u->head + 1) % WANTED_MAX;
		load_mapping(u, us, w.pid, &w.key, w.start, w.end, w.requested);
		if (budget_ns && mono_ns() - t0 >= budget_ns)
			break;
	}
}

void unwind_tables_add_pid(struct unwind_tables *u, int pid)
{
	char path[64], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, ino;
		unsigned int major, minor;
		char perms[8];
		struct unwind_file_key key = {0};

		if (sscanf(line, "%llx-%llx %7s %*x %x:%x %llu", &start, &end, perms, &major,
			   &minor, &ino) != 6 ||
		    perms[2] != 'x' || !ino)
			continue;
		key.dev = major << 20 | minor;
		key.ino = ino;
		want(u, pid, &key, start, end, false);
	}
	fclose(f);
}

void unwind_tables_add_path(struct unwind_tables *u, struct usyms *us, const char *path)
{
	struct unwind_file_key key = {0};
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return;
	key.dev = major(st.st_dev) << 20 | minor(st.st_dev);
	key.ino = st.st_ino;
	if (!settled(u, &key))
		load_file(u, us, &key, path, path);
}

void unwind_tables_add_runtime(struct unwind_tables *u, struct usyms *us)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/'), *base, *nl;

		if (!path || !strstr(line, " r-xp "))
			continue;
		nl = strchr(path, '\n');
		if (nl)
			*nl = '\0';
		base = strrchr(path, '/') + 1;
		if (!strncmp(base, "libc.so", 7) || !strncmp(base, "ld-linux", 8))
			unwind_tables_add_path(u, us, path);
	}
	fclose(f);
}

void unwind_tables_add_command(struct unwind_tables *u, struct usyms *us, const char *argv0)
{
	const char *env = getenv("PATH"), *p;
	char path[4096];

	if (!argv0 || !*argv0)
		return;
	if (strchr(argv0, '/')) {
		unwind_tables_add_path(u, us, argv0);
		return;
	}
	for (p = env ? env : "/usr/local/bin:/usr/bin:/bin"; p && *p;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);

		if (len && len < sizeof(path) - 2 - strlen(argv0)) {
			snprintf(path, sizeof(path), "%.*s/%s", (int)len, p, argv0);
			if (access(path, X_OK) == 0) {
				unwind_tables_add_path(u, us, path);
				return;
			}
		}
		p = colon ? colon + 1 : NULL;
	}
}

const char *unwind_why_not_dwarf(const struct kcaps *k)
{
#if !defined(__x86_64__) && !defined(__aarch64__)
	(void)k;
	return "DWARF tables are built for x86_64 and arm64 code (powerpc's ABI keeps a back "
	       "chain, "
	       "which the kernel's walk follows)";
#else
	/* The walk reads the registers with direct loads, loops with bpf_loop() and finds the
	 * mappings with bpf_find_vma() (bpf/unwind_walk.bpf.h). */
	static const enum bpf_feature needs[] = {BF_TASK_PT_REGS, BF_CALLBACKS, BF_LOOP,
						 BF_FIND_VMA};
	static char why[160];

	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
		if (!k->feat[needs[i]]) {
			snprintf(why, sizeof(why), "no %s: %s", bpf_feature_what(needs[i]),
				 k->feat_why[needs[i]]);
			return why;
		}
	}
	return NULL;
#endif
}
