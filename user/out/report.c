// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "out/report.h"

void report_init(struct report *r, const struct run_result *res, FILE *out)
{
	memset(r, 0, sizeof(*r));
	r->res = res;
	r->out = out;
}

static void json_target(struct report *r)
{
	const struct run_result *res = r->res;
	const struct mm_opts *o = res->opts;
	struct json_writer *w = r->jw;

	jw_key(w, "target");
	jw_begin_object(w);
	jw_key(w, "type");
	jw_string(w, o->argv	 ? "command"
		     : o->npids	 ? "pid"
		     : o->tid	 ? "tid"
		     : o->cgroup ? "cgroup"
				 : "host");
	if (o->argv) {
		jw_key(w, "command");
		jw_begin_array(w);
		for (int i = 0; o->argv[i]; i++)
			jw_string(w, o->argv[i]);
		jw_end_array(w);
		jw_key(w, "pid");
		jw_i64(w, res->child);
	}
	if (o->npids) {
		jw_key(w, "pids");
		jw_begin_array(w);
		for (int i = 0; i < o->npids; i++)
			jw_i64(w, o->pids[i]);
		jw_end_array(w);
	}
	if (o->tid) {
		jw_key(w, "tid");
		jw_i64(w, o->tid);
	}
	if (o->cgroup) {
		jw_key(w, "cgroup");
		jw_string(w, o->cgroup);
	}
	jw_key(w, "children");
	jw_bool(w, !o->no_children);
	if (res->self_left_out) {
		jw_key(w, "excluded");
		jw_begin_array(w);
		jw_begin_object(w);
		jw_key(w, "pid");
		jw_i64(w, res->self_pid);
		jw_key(w, "comm");
		jw_string(w, "mmscope");
		jw_key(w, "why");
		jw_string(w, "mmscope itself");
		jw_end_object(w);
		jw_end_array(w);
	}
	if (o->cpu_filter) {
		jw_key(w, "cpus");
		jw_begin_array(w);
		for (int c = 0; c < MMSCOPE_MAX_CPUS; c++)
			if (o->cpu_mask[c / 64] & (1ULL << (c % 64)))
				jw_i64(w, c);
		jw_end_array(w);
	}
	jw_end_object(w);
}

static void json_hooks(struct report *r)
{
	struct json_writer *w = r->jw;

	jw_key(w, "hooks");
	jw_begin_array(w);
	for (int e = 0; e < EV_NR; e++) {
		const struct event_selection *es = &r->res->sel->events[e];

		if (!es->wanted)
			continue;
		for (int i = 0; i < es->ev->ncands; i++) {
			const struct hook_candidate *c = &es->ev->cands[i];
			char where[160];

			hook_cand_describe(c, where, sizeof(where));
			jw_begin_object(w);
			jw_key(w, "event");
			jw_string(w, es->ev->name);
			jw_key(w, "method");
			jw_string(w, hook_method_name(c->method));
			jw_key(w, "attach");
			jw_string(w, where);
			jw_key(w, "chosen");
			jw_bool(w, es->chosen == i);
			if (es->chosen != i) {
				jw_key(w, "reason");
				jw_string(w, es->results[i].reason);
			}
			jw_end_object(w);
		}
	}
	jw_end_array(w);
}

