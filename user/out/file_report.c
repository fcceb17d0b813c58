// SPDX-License-Identifier: GPL-2.0
/*
 * Faults on files (faults' by_file): the BPF side counts them by (file, process) where
 * handle_mm_fault() is hooked, and records each file's dentry names once. Here they are added
 * up by file, named (the names up to the filesystem's root, behind the mount point of the
 * file's device), and the heaviest files shown by faults and by major faults; every fault on
 * a file that is in no row shown is in the [other] row, so the rows add up to the totals.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lib/escape.h"
#include "out/faults_report.h"
#include "out/file_report.h"
#include "lib/keyed_table.h"
#include "lib/util.h"
#include "mmscope.skel.h"

/* Processes listed per file; the rest of a file's faults are in its processes' [other]. */
#define FILE_TOP_PROCS 5

struct file_proc {
	uint32_t tgid;
	char comm[MMSCOPE_COMM_LEN];
	uint64_t n[TY_NR];
};

struct file_row {
	struct file_name_key key;
	uint64_t n[TY_NR];
	uint64_t lat_sum, lat_max;
	struct file_proc *procs;
	int nprocs, capprocs;
	char *path; /* NULL: not named (no mount of its device here) */
	char *name; /* the file's own name, or "" */
	bool shown;
};

/* A file's index in the rows, by device and inode. */
struct file_index {
	struct file_name_key key;
	uint64_t i;
};

static uint64_t row_faults(const uint64_t *n)
{
	return n[TY_MINOR] + n[TY_MAJOR] + n[TY_INCOMPLETE];
}

static int cmp_faults(const void *a, const void *b)
{
	const struct file_row *x = a, *y = b;
	uint64_t fx = row_faults(x->n), fy = row_faults(y->n);

	if (fx != fy)
		return fx < fy ? 1 : -1;
	if (x->key.dev != y->key.dev)
		return x->key.dev < y->key.dev ? -1 : 1;
	return (x->key.ino > y->key.ino) - (x->key.ino < y->key.ino);
}

/* A row in the order by major faults (the rows stay in their order by faults). */
struct major_ref {
	struct file_row *row;
};

static int cmp_major(const void *a, const void *b)
{
	const struct file_row *x = ((const struct major_ref *)a)->row;
	const struct file_row *y = ((const struct major_ref *)b)->row;

	if (x->n[TY_MAJOR] != y->n[TY_MAJOR])
		return x->n[TY_MAJOR] < y->n[TY_MAJOR] ? 1 : -1;
	return cmp_faults(x, y);
}

static int cmp_proc_faults(const void *a, const void *b)
{
	const struct file_proc *x = a, *y = b;
	uint64_t fx = row_faults(x->n), fy = row_faults(y->n);

	if (fx != fy)
		return fx < fy ? 1 : -1;
	return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

/* mountinfo's octal escapes (\040 for a space) undone in place. */
static void unescape_mount_path(char *p)
{
	char *w = p;

	for (; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*w++ = (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0'));
			p += 3;
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
}

/*
 * The path of rel (a path from the root of the filesystem on device dev, the kernel's
 * encoding) in mmscope's mount namespace: behind the mount point of the first mount of that
 * device whose root (the part of the filesystem it shows) holds rel. NULL when none does.
 */
static char *mounted_path(uint32_t dev, const char *rel)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], root[4096], mp[4096], *path = NULL;
	unsigned int maj, min;

	if (!f)
		return NULL;
	while (!path && fgets(line, sizeof(line), f)) {
		size_t rl;

		if (sscanf(line, "%*u %*u %u:%u %4095s %4095s", &maj, &min, root, mp) != 4)
			continue;
		if ((maj << 20 | min) != dev)
			continue;
		unescape_mount_path(root);
		unescape_mount_path(mp);
		rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
		if (rl && (strncmp(rel, root, rl) != 0 || (rel[rl] != '/' && rel[rl] != '\0')))
			continue;
		if (asprintf(&path, "%s%s", strcmp(mp, "/") == 0 ? "" : mp,
			     rel[rl] ? rel + rl : (strcmp(mp, "/") == 0 ? "/" : "")) < 0)
			path = NULL;
	}
	fclose(f);
	return path;
}

/* Name a file from its recorded dentry names (bpf/faults.bpf.c file_name_note()). */
static void name_file(struct file_row *row, const struct file_name *fn)
{
	char rel[FILE_PATH_DEPTH * FILE_NAME_LEN + 16];
	size_t len = 0;
	char *at;

	rel[0] = '\0';
	if (fn->flags & FN_DEEPER)
		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "/...");
	for (int i = (int)(fn->depth < FILE_PATH_DEPTH ? fn->depth : FILE_PATH_DEPTH) - 1; i >= 0;
	     i--)
		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "/%.*s", FILE_NAME_LEN,
					fn->comp[i]);
	row->name = strndup(fn->depth ? fn->comp[0] : "", FILE_NAME_LEN);
	/* A pseudo file has no mount here: d_path() names it "/" + its name. */
	at = fn->flags & FN_PSEUDO ? strdup(rel) : mounted_path(row->key.dev, rel);
	if (at && (fn->flags & FN_DELETED)) {
		char *d = NULL;

		if (asprintf(&d, "%s (deleted)", at) < 0)
			d = NULL;
		free(at);
		at = d;
	}
	row->path = at;
}

