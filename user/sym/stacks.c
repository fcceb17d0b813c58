// SPDX-License-Identifier: GPL-2.0
/*
 * Symbolization happens once, at the end of the run: kernel frames from kallsyms; user frames
 * from (build ID, file offset) pairs that the kernel recorded, so they resolve even for
 * processes that exited or re-exec'ed long before (the exec loop). Files are registered by
 * build ID while their processes live (exec records, mmscope's own libraries); what is still
 * unknown at the end is looked for in the mappings of every live process.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "sym/stacks.h"
#include "core/mmap_log.h"

/* The user side of an event in execve() while the new image loads (LOC_EXEC_LOAD): the caller's
 * code and stack are no longer mapped, the new image's not yet started. */
#define EXEC_LOAD_FRAME "[in execve]"
/* ... and of an event in exit() after its address space is detached (LOC_EXITING): the
 * process's last unmapping, exit_mmap(). */
#define EXITING_FRAME "[in exit]"

static void scan_all_processes(struct session *s)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int scanned = 0;

	if (!d)
		return;
	while ((de = readdir(d)) && scanned < 4096) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		usyms_add_pid(s->usyms, atoi(de->d_name));
		scanned++;
	}
	closedir(d);
}

/*
 * An address of an image resolved from the kernel's mmap records (LOC_MMAP_RECORDS; the
 * image's exec time is where the build ID would be): by its file's build ID, registering the file
 * by its path if it is not known yet (a path that now holds another file has another build ID: no
 * symbol rather than a wrong one). A process running before the records began maps the rest of its
 * code as its /proc/PID/maps snapshot of that time says (mmap_hit.maps_key).
 */
static bool resolve_mmap_record(struct session *s, uint32_t tgid, const unsigned char *image,
				uint64_t ip, struct usym *u)
{
	struct mmap_hit hit;
	uint64_t exec_ns;

	memcpy(&exec_ns, image, sizeof(exec_ns));
	if (!mmap_log_find(s->mlog, tgid, exec_ns, ip, &hit))
		return hit.maps_key && usyms_resolve_addr(s->usyms, hit.maps_key, ip, u);
	if (hit.has_build_id) {
		if (usyms_resolve_build_id(s->usyms, hit.build_id, hit.file_offset, u) && u->name)
			return true;
		if (hit.path[0] == '/' && usyms_add_file(s->usyms, hit.path) == 0 &&
		    usyms_resolve_build_id(s->usyms, hit.build_id, hit.file_offset, u) && u->name)
			return true;
	}
	memset(u, 0, sizeof(*u));
	u->dso = hit.path;
	u->file_offset = hit.file_offset;
	return true;
}

/*
 * A raw address (the kernel could not read the build ID at the event: its mmap lock or
 * irq_work busy) of a process gone before its mappings were read, which has only one image in
 * the records: named through it. That is a fork child of a few milliseconds, whose image is its
 * parent's up to the fork (powerpc's stacks, the kernel's walk every time, had a child's COW
 * faults under [unknown] when its build-ID reads failed).
 */
static bool resolve_by_only_image(struct session *s, uint32_t tgid, uint64_t ip, struct usym *u)
{
	unsigned char image[20] = {0};
	uint64_t ns;

	if (!s->mlog || !mmap_log_only_image(s->mlog, tgid, &ns))
		return false;
	memcpy(image, &ns, sizeof(ns));
	return resolve_mmap_record(s, tgid, image, ip, u);
}

static bool resolve_user(struct session *s, uint32_t tgid, uint32_t status,
			 const unsigned char *build_id, uint64_t off_or_ip, struct usym *u)
{
	memset(u, 0, sizeof(*u));
	if (!s->usyms)
		return false;
	if (status == 1 && mmap_log_path_of(s->mlog, build_id)) {
		/* settled by its path (no build ID): as resolve_mmap_record() names it */
		u->dso = mmap_log_path_of(s->mlog, build_id);
		u->file_offset = off_or_ip;
		return true;
	}
	if (status == 1)
		return usyms_resolve_build_id(s->usyms, build_id, off_or_ip, u);
	if (status == 2)
		return usyms_resolve_addr(s->usyms, (int)tgid, off_or_ip, u) ||
		       resolve_by_only_image(s, tgid, off_or_ip, u);
	if (status == LOC_MMAP_RECORDS)
		return resolve_mmap_record(s, tgid, build_id, off_or_ip, u);
	return false;
}

static bool scanned_once;

