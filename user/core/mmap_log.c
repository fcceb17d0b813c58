// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's mmap and exec records (see mmap_log.h). An image is named by the exec hook's
 * record of it (process and time: after the kernel mapped the binary and its loader, before
 * the loader maps the libraries); it spans, in the process's records, from the COMM record of
 * its exec to the next one. The mapping of an instruction is the last code mapping of the
 * image that covers it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/perf_event.h>
#include <bpf/libbpf.h>

#include "core/mmap_log.h"
#include "lib/keyed_table.h"
#include "lib/util.h"

/* At most this many records are kept (~80 bytes each, paths apart); more are dropped and
 * counted lost. */
#define MMAP_LOG_MAX ((size_t)64 * 1024)

enum { ENT_EXEC, ENT_MAP };

struct mlog_ent {
	uint64_t ns;
	uint64_t start, len, pgoff;
	uint32_t pid;
	uint8_t kind;
	uint8_t has_id;
	uint8_t file_read; /* mmap_log_read_files() has registered its file */
	unsigned char id[20];
	char *path;
};

struct mlog_exec {
	uint64_t ns;
	uint32_t tgid;
	uint32_t parent_tgid; /* a fork's (REC_FORK): 0 for an exec */
	int maps_key;	      /* seeded: running before the records, its maps snapshot's key */
	uint64_t parent_ns;
};

/* A file of records forgotten: by its build ID, the path to read its symbols from; or a file
 * without one settled by its path (path_id()). */
struct mlog_file {
	unsigned char id[24]; /* the build ID, padded to whole words (the table's key) */
	char *path;
	bool file_read;
};

struct mmap_log {
	struct perf_buffer *pb; /* NULL: fed by hand (mmap_log_new()) */
	struct mlog_ent *ents;
	size_t n, cap;
	struct mlog_exec *execs;
	size_t nexec, capexec;
	bool sorted, execs_sorted;
	uint64_t lost;
	uint64_t forgotten; /* records and images of processes gone that nothing needed */
	size_t next_forget; /* records or images at which to forget again */
	uint32_t *spared;   /* processes refused at the last pass, sorted: forgotten at the next */
	size_t nspared;
	struct keyed_table files; /* struct mlog_file: files of records forgotten or settled */
};

/* Forgetting begins at 3/4 of the cap: room for a few seconds of records meanwhile. */
#define MMAP_LOG_FORGET_AT (MMAP_LOG_MAX / 4 * 3)

/* The sample_id trailer (sample_type TID | TIME): pid, tid, time. */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
};

static struct mlog_ent *new_ent(struct mmap_log *l)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		struct mlog_ent *e;

		if (l->n >= MMAP_LOG_MAX)
			return NULL;
		e = realloc(l->ents, cap * sizeof(*e));
		if (!e)
			return NULL;
		l->ents = e;
		l->cap = cap;
	}
	l->sorted = false;
	memset(&l->ents[l->n], 0, sizeof(l->ents[l->n]));
	return &l->ents[l->n++];
}

void mmap_log_add_exec(struct mmap_log *l, uint32_t pid, uint64_t ns)
{
	struct mlog_ent *e = new_ent(l);

	if (!e) {
		l->lost++;
		return;
	}
	e->kind = ENT_EXEC;
	e->pid = pid;
	e->ns = ns;
}

void mmap_log_add_map(struct mmap_log *l, uint32_t pid, uint64_t ns, uint64_t start, uint64_t len,
		      uint64_t pgoff, const unsigned char *build_id, char *path)
{
	struct mlog_ent *e = new_ent(l);

	if (!e) {
		free(path);
		l->lost++;
		return;
	}
	e->kind = ENT_MAP;
	e->pid = pid;
	e->ns = ns;
	e->start = start;
	e->len = len;
	e->pgoff = pgoff;
	if (build_id) {
		e->has_id = 1;
		memcpy(e->id, build_id, sizeof(e->id));
	}
	e->path = path;
}

