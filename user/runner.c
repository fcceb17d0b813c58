// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"
#include "stacks.h"
#include "tlb_report.h"

static const struct tracing_spec *spec;
static struct mm_stats prev_stats;

static void stats_delta(struct mm_stats *out, const struct mm_stats *cur,
			const struct mm_stats *prev)
{
	const __u64 *c = (const __u64 *)cur, *p = (const __u64 *)prev;
	__u64 *o = (__u64 *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(__u64); i++)
		o[i] = c[i] - p[i];
}

static void on_interval(struct session *s, int index, double t0, double t1)
{
	struct mm_stats cur, delta;
	struct report r;

	if (session_read_stats(s, &cur, NULL))
		return;
	stats_delta(&delta, &cur, &prev_stats);
	prev_stats = cur;
	if (spec->before_print)
		spec->before_print(s, false);
	report_init(&r, s);
	report_begin(&r, index, t0, t1);
	spec->print(&r, &delta, NULL, false);
	report_end(&r, &delta);
	/* The reader went away (| head): stop, quietly. */
	if (fflush(s->out) != 0 || ferror(s->out))
		s->out_broken = true;
}

static struct session *folded_session;

static void kind_name_trampoline(uint32_t kind, char *buf, size_t len)
{
	mm_kind_name(folded_session, kind, buf, len);
}

void mm_kind_name(struct session *s, uint32_t kind, char *buf, size_t len)
{
	if (kind & KIND_TLB) {
		snprintf(buf, len, "[tlb %s]", tlb_reason_key(s, kind & ~KIND_TLB));
		return;
	}
	const char *access = !(kind & FC_ACCESS_KNOWN) ? "fault"
			     : kind & FC_WRITE	       ? "write"
			     : kind & FC_EXEC	       ? "exec"
						       : "read";
	const char *done = !(kind & FC_DONE) ? "incomplete" : kind & FC_MAJOR ? "major" : "minor";

	snprintf(buf, len, "[%s%s %s]", kind & FC_USER ? "" : "kernel ", access, done);
}

int run_tracing(struct mm_opts *opts, const struct tracing_spec *sp)
{
	struct mm_stats st, *percpu = NULL;
	struct session s;
	struct report r;
	int status = 1;

	spec = sp;
	memset(&prev_stats, 0, sizeof(prev_stats));
	if (session_open(&s, opts, &sp->cfg))
		goto out;
	if (sp->after_open)
		sp->after_open(&s);
	session_run(&s, on_interval);
	if (session_read_stats(&s, &st, &percpu)) {
		err_msg("cannot read the statistics map");
		goto out;
	}
	/* Faults still open now never completed: incomplete, with their invalidations. */
	st.c[CNT_FAULT_REPLACED] += session_open_faults(&s, &st);
	if (opts->folded) {
		struct stack_set set;
		int err;

		folded_session = &s;
		err = read_stacks(&s, kind_name_trampoline, &set);
		if (err)
			err_msg("reading the stacks: %s", strerror(-err));
		else
			write_folded(s.out, &set, false);
		free_stacks(&set);
		if (err)
			goto out;
		report_lost_stderr(&st);
		status = 0;
		goto out;
	}
	if (sp->before_print)
		sp->before_print(&s, true);
	report_init(&r, &s);
	report_begin(&r, -1, 0, 0);
	sp->print(&r, &st, percpu, true);
	report_end(&r, &st);
	status = 0;
out:
	free(percpu);
	return session_close(&s, status);
}
