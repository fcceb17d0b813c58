// SPDX-License-Identifier: GPL-2.0
/*
 * Faults on files: the BPF side counts them by (file, process) where handle_mm_fault() is
 * hooked, and records each file's dentry names once. Here they are added up by file, named
 * (the names up to the filesystem's root, behind the mount point of the file's device), and
 * the heaviest files chosen by faults and by major faults.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/faults_avail.h"
#include "core/file_read.h"
#include "lib/keyed_table.h"
#include "lib/util.h"
#include "mmscope.skel.h"

/* A file's index in the rows, by device and inode. */
struct file_index {
	struct file_name_key key;
	uint64_t i;
};

static int cmp_faults(const void *a, const void *b)
{
	const struct file_row *x = a, *y = b;
	uint64_t fx = file_row_faults(x->n), fy = file_row_faults(y->n);

	if (fx != fy)
		return fx < fy ? 1 : -1;
	if (x->key.dev != y->key.dev)
		return x->key.dev < y->key.dev ? -1 : 1;
	return (x->key.ino > y->key.ino) - (x->key.ino < y->key.ino);
}

/* In the order by major faults (the rows stay in their order by faults). */
static int cmp_major(const void *a, const void *b)
{
	const struct file_row *x = ((const struct file_major_ref *)a)->row;
	const struct file_row *y = ((const struct file_major_ref *)b)->row;
	if (x->n[TY_MAJOR] != y->n[TY_MAJOR])
		return x->n[TY_MAJOR] < y->n[TY_MAJOR] ? 1 : -1;
	return cmp_faults(x, y);
}

static int cmp_proc_faults(const void *a, const void *b)
{
	const struct file_proc *x = a, *y = b;
	uint64_t fx = file_row_faults(x->n), fy = file_row_faults(y->n);

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

void file_result_read(struct session *s, struct file_result *res)
{
	int err;

	memset(res, 0, sizeof(*res));
	res->why = faults_type_unavailable(s);
	res->untimed = s->cfg.untimed_faults;
	res->top = s->opts->top;
	if (res->why)
		return;
	err = read_files(s, &res->rows, &res->n);
	if (err)
		warn_msg("faults on files: reading the files map: %s", strerror(-err));
	if (!res->rows)
		res->n = 0;
	/* Shown: the top files by faults and, beside them, the top by major faults. */
	res->bymajor = calloc((size_t)res->n + 1, sizeof(*res->bymajor));
	for (int i = 0; i < res->n; i++) {
		res->rows[i].shown = i < res->top;
		if (res->bymajor && res->rows[i].n[TY_MAJOR])
			res->bymajor[res->nmajor++].row = &res->rows[i];
	}
	if (res->bymajor) {
		qsort(res->bymajor, (size_t)res->nmajor, sizeof(*res->bymajor), cmp_major);
		for (int i = 0; i < res->nmajor && i < res->top; i++)
			res->bymajor[i].row->shown = true;
	}
}

void file_result_free(struct file_result *res)
{
	free(res->bymajor);
	free_rows(res->rows, res->n);
	memset(res, 0, sizeof(*res));
}