/* What a user frame is called: its symbol; in a known file without a symbol there, the file
 * and the offset in it, as perf prints them (libfoo.so.1+0x1a2b); [unknown] only when the
 * mapping itself is unknown. */
static const char *user_frame_name(const struct usym *u, char *buf, size_t len)
{
	const char *base;

	if (u->name)
		return u->name;
	if (!u->dso)
		return "[unknown]";
	base = strrchr(u->dso, '/');
	snprintf(buf, len, "%s+0x%llx", base ? base + 1 : u->dso,
		 (unsigned long long)u->file_offset);
	return buf;
}

static void read_mapped_file(const char *path, void *arg)
{
	usyms_add_file(arg, path);
}

/* Resolve; when a valid build ID is unknown, read those of the files mapped since the last
 * miss (the mmap records without build IDs: before 5.12), and look once through every live
 * process. */
static bool resolve_user_retry(struct session *s, uint32_t tgid, uint32_t status,
			       const unsigned char *build_id, uint64_t off, struct usym *u)
{
	if (resolve_user(s, tgid, status, build_id, off, u) && u->name)
		return true;
	if (status == 1 && !u->dso && s->mlog && s->usyms) {
		mmap_log_read_files(s->mlog, read_mapped_file, s->usyms);
		if (resolve_user(s, tgid, status, build_id, off, u) && u->name)
			return true;
	}
	if (status == 1 && !u->dso && !scanned_once && s->usyms) {
		scanned_once = true;
		scan_all_processes(s);
		if (resolve_user(s, tgid, status, build_id, off, u) && u->dso)
			return true;
	}
	/* Settled from the records into a file gone since (deleted, replaced): its path and the
	 * offset, as an unsettled address would be named. */
	if (status == 1 && !u->dso && (u->dso = mmap_log_file_path(s->mlog, build_id)))
		u->file_offset = off;
	return u->dso != NULL;
}

static int cmp_loc(const void *a, const void *b)
{
	const struct location_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->symbol, y->symbol);
}

struct location_row *read_locations(struct session *s, int *n)
{
	struct location_row *rows = NULL;
	int cap = 0;

	*n = 0;
	for (size_t e = 0; e < s->locs.t.cap; e++) {
		const struct location_slot *slot = ktable_at(&s->locs.t, e);
		struct fault_location_key key;
		struct fault_location loc;
		uint64_t count, off;
		char sym[256], dso[512];
		int i;

		if (!slot || !slot->loc.count)
			continue;
		key = slot->key;
		loc = slot->loc;
		count = loc.count;
		dso[0] = '\0';
		if (key.kernel == 1) { /* not LOC_KEY_BY_CODE */
			const char *name = session_ksyms(s)
						   ? ksyms_resolve(session_ksyms(s), key.ip, &off)
						   : NULL;

			snprintf(sym, sizeof(sym), "%s", name ? name : "[unknown]");
			snprintf(dso, sizeof(dso), "[kernel]");
		} else {
			struct usym u;

			char unnamed[sizeof(sym)];

			resolve_user_retry(s, key.tgid, loc.status, loc.build_id, loc.offset_or_ip,
					   &u);
			snprintf(sym, sizeof(sym), "%s",
				 user_frame_name(&u, unnamed, sizeof(unnamed)));
			snprintf(dso, sizeof(dso), "%s", u.dso ? u.dso : "[unknown]");
		}
		for (i = 0; i < *n; i++)
			if (strcmp(rows[i].symbol, sym) == 0 && strcmp(rows[i].dso, dso) == 0)
				break;
		if (i < *n) {
			rows[i].count += count;
			continue;
		}
		if (*n == cap) {
			int ncap = cap ? cap * 2 : 64;
			struct location_row *nr = realloc(rows, (size_t)ncap * sizeof(*nr));

			if (!nr)
				break;
			rows = nr;
			cap = ncap;
		}
		rows[*n].symbol = strdup(sym);
		rows[*n].dso = strdup(dso);
		rows[*n].count = count;
		if (!rows[*n].symbol || !rows[*n].dso) {
			free(rows[*n].symbol);
			free(rows[*n].dso);
			break;
		}
		(*n)++;
	}
	if (rows)
		qsort(rows, (size_t)*n, sizeof(*rows), cmp_loc);
	return rows;
}

void free_locations(struct location_row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		free(rows[i].symbol);
		free(rows[i].dso);
	}
	free(rows);
}

/* ---- folded stacks: one walk of the BPF maps gives the records of --folded and --svg ---- */

/* BPF, tracing and perf plumbing between the hooked event and the program: not the
 * workload's code path, so not shown. */
