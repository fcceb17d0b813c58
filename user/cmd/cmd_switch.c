// SPDX-License-Identifier: GPL-2.0
/* mmscope switch: context switches and the address-space changes among them. */
#include "cmd/commands.h"
#include "core/runner.h"
#include "out/tlb_report.h"

static void print_switch(struct report *r, struct session *s, const struct mm_stats *st,
			 const struct mm_stats *percpu, bool final)
{
	switch_report_counts(r, st);
	if (final) {
		struct switch_details d;

		switch_details_read(s, &d);
		switch_report_details(r, percpu, s->ncpus, &d);
		switch_details_free(&d);
	}
	report_section_end(r);
}

static int run_switch(struct mm_opts *opts)
{
	struct tracing_spec spec = {
		.cfg =
			{
				.events = 1u << EV_SWITCH | 1u << EV_SWITCH_FLUSH,
				.required = 1u << EV_SWITCH,
				.switch_procs = true,
			},
		.print = print_switch,
	};

	return run_tracing(opts, &spec);
}

const struct command cmd_switch = {
	.name = "switch",
	.summary = "Context switches and the address-space changes among them.\n"
		   "same mm, mm change, kernel; mm changes that flushed the TLB; per CPU and per\n"
		   "process.",
	.help = "Every switch is one of: same_mm (two user tasks of one address space), mm_change\n"
		"(the CPU goes on to a different user address space than the last one it ran; "
		"idle\n"
		"and kernel threads borrow the last one, so A -> kthread -> B is one change), "
		"kernel\n"
		"(to or from idle or a kernel thread, without a change).\n"
		"With a target (-p, -t, -c, --), a switch counts when a traced task is on either\n"
		"side, and once when both are. switches_out: those switching a traced task out\n"
		"(what perf stat -e context-switches counts); switches_in: those switching one "
		"in.\n"
		"\nExamples:\n"
		"  mmscope switch -d 5\n"
		"  mmscope switch -- ./pingpong -r 10000\n",
	.flags = CMD_TRACES,
	.traces = "context switches",
	.run = run_switch,
};
