// SPDX-License-Identifier: GPL-2.0
/*
 * How the run's user stacks were walked: DWARF tables or frame pointers (and why not DWARF),
 * how far the walks got and why they ended, and what the tables hold; and with --sample, how
 * many stacks were taken. JSON "unwind" (and "stack_sampling"), a text section under the
 * tables, and lines on stderr with --folded -v.
 */
#include <stdio.h>

#include "out/report.h"
#include "out/unwind_report.h"
#include "lib/util.h"

static const struct {
	int counter;
	const char *key;
	const char *what;
} walk_ends[] = {
	{CNT_UNWIND_END_ROOT, "root", "reached the outermost frame"},
	{CNT_UNWIND_END_FP, "fp_chain_end", "frame-pointer chain ended (FP 0)"},
	{CNT_UNWIND_END_DEPTH, "depth", "filled the frames kept"},
	{CNT_UNWIND_END_NO_VMA, "no_mapping", "a return address in no executable mapping"},
	{CNT_UNWIND_END_GAP, "no_cfi", "a PC no CFI row covers"},
	{CNT_UNWIND_END_UNSUPPORTED, "unsupported", "a CFI rule the walker cannot follow"},
	{CNT_UNWIND_END_READ, "bad_frame",
	 "a stack read failed, or a frame was not above its callee"},
	{CNT_UNWIND_END_NO_TABLE, "no_table", "code without a table and no usable frame pointer"},
	{CNT_UNWIND_END_BUSY, "mapping_busy",
	 "a mapping could not be looked up then (its lock held, or a lookup pending)"},
	{CNT_UNWIND_END_PENDING, "table_loading",
	 "its file's table still loading, and no usable frame pointer"},
};

#define NWALK_ENDS (sizeof(walk_ends) / sizeof(walk_ends[0]))

static void json_unwind(struct json_writer *jw, const struct run_result *res,
			const struct mm_stats *st)
{
	const struct unwind_stats *t = res->unwind_tables ? &res->unwind_stats : NULL;

	jw_key(jw, "unwind");
	jw_begin_object(jw);
	jw_key(jw, "method");
	jw_string(jw, res->unwind_dwarf ? "dwarf" : "fp");
	jw_key(jw, "why_not_dwarf");
	if (res->unwind_dwarf)
		jw_null(jw);
	else
		jw_string(jw, res->unwind_why);
#define U64_OR_NULL(key, v)                                                                        \
	do {                                                                                       \
		jw_key(jw, key);                                                                   \
		if (res->unwind_dwarf)                                                             \
			jw_u64(jw, v);                                                             \
		else                                                                               \
			jw_null(jw);                                                               \
	} while (0)
	U64_OR_NULL("walks", st->c[CNT_UNWIND_WALKS]);
	U64_OR_NULL("frames_cfi", st->c[CNT_UNWIND_FRAMES_CFI]);
	U64_OR_NULL("frames_fp", st->c[CNT_UNWIND_FRAMES_FP]);
	U64_OR_NULL("frames_cached", st->c[CNT_UNWIND_FRAMES_CACHED]);
	U64_OR_NULL("mapping_lookups", st->c[CNT_UNWIND_VMA_LOOKUPS]);
	U64_OR_NULL("mapping_busy", st->c[CNT_UNWIND_VMA_BUSY]);
	U64_OR_NULL("file_requests", st->c[CNT_UNWIND_FILE_REQUESTS]);
	jw_key(jw, "ended");
	if (!res->unwind_dwarf) {
		jw_null(jw);
	} else {
		jw_begin_object(jw);
		for (size_t i = 0; i < NWALK_ENDS; i++) {
			jw_key(jw, walk_ends[i].key);
			jw_u64(jw, st->c[walk_ends[i].counter]);
		}
		jw_end_object(jw);
	}
	jw_key(jw, "tables");
	if (!t) {
		jw_null(jw);
	} else {
		jw_begin_object(jw);
		jw_key(jw, "files");
		jw_u64(jw, t->files);
		jw_key(jw, "files_without_cfi");
		jw_u64(jw, t->files_no_cfi);
		jw_key(jw, "files_unusable");
		jw_u64(jw, t->files_unusable);
		jw_key(jw, "files_gone");
		jw_u64(jw, t->files_gone);
		jw_key(jw, "files_over_budget");
		jw_u64(jw, t->files_budget);
		jw_key(jw, "files_evicted");
		jw_u64(jw, t->files_evicted);
		jw_key(jw, "rows");
		jw_u64(jw, t->rows);
		jw_key(jw, "rules");
		jw_u64(jw, t->rules);
		jw_key(jw, "bytes");
		jw_u64(jw, t->bytes);
		jw_key(jw, "budget_bytes");
		jw_u64(jw, t->budget_bytes);
		jw_key(jw, "bytes_evicted");
		jw_u64(jw, t->bytes_evicted);
		jw_key(jw, "cache_hits");
		jw_u64(jw, t->cache_hits);
		jw_key(jw, "cache_stores");
		jw_u64(jw, t->cache_stores);
		jw_key(jw, "load_ms");
		jw_double(jw, (double)t->load_ns / 1e6);
		jw_end_object(jw);
	}
#undef U64_OR_NULL
	jw_end_object(jw);
}