void report_begin(struct report *r, int interval, double t0, double t1)
{
	const struct run_result *res = r->res;

	if (res->opts->json) {
		r->jw = jw_new(r->out, false);
		jw_begin_object(r->jw);
		jw_key(r->jw, "version");
		jw_string(r->jw, MMSCOPE_VERSION);
		jw_key(r->jw, "command");
		jw_string(r->jw, res->opts->cmd->name);
		jw_key(r->jw, "kernel");
		jw_string(r->jw, res->kernel);
		jw_key(r->jw, "arch");
		jw_string(r->jw, res->machine);
		if (interval >= 0) {
			jw_key(r->jw, "interval");
			jw_i64(r->jw, interval);
			jw_key(r->jw, "start");
			jw_double(r->jw, t0);
			jw_key(r->jw, "end");
			jw_double(r->jw, t1);
			jw_key(r->jw, "duration_s");
			jw_double(r->jw, t1 - t0);
		} else {
			jw_key(r->jw, "duration_s");
			jw_double(r->jw, res->duration_s);
		}
		json_target(r);
		json_hooks(r);
		return;
	}
	if (interval >= 0) {
		char clock[16] = "";

		if (res->opts->timestamp)
			format_clock(clock, sizeof(clock));
		fprintf(r->out, "\n%s%sinterval %d (%.2f s)\n", clock, clock[0] ? " " : "",
			interval, t1 - t0);
		return;
	}
	fprintf(r->out, "\nmmscope %s: %s, %.2f s, kernel %s (%s)\n", res->opts->cmd->name,
		res->target, res->duration_s, res->kernel, res->machine);
	for (int e = 0; e < EV_NR; e++) {
		const struct event_selection *es = &res->sel->events[e];
		char where[160];

		bool this_arch = false;

		for (int i = 0; i < es->ev->ncands; i++)
			this_arch |= (es->ev->cands[i].arches & res->arch) != 0;
		/* Other architectures' events: in JSON hooks, not in the text header. */
		if (!es->wanted || es->ev->infra || !this_arch)
			continue;
		if (es->chosen < 0) {
			fprintf(r->out, "  %-19s n/a (no usable hook; see 'mmscope probes')\n",
				es->ev->name);
			continue;
		}
		hook_cand_describe(&es->ev->cands[es->chosen], where, sizeof(where));
		fprintf(r->out, "  %-19s %s %s\n", es->ev->name,
			hook_method_name(es->ev->cands[es->chosen].method), where);
	}
}

void report_note_unavailable(struct report *r, const char *key, const char *why)
{
	if (r->nunavail >= REPORT_MAX_UNAVAILABLE)
		return;
	snprintf(r->unavail_key[r->nunavail], sizeof(r->unavail_key[0]), "%s", key);
	snprintf(r->unavail_why[r->nunavail], sizeof(r->unavail_why[0]), "%s", why ? why : "");
	r->nunavail++;
}

/* The JSON key is the last component of the dotted key: sections nest the rest. */
static const char *leaf_key(const char *key)
{
	const char *dot = strrchr(key, '.');

	return dot ? dot + 1 : key;
}

void report_counter(struct report *r, const char *key, const char *label, bool available,
		    uint64_t value, const char *why)
{
	if (!available)
		report_note_unavailable(r, key, why);
	if (r->jw) {
		jw_key(r->jw, leaf_key(key));
		if (available)
			jw_u64(r->jw, value);
		else
			jw_null(r->jw);
		return;
	}
	if (available)
		fprintf(r->out, "  %-26s %14llu\n", label, (unsigned long long)value);
	else
		fprintf(r->out, "  %-26s %14s (%s)\n", label, "n/a", why);
}

void report_hist(struct report *r, const char *key, const char *title, const char *unit,
		 const uint64_t *slots, const uint64_t *sum, bool available, const char *why)
{
	struct log2_hist h;
	uint64_t count;

	if (!available)
		report_note_unavailable(r, key, why);
	if (r->jw) {
		jw_key(r->jw, leaf_key(key));
		if (!available) {
			jw_null(r->jw);
			return;
		}
		jw_begin_array(r->jw);
		for (unsigned int i = 0; i < MMSCOPE_HIST_SLOTS; i++) {
			if (!slots[i])
				continue;
			jw_begin_object(r->jw);
			jw_key(r->jw, "lo");
			jw_u64(r->jw, hist_slot_lo(i));
			jw_key(r->jw, "hi");
			jw_u64(r->jw, hist_slot_hi(i));
			jw_key(r->jw, "count");
			jw_u64(r->jw, slots[i]);
			jw_end_object(r->jw);
		}
		jw_end_array(r->jw);
		if (sum) {
			char k[64];

			snprintf(k, sizeof(k), "%s_sum", leaf_key(key));
			jw_key(r->jw, k);
			jw_u64(r->jw, *sum);
		}
		return;
	}
	fprintf(r->out, "\n%s\n", title);
	if (!available) {
		fprintf(r->out, "  n/a (%s)\n", why);
		return;
	}
	memcpy(h.slots, slots, sizeof(h.slots));
	hist_print(r->out, &h, unit);
	count = hist_total(&h);
	/* bcc's funclatency summary line */
	if (sum && count)
		fprintf(r->out, "avg = %" PRIu64 " %s, total: %" PRIu64 " %s, count: %" PRIu64 "\n",
			*sum / count, unit, *sum, unit, count);
}

