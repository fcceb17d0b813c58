// SPDX-License-Identifier: GPL-2.0
/*
 * Loading DWARF unwind tables for the BPF walker (bpf/unwind_walk.bpf.h).
 *
 * Each array (rows, page index, rules) is packed file after file, a table in the first hole that
 * holds it (user/core/extent.c hands out the ranges): a chunk shared by two files is read back
 * and rewritten whole, so a small library takes a few hundred bytes, not a chunk of each. Holes
 * are not compacted: a table larger than each of them, though not than their sum, does not fit.
 *
 * A file that does not fit makes room first: the tables of files no process maps any more
 * (the short-lived programs of a long host-wide run) are evicted, and the file waits for their
 * space (see evict()); a file that still does not fit is left out (its frames are walked by
 * frame pointer, and counted in files_budget).
 *
 * A file is named to the BPF side by its device and inode, and opened here through
 * /proc/PID/map_files of a process mapping it: the very file mapped, even in another mount
 * namespace or deleted since.
 */
#include <ctype.h>
#include <dirent.h>
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
#include "core/extent.h"
#include "core/kcaps.h"
#include "sym/sym.h"
#include "core/unwind.h"

struct chunk_array {
	int fd;
	uint32_t elem_size;
	uint32_t per_chunk;
	uint32_t nchunks;
	struct extent_pool pool; /* which elements hold tables */
	unsigned char *buf;	 /* a chunk being written (elem_size * per_chunk bytes) */
};

/* A file whose table is in the arrays, where. */
struct loaded {
	struct unwind_file_key key;
	uint32_t rows_start, nrows;
	uint32_t pages_start, npages; /* page index entries: the table's npages + 1 */
	uint32_t rules_start, nrules;
	uint64_t bytes;
	uint64_t ns; /* when it was loaded */
};

/* A file that did not fit while evicted tables' space was held (evict()): its table, and the
 * file kept open for its symbols, until the space comes back. Its entry in the map of files
 * stays pending meanwhile, so walks do not ask for it again. */
struct deferred {
	struct unwind_file_key key;
	struct cfi_table *t;
	int fd;
	char *name;
};

/* How long the space of an evicted table is held before another file's table goes there: far
 * longer than any walk lasts (see evict()). */
#define UNWIND_GRACE_NS 200000000ULL
/* Evicting reads every process's maps: at most this often. */
#define UNWIND_SWEEP_NS 200000000ULL

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
	struct loaded *loaded;
	size_t nloaded, caploaded;
	struct deferred *deferred;
	size_t ndeferred, capdeferred;
	uint64_t last_sweep; /* ns; 0: never */
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
	extent_pool_init(&a->pool, (uint64_t)nchunks * per_chunk);
	a->buf = calloc(per_chunk, elem_size);
	return a->buf ? 0 : -ENOMEM;
}

static void array_fini(struct chunk_array *a)
{
	extent_pool_fini(&a->pool);
	free(a->buf);
	a->buf = NULL;
}

/* Write n elements at index start. A chunk written only in part is read first: the rest of it
 * is another file's table, rewritten as it was (a walk reading it meanwhile reads the same
 * bytes). */
static int array_write(struct chunk_array *a, uint32_t start, const void *elems, uint64_t n)
{
	const unsigned char *p = elems;
	uint64_t at = start;

	while (n) {
		uint32_t pos = (uint32_t)(at % a->per_chunk);
		uint32_t chunk = (uint32_t)(at / a->per_chunk);
		uint64_t take = a->per_chunk - pos < n ? a->per_chunk - pos : n;

		if (take < a->per_chunk && bpf_map_lookup_elem(a->fd, &chunk, a->buf))
			return -errno;
		memcpy(a->buf + (size_t)pos * a->elem_size, p, (size_t)take * a->elem_size);
		if (bpf_map_update_elem(a->fd, &chunk, a->buf, BPF_ANY))
			return -errno;
		at += take;
		p += take * a->elem_size;
		n -= take;
	}
	return 0;
}

