// SPDX-License-Identifier: GPL-2.0
/*
 * Compiled unwind tables kept on disk by build ID, so that a file's table is ready the moment
 * a walk first meets it in later runs: compiling cc1's .eh_frame takes ~140 ms, in which the
 * start-up faults of a short compile come and go with shallow stacks; reading its 2 MB table
 * back takes about a millisecond.
 *
 * A file is the table exactly as struct cfi_table holds it, behind a header naming the format
 * and the build ID. The directory is root's (0700), but a file in it is still checked in full
 * before use: sizes against the file's length, and the page index against the rows.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfi/cfi.h"
#include "cfi/cfi_cache.h"

/* The format and the compiler's revision: change it with struct cfi_row, cfi_rule or the
 * header, and with anything that changes what user/cfi/cfi.c compiles from a file (02: .debug_frame
 * fills the gaps of .eh_frame; 03: the entry point without CFI is the outermost frame). */
#define CACHE_MAGIC "mmscfi03"

struct cache_header {
	char magic[8];
	uint16_t machine;
	uint16_t pad;
	uint32_t nsegs;
	uint64_t base;
	struct {
		uint64_t off, end;
		int64_t delta;
	} segs[CFI_MAX_SEGMENTS];
	uint32_t nrows, npages, nrules, build_id_len;
	unsigned char build_id[CFI_BUILD_ID_MAX];
};

static void cache_path(char *buf, size_t len, const char *dir, const unsigned char *id,
		       uint32_t idlen, uint16_t machine)
{
	size_t n = (size_t)snprintf(buf, len, "%s/", dir);

	for (uint32_t i = 0; i < idlen && n + 3 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%02x", id[i]);
	snprintf(buf + n, len - n, "-%u.cfi", machine);
}

/* Read (or write) all len bytes; false on an error or a short file. */
static bool io_all(int fd, void *buf, size_t len, bool write_it)
{
	char *p = buf;

	while (len) {
		ssize_t n = write_it ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static bool read_all(int fd, void *buf, size_t len)
{
	return io_all(fd, buf, len, false);
}

static bool write_all(int fd, const void *buf, size_t len)
{
	return io_all(fd, (void *)buf, len, true);
}

/* The table's arrays are consistent: sorted page index within the rows, rules in range. */
static bool table_sane(const struct cfi_table *t)
{
	if (t->page_first[t->npages] != t->nrows)
		return false;
	for (uint32_t p = 0; p < t->npages; p++)
		if (t->page_first[p] > t->page_first[p + 1])
			return false;
	for (uint32_t i = 0; i < t->nrows; i++)
		if (t->rows[i].rule >= t->nrules)
			return false;
	return t->nsegs <= CFI_MAX_SEGMENTS;
}

int cfi_cache_load(const char *dir, const unsigned char *id, uint32_t idlen, uint16_t machine,
		   struct cfi_table **out)
{
	struct cache_header h;
	struct cfi_table *t;
	char path[512];
	struct stat st;
	uint64_t want;
	int fd;

	if (!dir || !idlen || idlen > CFI_BUILD_ID_MAX)
		return -EINVAL;
	cache_path(path, sizeof(path), dir, id, idlen, machine);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !read_all(fd, &h, sizeof(h)) ||
	    memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) || h.machine != machine ||
	    h.build_id_len != idlen || memcmp(h.build_id, id, idlen) ||
	    h.nsegs > CFI_MAX_SEGMENTS || !h.nrows || h.nrules > 65536) {
		close(fd);
		return -EINVAL;
	}
	want = sizeof(h) + (uint64_t)h.nrows * sizeof(struct cfi_row) +
	       ((uint64_t)h.npages + 1) * sizeof(uint32_t) +
	       (uint64_t)h.nrules * sizeof(struct cfi_rule);
	if ((uint64_t)st.st_size != want) {
		close(fd);
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		close(fd);
		return -ENOMEM;
	}
	t->machine = h.machine;
	t->base = h.base;
	t->nsegs = h.nsegs;
	memcpy(t->segs, h.segs, sizeof(t->segs));
	t->nrows = h.nrows;
	t->npages = h.npages;
	t->nrules = h.nrules;
	t->build_id_len = h.build_id_len;
	memcpy(t->build_id, h.build_id, sizeof(t->build_id));
	t->rows = malloc((size_t)h.nrows * sizeof(*t->rows));
	t->page_first = malloc(((size_t)h.npages + 1) * sizeof(*t->page_first));
	t->rules = malloc((h.nrules ? h.nrules : 1) * sizeof(*t->rules));
	if (!t->rows || !t->page_first || !t->rules ||
	    !read_all(fd, t->rows, (size_t)h.nrows * sizeof(*t->rows)) ||
	    !read_all(fd, t->page_first, ((size_t)h.npages + 1) * sizeof(*t->page_first)) ||
	    !read_all(fd, t->rules, (size_t)h.nrules * sizeof(*t->rules)) || !table_sane(t)) {
		close(fd);
		cfi_table_free(t);
		return -EINVAL;
	}
	close(fd);
	t->stats.section = "cache";
	t->stats.rows = t->nrows;
	t->stats.rules = t->nrules;
	*out = t;
	return 0;
}

/* mkdir -p, each level 0700; 0 or -1 with errno. */
static int make_dirs(const char *dir)
{
	char buf[512];
	size_t len = strlen(dir);

	if (len >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, dir, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0700) && errno != EEXIST ? -1 : 0;
}

int cfi_cache_store(const char *dir, const struct cfi_table *t)
{
	struct cache_header h = {0};
	char path[512], tmp[540];
	bool ok;
	int fd;

	if (!dir || !t->build_id_len || !t->nrows)
		return -EINVAL;
	if (make_dirs(dir))
		return -errno;
	memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
	h.machine = t->machine;
	h.nsegs = t->nsegs;
	h.base = t->base;
	memcpy(h.segs, t->segs, sizeof(h.segs));
	h.nrows = t->nrows;
	h.npages = t->npages;
	h.nrules = t->nrules;
	h.build_id_len = t->build_id_len;
	memcpy(h.build_id, t->build_id, sizeof(h.build_id));
	cache_path(path, sizeof(path), dir, t->build_id, t->build_id_len, t->machine);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ok = write_all(fd, &h, sizeof(h)) &&
	     write_all(fd, t->rows, (size_t)t->nrows * sizeof(*t->rows)) &&
	     write_all(fd, t->page_first, ((size_t)t->npages + 1) * sizeof(*t->page_first)) &&
	     write_all(fd, t->rules, (size_t)t->nrules * sizeof(*t->rules));
	ok = close(fd) == 0 && ok;
	/* Whole or not at all: a reader never sees half a table. */
	if (!ok || rename(tmp, path)) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}