static bool infra_frame(const char *name)
{
	static const char *const prefixes[] = {"bpf_",	   "__bpf_", "perf_",	"__perf_",
					       "___perf_", "trace_", "__trace", "__traceiter_"};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/*
 * Strings kept once each (open addressing on an FNV-1a hash, grown at half full): a frame's
 * name or file points into the pool, which the stack set frees as a whole. Allocating each
 * frame's strings anew made the end of a host-wide --folded run mmscope's biggest fault source
 * (70k of its 148k faults in 5 s, for 332k it reported).
 */
struct name_pool {
	char **slot;
	size_t cap, n;
};

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static bool pool_grow(struct name_pool *p)
{
	size_t cap = p->cap ? p->cap * 2 : 1024;
	char **slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return false;
	for (size_t i = 0; i < p->cap; i++) {
		size_t j;

		if (!p->slot[i])
			continue;
		for (j = name_hash(p->slot[i]) & (cap - 1); slot[j]; j = (j + 1) & (cap - 1))
			;
		slot[j] = p->slot[i];
	}
	free(p->slot);
	p->slot = slot;
	p->cap = cap;
	return true;
}

/* The pool's copy of s, added if new; NULL without memory. */
static char *pool_intern(struct name_pool *p, const char *s)
{
	size_t i;

	if (2 * (p->n + 1) > p->cap && !pool_grow(p))
		return NULL;
	for (i = name_hash(s) & (p->cap - 1); p->slot[i]; i = (i + 1) & (p->cap - 1))
		if (strcmp(p->slot[i], s) == 0)
			return p->slot[i];
	p->slot[i] = strdup(s);
	if (p->slot[i])
		p->n++;
	return p->slot[i];
}

static void pool_free(struct name_pool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->cap; i++)
		free(p->slot[i]);
	free(p->slot);
	free(p);
}

/* The frames of one record under construction, root first; their strings in pool. */
struct frame_list {
	struct stack_frame f[1 + 1 + USER_STACK_DEPTH + 1 + KERNEL_STACK_DEPTH + 1];
	int n;
	bool failed;
	struct name_pool *pool;
};

/* The frame added, for its location to be filled in; NULL when it was not. */
static struct stack_frame *fl_add(struct frame_list *l, const char *name, enum frame_type type)
{
	struct stack_frame *f = &l->f[l->n];

	if (l->n >= (int)(sizeof(l->f) / sizeof(l->f[0])))
		return NULL;
	memset(f, 0, sizeof(*f));
	f->name = pool_intern(l->pool, name);
	f->type = type;
	if (!f->name) {
		l->failed = true;
		return NULL;
	}
	l->n++;
	return f;
}

/* A user frame's file and offset in it, as symbolized. */
static void frame_set_user(struct frame_list *l, struct stack_frame *f, const struct usym *u)
{
	if (!f || !u->dso)
		return;
	f->dso = pool_intern(l->pool, u->dso);
	if (!f->dso)
		l->failed = true;
	f->addr = u->file_offset;
	if (u->build_id_len && u->build_id_len <= sizeof(f->build_id)) {
		memcpy(f->build_id, u->build_id, u->build_id_len);
		f->build_id_len = (uint8_t)u->build_id_len;
	}
}

/* A cursor over a folded text kept as frames: the frames' bytes, with a ';' between two. */
struct folded_cursor {
	const char *const *f;
	int n, i;
	const char *p;
};

/* The next byte, or -1 at the end. */
static int folded_next(struct folded_cursor *c)
{
	if (!*c->p) {
		if (c->i + 1 >= c->n)
			return -1;
		c->p = c->f[++c->i];
		return ';';
	}
	return (unsigned char)*c->p++;
}

/*
 * The order strcmp() gives the joined texts, without joining them. Two texts are equal when
 * their frames are the same pointers: escaped names hold no ';', and equal names are one
 * pointer in the pool.
 */
static int folded_cmp(const struct stack_record *x, const struct stack_record *y)
{
	struct folded_cursor a = {x->folded, x->nfolded, 0, x->nfolded ? x->folded[0] : ""};
	struct folded_cursor b = {y->folded, y->nfolded, 0, y->nfolded ? y->folded[0] : ""};
	int ca, cb;

	if (x->nfolded == y->nfolded &&
	    !memcmp(x->folded, y->folded, (size_t)x->nfolded * sizeof(*x->folded)))
		return 0;
	do {
		ca = folded_next(&a);
		cb = folded_next(&b);
	} while (ca == cb && ca >= 0);
	return ca < cb ? -1 : ca > cb;
}

