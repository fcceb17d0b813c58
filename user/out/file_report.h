/* SPDX-License-Identifier: GPL-2.0 */
/* Faults on files, by file and process (faults' by_file). */
#ifndef MMSCOPE_FILE_REPORT_H
#define MMSCOPE_FILE_REPORT_H

#include "core/file_read.h"
#include "out/report.h"

/* The top files by faults and by major faults, with their processes, and the [other] row,
 * from the files file_result_read() gave; n/a where handle_mm_fault() is not hooked. */
void faults_report_files(struct report *r, const struct mm_stats *st, const struct file_result *f);

#endif
