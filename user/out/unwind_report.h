/* SPDX-License-Identifier: GPL-2.0 */
/* How user stacks were walked (user/out/unwind_report.c). */
#ifndef MMSCOPE_UNWIND_REPORT_H
#define MMSCOPE_UNWIND_REPORT_H

#include "out/report.h"

/* JSON "unwind" or the text section, where the run collects stacks. */
void unwind_report(struct report *r, const struct mm_stats *st);
/* The text section on stderr (--folded -v). */
void unwind_report_stderr(const struct run_result *res, const struct mm_stats *st);

#endif