static enum bpf_perf_event_ret on_event(void *ctx, int cpu, struct perf_event_header *h)
{
	struct mmap_log *l = ctx;
	const struct sample_id *sid;

	(void)cpu;
	if (h->size < sizeof(*h) + sizeof(*sid))
		return LIBBPF_PERF_EVENT_CONT;
	sid = (const void *)((const char *)h + h->size - sizeof(*sid));
	if (h->type == PERF_RECORD_LOST) {
		const uint64_t *v = (const void *)(h + 1);

		l->lost += v[1];
	} else if (h->type == PERF_RECORD_COMM && (h->misc & PERF_RECORD_MISC_COMM_EXEC)) {
		mmap_log_add_exec(l, sid->pid, sid->time);
	} else if (h->type == PERF_RECORD_MMAP2) {
		const struct {
			uint32_t pid, tid;
			uint64_t addr, len, pgoff;
			uint8_t build_id_size, r1;
			uint16_t r2;
			unsigned char build_id[20];
			uint32_t prot, flags;
			char filename[];
		} *m = (const void *)(h + 1);
		const char *end = (const char *)sid;
		bool has_id = (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && m->build_id_size <= 20;
		unsigned char id[20] = {0};
		char *path;

		if ((const char *)m->filename >= end)
			return LIBBPF_PERF_EVENT_CONT;
		path = strndup(m->filename, strnlen(m->filename, (size_t)(end - m->filename)));
		if (has_id)
			memcpy(id, m->build_id, m->build_id_size);
		mmap_log_add_map(l, m->pid, sid->time, m->addr, m->len, m->pgoff,
				 has_id ? id : NULL, path);
	}
	return LIBBPF_PERF_EVENT_CONT;
}

struct mmap_log *mmap_log_new(void)
{
	struct mmap_log *l = calloc(1, sizeof(*l));

	if (l) {
		l->next_forget = MMAP_LOG_FORGET_AT;
		l->files = KEYED_TABLE(struct mlog_file, sizeof(((struct mlog_file *)0)->id),
				       MMAP_LOG_MAX);
	}
	return l;
}

struct mmap_log *mmap_log_open(int map_fd, bool build_ids, int *err)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.sample_id_all = 1,
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC, /* the BPF programs' bpf_ktime_get_ns() */
		.build_id = build_ids,
		/* Read every 50 ms, never woken: a wakeup is an irq_work, a self-IPI, per record.
		 */
		.watermark = 1,
		.wakeup_watermark = 48 * 4096,
	};
	struct mmap_log *l = mmap_log_new();

	if (!l) {
		*err = -ENOMEM;
		return NULL;
	}
	/* 64 pages a CPU: an exec maps ~10 code regions, ~150 bytes a record, read every 50 ms. */
	l->pb = perf_buffer__new_raw(map_fd, 64, &attr, on_event, l, NULL);
	if (!l->pb) {
		*err = -errno;
		free(l);
		return NULL;
	}
	return l;
}

void mmap_log_consume(struct mmap_log *l)
{
	if (l && l->pb)
		perf_buffer__consume(l->pb);
}

static void add_image(struct mmap_log *l, struct mlog_exec x)
{
	if (!l)
		return;
	if (l->nexec == l->capexec) {
		size_t cap = l->capexec ? l->capexec * 2 : 256;
		struct mlog_exec *x;

		if (l->nexec >= MMAP_LOG_MAX || !(x = realloc(l->execs, cap * sizeof(*x)))) {
			l->lost++;
			return;
		}
		l->execs = x;
		l->capexec = cap;
	}
	l->execs[l->nexec++] = x;
	l->execs_sorted = false;
}

void mmap_log_exec(struct mmap_log *l, uint32_t tgid, uint64_t ns)
{
	add_image(l, (struct mlog_exec){.ns = ns, .tgid = tgid});
}

