// SPDX-License-Identifier: GPL-2.0
/* The mmap log fed by hand: an instruction of an image as (build ID, offset), through a fork to
 * its parent's image, by its path without a build ID; forgetting the records of processes nothing
 * needs, keeping those a kept fork chains to, and the files of the records forgotten. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "core/mmap_log.h"

static const unsigned char id_a[20] = {0xaa, 1, 2, 3}, id_b[20] = {0xbb, 4, 5, 6};

/* Process tgid exec'ed at ns (its COMM record, then the exec hook a little later) and mapped
 * [start, start + 0x1000) of path at pgoff: the image named (tgid, ns + 10). */
static void exec_image(struct mmap_log *l, uint32_t tgid, uint64_t ns, uint64_t start,
		       uint64_t pgoff, const unsigned char *id, const char *path)
{
	mmap_log_add_exec(l, tgid, ns);
	mmap_log_add_map(l, tgid, ns + 1, start, 0x1000, pgoff, id, strdup(path));
	mmap_log_exec(l, tgid, ns + 10);
}

/* to_code() of ip in image (tgid, ns): the offset, or -1 when unknown; *id its build ID. */
static int64_t code_of(struct mmap_log *l, uint32_t tgid, uint64_t ns, uint64_t ip,
		       unsigned char *id)
{
	unsigned char image[20] = {0};
	uint64_t offset;

	memcpy(image, &ns, sizeof(ns));
	return mmap_log_to_code(l, tgid, image, ip, id, &offset) ? (int64_t)offset : -1;
}

static void to_code_through_fork(void)
{
	struct mmap_log *l = mmap_log_new();
	unsigned char id[20], id_other[20];

	exec_image(l, 10, 100, 0x7000, 0x2000, id_a, "/bin/a");
	mmap_log_fork(l, 11, 200, 10, 110);
	/* the child maps its own after the fork */
	mmap_log_add_map(l, 11, 210, 0x9000, 0x1000, 0x3000, id_b, strdup("/lib/b.so"));
	exec_image(l, 12, 300, 0x7000, 0x5000, NULL, "/bin/no-id");
	EXPECT_EQ_U64(code_of(l, 10, 110, 0x7010, id), 0x2010);
	EXPECT(memcmp(id, id_a, sizeof(id)) == 0);
	EXPECT_EQ_U64(code_of(l, 11, 200, 0x7020, id), 0x2020); /* the parent's mapping */
	EXPECT_EQ_U64(code_of(l, 11, 200, 0x9008, id), 0x3008);
	EXPECT(memcmp(id, id_b, sizeof(id)) == 0);
	EXPECT(code_of(l, 10, 110, 0x9008, id) == -1); /* the child's mapping, not the parent's */
	EXPECT(mmap_log_path_of(l, id) == NULL);       /* a real build ID */
	/* no build ID: one made of its path, the same in every process */
	EXPECT_EQ_U64(code_of(l, 12, 310, 0x7010, id), 0x5010);
	EXPECT(mmap_log_path_of(l, id) && strcmp(mmap_log_path_of(l, id), "/bin/no-id") == 0);
	exec_image(l, 15, 500, 0x8000, 0x5000, NULL, "/bin/no-id");
	EXPECT_EQ_U64(code_of(l, 15, 510, 0x8010, id_other), 0x5010);
	EXPECT(memcmp(id, id_other, sizeof(id)) == 0);
	EXPECT(code_of(l, 13, 310, 0x7010, id) == -1); /* no such image */
	mmap_log_free(l);
}

static bool keep_11(uint32_t tgid, void *arg)
{
	(void)arg;
	return tgid == 11;
}

static void count_path(const char *path, void *arg)
{
	if (strcmp(path, "/bin/c") == 0)
		(*(int *)arg)++;
}

/*
 * Forgetting: a process nothing needs goes (its two records and its image) at the second pass
 * that refuses it; a kept fork keeps
 * its parent's records; the file of an instruction settled before is still read for symbols.
 */
static void forgets_what_nobody_needs(void)
{
	struct mmap_log *l = mmap_log_new();
	unsigned char id[20];
	int read_c = 0;

	exec_image(l, 10, 100, 0x7000, 0x2000, id_a, "/bin/a");
	mmap_log_fork(l, 11, 200, 10, 110);
	exec_image(l, 12, 300, 0x4000, 0x0, id_b, "/bin/c");
	EXPECT_EQ_U64(code_of(l, 12, 310, 0x4100, id), 0x100); /* settled before it goes */
	EXPECT_EQ_U64(mmap_log_forget(l, keep_11, NULL), 0); /* spared once: it may be in flight */
	EXPECT_EQ_U64(code_of(l, 12, 310, 0x4100, id), 0x100);
	EXPECT_EQ_U64(mmap_log_forget(l, keep_11, NULL), 3);
	EXPECT_EQ_U64(mmap_log_forgotten(l), 3);
	EXPECT_EQ_U64(mmap_log_lost(l), 0);
	EXPECT(code_of(l, 12, 310, 0x4100, id) == -1);
	EXPECT_EQ_U64(code_of(l, 11, 200, 0x7010, id), 0x2010); /* through the parent, kept */
	EXPECT_EQ_U64(code_of(l, 10, 110, 0x7010, id), 0x2010);
	/* Its records gone, its file is still read (for a build ID looked for at the end), once. */
	mmap_log_read_files(l, count_path, &read_c);
	mmap_log_read_files(l, count_path, &read_c);
	EXPECT_EQ_U64(read_c, 1);
	/* More records after forgetting: found as before. */
	exec_image(l, 14, 400, 0x5000, 0x8000, id_b, "/bin/d");
	EXPECT_EQ_U64(code_of(l, 14, 410, 0x5004, id), 0x8004);
	mmap_log_free(l);
}

/* A process with one image (a fork child) is named through it; one that exec'ed again has two,
 * and its raw addresses are not guessed at. A file settled into stays known by its path. */
static void only_image_and_file_path(void)
{
	struct mmap_log *l = mmap_log_new();
	unsigned char id[20];
	uint64_t ns = 0;

	exec_image(l, 10, 100, 0x7000, 0x2000, id_a, "/bin/a");
	mmap_log_fork(l, 11, 200, 10, 110);
	exec_image(l, 12, 300, 0x7000, 0x5000, id_b, "/bin/b");
	exec_image(l, 12, 400, 0x7000, 0x5000, id_b, "/bin/b");
	EXPECT(mmap_log_only_image(l, 11, &ns) && ns == 200);
	EXPECT(mmap_log_only_image(l, 10, &ns) && ns == 110);
	EXPECT(!mmap_log_only_image(l, 12, &ns));    /* two images */
	EXPECT(!mmap_log_only_image(l, 13, &ns));    /* none */
	EXPECT(mmap_log_file_path(l, id_a) == NULL); /* nothing settled into it yet */
	EXPECT_EQ_U64(code_of(l, 11, 200, 0x7010, id), 0x2010);
	EXPECT(mmap_log_file_path(l, id_a) && strcmp(mmap_log_file_path(l, id_a), "/bin/a") == 0);
	mmap_log_free(l);
}

TEST_MAIN(T(to_code_through_fork), T(forgets_what_nobody_needs), T(only_image_and_file_path))