/* By folded text, then by process: --folded's lines are runs of equal texts. */
static int cmp_record(const void *a, const void *b)
{
	const struct stack_record *x = a, *y = b;
	int c = folded_cmp(x, y);

	return c ? c : (x->pid > y->pid) - (x->pid < y->pid);
}

/* The frames of one folded key: comm, user stack, kernel stack, event kind. */
static void key_frames(struct session *s, const struct folded_key *key, uint32_t tgid,
		       kind_name_fn kind_name, struct frame_list *l)
{
	const struct kernel_stack *ks = stacks_find(&s->kstacks, key->kernel_stack);
	const struct user_stack *us = stacks_find(&s->ustacks, key->user_stack);
	char kind[64], comm[MMSCOPE_COMM_LEN + 1];
	const char *names[KERNEL_STACK_DEPTH];
	int nk = 0, nu = 0, first;

	l->n = 0;
	l->failed = false;
	memcpy(comm, key->comm, MMSCOPE_COMM_LEN);
	comm[bounded_strlen(key->comm, MMSCOPE_COMM_LEN)] = '\0';
	fl_add(l, comm[0] ? comm : "[unknown]", comm[0] ? FRAME_PROCESS : FRAME_OTHER);
	if (us) /* nr was checked against the record's size (add_stack_record()) */
		nu = (int)us->nr;
	if (nu == USER_STACK_DEPTH)
		fl_add(l, "[truncated]", FRAME_OTHER);
	for (int i = nu - 1; i >= 0; i--) {
		char unnamed[300];
		struct usym u;

		if (us->f[i].status == LOC_EXEC_LOAD || us->f[i].status == LOC_EXITING) {
			fl_add(l,
			       us->f[i].status == LOC_EXEC_LOAD ? EXEC_LOAD_FRAME : EXITING_FRAME,
			       FRAME_OTHER);
			continue;
		}
		/* Frames above the leaf are return addresses: the call is the byte before, which
		 * may be the end of another function. */
		resolve_user_retry(s, tgid, (uint32_t)us->f[i].status, us->f[i].build_id,
				   us->f[i].offset_or_ip - (i > 0), &u);
		frame_set_user(l,
			       fl_add(l, user_frame_name(&u, unnamed, sizeof(unnamed)),
				      u.dso ? FRAME_USER : FRAME_OTHER),
			       &u);
	}
	if (ks)
		nk = (int)ks->nr;
	for (int i = 0; i < nk; i++) {
		uint64_t off;

		names[i] = session_ksyms(s)
				   ? ksyms_resolve(session_ksyms(s), ks->ip[i] - (i > 0), &off)
				   : NULL;
	}
	/* Skip the leaf-side plumbing: everything up to the last infra frame near the leaf. */
	first = 0;
	for (int i = 0; i < nk && i < 12; i++)
		if (names[i] && infra_frame(names[i]))
			first = i + 1;
	if (nk == KERNEL_STACK_DEPTH)
		fl_add(l, "[truncated]", FRAME_OTHER);
	for (int i = nk - 1; i >= first; i--) {
		struct stack_frame *f;

		if (names[i] && (f = fl_add(l, names[i], FRAME_KERNEL)))
			f->addr = ks->ip[i] - (i > 0);
		else if (names[i])
			continue;
		else
			fl_add(l, "[unknown]", FRAME_OTHER);
	}
	kind_name(key->kind, kind, sizeof(kind));
	fl_add(l, kind, key->kind & KIND_TLB ? FRAME_TLB : FRAME_FAULT);
}

/*
 * The --folded text of a stack, as its frames escaped and interned in the pool: 8 bytes a
 * frame instead of the text's ~1 KB a stack, which a host-wide run's tens of thousands of
 * stacks paid in mmscope's own page faults. NULL without memory.
 */
static const char **folded_frames(struct name_pool *pool, const struct stack_frame *f, int n)
{
	const char **out = malloc((size_t)(n ? n : 1) * sizeof(*out));

	for (int i = 0; out && i < n; i++) {
		char *e = folded_escape(f[i].name, strlen(f[i].name));

		out[i] = e ? pool_intern(pool, e) : NULL;
		free(e);
		if (!out[i]) {
			free(out);
			return NULL;
		}
	}
	return out;
}

