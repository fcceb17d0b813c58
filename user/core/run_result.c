// SPDX-License-Identifier: GPL-2.0
/* A run's result filled from its session (core/run_result.h), and the parts of it a test can
 * fill too: the target line, the hook chosen, the TLB reason names. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/faults_avail.h"
#include "core/run_result.h"
#include "core/session.h"
#include "core/tlb_reasons.h"

const struct hook_candidate *run_hook(const struct run_result *res, enum mm_event_id id)
{
	return selection_chosen(res->sel, id);
}

/* A command and its descendants never hold mmscope; -p of one of its ancestors would, but it
 * is no descendant the user means either. */
bool run_self_left_out(const struct mm_opts *o)
{
	return !o->argv && !o->npids && !o->tid;
}

void run_target_line(struct run_result *res)
{
	const struct mm_opts *o = res->opts;
	char *buf = res->target;
	size_t len = sizeof(res->target), used = 0;

	buf[0] = '\0';
	if (o->argv) {
		used += (size_t)snprintf(buf + used, len - used, "command:");
		for (int i = 0; o->argv[i] && used < len; i++)
			used += (size_t)snprintf(buf + used, len - used, " %s", o->argv[i]);
		if (used < len && res->child > 0)
			used += (size_t)snprintf(buf + used, len - used, " (pid %d)", res->child);
	}
	if (o->npids && used < len) {
		used += (size_t)snprintf(buf + used, len - used, "%spid", used ? ", " : "");
		for (int i = 0; i < o->npids && used < len; i++)
			used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : " ",
						 o->pids[i]);
	}
	if (o->tid && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%stid %d", used ? ", " : "",
					 o->tid);
	if (o->cgroup && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%scgroup %s", used ? ", " : "",
					 o->cgroup);
	if (!used)
		used += (size_t)snprintf(buf, len, "whole host");
	if (o->cpu_filter && used < len)
		used += (size_t)snprintf(buf + used, len - used, " (selected CPUs)");
	if (res->self_left_out && used < len)
		snprintf(buf + used, len - used, ", mmscope itself (PID %d) left out",
			 (int)res->self_pid);
}

void session_result(const struct session *s, struct run_result *res)
{
	struct utsname u;

	memset(res, 0, sizeof(*res));
	res->opts = s->opts;
	res->cfg = s->cfg;
	res->arch = s->caps.arch;
	res->mmu = s->caps.mmu;
	if (uname(&u) == 0) {
		snprintf(res->kernel, sizeof(res->kernel), "%s", u.release);
		snprintf(res->machine, sizeof(res->machine), "%s", u.machine);
	}
	res->sel = &s->sel;
	res->fn_attached = s->fn_attached;
	res->child = s->child;
	res->self_left_out = run_self_left_out(s->opts);
	res->self_pid = getpid();
	run_target_line(res);
	res->duration_s = session_duration_s(s);

	res->no_fault_class = faults_class_unavailable(s);
	res->no_fault_prot = faults_prot_unavailable(s);
	res->no_fault_type = faults_type_unavailable(s);
	res->no_fault_cow = faults_cow_unavailable(s);
	faults_latency_method(s, res->fault_latency_method, sizeof(res->fault_latency_method));

	res->unwind_dwarf = s->unwind_dwarf;
	snprintf(res->unwind_why, sizeof(res->unwind_why), "%s", s->unwind_why);
	res->unwind_tables = s->unwind != NULL;
	if (s->unwind)
		res->unwind_stats = *unwind_tables_stats(s->unwind);

	/* x86's names are read from the kernel (its BTF), which takes time and memory: only for
	 * a run whose output names them. */
	tlb_reason_keys(res->tlb_reasons, s->caps.arch, s->opts->btf, s->cfg.tlb_reasons);
}