/* Allocate and write n elements; the index of the first. */
static int array_add(struct chunk_array *a, const void *elems, uint64_t n, uint32_t *start)
{
	int err = extent_alloc(&a->pool, n, start);

	if (err)
		return err;
	err = array_write(a, *start, elems, n);
	if (err)
		extent_free(&a->pool, *start, (uint32_t)n, 0); /* never read: no wait */
	return err;
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
	array_fini(&u->rows);
	array_fini(&u->pages);
	array_fini(&u->rules);
	for (size_t i = 0; i < u->ndeferred; i++) {
		cfi_table_free(u->deferred[i].t);
		close(u->deferred[i].fd);
		free(u->deferred[i].name);
	}
	free(u->deferred);
	free(u->loaded);
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

static bool fits(const struct unwind_tables *u, const struct cfi_table *t)
{
	return extent_fits(&u->rows.pool, t->nrows) &&
	       extent_fits(&u->pages.pool, (uint64_t)t->npages + 1) &&
	       extent_fits(&u->rules.pool, t->nrules);
}

static void set_pending(struct unwind_tables *u, const struct unwind_file_key *key)
{
	struct unwind_file f = {.state = UNWIND_FILE_PENDING};

	bpf_map_update_elem(u->files_fd, key, &f, BPF_ANY);
}

/* Put table t of key's file (opened at path, shown as name) into the arrays and hand it to
 * the BPF side: 0, -ENOSPC when it does not fit, or another error. */
static int place(struct unwind_tables *u, struct usyms *us, const struct unwind_file_key *key,
		 const struct cfi_table *t, const char *path, const char *name)
{
	struct unwind_file f = {.state = UNWIND_FILE_READY};
	struct loaded l = {.key = *key};
	int err;

	if (!fits(u, t))
		return -ENOSPC;
	if (u->nloaded == u->caploaded) {
		size_t cap = u->caploaded ? u->caploaded * 2 : 64;
		struct loaded *nl = realloc(u->loaded, cap * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		u->loaded = nl;
		u->caploaded = cap;
	}
	l.nrows = t->nrows;
	l.npages = t->npages + 1;
	l.nrules = t->nrules;
	err = array_add(&u->rows, t->rows, l.nrows, &l.rows_start);
	if (!err) {
		err = array_add(&u->pages, t->page_first, l.npages, &l.pages_start);
		if (err)
			extent_free(&u->rows.pool, l.rows_start, l.nrows, 0);
	}
	if (!err) {
		err = array_add(&u->rules, t->rules, l.nrules, &l.rules_start);
		if (err) {
			extent_free(&u->rows.pool, l.rows_start, l.nrows, 0);
			extent_free(&u->pages.pool, l.pages_start, l.npages, 0);
		}
	}
	if (err)
		return err == -ENOSPC ? -EIO : err;
	f.rows_start = l.rows_start;
	f.pages_start = l.pages_start;
	f.rules_start = l.rules_start;
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
		err = -errno;
		/* Never seen by a walk: its space is free at once. */
		extent_free(&u->rows.pool, l.rows_start, l.nrows, 0);
		extent_free(&u->pages.pool, l.pages_start, l.npages, 0);
		extent_free(&u->rules.pool, l.rules_start, l.nrules, 0);
		return err;
	}
	l.bytes = (uint64_t)l.nrows * sizeof(uint32_t) + (uint64_t)l.npages * sizeof(uint32_t) +
		  (uint64_t)l.nrules * sizeof(struct cfi_rule);
	l.ns = mono_ns();
	u->loaded[u->nloaded++] = l;
	/* Its frames are named by build ID: the symbolizer must know the file by it. After the
	 * table is in use: reading cc1's symbols takes ~30 ms, which walks need not wait for. */
	if (t->build_id_len)
		usyms_add_file_named(us, path, name);
	u->st.files++;
	u->st.rows += t->nrows;
	u->st.rules += t->nrules;
	u->st.pages += t->npages + 1ULL;
	u->st.bytes += l.bytes;
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	const struct unwind_file_key *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The files every process of the host maps executable, sorted; NULL when /proc cannot be
 * read (then nothing is known unmapped). */
static struct unwind_file_key *mapped_files(size_t *n)
{
	struct unwind_file_key *keys = NULL;
	size_t cap = 0;
	struct dirent *de;
	char path[64], line[4096];
	DIR *d = opendir("/proc");

	*n = 0;
	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		FILE *f;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/maps", de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* exited meanwhile, or a kernel thread's */
		while (fgets(line, sizeof(line), f)) {
			unsigned long long start, end, ino;
			unsigned int major, minor;
			char perms[8];

			if (sscanf(line, "%llx-%llx %7s %*x %x:%x %llu", &start, &end, perms,
				   &major, &minor, &ino) != 6 ||
			    perms[2] != 'x' || !ino)
				continue;
			if (*n == cap) {
				size_t ncap = cap ? cap * 2 : 1024;
				struct unwind_file_key *nk = realloc(keys, ncap * sizeof(*nk));

				if (!nk) {
					fclose(f);
					closedir(d);
					free(keys);
					return NULL;
				}
				keys = nk;
				cap = ncap;
			}
			keys[*n] = (struct unwind_file_key){.dev = major << 20 | minor, .ino = ino};
			(*n)++;
		}
		fclose(f);
	}
	closedir(d);
	if (!keys)
		keys = calloc(1, sizeof(*keys)); /* none mapped: still known */
	if (keys && *n)
		qsort(keys, *n, sizeof(*keys), cmp_key);
	return keys;
}

/*
 * Evict the tables of the files no process maps, as the host's maps say now. A file is kept
 * while any process maps it, traced or not (a superset of the traced ones, read from /proc:
 * the mmap records carry build IDs, not inodes, and nothing records an munmap), so a stack
 * walked through a file a target maps never loses its table. A table loaded in the last
 * UNWIND_SWEEP_NS is kept: its file was just met in a process, whose exec or mmap may not show
 * in its maps yet. A process that maps a file after its maps were read has its walks ask for
 * the file again once it is evicted (frames of that moment walked by frame pointer, counted as
 * table_loading).
 *
 * Why the space can be reused safely while walks run on other CPUs: the file's key is deleted
 * from the map of files first, so no walk starting after that finds the table; a walk that
 * looked the entry up before reads its rows for as long as it runs, which is one BPF program
 * run (at most USER_STACK_DEPTH frames of a bounded search each: microseconds), so the space
 * is held UNWIND_GRACE_NS, and only then given to another file's table, by a later pass. Were
 * a walk ever slower than that (preempted on a kernel that lets tracing programs be), it would
 * read another file's rows: every index it computes is bounded by the arrays and the entry it
 * holds, so the worst is a wrong frame, never a fault. (A map-in-map update would wait for
 * running programs, synchronize_rcu(), but costs a map of maps for what time does here.) The
 * per-CPU cache of recent frames (unwind_pcs) holds copies of rules, not indexes into the
 * arrays, so nothing else points into the space. A process mapping the file again later has
 * its walks ask for it, and it is loaded again.
 */
static void evict(struct unwind_tables *u)
{
	uint64_t now = mono_ns();
	struct unwind_file_key *mapped;
	size_t nmapped, kept = 0;

	u->last_sweep = now;
	mapped = mapped_files(&nmapped);
	if (!mapped)
		return;
	for (size_t i = 0; i < u->nloaded; i++) {
		struct loaded *l = &u->loaded[i];

		if (now - l->ns < UNWIND_SWEEP_NS ||
		    bsearch(&l->key, mapped, nmapped, sizeof(*mapped), cmp_key) ||
		    (bpf_map_delete_elem(u->files_fd, &l->key) && errno != ENOENT)) {
			u->loaded[kept++] = *l;
			continue;
		}
		extent_free(&u->rows.pool, l->rows_start, l->nrows, now);
		extent_free(&u->pages.pool, l->pages_start, l->npages, now);
		extent_free(&u->rules.pool, l->rules_start, l->nrules, now);
		u->st.files_evicted++;
		u->st.bytes_evicted += l->bytes;
		u->st.bytes -= l->bytes;
	}
	u->nloaded = kept;
	free(mapped);
}

/* Whether space evicted is held, to be free after the grace period. */
static bool space_held(const struct unwind_tables *u)
{
	return extent_held(&u->rows.pool) || extent_held(&u->pages.pool) ||
	       extent_held(&u->rules.pool);
}

static void release(struct unwind_tables *u)
{
	uint64_t now = mono_ns();

	extent_release(&u->rows.pool, now, UNWIND_GRACE_NS);
	extent_release(&u->pages.pool, now, UNWIND_GRACE_NS);
	extent_release(&u->rules.pool, now, UNWIND_GRACE_NS);
}

/* Whether a table that does not fit may fit later: tables are evicted now (at most every
 * UNWIND_SWEEP_NS), and some space is held until the grace period ends. */
static bool make_room(struct unwind_tables *u)
{
	if (!u->last_sweep || mono_ns() - u->last_sweep >= UNWIND_SWEEP_NS)
		evict(u);
	return space_held(u);
}

static bool is_deferred(const struct unwind_tables *u, const struct unwind_file_key *key)
{
	for (size_t i = 0; i < u->ndeferred; i++)
		if (!memcmp(&u->deferred[i].key, key, sizeof(*key)))
			return true;
	return false;
}

/* Keep t for later (see struct deferred); false when it cannot be kept. */
static bool defer(struct unwind_tables *u, const struct unwind_file_key *key, struct cfi_table *t,
		  const char *path, const char *name)
{
	struct deferred *d;

	if (u->ndeferred == u->capdeferred) {
		size_t cap = u->capdeferred ? u->capdeferred * 2 : 16;
		struct deferred *nd = realloc(u->deferred, cap * sizeof(*nd));

		if (!nd)
			return false;
		u->deferred = nd;
		u->capdeferred = cap;
	}
	d = &u->deferred[u->ndeferred];
	d->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0)
		return false;
	d->name = strdup(name);
	if (!d->name) {
		close(d->fd);
		return false;
	}
	d->key = *key;
	d->t = t;
	u->ndeferred++;
	set_pending(u, key);
	return true;
}