int read_stacks(struct session *s, kind_name_fn kind_name, bool with_frames, struct stack_set *set)
{
	static struct frame_list l;
	struct stack_record *recs = NULL;
	uint64_t dropped = s->kstacks.dropped + s->ustacks.dropped;
	int err = 0, cap = 0, n = 0;

	memset(set, 0, sizeof(*set));
	set->lost = s->folded.lost;
	set->names = calloc(1, sizeof(*set->names));
	if (!set->names)
		return -ENOMEM;
	l.pool = set->names;
	if (dropped)
		warn_msg("%llu stacks beyond the %u kept in memory: their events show no frames",
			 (unsigned long long)dropped, STACK_TABLE_MAX);
	for (size_t e = 0; e < s->folded.t.cap; e++) {
		const struct folded_entry *fe = ktable_at(&s->folded.t, e);
		struct folded_value v;
		struct stack_record *r;

		if (!fe)
			continue;
		v = fe->v;
		key_frames(s, &fe->key, fe->key.tgid ? fe->key.tgid : fe->sym_tgid, kind_name, &l);
		if (n == cap) {
			int ncap = cap ? cap * 2 : 256;
			struct stack_record *nr = realloc(recs, (size_t)ncap * sizeof(*nr));

			if (!nr) {
				l.failed = true;
			} else {
				recs = nr;
				cap = ncap;
			}
		}
		r = l.failed ? NULL : &recs[n];
		if (r) {
			r->frames = with_frames ? malloc((size_t)l.n * sizeof(*r->frames)) : NULL;
			r->folded = folded_frames(l.pool, l.f, l.n);
			r->nfolded = l.n;
		}
		if (!r || (with_frames && !r->frames) || !r->folded) {
			if (r) {
				free(r->frames);
				free((void *)r->folded);
			}
			err = -ENOMEM;
			break;
		}
		if (with_frames)
			memcpy(r->frames, l.f, (size_t)l.n * sizeof(*r->frames));
		r->nframes = with_frames ? l.n : 0;
		r->pid = fe->key.tgid;
		r->count = v.count;
		r->latency_ns = v.latency_ns;
		set->count += v.count;
		set->latency_ns += v.latency_ns;
		n++;
	}
	if (recs)
		qsort(recs, (size_t)n, sizeof(*recs), cmp_record);
	/* Stacks of a process that symbolize alike are one record. */
	set->recs = recs;
	set->n = 0;
	for (int i = 0; i < n; i++) {
		struct stack_record *out = &recs[set->n++];

		if (out != &recs[i])
			*out = recs[i];
		if (set->n == 1 || folded_cmp(out, &recs[set->n - 2]) != 0)
			set->distinct++;
		while (i + 1 < n && out->pid == recs[i + 1].pid &&
		       folded_cmp(out, &recs[i + 1]) == 0) {
			i++;
			out->count += recs[i].count;
			out->latency_ns += recs[i].latency_ns;
			free(recs[i].frames);
			free((void *)recs[i].folded);
		}
	}
	return err;
}

void free_stacks(struct stack_set *set)
{
	for (int i = 0; i < set->n; i++) {
		free(set->recs[i].frames);
		free((void *)set->recs[i].folded);
	}
	free(set->recs);
	pool_free(set->names);
	memset(set, 0, sizeof(*set));
}

void scale_stacks(struct stack_set *set, uint64_t every)
{
	if (every <= 1)
		return;
	for (int i = 0; i < set->n; i++) {
		set->recs[i].count *= every;
		set->recs[i].latency_ns *= every;
	}
	set->count *= every;
	set->latency_ns *= every;
}

int write_folded(FILE *out, const struct stack_set *set, bool latency, uint64_t other)
{
	int written = 0;

	for (int i = 0; i < set->n; i++) {
		const struct stack_record *r = &set->recs[i];
		uint64_t w = latency ? r->latency_ns : r->count;

		/* One line for the processes of one text (one record each, in a run). */
		while (i + 1 < set->n && folded_cmp(r, &set->recs[i + 1]) == 0) {
			i++;
			w += latency ? set->recs[i].latency_ns : set->recs[i].count;
		}
		/* Weighted by latency, faults that never completed have none: no line. */
		if (!w)
			continue;
		for (int k = 0; k < r->nfolded; k++)
			fprintf(out, "%s%s", k ? ";" : "", r->folded[k]);
		fprintf(out, " %llu\n", (unsigned long long)w);
		written++;
	}
	/* The events whose stack there was no room for, so that the lines add up to the
	 * total (their latency was not kept: no line when weighted by it). */
	if (other && !latency) {
		fprintf(out, "[other] %llu\n", (unsigned long long)other);
		written++;
	}
	return written;
}