static void free_rows(struct file_row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		free(rows[i].procs);
		free(rows[i].path);
		free(rows[i].name);
	}
	free(rows);
}

/* Add one (file, process) entry of the files map to its file's row. */
static int add_entry(struct keyed_table *idx, struct file_row **rows, int *n, int *cap,
		     const struct file_key *k, const struct file_faults *v)
{
	struct file_index *fi;
	struct file_name_key key = {.ino = k->ino, .dev = k->dev};
	struct file_row *row;
	struct file_proc *p;
	bool created;

	fi = ktable_get(idx, &key, &created);
	if (!fi)
		return -ENOMEM;
	if (created) {
		if (*n == *cap) {
			int ncap = *cap ? *cap * 2 : 64;
			struct file_row *nr = realloc(*rows, (size_t)ncap * sizeof(*nr));

			if (!nr)
				return -ENOMEM;
			*rows = nr;
			*cap = ncap;
		}
		fi->i = (uint64_t)(*n)++;
		memset(&(*rows)[fi->i], 0, sizeof(**rows));
		(*rows)[fi->i].key = key;
	}
	if (!*rows) /* an index entry is made only with its row */
		return -EINVAL;
	row = &(*rows)[fi->i];
	if (row->nprocs == row->capprocs) {
		int ncap = row->capprocs ? row->capprocs * 2 : 4;
		struct file_proc *np = realloc(row->procs, (size_t)ncap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		row->procs = np;
		row->capprocs = ncap;
	}
	p = &row->procs[row->nprocs++];
	p->tgid = k->tgid;
	memcpy(p->comm, v->comm, sizeof(p->comm));
	for (int c = 0; c < TY_NR; c++) {
		p->n[c] = v->n[c];
		row->n[c] += v->n[c];
	}
	row->lat_sum += v->lat_sum;
	if (v->lat_max > row->lat_max)
		row->lat_max = v->lat_max;
	return 0;
}

/* Every file of the files map, named, sorted by faults; *n rows. -errno on failure. */
static int read_files(struct session *s, struct file_row **out, int *n)
{
	int fd = bpf_map__fd(s->skel->maps.files);
	int names_fd = bpf_map__fd(s->skel->maps.file_names);
	struct keyed_table idx = KEYED_TABLE(struct file_index, sizeof(struct file_name_key),
					     bpf_map__max_entries(s->skel->maps.files));
	struct file_row *rows = NULL;
	struct file_key key, next;
	struct file_faults v;
	struct file_name fn;
	void *prev = NULL;
	int cap = 0, err = 0;

	*n = 0;
	while (!err && bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue;
		err = add_entry(&idx, &rows, n, &cap, &key, &v);
	}
	ktable_free(&idx);
	if (err) {
		free_rows(rows, *n);
		*n = 0;
		return err;
	}
	for (int i = 0; i < *n; i++) {
		if (bpf_map_lookup_elem(names_fd, &rows[i].key, &fn) == 0)
			name_file(&rows[i], &fn);
		if (rows[i].nprocs > 1)
			qsort(rows[i].procs, (size_t)rows[i].nprocs, sizeof(*rows[i].procs),
			      cmp_proc_faults);
	}
	if (*n > 1)
		qsort(rows, (size_t)*n, sizeof(*rows), cmp_faults);
	*out = rows;
	return 0;
}

static void json_counts(struct json_writer *jw, const uint64_t *n)
{
	jw_key(jw, "faults");
	jw_u64(jw, row_faults(n));
	jw_key(jw, "minor");
	jw_u64(jw, n[TY_MINOR]);
	jw_key(jw, "major");
	jw_u64(jw, n[TY_MAJOR]);
	jw_key(jw, "incomplete");
	jw_u64(jw, n[TY_INCOMPLETE]);
}

static void json_latency(struct report *r, const uint64_t *n, uint64_t sum, const uint64_t *max)
{
	uint64_t done = n[TY_MINOR] + n[TY_MAJOR];

	jw_key(r->jw, "latency_ns");
	if (r->s->cfg.untimed_faults) {
		jw_null(r->jw);
		return;
	}
	jw_begin_object(r->jw);
	jw_key(r->jw, "mean");
	if (done)
		jw_u64(r->jw, sum / done);
	else
		jw_null(r->jw);
	jw_key(r->jw, "max");
	if (max && done)
		jw_u64(r->jw, *max);
	else
		jw_null(r->jw);
	jw_end_object(r->jw);
}

static void json_proc(struct json_writer *jw, const struct file_proc *p, bool other)
{
	jw_begin_object(jw);
	jw_key(jw, "pid");
	if (other)
		jw_null(jw);
	else
		jw_u64(jw, p->tgid);
	jw_key(jw, "comm");
	if (other)
		jw_string(jw, "[other]");
	else
		jw_string_len(jw, p->comm, bounded_strlen(p->comm, sizeof(p->comm)));
	json_counts(jw, p->n);
	jw_end_object(jw);
}

static void json_row(struct report *r, const struct file_row *row)
{
	struct json_writer *jw = r->jw;
	struct file_proc rest = {0};
	char dev[32];

	jw_begin_object(jw);
	jw_key(jw, "path");
	jw_string(jw, row->path);
	jw_key(jw, "name");
	jw_string(jw, row->name ? row->name : "");
	snprintf(dev, sizeof(dev), "%u:%u", row->key.dev >> 20, row->key.dev & 0xfffff);
	jw_key(jw, "device");
	jw_string(jw, dev);
	jw_key(jw, "inode");
	jw_u64(jw, row->key.ino);
	json_counts(jw, row->n);
	json_latency(r, row->n, row->lat_sum, &row->lat_max);
	jw_key(jw, "processes");
	jw_begin_array(jw);
	for (int i = 0; i < row->nprocs; i++) {
		if (i < FILE_TOP_PROCS) {
			json_proc(jw, &row->procs[i], false);
			continue;
		}
		for (int c = 0; c < TY_NR; c++)
			rest.n[c] += row->procs[i].n[c];
	}
	if (row->nprocs > FILE_TOP_PROCS)
		json_proc(jw, &rest, true);
	jw_end_array(jw);
	jw_end_object(jw);
}

/* A file's processes in a few words: "comm[pid] faults, ..." (escaped), then "+N more". */
static void text_procs(FILE *out, const struct file_row *row)
{
	for (int i = 0; i < row->nprocs && i < 3; i++) {
		const struct file_proc *p = &row->procs[i];
		char *comm = folded_escape(p->comm, bounded_strlen(p->comm, sizeof(p->comm)));

		fprintf(out, "%s%s[%u] %llu", i ? ", " : "", comm ? comm : "?", p->tgid,
			(unsigned long long)row_faults(p->n));
		free(comm);
	}
	if (row->nprocs > 3)
		fprintf(out, ", +%d more", row->nprocs - 3);
}

static void text_row(struct report *r, const struct file_row *row)
{
	uint64_t done = row->n[TY_MINOR] + row->n[TY_MAJOR];
	char *path = NULL, dev[64];
	const char *shown;

	if (row->path) {
		path = folded_escape(row->path, strlen(row->path));
		shown = path ? path : "?";
	} else {
		/* Named but not placed: no mount of its device in this namespace. */
		snprintf(dev, sizeof(dev), "%.40s (%u:%u inode %llu)", row->name ? row->name : "?",
			 row->key.dev >> 20, row->key.dev & 0xfffff,
			 (unsigned long long)row->key.ino);
		shown = dev;
	}
	fprintf(r->out, "  %9llu %9llu %7llu %6llu ", (unsigned long long)row_faults(row->n),
		(unsigned long long)row->n[TY_MINOR], (unsigned long long)row->n[TY_MAJOR],
		(unsigned long long)row->n[TY_INCOMPLETE]);
	if (done && !r->s->cfg.untimed_faults)
		fprintf(r->out, "%9llu ", (unsigned long long)(row->lat_sum / done));
	else
		fprintf(r->out, "%9s ", "-");
	fprintf(r->out, "%s  (", shown);
	text_procs(r->out, row);
	fprintf(r->out, ")\n");
	free(path);
}

static void text_header(struct report *r, const char *title)
{
	fprintf(r->out, "\n%s\n  %9s %9s %7s %6s %9s %s\n", title, "FAULTS", "MINOR", "MAJOR",
		"INCOMP", "AVG NS", "FILE  (PROCESSES: FAULTS)");
}

void faults_report_files(struct report *r, const struct mm_stats *st)
{
	const char *why = faults_type_unavailable(r->s);
	const uint64_t total[TY_NR] = {st->c[CNT_FILE_MINOR], st->c[CNT_FILE_MAJOR],
				       st->c[CNT_FILE_INCOMPLETE]};
	uint64_t other[TY_NR] = {st->c[CNT_FILE_OTHER_MINOR], st->c[CNT_FILE_OTHER_MAJOR],
				 st->c[CNT_FILE_OTHER_INCOMPLETE]};
	uint64_t other_lat = st->c[CNT_FILE_OTHER_LAT_SUM], text_other[TY_NR];
	int top = r->s->opts->top, n = 0, nmajor = 0, err;
	struct file_row *rows = NULL;
	struct major_ref *bymajor;

	if (why) {
		if (r->jw) {
			report_counter(r, "faults.by_file", "", false, 0, why);
			report_counter(r, "faults.files_total", "", false, 0, why);
		} else {
			fprintf(r->out,
				"\nfiles faulted (the file each fault's mapping maps)\n"
				"  n/a (%s)\n",
				why);
		}
		return;
	}
	err = read_files(r->s, &rows, &n);
	if (err)
		warn_msg("faults on files: reading the files map: %s", strerror(-err));
	if (!rows)
		n = 0;
	/* Shown: the top files by faults and, beside them, the top by major faults. */
	bymajor = calloc((size_t)n + 1, sizeof(*bymajor));
	for (int i = 0; i < n; i++) {
		rows[i].shown = i < top;
		if (bymajor && rows[i].n[TY_MAJOR])
			bymajor[nmajor++].row = &rows[i];
	}
	if (bymajor) {
		qsort(bymajor, (size_t)nmajor, sizeof(*bymajor), cmp_major);
		for (int i = 0; i < nmajor && i < top; i++)
			bymajor[i].row->shown = true;
	}
	/* The text's table of the top by faults leaves out those shown by majors only. */
	memcpy(text_other, other, sizeof(other));
	for (int i = top; rows && i < n; i++)
		for (int c = 0; c < TY_NR; c++)
			text_other[c] += rows[i].n[c];
	for (int i = 0; i < n; i++) {
		if (rows[i].shown)
			continue;
		for (int c = 0; c < TY_NR; c++)
			other[c] += rows[i].n[c];
		other_lat += rows[i].lat_sum;
	}
	if (r->jw) {
		jw_key(r->jw, "by_file");
		jw_begin_array(r->jw);
		for (int i = 0; i < n; i++)
			if (rows[i].shown)
				json_row(r, &rows[i]);
		/* Always there, zeros included: every table's rows sum to its totals. */
		jw_begin_object(r->jw);
		jw_key(r->jw, "path");
		jw_null(r->jw);
		jw_key(r->jw, "name");
		jw_string(r->jw, "[other]");
		jw_key(r->jw, "device");
		jw_null(r->jw);
		jw_key(r->jw, "inode");
		jw_null(r->jw);
		json_counts(r->jw, other);
		json_latency(r, other, other_lat, NULL);
		jw_key(r->jw, "processes");
		jw_begin_array(r->jw);
		jw_end_array(r->jw);
		jw_end_object(r->jw);
		jw_end_array(r->jw);
		jw_key(r->jw, "files_total");
		jw_begin_object(r->jw);
		json_counts(r->jw, total);
		jw_key(r->jw, "files");
		jw_u64(r->jw, (uint64_t)n);
		jw_end_object(r->jw);
	} else if (row_faults(total)) {
		char title[160];

		snprintf(title, sizeof(title),
			 "files faulted: %llu faults on %d files (top %d by faults)",
			 (unsigned long long)row_faults(total), n, top);
		text_header(r, title);
		for (int i = 0; i < n && i < top; i++)
			text_row(r, &rows[i]);
		if (row_faults(text_other))
			fprintf(r->out, "  %9llu %9llu %7llu %6llu %9s [other]\n",
				(unsigned long long)row_faults(text_other),
				(unsigned long long)text_other[TY_MINOR],
				(unsigned long long)text_other[TY_MAJOR],
				(unsigned long long)text_other[TY_INCOMPLETE], "-");
		if (nmajor) {
			text_header(r, "files by major faults (page-cache misses)");
			for (int i = 0; i < nmajor && i < top; i++)
				text_row(r, bymajor[i].row);
		}
	}
	free(bymajor);
	free_rows(rows, n);
}
