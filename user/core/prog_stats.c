// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/prog_stats.h"
#include "out/report.h"
#include "lib/util.h"

#define STATS_SYSCTL "/proc/sys/kernel/bpf_stats_enabled"

/* The sysctl's own setting (kernel/bpf/syscall.c, bpf_stats_handler()): the kernel also
 * times programs while anyone holds a BPF_ENABLE_STATS descriptor, which this cannot see. */
static int stats_enabled(void)
{
	char buf[8] = "";
	FILE *f = fopen(STATS_SYSCTL, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return buf[0] == '1';
}

void prog_stats_stop(struct prog_stats *ps)
{
	if (ps->stats_fd >= 0)
		close(ps->stats_fd);
	ps->stats_fd = -1;
}

void prog_stats_start(struct prog_stats *ps, bool enable)
{
	prog_stats_stop(ps); /* an earlier try's (session_open() loads again after a refusal) */
	memset(ps, 0, sizeof(*ps));
	ps->stats_fd = -1;
	if (enable) {
		ps->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (ps->stats_fd < 0) {
			snprintf(ps->why, sizeof(ps->why),
				 "--bpf-stats: the kernel refused to keep BPF run-time statistics "
				 "(BPF_ENABLE_STATS: %s)",
				 strerror(errno));
			return;
		}
		ps->on = true;
		ps->source = "--bpf-stats";
		return;
	}
	switch (stats_enabled()) {
	case 1:
		ps->on = true;
		ps->source = "kernel.bpf_stats_enabled";
		break;
	case 0:
		snprintf(ps->why, sizeof(ps->why),
			 "the kernel's BPF run-time statistics are off (kernel.bpf_stats_enabled "
			 "= 0): --bpf-stats turns them on for the run");
		break;
	default:
		snprintf(ps->why, sizeof(ps->why), "cannot read %s: %s", STATS_SYSCTL,
			 strerror(errno));
	}
}

void prog_stats_read(struct prog_stats *ps, struct bpf_object *obj)
{
	struct bpf_program *prog;

	if (!ps->on || !obj)
		return;
	/* Turned off meanwhile (the sysctl set to 0 by someone else): the counts would cover
	 * part of the run only. */
	if (ps->stats_fd < 0 && stats_enabled() != 1) {
		ps->on = false;
		snprintf(ps->why, sizeof(ps->why),
			 "kernel.bpf_stats_enabled was turned off during the run");
		return;
	}
	bpf_object__for_each_program(prog, obj)
	{
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd < 0 || ps->n >= PROG_STATS_MAX)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.run_cnt)
			continue;
		snprintf(ps->p[ps->n].name, sizeof(ps->p[0].name), "%s", bpf_program__name(prog));
		ps->p[ps->n].runs = info.run_cnt;
		ps->p[ps->n].run_time_ns = info.run_time_ns;
		ps->n++;
	}
}

static double per_run(uint64_t ns, uint64_t runs)
{
	return runs ? (double)ns / (double)runs : 0;
}

void prog_stats_report(struct report *r, const struct prog_stats *ps, bool text)
{
	uint64_t runs = 0, ns = 0;

	for (int i = 0; i < ps->n; i++) {
		runs += ps->p[i].runs;
		ns += ps->p[i].run_time_ns;
	}
	if (r->jw) {
		jw_key(r->jw, "bpf_programs");
		if (!ps->on) {
			jw_null(r->jw);
			report_note_unavailable(r, "bpf_programs", ps->why);
			return;
		}
		jw_begin_object(r->jw);
		jw_key(r->jw, "statistics");
		jw_string(r->jw, ps->source);
		jw_key(r->jw, "runs");
		jw_u64(r->jw, runs);
		jw_key(r->jw, "run_time_ns");
		jw_u64(r->jw, ns);
		jw_key(r->jw, "programs");
		jw_begin_array(r->jw);
		for (int i = 0; i < ps->n; i++) {
			jw_begin_object(r->jw);
			jw_key(r->jw, "name");
			jw_string(r->jw, ps->p[i].name);
			jw_key(r->jw, "runs");
			jw_u64(r->jw, ps->p[i].runs);
			jw_key(r->jw, "run_time_ns");
			jw_u64(r->jw, ps->p[i].run_time_ns);
			jw_key(r->jw, "ns_per_run");
			jw_double(r->jw, per_run(ps->p[i].run_time_ns, ps->p[i].runs));
			jw_end_object(r->jw);
		}
		jw_end_array(r->jw);
		jw_end_object(r->jw);
		return;
	}
	if (!text)
		return;
	if (!ps->on) {
		fprintf(r->out, "\nmmscope's BPF programs: n/a (%s)\n", ps->why);
		return;
	}
	fprintf(r->out, "\nmmscope's BPF programs (%s)%*s%10s %10s\n", ps->source,
		(int)(27 - strlen(ps->source)), "runs", "ns/run", "total ms");
	for (int i = 0; i < ps->n; i++)
		fprintf(r->out, "  %-36s %14llu %10.0f %10.2f\n", ps->p[i].name,
			(unsigned long long)ps->p[i].runs,
			per_run(ps->p[i].run_time_ns, ps->p[i].runs),
			(double)ps->p[i].run_time_ns / 1e6);
	fprintf(r->out, "  %-36s %14llu %10.0f %10.2f\n", "all", (unsigned long long)runs,
		per_run(ns, runs), (double)ns / 1e6);
}
