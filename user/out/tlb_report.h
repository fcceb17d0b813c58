/* SPDX-License-Identifier: GPL-2.0 */
/* The tlb and switch sections, shared by `mmscope tlb`, `switch`, `faults` and `stat`. */
#ifndef MMSCOPE_TLB_REPORT_H
#define MMSCOPE_TLB_REPORT_H

#include "core/tlb_read.h"
#include "out/report.h"

/* JSON key of a tlb:tlb_flush reason number ("remote_ipi_send", or "reason_N"). */
const char *tlb_reason_key(const struct run_result *res, unsigned int reason);
/* Name of a system call number of this architecture, or NULL. */
const char *syscall_name(int nr);

void tlb_report_counts(struct report *r, const struct mm_stats *st, bool histograms);
/* Faults of each class, and how many of them issued local / broadcast invalidations. */
void tlb_report_by_fault_class(struct report *r, const struct mm_stats *st);
/* by_process, by_syscall (end of run), from the rows tlb_details_read() gave. */
void tlb_report_details(struct report *r, const struct tlb_details *d);
void hash_report_counts(struct report *r, const struct mm_stats *st);
void switch_report_counts(struct report *r, const struct mm_stats *st);
void switch_report_details(struct report *r, const struct mm_stats *percpu, int ncpus,
			   const struct switch_details *d);

#endif
