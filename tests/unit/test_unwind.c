/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tests of the unwind-table loader (user/core/unwind.c): files' tables packed one after the other
 * into real BPF array maps of chunks, as the BPF walker reads them. The oracle is the compiler's
 * own search (cfi_table_find() on the file's table compiled apart): for every row start, the
 * address before it and one inside, the rule found through the maps the way
 * bpf/unwind_walk.bpf.h finds it (file entry, segment, page index, binary search, rule chunk)
 * must be the same rule. Needs CAP_BPF (root); skipped without it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cfi/cfi.h"
#include "sym/sym.h"
#include "test.h"
#include "core/unwind.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <bpf/bpf.h>

struct maps {
	int files, rows, pages, rules;
	uint32_t nrows, npages, nrules; /* chunks */
};

static int array_map(const char *name, uint32_t value_size, uint32_t n)
{
	return bpf_map_create(BPF_MAP_TYPE_ARRAY, name, 4, value_size, n, NULL);
}

static bool maps_create(struct maps *m, uint32_t nrows, uint32_t npages, uint32_t nrules)
{
	m->nrows = nrows;
	m->npages = npages;
	m->nrules = nrules;
	m->files = bpf_map_create(BPF_MAP_TYPE_HASH, "t_files", sizeof(struct unwind_file_key),
				  sizeof(struct unwind_file), 64, NULL);
	m->rows = array_map("t_rows", sizeof(struct unwind_row_chunk), nrows);
	m->pages = array_map("t_pages", sizeof(struct unwind_page_chunk), npages);
	m->rules = array_map("t_rules", sizeof(struct unwind_rule_chunk), nrules);
	return m->files >= 0 && m->rows >= 0 && m->pages >= 0 && m->rules >= 0;
}

static void maps_close(struct maps *m)
{
	close(m->files);
	close(m->rows);
	close(m->pages);
	close(m->rules);
}

static uint32_t row_word(const struct maps *m, uint32_t g)
{
	struct unwind_row_chunk c;
	uint32_t k = g / UNWIND_ROW_CHUNK;

	if (bpf_map_lookup_elem(m->rows, &k, &c))
		return 0;
	return c.w[g % UNWIND_ROW_CHUNK];
}

static uint32_t page_first(const struct maps *m, uint32_t g)
{
	struct unwind_page_chunk c;
	uint32_t k = g / UNWIND_PAGE_CHUNK;

	if (bpf_map_lookup_elem(m->pages, &k, &c))
		return UINT32_MAX;
	return c.first[g % UNWIND_PAGE_CHUNK];
}

/* The walker's search (bpf/unwind_walk.bpf.h unwind_rule_at()), on the maps: the rule of the
 * row covering virtual address vaddr, false if none. */
static bool rule_at(const struct maps *m, const struct unwind_file *f, uint64_t vaddr,
		    struct cfi_rule *rule)
{
	uint64_t rel;
	uint32_t page, lo, hi, key, row, ridx, k;
	struct unwind_rule_chunk rc;

	if (vaddr < f->base)
		return false;
	rel = vaddr - f->base;
	page = (uint32_t)(rel >> 16);
	if ((rel >> 16) >= f->npages)
		return false;
	lo = page_first(m, f->pages_start + page);
	hi = page_first(m, f->pages_start + page + 1);
	if (hi < lo || hi > f->nrows)
		return false;
	key = (uint32_t)(rel & 0xffff);
	for (int i = 0; i < 17 && lo < hi; i++) {
		uint32_t mid = lo + (hi - lo) / 2;

		if ((row_word(m, f->rows_start + mid) & 0xffff) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	row = row_word(m, f->rows_start + lo - 1);
	ridx = row >> 16;
	if (ridx >= f->nrules)
		return false;
	ridx += f->rules_start;
	k = ridx / UNWIND_RULE_CHUNK;
	if (bpf_map_lookup_elem(m->rules, &k, &rc))
		return false;
	*rule = rc.r[ridx % UNWIND_RULE_CHUNK];
	return true;
}

/* Every row start, the address before it and one inside: the same rule both ways. */
static void compare_file(const struct maps *m, const char *path)
{
	struct unwind_file_key key = {0};
	struct cfi_table *t = NULL;
	struct unwind_file f;
	struct stat st;
	uint64_t checked = 0, differ = 0;

	if (stat(path, &st) || cfi_table_from_file(path, &t)) {
		printf("# %s: not readable, skipped\n", path);
		return;
	}
	key.dev = major(st.st_dev) << 20 | minor(st.st_dev);
	key.ino = st.st_ino;
	EXPECT(bpf_map_lookup_elem(m->files, &key, &f) == 0);
	EXPECT_EQ_U64(f.state, UNWIND_FILE_READY);
	EXPECT_EQ_U64(f.nrows, t->nrows);
	EXPECT_EQ_U64(f.base, t->base);
	EXPECT_EQ_U64(f.has_build_id, t->build_id_len > 0);
	EXPECT(!memcmp(f.build_id, t->build_id, sizeof(f.build_id)));
	for (uint32_t i = 0; i < t->nrows && f.state == UNWIND_FILE_READY; i++) {
		uint64_t start = cfi_table_row_addr(t, i),
			 probes[3] = {start, start - 1, start + 1};

		for (int p = 0; p < 3; p++) {
			int64_t r = cfi_table_find(t, probes[p]);
			struct cfi_rule got;
			bool found = rule_at(m, &f, probes[p], &got);

			/* Past the last page the compiler gives the closing gap row, the walker
			 * none: both mean stop. */
			if (r < 0 || (!found && t->rules[t->rows[r].rule].kind == CFI_GAP))
				continue;
			checked++;
			if (!found || memcmp(&got, &t->rules[t->rows[r].rule], sizeof(got)))
				differ++;
		}
	}
	printf("# %s: %u rows at row %u, page %u, rule %u of the maps; %" PRIu64
	       " addresses checked, %" PRIu64 " differ\n",
	       path, t->nrows, f.rows_start, f.pages_start, f.rules_start, checked, differ);
	EXPECT(checked > t->nrows);
	EXPECT_EQ_U64(differ, 0);
	cfi_table_free(t);
}

/* Tables on new maps of these sizes (in chunks); NULL, said, without CAP_BPF. */
static struct unwind_tables *tables_on_maps(struct maps *m, uint32_t nrows, uint32_t npages,
					    uint32_t nrules)
{
	struct unwind_tables *u;

	if (!maps_create(m, nrows, npages, nrules)) {
		printf("# no BPF maps (%s): skipped\n", strerror(errno));
		return NULL;
	}
	u = unwind_tables_new(m->files, m->rows, m->pages, m->rules, m->nrows, m->npages, m->nrules,
			      NULL);
	EXPECT(u != NULL);
	return u;
}

static const char *const files[] = {
	"/usr/lib/x86_64-linux-gnu/libc.so.6",
	"/usr/bin/python3.11",
	"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
};

/* Three files packed after one another (none starting on a chunk boundary), each read back
 * through the maps exactly. */
static void test_packed_tables(void)
{
	struct usyms *us = usyms_new();
	struct unwind_tables *u;
	struct maps m;

	u = tables_on_maps(&m, 256, 8, 8);
	for (size_t i = 0; u && i < sizeof(files) / sizeof(files[0]); i++)
		unwind_tables_add_path(u, us, files[i]);
	for (size_t i = 0; u && i < sizeof(files) / sizeof(files[0]); i++)
		compare_file(&m, files[i]);
	if (u)
		printf("# packed: %u files, %" PRIu64 " rows, %" PRIu64 " bytes\n",
		       unwind_tables_stats(u)->files, unwind_tables_stats(u)->rows,
		       unwind_tables_stats(u)->bytes);
	unwind_tables_free(u);
	maps_close(&m);
	usyms_free(us);
}

/* A file that does not fit is left out and counted; what was loaded before stays whole. */
static void test_budget(void)
{
	struct usyms *us = usyms_new();
	struct unwind_file_key key = {0};
	struct unwind_tables *u;
	struct unwind_file f;
	struct stat st;
	struct maps m;

	/* libc's 28k rows fit in 32 row chunks; python3.11's 64k do not. */
	u = tables_on_maps(&m, 32, 4, 4);
	if (u) {
		unwind_tables_add_path(u, us, files[0]);
		unwind_tables_add_path(u, us, files[1]);
		EXPECT_EQ_U64(unwind_tables_stats(u)->files, 1);
		EXPECT_EQ_U64(unwind_tables_stats(u)->files_budget, 1);
		if (stat(files[1], &st) == 0) {
			key.dev = major(st.st_dev) << 20 | minor(st.st_dev);
			key.ino = st.st_ino;
			EXPECT(bpf_map_lookup_elem(m.files, &key, &f) == 0);
			EXPECT_EQ_U64(f.state, UNWIND_FILE_NONE);
		}
		compare_file(&m, files[0]);
	}
	unwind_tables_free(u);
	maps_close(&m);
	usyms_free(us);
}

/* A copy of the file at from in dir, as name: a file of its own (inode) that no process maps. */
static bool copy_file(const char *from, const char *dir, const char *name, char *to, size_t size)
{
	char cmd[8192];

	snprintf(to, size, "%s/%s", dir, name);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	return system(cmd) == 0;
}

static int file_state(const struct maps *m, const char *path)
{
	struct unwind_file_key key = {0};
	struct unwind_file f;
	struct stat st;

	if (stat(path, &st))
		return -1;
	key.dev = major(st.st_dev) << 20 | minor(st.st_dev);
	key.ino = st.st_ino;
	return bpf_map_lookup_elem(m->files, &key, &f) ? -1 : (int)f.state;
}

/* Two copies of python3.11 do not fit together: with the first mapped by no process (and
 * loaded 250 ms before), loading the second evicts it (its entry gone at once), waits the grace
 * period for its space, then loads there, whole. libc, which this process maps, stays. */
static void test_evict(void)
{
	char dir[] = "/tmp/mmscope-evict-XXXXXX", a[4096], b[4096], cmd[4200];
	struct usyms *us = usyms_new();
	struct unwind_tables *u;
	const struct unwind_stats *st;
	struct maps m;

	if (!mkdtemp(dir)) {
		EXPECT(0);
		return;
	}
	/* libc's 28k rows and one python3.11's 64k in 96 chunks of 1024 rows, not two. */
	u = tables_on_maps(&m, 96, 8, 8);
	if (u && copy_file(files[1], dir, "a", a, sizeof(a)) &&
	    copy_file(files[1], dir, "b", b, sizeof(b))) {
		st = unwind_tables_stats(u);
		unwind_tables_add_path(u, us, files[0]);
		unwind_tables_add_path(u, us, a);
		EXPECT_EQ_U64(st->files, 2);
		/* A table younger than 200 ms is kept: its process may be mapping it. */
		usleep(250000);
		unwind_tables_add_path(u, us, b);
		EXPECT_EQ_U64(st->files, 2);
		EXPECT_EQ_U64(st->files_evicted, 1);
		EXPECT(st->bytes_evicted > 64000 * 4);
		EXPECT_EQ_U64(st->files_budget, 0);
		EXPECT_EQ_U64(file_state(&m, a), -1);
		EXPECT_EQ_U64(file_state(&m, b), UNWIND_FILE_PENDING);
		EXPECT_EQ_U64(file_state(&m, files[0]), UNWIND_FILE_READY);
		EXPECT(unwind_tables_busy(u));
		/* Not before the grace period. */
		unwind_tables_work(u, us, 0);
		EXPECT_EQ_U64(file_state(&m, b), UNWIND_FILE_PENDING);
		usleep(250000);
		unwind_tables_work(u, us, 0);
		EXPECT(!unwind_tables_busy(u));
		EXPECT_EQ_U64(st->files, 3);
		EXPECT_EQ_U64(st->files_budget, 0);
		EXPECT_EQ_U64(file_state(&m, b), UNWIND_FILE_READY);
		compare_file(&m, b);
		compare_file(&m, files[0]);
		printf("# evict: %u files loaded, %u evicted (%" PRIu64 " bytes), %" PRIu64
		       " bytes now\n",
		       st->files, st->files_evicted, st->bytes_evicted, st->bytes);
	}
	unwind_tables_free(u);
	if (u)
		maps_close(&m);
	usyms_free(us);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	EXPECT(system(cmd) == 0);
}

TEST_MAIN(T(test_packed_tables), T(test_budget), T(test_evict))
