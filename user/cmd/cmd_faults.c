// SPDX-License-Identifier: GPL-2.0
/* mmscope faults: page faults by class, process and location; latency; folded stacks. */
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "lib/escape.h"
#include "out/faults_report.h"
#include "out/file_report.h"
#include "core/runner.h"
#include "sym/stacks.h"
#include "out/tlb_report.h"

/* One row of the per-process table; other: the [other] row (pid null). */
static void proc_json(struct report *r, const struct proc_row *row, bool other, bool classes)
{
	const struct proc_faults *f = &row->f;

	jw_begin_object(r->jw);
	jw_key(r->jw, "pid");
	if (other)
		jw_null(r->jw);
	else
		jw_u64(r->jw, row->tgid);
	jw_key(r->jw, "comm");
	if (other)
		jw_string(r->jw, "[other]");
	else
		jw_string_len(r->jw, f->comm, bounded_strlen(f->comm, sizeof(f->comm)));
#define FIELD(name, ok)                                                                            \
	jw_key(r->jw, #name);                                                                      \
	if (ok)                                                                                    \
		jw_u64(r->jw, f->name);                                                            \
	else                                                                                       \
		jw_null(r->jw);
	FIELD(user, true)
	FIELD(kernel, true)
	FIELD(read, classes)
	FIELD(write, classes)
	FIELD(exec, classes)
	FIELD(minor, true)
	FIELD(major, true)
#undef FIELD
	jw_end_object(r->jw);
}

static void proc_text(struct report *r, const struct proc_row *row, bool other, bool classes)
{
	const struct proc_faults *f = &row->f;
	char *comm =
		other ? NULL : folded_escape(f->comm, bounded_strlen(f->comm, sizeof(f->comm)));

	if (other)
		fprintf(r->out, "  %7s %-16s ", "-", "[other]");
	else
		fprintf(r->out, "  %7u %-16s ", row->tgid, comm ? comm : "?");
	fprintf(r->out, "%10llu %8llu ", (unsigned long long)f->user,
		(unsigned long long)f->kernel);
	if (!classes)
		fprintf(r->out, "%9s %9s %8s ", "n/a", "n/a", "n/a");
	else
		fprintf(r->out, "%9llu %9llu %8llu ", (unsigned long long)f->read,
			(unsigned long long)f->write, (unsigned long long)f->exec);
	fprintf(r->out, "%10llu %7llu\n", (unsigned long long)f->minor,
		(unsigned long long)f->major);
	free(comm);
}

/*
 * Faults by process: every row in JSON, the top ones in text; then [other], the processes the
 * table had no room for (and, in text, the rows below the top), so that the rows add up to
 * the totals. In JSON only when it holds faults: a run whose processes all have rows keeps
 * the rows it always had.
 */
static void by_process(struct report *r, struct session *s)
{
	struct proc_row other, *rows;
	bool classes = !r->res->no_fault_class;
	int n = 0;

	rows = read_procs(s, &n, &other);
	if (r->jw) {
		jw_key(r->jw, "by_process");
		jw_begin_array(r->jw);
		for (int i = 0; i < n; i++)
			proc_json(r, &rows[i], false, classes);
		if (other.f.user + other.f.kernel)
			proc_json(r, &other, true, classes);
		jw_end_array(r->jw);
	} else if (n) {
		fprintf(r->out, "\nby process (top %d of %d)\n", r->res->opts->top, n);
		fprintf(r->out, "  %7s %-16s %10s %8s %9s %9s %8s %10s %7s\n", "PID", "COMM",
			"USER", "KERNEL", "READ", "WRITE", "EXEC", "MINOR", "MAJOR");
		for (int i = 0; i < n && i < r->res->opts->top; i++)
			proc_text(r, &rows[i], false, classes);
		for (int i = r->res->opts->top; i < n; i++)
			for (int k = 0; k < PC_NR; k++)
				other.f.n[k] += rows[i].f.n[k];
		if (other.f.user + other.f.kernel)
			proc_text(r, &other, true, classes);
	}
	free(rows);
}

/*
 * The top fault locations, then [other]: the locations below the top and the faults whose
 * location was not kept (lost.locations: no room, or an unreadable user frame), so that the
 * rows add up to user + kernel. Only when it holds faults.
 */
static void top_locations(struct report *r, struct session *s, const struct mm_stats *st)
{
	uint64_t other = st->c[CNT_LOST_LOCATION];
	int n = 0;
	struct location_row *rows = read_locations(s, &n);

	for (int i = r->res->opts->top; i < n; i++)
		other += rows[i].count;
	if (r->jw) {
		jw_key(r->jw, "top_locations");
		jw_begin_array(r->jw);
		for (int i = 0; i < n && i < r->res->opts->top; i++) {
			jw_begin_object(r->jw);
			jw_key(r->jw, "symbol");
			jw_string(r->jw, rows[i].symbol);
			jw_key(r->jw, "dso");
			jw_string(r->jw, rows[i].dso);
			jw_key(r->jw, "count");
			jw_u64(r->jw, rows[i].count);
			jw_end_object(r->jw);
		}
		if (other) {
			jw_begin_object(r->jw);
			jw_key(r->jw, "symbol");
			jw_string(r->jw, "[other]");
			jw_key(r->jw, "dso");
			jw_string(r->jw, "");
			jw_key(r->jw, "count");
			jw_u64(r->jw, other);
			jw_end_object(r->jw);
		}
		jw_end_array(r->jw);
	} else if (n) {
		fprintf(r->out, "\ntop fault locations\n  %10s  %-40s %s\n", "COUNT", "SYMBOL",
			"DSO");
		for (int i = 0; i < n && i < r->res->opts->top; i++) {
			char *sym = folded_escape(rows[i].symbol, strlen(rows[i].symbol));
			char *dso = folded_escape(rows[i].dso, strlen(rows[i].dso));

			fprintf(r->out, "  %10llu  %-40s %s\n", (unsigned long long)rows[i].count,
				sym ? sym : "?", dso ? dso : "?");
			free(sym);
			free(dso);
		}
		if (other)
			fprintf(r->out, "  %10llu  [other]\n", (unsigned long long)other);
	}
	free_locations(rows, n);
}

static void print_faults(struct report *r, struct session *s, const struct mm_stats *st,
			 const struct mm_stats *percpu, bool final)
{
	(void)percpu;
	faults_report_counts(r, st, 0, true);
	faults_report_anatomy(r, st, true);
	if (final) {
		struct file_result files;

		by_process(r, s);
		top_locations(r, s, st);
		file_result_read(s, &files);
		faults_report_files(r, st, &files);
		file_result_free(&files);
	}
	/* faults.by_fault_class: the table `mmscope tlb` shows too. */
	tlb_report_by_fault_class(r, st);
	report_section_end(r);
}

static int run_faults(struct mm_opts *opts)
{
	struct tracing_spec spec = {
		.cfg =
			{
				.events = 1u << EV_FAULT_ENTRY | 1u << EV_FAULT_DONE |
					  1u << EV_TLB_FLUSH | 1u << EV_TLBIE | 1u << EV_HCALL |
					  1u << EV_ARM64_TLBI | 1u << EV_INSN_READ,
				.required = 1u << EV_FAULT_ENTRY,
				.procs = true,
				.files = true,
				.locations = !opts->folded,
				.stacks = opts_stacks(opts),
				.fault_latency = opts->weight_latency,
			},
		.print = print_faults,
		.flame_what = "page faults",
		.flame_unit = "faults",
		.pprof_class_label = "fault_class",
		.pprof_latency = true,
	};

	return run_tracing(opts, &spec);
}

const struct command cmd_faults = {
	.name = "faults",
	.summary = "Page faults in detail: classes, processes, code locations, latency.\n"
		   "user/kernel, read/write/exec, protection, minor/major, by process and code\n"
		   "location, log2 histograms of fault latency; stacks: --folded, --svg, --pprof.",
	.help = "A fault is one entry into the architecture's fault handler; it completes when "
		"the\n"
		"kernel accounts it minor or major. Faults that never complete (retried, failed,\n"
		"killed) are 'incomplete': user + kernel = minor + major + incomplete.\n"
		"The table of fault classes shows how many faults issued local or broadcast TLB\n"
		"invalidations while they were handled (where the kernel traces invalidations).\n"
		"\nExamples:\n"
		"  mmscope faults -d 5                    # whole host for 5 seconds\n"
		"  mmscope faults -p 1234                 # one process and its children\n"
		"  mmscope faults -- make -j2             # a command, from its first instruction\n"
		"  mmscope faults --json -o f.json -- ls  # JSON into a file\n"
		"  mmscope faults --svg faults.svg -- ./app   # table, and a flame graph\n"
		"  mmscope faults --svg lat.svg --weight latency -- ./app  # where fault time "
		"goes\n"
		"  mmscope faults --folded -- ./app | flamegraph.pl > faults.svg\n"
		"  mmscope faults --pprof f.pb.gz -- ./app  # for go tool pprof, Parca, "
		"Pyroscope\n"
		"  mmscope faults --folded --sample 16 -p 1234  # 1 stack in 16 faults, "
		"each x16\n",
	.flags = CMD_TRACES | CMD_STACKS | CMD_LATENCY,
	.traces = "page faults",
	.run = run_faults,
};
