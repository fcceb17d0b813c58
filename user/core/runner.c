// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "out/faults_report.h"
#include "out/pprof.h"
#include "core/runner.h"
#include "out/unwind_report.h"
#include "sym/stacks.h"
#include "out/tlb_report.h"

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
	struct run_result res;
	struct report r;

	if (session_read_stats(s, &cur, NULL))
		return;
	stats_delta(&delta, &cur, &prev_stats);
	prev_stats = cur;
	if (spec->before_print)
		spec->before_print(s, false);
	session_result(s, &res);
	report_init(&r, &res, s->out);
	report_begin(&r, index, t0, t1);
	spec->print(&r, s, &delta, NULL, false);
	report_end(&r, &delta);
	/* The reader went away (| head): stop, quietly. */
	if (fflush(s->out) != 0 || ferror(s->out))
		s->out_broken = true;
}

static const struct run_result *folded_result;

static void kind_name_trampoline(uint32_t kind, char *buf, size_t len)
{
	mm_kind_name(folded_result, kind, buf, len);
}

void mm_kind_name(const struct run_result *res, uint32_t kind, char *buf, size_t len)
{
	if (kind & KIND_TLB) {
		snprintf(buf, len, "[tlb %s]", tlb_reason_key(res, kind & ~KIND_TLB));
		return;
	}
	const char *access = !(kind & FC_ACCESS_KNOWN) ? "fault"
			     : kind & FC_WRITE	       ? "write"
			     : kind & FC_EXEC	       ? "exec"
						       : "read";
	const char *done = !(kind & FC_DONE) ? "incomplete" : kind & FC_MAJOR ? "major" : "minor";

	unsigned int type = FC_TYPE(kind);

	/* The type of mapping where handle_mm_fault() is hooked ([write minor anon]); none
	 * where it is not, or where the fault never reached it. */
	snprintf(buf, len, "[%s%s %s%s%s]", kind & FC_USER ? "" : "kernel ", access, done,
		 type ? " " : "", type ? fault_type_name(type) : "");
}

/* The hooks of the run, "fault-entry tp_btf, fault-completion perf, ...". */
static void hooks_line(const struct run_result *res, char *buf, size_t len)
{
	size_t used = (size_t)snprintf(buf, len, "hooks:");

	for (int e = 0; e < EV_NR && used < len; e++) {
		const struct event_selection *es = &res->sel->events[e];
		const struct hook_candidate *c = run_hook(res, (enum mm_event_id)e);
		char where[160];

		if (!es->wanted || es->ev->infra || !c)
			continue;
		hook_cand_describe(c, where, sizeof(where));
		used += (size_t)snprintf(buf + used, len - used, "%s %s %s %s", used > 6 ? "," : "",
					 es->ev->name, hook_method_name(c->method), where);
	}
}

/* The flame graph of the run's stacks, with what, where and how in its title lines. */
static int write_svg(struct session *s, const struct run_result *res, const struct tracing_spec *sp,
		     const struct stack_set *set, uint64_t taken)
{
	char title[256], where[768], hooks[1024], totals[384], lat[32], sampled[128];
	uint32_t every = s->opts->sample_every;
	struct flame_opts fo = {
		.title = title, .unit = sp->flame_unit, .latency = s->opts->weight_latency};
	int err;

	snprintf(title, sizeof(title), "mmscope %s: %s by stack, width = %s%s", s->opts->cmd->name,
		 sp->flame_what, s->opts->weight_latency ? "latency" : "count",
		 every > 1 ? " (estimated from sampled stacks)" : "");
	sampled[0] = '\0';
	if (every > 1)
		snprintf(sampled, sizeof(sampled),
			 " (estimated: stacks of 1 in %u %s per CPU, %llu taken, each weighing %u)",
			 every, sp->flame_unit, (unsigned long long)taken, every);
	snprintf(where, sizeof(where), "%s; kernel %s %s", res->target, res->kernel, res->machine);
	hooks_line(res, hooks, sizeof(hooks));
	flame_format_ns(set->latency_ns, lat, sizeof(lat));
	snprintf(totals, sizeof(totals), "%llu %s on %d stacks%s%s%s in %.2f s%s",
		 (unsigned long long)set->count, sp->flame_unit, set->distinct,
		 set->latency_ns ? ", " : "", set->latency_ns ? lat : "",
		 set->latency_ns ? " latency (fault entry to completion)" : "", res->duration_s,
		 sampled);
	fo.subtitle[0] = where;
	fo.subtitle[1] = hooks;
	fo.subtitle[2] = totals;
	err = flame_svg_write(s->svg, set->recs, set->n, &fo);
	if (err)
		err_msg("--svg %s: %s", s->opts->svg, strerror(-err));
	return err;
}

