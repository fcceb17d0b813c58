/* SPDX-License-Identifier: GPL-2.0 */
/* A writer's report into memory, in text or inside a JSON object, for the writers' unit tests. */
#ifndef MMSCOPE_TEST_REPORT_MEM_H
#define MMSCOPE_TEST_REPORT_MEM_H

#include "mem_file.h"
#include "out/json.h"
#include "out/report.h"

/* s: the session as the test set it up; its output becomes m. */
static inline void report_mem_begin(struct report *r, struct session *s, struct mem *m, bool json)
{
	mem_open(m);
	s->out = m->f;
	report_init(r, s);
	if (json) {
		r->jw = jw_new(m->f, false);
		jw_begin_object(r->jw);
	}
}

/* Ends the report; m->buf holds its text until mem_free(). */
static inline void report_mem_end(struct report *r, struct mem *m)
{
	if (r->jw) {
		jw_end_object(r->jw);
		jw_free(r->jw);
	}
	mem_close(m);
}

#endif
