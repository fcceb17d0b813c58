// SPDX-License-Identifier: GPL-2.0
/* mmscope stat: every MMU counter at once, like perf stat, with the cheapest hooks. */
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "out/faults_report.h"
#include "core/kcaps.h"
#include "core/runner.h"
#include "out/tlb_report.h"

/*
 * Hardware dTLB/iTLB miss counters, counted by the PMU (no BPF): per traced process, or per
 * CPU for the whole host. Many PMUs (and every VM without PMU passthrough) have none: that is
 * reported with the kernel's reason, never as 0.
 */
static void hw_open(struct session *s, struct hw_counter *h, const char *name, uint32_t type,
		    uint64_t config)
{
	struct perf_event_attr attr = {0};
	int ncpu = s->ncpus > MMSCOPE_MAX_CPUS ? MMSCOPE_MAX_CPUS : s->ncpus;

	h->name = name;
	attr.size = sizeof(attr);
	attr.type = type;
	attr.config = config;
	attr.inherit = 1;
	if (s->opts->npids || s->opts->tid || s->opts->cgroup) {
		snprintf(h->reason, sizeof(h->reason),
			 "PMU counts are per command or per host (use -- COMMAND or no target)");
		return;
	}
	if (s->child > 0) {
		int fd = (int)syscall(SYS_perf_event_open, &attr, s->child, -1, -1,
				      PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			snprintf(h->reason, sizeof(h->reason), "PMU event unavailable: %s",
				 strerror(errno));
			return;
		}
		h->fds[h->nfds++] = fd;
		h->available = true;
		return;
	}
	attr.inherit = 0;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd;

		if (s->opts->cpu_filter && !(s->opts->cpu_mask[cpu / 64] & (1ULL << (cpu % 64))))
			continue;
		fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV || errno == EINVAL)
				continue; /* offline CPU */
			snprintf(h->reason, sizeof(h->reason), "PMU event unavailable: %s",
				 strerror(errno));
			for (int i = 0; i < h->nfds; i++)
				close(h->fds[i]);
			h->nfds = 0;
			return;
		}
		h->fds[h->nfds++] = fd;
	}
	h->available = h->nfds > 0;
	if (!h->available)
		snprintf(h->reason, sizeof(h->reason), "PMU event unavailable: no CPU accepted it");
}

static void hw_read(struct session *s)
{
	for (int i = 0; i < 4; i++) {
		struct hw_counter *h = &s->hw[i];

		h->value = 0;
		for (int j = 0; j < h->nfds; j++) {
			uint64_t v;

			if (read(h->fds[j], &v, sizeof(v)) == (ssize_t)sizeof(v))
				h->value += v;
		}
	}
}

static void hw_report(struct report *r, struct session *s, bool delta)
{
	for (int i = 0; i < 4; i++) {
		struct hw_counter *h = &s->hw[i];
		const char *section = i < 2 ? "tlb_misses" : "slb";
		char key[64];

		if (i == 2 && !r->jw && r->res->arch != ARCH_POWERPC)
			break; /* SLB: powerpc only (JSON keeps the keys, null) */
		if (i == 0 || i == 2) {
			if (i == 2)
				report_section_end(r);
			report_section(r, section);
			if (!r->jw)
				fprintf(r->out, "\n%s\n",
					i ? "SLB misses (PMU)" : "hardware TLB misses (PMU)");
		}
		snprintf(key, sizeof(key), "%s.%s", section, h->name);
		report_counter(r, key, h->name, h->available, delta ? h->value - h->prev : h->value,
			       h->reason);
		if (delta)
			h->prev = h->value;
	}
	report_section_end(r);
}

static void slb_open(struct session *s, struct hw_counter *h, const char *name, const char *event)
{
	const struct event_selection *es = &s->sel.events[EV_SLB];
	uint64_t code;

	h->name = name;
	if (es->chosen < 0 || pmu_raw_code(event, kcaps_cpu_model(), &code)) {
		snprintf(h->reason, sizeof(h->reason), "%s",
			 s->caps.arch != ARCH_POWERPC ? "powerpc hash MMU only"
			 : es->ev && es->ev->ncands   ? es->results[0].reason
						      : "no PMU event");
		return;
	}
	hw_open(s, h, name, PERF_TYPE_RAW, code);
}

static void stat_after_open(struct session *s)
{
	hw_open(s, &s->hw[0], "dtlb_load_misses", PERF_TYPE_HW_CACHE,
		PERF_COUNT_HW_CACHE_DTLB | PERF_COUNT_HW_CACHE_OP_READ << 8 |
			PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
	hw_open(s, &s->hw[1], "itlb_load_misses", PERF_TYPE_HW_CACHE,
		PERF_COUNT_HW_CACHE_ITLB | PERF_COUNT_HW_CACHE_OP_READ << 8 |
			PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
	slb_open(s, &s->hw[2], "data_misses", "PM_DSLB_MISS");
	slb_open(s, &s->hw[3], "instruction_misses", "PM_ISLB_MISS");
}

static void stat_before_print(struct session *s, bool final)
{
	(void) final;
	hw_read(s);
}

static void print_stat(struct report *r, struct session *s, const struct mm_stats *st,
		       const struct mm_stats *percpu, bool final)
{
	(void)percpu;
	faults_report_counts(r, st, 0, false);
	report_section_end(r);
	tlb_report_counts(r, st, false);
	report_section_end(r);
	hash_report_counts(r, st);
	switch_report_counts(r, st);
	report_section_end(r);
	hw_report(r, s, !final);
}

static int run_stat(struct mm_opts *opts)
{
	struct tracing_spec spec = {
		.cfg =
			{
				.events = 1u << EV_FAULT_ENTRY | 1u << EV_FAULT_DONE |
					  1u << EV_TLB_FLUSH | 1u << EV_SWITCH |
					  1u << EV_SWITCH_FLUSH | 1u << EV_TLBIE | 1u << EV_HCALL |
					  1u << EV_ARM64_TLBI | 1u << EV_HASH_FAULT |
					  1u << EV_INSN_READ | 1u << EV_SLB,
				.required = 0,
				.count_only = true,
				.tlb_reasons = true,
			},
		.print = print_stat,
		.after_open = stat_after_open,
		.before_print = stat_before_print,
	};

	return run_tracing(opts, &spec);
}

const struct command cmd_stat = {
	.name = "stat",
	.summary = "All MMU counters at once, like perf stat.\n"
		   "Page faults by class, TLB flushes, context switches and mm changes, hardware\n"
		   "dTLB/iTLB misses where the PMU has them.",
	.help = "Examples:\n"
		"  mmscope stat -- ./exec_loop 1000     # a command, exits with its status\n"
		"  mmscope stat -d 10 -i 1              # whole host, every second for 10 s\n"
		"  mmscope stat -p 1234 --json          # one process, JSON\n",
	.flags = CMD_TRACES,
	.traces = "page faults, TLB invalidations and context switches",
	.run = run_stat,
};
