// SPDX-License-Identifier: GPL-2.0
/*
 * Faults on files (faults' by_file), as core/file_read.c found them: the heaviest files shown
 * by faults and by major faults; every fault on a file that is in no row shown is in the
 * [other] row, so the rows add up to the totals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "out/file_report.h"

/* Processes listed per file; the rest of a file's faults are in its processes' [other]. */
#define FILE_TOP_PROCS 5

static void json_counts(struct json_writer *jw, const uint64_t *n)
{
	jw_key(jw, "faults");
	jw_u64(jw, file_row_faults(n));
	jw_key(jw, "minor");
	jw_u64(jw, n[TY_MINOR]);
	jw_key(jw, "major");
	jw_u64(jw, n[TY_MAJOR]);
	jw_key(jw, "incomplete");
	jw_u64(jw, n[TY_INCOMPLETE]);
}

static void json_latency(struct report *r, bool untimed, const uint64_t *n, uint64_t sum,
			 const uint64_t *max)
{
	uint64_t done = n[TY_MINOR] + n[TY_MAJOR];

	jw_key(r->jw, "latency_ns");
	if (untimed) {
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

static void json_row(struct report *r, bool untimed, const struct file_row *row)
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
	json_latency(r, untimed, row->n, row->lat_sum, &row->lat_max);
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
			(unsigned long long)file_row_faults(p->n));
		free(comm);
	}
	if (row->nprocs > 3)
		fprintf(out, ", +%d more", row->nprocs - 3);
}

static void text_row(struct report *r, bool untimed, const struct file_row *row)
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
	fprintf(r->out, "  %9llu %9llu %7llu %6llu ", (unsigned long long)file_row_faults(row->n),
		(unsigned long long)row->n[TY_MINOR], (unsigned long long)row->n[TY_MAJOR],
		(unsigned long long)row->n[TY_INCOMPLETE]);
	if (done && !untimed)
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

void faults_report_files(struct report *r, const struct mm_stats *st, const struct file_result *f)
{
	const uint64_t total[TY_NR] = {st->c[CNT_FILE_MINOR], st->c[CNT_FILE_MAJOR],
				       st->c[CNT_FILE_INCOMPLETE]};
	uint64_t other[TY_NR] = {st->c[CNT_FILE_OTHER_MINOR], st->c[CNT_FILE_OTHER_MAJOR],
				 st->c[CNT_FILE_OTHER_INCOMPLETE]};
	uint64_t other_lat = st->c[CNT_FILE_OTHER_LAT_SUM], text_other[TY_NR];
	const struct file_row *rows = f->rows;
	int top = f->top, n = rows ? f->n : 0;

	if (f->why) {
		if (r->jw) {
			report_counter(r, "faults.by_file", "", false, 0, f->why);
			report_counter(r, "faults.files_total", "", false, 0, f->why);
		} else {
			fprintf(r->out,
				"\nfiles faulted (the file each fault's mapping maps)\n"
				"  n/a (%s)\n",
				f->why);
		}
		return;
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
				json_row(r, f->untimed, &rows[i]);
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
		json_latency(r, f->untimed, other, other_lat, NULL);
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
	} else if (file_row_faults(total)) {
		char title[160];

		snprintf(title, sizeof(title),
			 "files faulted: %llu faults on %d files (top %d by faults)",
			 (unsigned long long)file_row_faults(total), n, top);
		text_header(r, title);
		for (int i = 0; i < n && i < top; i++)
			text_row(r, f->untimed, &rows[i]);
		if (file_row_faults(text_other))
			fprintf(r->out, "  %9llu %9llu %7llu %6llu %9s [other]\n",
				(unsigned long long)file_row_faults(text_other),
				(unsigned long long)text_other[TY_MINOR],
				(unsigned long long)text_other[TY_MAJOR],
				(unsigned long long)text_other[TY_INCOMPLETE], "-");
		if (f->nmajor) {
			text_header(r, "files by major faults (page-cache misses)");
			for (int i = 0; i < f->nmajor && i < top; i++)
				text_row(r, f->untimed, f->bymajor[i].row);
		}
	}
}