/* Compile the file opened at path (shown as name) and hand its table to the BPF side. */
static void load_file(struct unwind_tables *u, struct usyms *us, const struct unwind_file_key *key,
		      const char *path, const char *name)
{
	uint64_t t0 = mono_ns();
	struct cfi_table *t = NULL;
	int err;

	if (is_deferred(u, key))
		return;
	err = table_of(u, path, &t);
	if (err || !t->nsegs || !t->nrows) {
		if (err == -ENOENT)
			u->st.files_no_cfi++;
		else
			u->st.files_unusable++;
		set_none(u, key);
		goto out;
	}
	err = place(u, us, key, t, path, name);
	if (err == -ENOSPC) {
		release(u);
		err = place(u, us, key, t, path, name);
	}
	if (err == -ENOSPC && make_room(u) && defer(u, key, t, path, name)) {
		t = NULL; /* the deferred entry's now */
	} else if (err == -ENOSPC) {
		u->st.files_budget++;
		set_none(u, key);
	} else if (err) {
		u->st.files_unusable++;
		set_none(u, key);
	}
out:
	cfi_table_free(t);
	u->st.load_ns += mono_ns() - t0;
}

/* Place the deferred tables whose room came back; those that cannot wait longer are left
 * out. */
static void place_deferred(struct unwind_tables *u, struct usyms *us)
{
	size_t kept = 0;

	if (!u->ndeferred)
		return;
	release(u);
	for (size_t i = 0; i < u->ndeferred; i++) {
		struct deferred *d = &u->deferred[i];
		uint64_t t0 = mono_ns();
		char path[64];
		int err;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", d->fd);
		err = place(u, us, &d->key, d->t, path, d->name);
		if (err == -ENOSPC && make_room(u)) {
			u->deferred[kept++] = *d;
			continue;
		}
		if (err == -ENOSPC)
			u->st.files_budget++;
		else if (err)
			u->st.files_unusable++;
		if (err)
			set_none(u, &d->key);
		cfi_table_free(d->t);
		close(d->fd);
		free(d->name);
		u->st.load_ns += mono_ns() - t0;
	}
	u->ndeferred = kept;
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
	return u && (u->head != u->tail || u->ndeferred);
}

void unwind_tables_work(struct unwind_tables *u, struct usyms *us, uint64_t budget_ns)
{
	uint64_t t0 = mono_ns();

	/* Those waiting for evicted tables' space first: they were asked for before. */
	place_deferred(u, us);
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
