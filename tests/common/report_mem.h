/* SPDX-License-Identifier: GPL-2.0 */
/* A writer's report into memory, in text or inside a JSON object, for the writers' unit tests. */
#ifndef MMSCOPE_TEST_REPORT_MEM_H
#define MMSCOPE_TEST_REPORT_MEM_H

#include "mem_file.h"
#include "out/json.h"
#include "out/report.h"

/* res: the run's result as the test built it; the report is written into m. */
static inline void report_mem_begin(struct report *r, const struct run_result *res, struct mem *m,
				    bool json)
{
	mem_open(m);
	report_init(r, res, m->f);
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