static void text_unwind(FILE *out, const struct run_result *res, const struct mm_stats *st)
{
	const struct unwind_stats *t = res->unwind_tables ? &res->unwind_stats : NULL;
	uint64_t walks = st->c[CNT_UNWIND_WALKS];

	if (!res->unwind_dwarf) {
		fprintf(out, "\nuser stacks: frame pointers (%s)\n", res->unwind_why);
		return;
	}
	fprintf(out,
		"\nuser stacks: dwarf, %llu walks (%llu frames by CFI, %llu by frame pointer)\n",
		(unsigned long long)walks, (unsigned long long)st->c[CNT_UNWIND_FRAMES_CFI],
		(unsigned long long)st->c[CNT_UNWIND_FRAMES_FP]);
	for (size_t i = 0; i < NWALK_ENDS && walks; i++)
		if (st->c[walk_ends[i].counter])
			fprintf(out, "  %10llu %5.1f%%  %s\n",
				(unsigned long long)st->c[walk_ends[i].counter],
				100.0 * (double)st->c[walk_ends[i].counter] / (double)walks,
				walk_ends[i].what);
	if (t)
		fprintf(out,
			"  tables: %u files (%u from the cache; %u without CFI, %u unusable, %u "
			"over budget), %llu rows, %.1f of %.0f MB, %.1f ms; %u evicted (%.1f MB) "
			"when no process mapped them\n",
			t->files, t->cache_hits, t->files_no_cfi, t->files_unusable,
			t->files_budget, (unsigned long long)t->rows, (double)t->bytes / 1048576.0,
			(double)t->budget_bytes / 1048576.0, (double)t->load_ns / 1e6,
			t->files_evicted, (double)t->bytes_evicted / 1048576.0);
}

/* --sample N (absent without it, or with N 1: every event's stacks are taken). */
static void json_sampling(struct json_writer *jw, const struct run_result *res,
			  const struct mm_stats *st)
{
	if (res->opts->sample_every <= 1)
		return;
	jw_key(jw, "stack_sampling");
	jw_begin_object(jw);
	jw_key(jw, "every");
	jw_u64(jw, res->opts->sample_every);
	jw_key(jw, "stacks_taken");
	jw_u64(jw, st->c[CNT_STACK_SAMPLES]);
	jw_end_object(jw);
}

static void text_sampling(FILE *out, const struct run_result *res, const struct mm_stats *st)
{
	if (res->opts->sample_every <= 1)
		return;
	fprintf(out,
		"\nstacks: sampled, 1 event in %u on average per CPU: %llu taken, each weighing "
		"%u in the stacks' counts (the tables count every event)\n",
		res->opts->sample_every, (unsigned long long)st->c[CNT_STACK_SAMPLES],
		res->opts->sample_every);
}

void unwind_report(struct report *r, const struct mm_stats *st)
{
	if (!r->res->cfg.stacks && !r->res->cfg.tlb_stacks)
		return;
	if (r->jw) {
		json_sampling(r->jw, r->res, st);
		json_unwind(r->jw, r->res, st);
	} else {
		text_sampling(r->out, r->res, st);
		text_unwind(r->out, r->res, st);
	}
}

void unwind_report_stderr(const struct run_result *res, const struct mm_stats *st)
{
	text_sampling(stderr, res, st);
	text_unwind(stderr, res, st);
}
