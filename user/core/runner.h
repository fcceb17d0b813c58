/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The run of a tracing subcommand, written once: open the session, print each interval's
 * counts (-i), then the totals or the folded stacks. A subcommand supplies only what it
 * collects and how its sections print.
 */
#ifndef MMSCOPE_RUNNER_H
#define MMSCOPE_RUNNER_H

#include "core/session.h"
#include "out/report.h"

struct tracing_spec {
	struct session_config cfg;
	/* Print the sections of one interval (final false) or of the whole run (final true;
	 * percpu holds the per-CPU values then, s->ncpus of them). s: for the tables read at the
	 * end (the writers read r->res). */
	void (*print)(struct report *r, struct session *s, const struct mm_stats *st,
		      const struct mm_stats *percpu, bool final);
	/* Flame graphs: what the stacks count ("page faults") and the unit ("faults"). */
	const char *flame_what, *flame_unit;
	/* --pprof: the label key of the leaf frame ("fault_class"), what is cut from its name
	 * ("tlb "), and whether events have a latency (where faults complete). */
	const char *pprof_class_label, *pprof_class_prefix;
	bool pprof_latency;
	/* Leaf frame of a folded stack, from the folded key's kind. */
	void (*kind_name)(uint32_t kind, char *buf, size_t len);
	/* Set-up after the hooks are attached, before the target runs (may be NULL). */
	void (*after_open)(struct session *s);
	/* Before each print: refresh counters kept outside BPF (may be NULL). */
	void (*before_print)(struct session *s, bool final);
};

int run_tracing(struct mm_opts *opts, const struct tracing_spec *spec);

/* Leaf names for faults and TLB flushes: "[write minor]", "[tlb remote_ipi_send]". */
void mm_kind_name(const struct run_result *res, uint32_t kind, char *buf, size_t len);

#endif