/* The profile of the run's stacks, with what, where and how as its comments. */
static int write_pprof(struct session *s, const struct run_result *res,
		       const struct tracing_spec *sp, const struct stack_set *set, uint64_t taken)
{
	char what[256], where[768], hooks[1024], sampled[192];
	uint32_t every = s->opts->sample_every;
	unsigned char kid[64];
	int kid_len = kernel_build_id(kid, sizeof(kid));
	struct pprof_opts po = {
		.events = sp->flame_unit,
		.unit = "count",
		/* A latency only where faults complete; else it is unknown, not 0. */
		.latency = sp->pprof_latency && res->sel->events[EV_FAULT_DONE].chosen >= 0,
		.default_latency = s->opts->weight_latency,
		.class_label = sp->pprof_class_label,
		.class_prefix = sp->pprof_class_prefix,
		.time_nanos = (uint64_t)(s->wall_start * 1e9),
		.duration_nanos = (uint64_t)(res->duration_s * 1e9),
		.kernel_build_id = kid_len > 0 ? kid : NULL,
		.kernel_build_id_len = kid_len > 0 ? (size_t)kid_len : 0,
		.comment = {what, where, hooks, every > 1 ? sampled : NULL},
		.period = every > 1 ? every : 1,
	};
	int err;

	if (kid_len < 0)
		verbose_msg("--pprof: the kernel's build ID: %s", strerror(-kid_len));
	snprintf(what, sizeof(what), "mmscope %s: %s by stack", s->opts->cmd->name, sp->flame_what);
	snprintf(sampled, sizeof(sampled),
		 "stacks of 1 in %u %s (on average, per CPU) taken: %llu; each sample weighs %u, "
		 "its values are estimates",
		 every, sp->flame_unit, (unsigned long long)taken, every);
	snprintf(where, sizeof(where), "%s; kernel %s %s", res->target, res->kernel, res->machine);
	hooks_line(res, hooks, sizeof(hooks));
	err = pprof_write(s->pprof, set->recs, set->n, &po);
	if (err)
		err_msg("--pprof %s: %s", s->opts->pprof, strerror(-err));
	return err;
}

int run_tracing(struct mm_opts *opts, const struct tracing_spec *sp)
{
	struct mm_stats st, *percpu = NULL;
	struct run_result res;
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
	session_result(&s, &res);
	if (opts_stacks(opts)) {
		/* --sample N: each stack taken stands for N events, lost ones too. */
		uint64_t weight = opts->sample_every > 1 ? opts->sample_every : 1;
		uint64_t taken = st.c[CNT_STACK_SAMPLES];
		struct stack_set set;
		int err;

		folded_result = &res;
		err = read_stacks(&s, kind_name_trampoline, opts->svg || opts->pprof, &set);
		st.c[CNT_LOST_FOLDED] += set.lost;
		scale_stacks(&set, weight);
		if (err)
			err_msg("reading the stacks: %s", strerror(-err));
		else if (opts->folded)
			write_folded(s.out, &set, opts->weight_latency,
				     st.c[CNT_LOST_FOLDED] * weight);
		if (!err && opts->svg)
			err = write_svg(&s, &res, sp, &set, taken);
		if (!err && opts->pprof)
			err = write_pprof(&s, &res, sp, &set, taken);
		free_stacks(&set);
		if (err)
			goto out;
		if (opts->folded) {
			report_lost_stderr(&st);
			if (verbose)
				unwind_report_stderr(&res, &st);
			status = 0;
			goto out;
		}
	}
	if (sp->before_print)
		sp->before_print(&s, true);
	report_init(&r, &res, s.out);
	report_begin(&r, -1, 0, 0);
	sp->print(&r, &s, &st, percpu, true);
	unwind_report(&r, &st);
	prog_stats_report(&r, &s.progs, verbose || opts->bpf_stats);
	report_end(&r, &st);
	status = 0;
out:
	free(percpu);
	return session_close(&s, status);
}
