// SPDX-License-Identifier: GPL-2.0
/* mmscope tlb: TLB invalidations, shootdowns, and who caused them. */
#include "cmd/commands.h"
#include "core/runner.h"
#include "out/tlb_report.h"

static void print_tlb(struct report *r, struct session *s, const struct mm_stats *st,
		      const struct mm_stats *percpu, bool final)
{
	(void)percpu;
	tlb_report_counts(r, st, true);
	if (final) {
		struct tlb_details d;

		tlb_details_read(s, &d);
		tlb_report_details(r, &d);
		tlb_details_free(&d);
	}
	tlb_report_by_fault_class(r, st);
	report_section_end(r);
}

static int run_tlb(struct mm_opts *opts)
{
	struct tracing_spec spec = {
		.cfg =
			{
				.events = 1u << EV_TLB_FLUSH | 1u << EV_TLB_SEND | 1u << EV_TLBIE |
					  1u << EV_HCALL | 1u << EV_TLB_FN | 1u << EV_ARM64_TLBI |
					  1u << EV_FAULT_ENTRY | 1u << EV_FAULT_DONE |
					  1u << EV_SWITCH,
				.primary = 1u << EV_TLB_FLUSH | 1u << EV_TLBIE |
					   1u << EV_ARM64_TLBI | 1u << EV_TLB_FN | 1u << EV_HCALL,
				.track_mm_cpus = true,
				.untimed_faults = true,
				.tlb_detail = true,
				.tlb_reasons = true,
				.tlb_stacks = opts_stacks(opts),
			},
		.print = print_tlb,
		.flame_what = "TLB invalidations",
		.flame_unit = "invalidations",
		.pprof_class_label = "invalidation",
		.pprof_class_prefix = "tlb ",
	};

	return run_tracing(opts, &spec);
}

const struct command cmd_tlb = {
	.name = "tlb",
	.summary = "TLB invalidations, how broad, and who caused them.\n"
		   "Flushes by reason, pages per flush, local vs broadcast, by process, by system\n"
		   "call, by stack, and by the class of the fault that issued them.",
	.help = "Units: on x86 one count is one flush operation on one CPU (tlb:tlb_flush); a\n"
		"shootdown is one remote_ipi_send on the sender and one remote_shootdown on each\n"
		"target. local/broadcast, by_process, by_syscall and stacks count the issuing "
		"side\n"
		"(local_shootdown, local_mm_shootdown, remote_ipi_send). An invalidation issued "
		"while\n"
		"a thread handles a page fault counts for that fault's class; received shootdowns "
		"and\n"
		"task-switch flushes are nobody's fault and are not attributed.\n"
		"\nExamples:\n"
		"  mmscope tlb -d 10                      # whole host\n"
		"  mmscope tlb -- ./mprotect_toggle       # who sends the shootdowns\n"
		"  mmscope tlb --folded -p 1234 > tlb.folded\n"
		"  mmscope tlb --svg tlb.svg -- ./mprotect_toggle  # flame graph of who "
		"invalidates\n"
		"  mmscope tlb --pprof tlb.pb.gz -- ./mprotect_toggle  # the same, for pprof "
		"tools\n",
	.flags = CMD_TRACES | CMD_STACKS,
	.traces = "TLB invalidations",
	.run = run_tlb,
};
