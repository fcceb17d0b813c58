// SPDX-License-Identifier: GPL-2.0
/* mmscope probes: every hook mmscope knows, and what this kernel lets it use. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "cmd/commands.h"
#include "out/json.h"
#include "core/kcaps.h"
#include "core/session.h"
#include "core/unwind.h"
#include "lib/util.h"

static const char *status_word(const struct event_selection *es, int i)
{
	if (es->chosen == i)
		return "chosen";
	return es->results[i].status == CAND_REFUSED ? "refused" : "available";
}

static int run_probes(struct mm_opts *opts)
{
	struct selection sel;
	struct kcaps k;
	struct utsname u;
	const char *btf, *why_not_dwarf;

	libbpf_set_print(libbpf_print_fn);
	if (geteuid() != 0)
		warn_msg("not root: fentry and kprobe probes will be refused for lack of "
			 "privileges, not by the kernel; run with sudo for the real answer");
	uname(&u);
	if (resolve_btf(opts))
		return 1;
	kcaps_init_live(&k, opts->btf);
	btf = opts->btf ? opts->btf : k.kernel_btf ? "/sys/kernel/btf/vmlinux" : NULL;
	catalog_probe_all(&sel, &k);
	why_not_dwarf = unwind_why_not_dwarf(&k);
	if (opts->json) {
		struct json_writer *w = jw_new(stdout, false);

		jw_begin_object(w);
		jw_key(w, "version");
		jw_string(w, MMSCOPE_VERSION);
		jw_key(w, "kernel");
		jw_string(w, u.release);
		jw_key(w, "arch");
		jw_string(w, u.machine);
		jw_key(w, "btf");
		jw_string(w, btf);
		/* How many facts about this process the BTF given or built in (which may have
		 * been replaced by the kernel's own since) was found to agree on; null: none was
		 * checked. */
		jw_key(w, "btf_checked_facts");
		if (btf_facts_checked >= 0)
			jw_u64(w, (uint64_t)btf_facts_checked);
		else
			jw_null(w);
		jw_key(w, "bpf_jit");
		jw_bool(w, !k.jit_off);
		jw_key(w, "user_stacks");
		jw_begin_object(w);
		jw_key(w, "method");
		jw_string(w, why_not_dwarf ? "fp" : "dwarf");
		jw_key(w, "why_not_dwarf");
		jw_string(w, why_not_dwarf); /* NULL: null */
		jw_end_object(w);
		/* The BPF features the programs use where the kernel has them, and what is
		 * used in their place where it has not (bpf/compat.bpf.h). */
		jw_key(w, "features");
		jw_begin_array(w);
		for (int f = 0; f < BF_NR; f++) {
			jw_begin_object(w);
			jw_key(w, "feature");
			jw_string(w, bpf_feature_name((enum bpf_feature)f));
			jw_key(w, "what");
			jw_string(w, bpf_feature_what((enum bpf_feature)f));
			jw_key(w, "available");
			jw_bool(w, k.feat[f]);
			jw_key(w, "uses");
			jw_string(w, k.feat[f] ? "the feature"
					       : bpf_feature_fallback((enum bpf_feature)f));
			jw_key(w, "reason");
			if (k.feat[f])
				jw_null(w);
			else
				jw_string(w, k.feat_why[f]);
			jw_end_object(w);
		}
		jw_end_array(w);
		jw_key(w, "events");
		jw_begin_array(w);
		for (int e = 0; e < EV_NR; e++) {
			const struct event_selection *es = &sel.events[e];

			jw_begin_object(w);
			jw_key(w, "event");
			jw_string(w, es->ev->name);
			jw_key(w, "what");
			jw_string(w, es->ev->what);
			jw_key(w, "method");
			if (es->chosen >= 0)
				jw_string(w, hook_method_name(es->ev->cands[es->chosen].method));
			else
				jw_null(w);
			jw_key(w, "candidates");
			jw_begin_array(w);
			for (int i = 0; i < es->ev->ncands; i++) {
				char where[160];

				hook_cand_describe(&es->ev->cands[i], where, sizeof(where));
				jw_begin_object(w);
				jw_key(w, "method");
				jw_string(w, hook_method_name(es->ev->cands[i].method));
				jw_key(w, "attach");
				jw_string(w, where);
				jw_key(w, "status");
				jw_string(w, status_word(es, i));
				jw_key(w, "reason");
				if (es->chosen == i)
					jw_null(w);
				else
					jw_string(w, es->results[i].reason);
				/* A group used without the members this kernel lacks. */
				jw_key(w, "missing");
				if (es->results[i].missing)
					jw_string(w, es->results[i].missing_why);
				else
					jw_null(w);
				jw_key(w, "yields");
				jw_string(w, es->ev->cands[i].yields);
				jw_end_object(w);
			}
			jw_end_array(w);
			jw_end_object(w);
		}
		jw_end_array(w);
		jw_end_object(w);
		jw_free(w);
	} else {
		char checked[64] = "";

		if (btf_facts_checked >= 0)
			snprintf(checked, sizeof(checked),
				 " (%s agrees with this kernel on %d facts)",
				 opts->btf ? "checked:" : "--btf's file", btf_facts_checked);
		printf("mmscope probes: kernel %s (%s), BTF: %s%s, BPF JIT: %s\n\n", u.release,
		       u.machine, btf ? btf : "none (give --btf)", checked,
		       k.jit_off ? "off (interpreted; sysctl net.core.bpf_jit_enable=1 turns it on)"
				 : "on");
		printf("user stacks (--folded, --svg): %s%s%s\n\n",
		       why_not_dwarf ? "frame pointers"
				     : "DWARF call-frame tables, frame pointers where "
				       "a file has none",
		       why_not_dwarf ? ": " : "", why_not_dwarf ? why_not_dwarf : "");
		printf("%-19s %-46s %s\n", "BPF FEATURE", "WHAT", "STATUS");
		for (int f = 0; f < BF_NR; f++)
			printf("%-19s %-46s %s%s%s%s\n", bpf_feature_name((enum bpf_feature)f),
			       bpf_feature_what((enum bpf_feature)f),
			       k.feat[f] ? "used" : "missing: ", k.feat[f] ? "" : k.feat_why[f],
			       k.feat[f] ? "" : "; instead: ",
			       k.feat[f] ? "" : bpf_feature_fallback((enum bpf_feature)f));
		printf("\n%-19s %-10s %-46s %s\n", "EVENT", "METHOD", "ATTACH POINT", "STATUS");
		for (int e = 0; e < EV_NR; e++) {
			const struct event_selection *es = &sel.events[e];

			for (int i = 0; i < es->ev->ncands; i++) {
				char where[160];

				hook_cand_describe(&es->ev->cands[i], where, sizeof(where));
				printf("%-19s %-10s %-46s %s%s%s%s%s%s\n", i ? "" : es->ev->name,
				       hook_method_name(es->ev->cands[i].method), where,
				       status_word(es, i), es->chosen == i ? "" : ": ",
				       es->chosen == i ? "" : es->results[i].reason,
				       es->results[i].missing ? " (without " : "",
				       es->results[i].missing ? es->results[i].missing_why : "",
				       es->results[i].missing ? ")" : "");
			}
			if (es->chosen < 0)
				printf("%-19s %-10s %-46s %s\n", "", "", "",
				       "=> not observable on this kernel");
		}
	}
	kcaps_free_live(&k);
	if (fflush(stdout)) {
		err_msg("writing the output failed");
		return 1;
	}
	return 0;
}

const struct command cmd_probes = {
	.name = "probes",
	.summary =
		"Every hook mmscope knows, and what this kernel lets it use.\n"
		"For each event, the attach method it would use (fentry, kprobe, tp_btf, raw_tp,\n"
		"tracepoint, perf event) or why none works.",
	.help = "Each candidate is really loaded or opened: the answers are the kernel's own.\n"
		"\nExamples:\n"
		"  mmscope probes\n"
		"  mmscope probes --json | jq '.events[] | {event, method}'\n",
	.flags = 0,
	.run = run_probes,
};