void mmap_log_fork(struct mmap_log *l, uint32_t tgid, uint64_t ns, uint32_t parent_tgid,
		   uint64_t parent_ns)
{
	if (parent_tgid)
		add_image(l, (struct mlog_exec){.ns = ns,
						.tgid = tgid,
						.parent_tgid = parent_tgid,
						.parent_ns = parent_ns});
}

void mmap_log_seed(struct mmap_log *l, uint32_t tgid, uint64_t ns, int maps_key)
{
	if (maps_key)
		add_image(l, (struct mlog_exec){.ns = ns, .tgid = tgid, .maps_key = maps_key});
}

void mmap_log_read_files(struct mmap_log *l, void (*read_file)(const char *path, void *arg),
			 void *arg)
{
	const char *last = NULL;

	for (size_t i = 0; l && i < l->n; i++) {
		struct mlog_ent *e = &l->ents[i];

		if (e->kind != ENT_MAP || e->file_read || !e->path || e->path[0] != '/')
			continue;
		e->file_read = 1;
		/* A process maps its file in a few regions, one record each. */
		if (last && strcmp(last, e->path) == 0)
			continue;
		last = e->path;
		read_file(e->path, arg);
	}
	for (size_t i = 0; l && i < l->files.cap; i++) {
		struct mlog_file *f = ktable_at(&l->files, i);

		if (f && !f->file_read && f->path && f->path[0] == '/') {
			f->file_read = true;
			read_file(f->path, arg);
		}
	}
}

uint64_t mmap_log_lost(const struct mmap_log *l)
{
	return l ? l->lost : 0;
}

static int cmp_ent(const void *a, const void *b)
{
	const struct mlog_ent *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ns > y->ns) - (x->ns < y->ns);
}

/* The first record of process tgid (sorted by process, then time). */
static size_t first_of(const struct mmap_log *l, uint32_t tgid)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->ents[mid].pid < tgid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The last mapping of ip that process tgid made in [from, to), where from is the image's
 * start: its exec's COMM record (the last at or before t_exec, when from_comm), or t_exec
 * itself (a fork's or a seeded image's). to is the process's next exec, or upto if earlier.
 * NULL when none.
 */
static const struct mlog_ent *find_in_image(const struct mmap_log *l, uint32_t tgid,
					    uint64_t t_exec, bool from_comm, uint64_t upto,
					    uint64_t ip)
{
	size_t lo = first_of(l, tgid);
	const struct mlog_ent *best = NULL;
	uint64_t from = from_comm ? 0 : t_exec, to = upto;
	bool found_start = !from_comm;

	/* Its span: from the COMM record of its exec to the next exec's. */
	for (size_t i = lo; i < l->n && l->ents[i].pid == tgid; i++) {
		const struct mlog_ent *e = &l->ents[i];

		if (e->kind != ENT_EXEC)
			continue;
		if (from_comm && e->ns <= t_exec) {
			from = e->ns;
			found_start = true;
		} else if (e->ns > t_exec && e->ns < to) {
			to = e->ns;
		}
	}
	if (!found_start)
		return NULL; /* the exec began before the records did */
	for (size_t i = lo; i < l->n && l->ents[i].pid == tgid; i++) {
		const struct mlog_ent *e = &l->ents[i];

		if (e->kind == ENT_MAP && e->ns >= from && e->ns < to && ip >= e->start &&
		    ip - e->start < e->len)
			best = e; /* sorted by time: the last one wins */
	}
	return best && best->path ? best : NULL;
}

static int cmp_exec(const void *a, const void *b)
{
	const struct mlog_exec *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return (x->ns > y->ns) - (x->ns < y->ns);
}

/* Sorted once after records came: settling asks for many images a second. */
static void sort_log(struct mmap_log *l)
{
	if (!l->sorted) {
		qsort(l->ents, l->n, sizeof(*l->ents), cmp_ent);
		l->sorted = true;
	}
	if (!l->execs_sorted) {
		qsort(l->execs, l->nexec, sizeof(*l->execs), cmp_exec);
		l->execs_sorted = true;
	}
}