void report_section(struct report *r, const char *key)
{
	if (r->jw) {
		jw_key(r->jw, key);
		jw_begin_object(r->jw);
	}
}

void report_section_end(struct report *r)
{
	if (r->jw)
		jw_end_object(r->jw);
}

static const struct {
	int counter;
	const char *key;
	const char *what;
} lost_counters[] = {
	{CNT_LOST_OPEN_FAULT, "open_faults", "per-thread open-fault slot not created"},
	{CNT_LOST_STACK, "stacks", "stack not captured (none to unwind, or the ring full)"},
	{CNT_LOST_PROC, "processes", "per-process map full (faults counts them in [other])"},
	{CNT_LOST_LOCATION, "locations",
	 "not at a kept location (the table full: its lighter half given up), or user frame "
	 "unreadable"},
	{CNT_LOST_FOLDED, "folded", "folded-stack counts: ring or table full"},
	{CNT_LOST_TRACKED, "tracked_processes", "child not followed: tracked-process map full"},
	{CNT_LOST_RINGBUF, "ringbuf", "ring-buffer records dropped"},
	{CNT_LOST_LAT, "latency", "latency in-flight map full"},
	{CNT_LOST_TLB_PROC, "tlb_processes", "per-process TLB map full"},
	{CNT_LOST_SWITCH_PROC, "switch_processes", "per-process switch map full"},
	{CNT_LOST_MM_CPUS, "mm_cpus", "per-mm CPU map full (avoidable broadcasts undercounted)"},
	{CNT_LOST_FILE_NAME, "file_names",
	 "file-name map full (those files named by device:inode)"},
};

void report_lost_stderr(const struct mm_stats *st)
{
	/* Anything dropped is said on stderr too, whatever the output format: never silent. */
	for (size_t i = 0; i < sizeof(lost_counters) / sizeof(lost_counters[0]); i++)
		if (st->c[lost_counters[i].counter])
			warn_msg("lost %llu: %s",
				 (unsigned long long)st->c[lost_counters[i].counter],
				 lost_counters[i].what);
}

void report_end(struct report *r, const struct mm_stats *st)
{
	uint64_t total = 0;

	for (size_t i = 0; i < sizeof(lost_counters) / sizeof(lost_counters[0]); i++)
		total += st->c[lost_counters[i].counter];
	report_lost_stderr(st);
	if (r->jw) {
		jw_key(r->jw, "unavailable");
		jw_begin_object(r->jw);
		for (int i = 0; i < r->nunavail; i++) {
			jw_key(r->jw, r->unavail_key[i]);
			jw_string(r->jw, r->unavail_why[i]);
		}
		jw_end_object(r->jw);
		jw_key(r->jw, "lost");
		jw_begin_object(r->jw);
		for (size_t i = 0; i < sizeof(lost_counters) / sizeof(lost_counters[0]); i++) {
			jw_key(r->jw, lost_counters[i].key);
			jw_u64(r->jw, st->c[lost_counters[i].counter]);
		}
		jw_end_object(r->jw);
		jw_end_object(r->jw);
		jw_free(r->jw);
		r->jw = NULL;
		fflush(r->out);
		return;
	}
	if (!total) {
		fprintf(r->out, "\nlost: none\n");
	} else {
		fprintf(r->out, "\nlost:\n");
		for (size_t i = 0; i < sizeof(lost_counters) / sizeof(lost_counters[0]); i++)
			if (st->c[lost_counters[i].counter])
				fprintf(r->out, "  %-18s %llu (%s)\n", lost_counters[i].key,
					(unsigned long long)st->c[lost_counters[i].counter],
					lost_counters[i].what);
	}
	fflush(r->out);
}
