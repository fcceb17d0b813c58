/* SPDX-License-Identifier: GPL-2.0 */
/* An in-memory FILE for the unit tests, so that exact output can be compared. */
#ifndef MMSCOPE_TEST_MEM_FILE_H
#define MMSCOPE_TEST_MEM_FILE_H

#include <stdio.h>
#include <stdlib.h>

struct mem {
	FILE *f;
	char *buf;
	size_t len;
};

static inline void mem_open(struct mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	if (!m->f) {
		perror("open_memstream");
		exit(2);
	}
}

/* Closes the stream; m->buf stays valid (NUL-terminated) until mem_free(). */
static inline void mem_close(struct mem *m)
{
	fclose(m->f);
	m->f = NULL;
}

static inline void mem_free(struct mem *m)
{
	free(m->buf);
	m->buf = NULL;
}

#endif