static const struct mlog_exec *image_of(const struct mmap_log *l, uint32_t tgid, uint64_t ns)
{
	struct mlog_exec key = {.tgid = tgid, .ns = ns};

	return bsearch(&key, l->execs, l->nexec, sizeof(key), cmp_exec);
}

bool mmap_log_only_image(struct mmap_log *l, uint32_t tgid, uint64_t *ns)
{
	size_t lo = 0, hi;

	if (!l)
		return false;
	sort_log(l);
	hi = l->nexec;
	while (lo < hi) { /* the first image of tgid */
		size_t mid = lo + (hi - lo) / 2;

		if (l->execs[mid].tgid < tgid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= l->nexec || l->execs[lo].tgid != tgid ||
	    (lo + 1 < l->nexec && l->execs[lo + 1].tgid == tgid))
		return false;
	*ns = l->execs[lo].ns;
	return true;
}

/* A fork's image goes on into its parent's, up to the fork; a chain of forks is followed
 * this deep at most. */
#define MMAP_LOG_FORK_DEPTH 16

bool mmap_log_find(struct mmap_log *l, uint32_t tgid, uint64_t exec_ns, uint64_t ip,
		   struct mmap_hit *hit)
{
	const struct mlog_ent *e = NULL;
	uint64_t upto = UINT64_MAX;

	memset(hit, 0, sizeof(*hit));
	if (!l)
		return false;
	sort_log(l);
	/* The image: the exec (or fork) hook's record of it (it was sent: the BPF side named
	 * it). */
	for (int depth = 0; !e && depth < MMAP_LOG_FORK_DEPTH; depth++) {
		const struct mlog_exec *x = image_of(l, tgid, exec_ns);

		if (!x)
			return false;
		e = find_in_image(l, tgid, exec_ns, !x->parent_tgid && !x->maps_key, upto, ip);
		/* Not in the records, and mapped before them: in its snapshot. */
		if (!e && x->maps_key)
			hit->maps_key = x->maps_key;
		if (!x->parent_tgid)
			break;
		/* Not mapped by the child since the fork: the parent's, made before it. */
		upto = x->ns;
		tgid = x->parent_tgid;
		exec_ns = x->parent_ns;
	}
	if (!e)
		return false;
	hit->path = e->path;
	hit->has_build_id = e->has_id;
	memcpy(hit->build_id, e->id, sizeof(hit->build_id));
	hit->file_offset = e->pgoff + (ip - e->start);
	return true;
}

/* The file of a record forgotten, not read yet: kept by build ID (once), so that a build ID
 * looked for at the end is still found by its path (mmap_log_read_files()). */
static void keep_file(struct mmap_log *l, struct mlog_ent *e)
{
	unsigned char id[sizeof(((struct mlog_file *)0)->id)] = {0};
	struct mlog_file *f = NULL;
	bool created = false;

	if (e->kind == ENT_MAP && e->has_id && !e->file_read && e->path && e->path[0] == '/') {
		memcpy(id, e->id, sizeof(e->id));
		f = ktable_get(&l->files, id, &created);
	}
	if (f && created)
		f->path = e->path;
	else
		free(e->path);
}

/* The path of a file a location or frame was settled into: what names it at the end
 * (file+0xOFFSET) when the file itself is gone by then (deleted, replaced) and no symbol can
 * be read. Read at the end like a forgotten record's file. */
static void remember_file(struct mmap_log *l, const unsigned char *build_id, const char *path)
{
	unsigned char id[sizeof(((struct mlog_file *)0)->id)] = {0};
	struct mlog_file *f;
	bool created;

	if (!path || path[0] != '/')
		return;
	memcpy(id, build_id, 20);
	f = ktable_get(&l->files, id, &created);
	if (f && created)
		f->path = strdup(path);
}

/* The tail of the ID a mapping without a build ID is settled under (the head: a hash of its
 * path): no real build ID ends so. */
static const char path_id_tag[12] = "mmscope-path";

/* A file without a build ID ([vdso], a memfd, JIT code): named at the end by its path and the
 * offset, as an unsettled address would be, so settled under an ID made of its path, kept
 * here for mmap_log_path_of(). false without memory. */
static bool path_id(struct mmap_log *l, const char *path, unsigned char *build_id)
{
	unsigned char id[sizeof(((struct mlog_file *)0)->id)] = {0};
	uint64_t h = 0xcbf29ce484222325ULL;
	struct mlog_file *f;
	bool created;

	for (const char *c = path; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	memcpy(id, &h, sizeof(h));
	memcpy(id + sizeof(h), path_id_tag, sizeof(path_id_tag));
	f = ktable_get(&l->files, id, &created);
	if (f && created) {
		f->file_read = true; /* no file to read a build ID from */
		f->path = strdup(path);
	}
	if (!f || !f->path)
		return false;
	memcpy(build_id, id, 20);
	return true;
}

const char *mmap_log_path_of(const struct mmap_log *l, const unsigned char *build_id)
{
	unsigned char id[sizeof(((struct mlog_file *)0)->id)] = {0};
	const struct mlog_file *f;

	if (!l || memcmp(build_id + 8, path_id_tag, sizeof(path_id_tag)) != 0)
		return NULL;
	memcpy(id, build_id, 20);
	f = ktable_find(&l->files, id);
	return f ? f->path : NULL;
}

bool mmap_log_to_code(void *log, uint32_t tgid, const unsigned char *image, uint64_t ip,
		      unsigned char *build_id, uint64_t *offset)
{
	struct mmap_hit hit;
	uint64_t exec_ns;

	memcpy(&exec_ns, image, sizeof(exec_ns));
	if (!mmap_log_find(log, tgid, exec_ns, ip, &hit))
		return false;
	if (hit.has_build_id)
		remember_file(log, hit.build_id, hit.path);
	if (hit.has_build_id)
		memcpy(build_id, hit.build_id, sizeof(hit.build_id));
	else if (!path_id(log, hit.path, build_id))
		return false;
	*offset = hit.file_offset;
	return true;
}

const char *mmap_log_file_path(const struct mmap_log *l, const unsigned char *build_id)
{
	unsigned char id[sizeof(((struct mlog_file *)0)->id)] = {0};
	const struct mlog_file *f;

	if (!l)
		return NULL;
	memcpy(id, build_id, 20);
	f = ktable_find(&l->files, id);
	return f ? f->path : NULL;
}

bool mmap_log_nearly_full(const struct mmap_log *l)
{
	return l && (l->n >= l->next_forget || l->nexec >= l->next_forget);
}

/* The processes of the log, each once, sorted: NULL without memory. */
static uint32_t *log_tgids(const struct mmap_log *l, size_t *n)
{
	uint32_t *t = malloc((l->n + l->nexec + 1) * sizeof(*t));
	size_t m = 0, k = 0;

	if (!t)
		return NULL;
	for (size_t i = 0; i < l->n; i++)
		t[m++] = l->ents[i].pid;
	for (size_t i = 0; i < l->nexec; i++)
		t[m++] = l->execs[i].tgid;
	qsort(t, m, sizeof(*t), cmp_u32);
	for (size_t i = 0; i < m; i++)
		if (!k || t[i] != t[k - 1])
			t[k++] = t[i];
	*n = k;
	return t;
}

/* The index of tgid in the sorted set, or -1. */
static long tgid_index(const uint32_t *set, size_t n, uint32_t tgid)
{
	const uint32_t *p = n ? bsearch(&tgid, set, n, sizeof(*set), cmp_u32) : NULL;

	return p ? p - set : -1;
}

/* A kept fork's image goes on into its parent's: keep the parents, MMAP_LOG_FORK_DEPTH up. */
static void keep_fork_parents(const struct mmap_log *l, const uint32_t *set, size_t n, bool *kept)
{
	for (int depth = 0; depth < MMAP_LOG_FORK_DEPTH; depth++) {
		bool more = false;

		for (size_t x = 0; x < l->nexec; x++) {
			const struct mlog_exec *e = &l->execs[x];
			long i = tgid_index(set, n, e->tgid), p;

			if (!e->parent_tgid || i < 0 || !kept[i])
				continue;
			p = tgid_index(set, n, e->parent_tgid);
			if (p >= 0 && !kept[p])
				more = kept[p] = true;
		}
		if (!more)
			break;
	}
}

/*
 * What keep() says yes to, and what it says no to for the first time: a process just gone may
 * still have locations and stacks in the BPF per-CPU slots, given up later, so it is spared
 * until the next pass (kept in l->spared). set: sorted, so is l->spared.
 */
static void spare_first_refused(struct mmap_log *l, const uint32_t *set, size_t n, bool *kept,
				bool (*keep)(uint32_t tgid, void *arg), void *arg)
{
	uint32_t *spared = malloc((n + 1) * sizeof(*spared));
	size_t nspared = 0;

	for (size_t i = 0; i < n; i++) {
		kept[i] = keep(set[i], arg);
		if (!kept[i] && tgid_index(l->spared, l->nspared, set[i]) < 0) {
			kept[i] = true;
			if (spared)
				spared[nspared++] = set[i];
		}
	}
	free(l->spared);
	l->spared = spared;
	l->nspared = nspared;
}

size_t mmap_log_forget(struct mmap_log *l, bool (*keep)(uint32_t tgid, void *arg), void *arg)
{
	size_t ntgid = 0, ne = 0, nx = 0, before;
	uint32_t *set;
	bool *kept;

	if (!l)
		return 0;
	before = l->n + l->nexec;
	sort_log(l);
	set = log_tgids(l, &ntgid);
	kept = calloc(ntgid + 1, sizeof(*kept));
	if (!set || !kept)
		goto out;
	spare_first_refused(l, set, ntgid, kept, keep, arg);
	keep_fork_parents(l, set, ntgid, kept);
	/* In place, in order: both arrays stay sorted. */
	for (size_t i = 0; i < l->n; i++) {
		if (kept[tgid_index(set, ntgid, l->ents[i].pid)])
			l->ents[ne++] = l->ents[i];
		else
			keep_file(l, &l->ents[i]);
	}
	for (size_t x = 0; x < l->nexec; x++)
		if (kept[tgid_index(set, ntgid, l->execs[x].tgid)])
			l->execs[nx++] = l->execs[x];
	l->n = ne;
	l->nexec = nx;
	l->forgotten += before - ne - nx;
out:
	free(set);
	free(kept);
	/* Next when half the room left is taken: what is kept is not looked at again and again. */
	ne = l->n > l->nexec ? l->n : l->nexec;
	l->next_forget =
		ne < MMAP_LOG_FORGET_AT ? MMAP_LOG_FORGET_AT : ne + (MMAP_LOG_MAX - ne) / 2;
	return before - l->n - l->nexec;
}

uint64_t mmap_log_forgotten(const struct mmap_log *l)
{
	return l ? l->forgotten : 0;
}

void mmap_log_free(struct mmap_log *l)
{
	if (!l)
		return;
	if (l->pb)
		perf_buffer__free(l->pb);
	for (size_t i = 0; i < l->n; i++)
		free(l->ents[i].path);
	for (size_t i = 0; i < l->files.cap; i++) {
		struct mlog_file *f = ktable_at(&l->files, i);

		if (f)
			free(f->path);
	}
	ktable_free(&l->files);
	free(l->spared);
	free(l->ents);
	free(l->execs);
	free(l);
}
