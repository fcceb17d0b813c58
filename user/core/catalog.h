/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hook catalog: for each event mmscope observes, the candidate hooks per architecture in
 * order of preference, and the selection that keeps, for this kernel, the first candidate that
 * works and records why each other one lost. `mmscope probes`, `-v` and the JSON "hooks" array
 * print that record. Pure logic over a capability set (struct kcaps), so tests can feed fake
 * kernels.
 */
#ifndef MMSCOPE_CATALOG_H
#define MMSCOPE_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

enum hook_method {
	HM_FENTRY,
	HM_KPROBE,
	HM_TP_BTF,
	HM_RAW_TP,
	HM_TRACEPOINT,
	HM_PERF_SW,
	HM_PMU,	       /* a hardware PMU event, counted (no BPF program) */
	HM_PERF_COUNT, /* a perf software event, counted by the kernel (no BPF program) */
	HM_NONE,       /* a pseudo-candidate that always wins: "this kernel has nothing to see" */
};

enum arch_bits {
	ARCH_X86 = 1u << 0,
	ARCH_ARM64 = 1u << 1,
	ARCH_POWERPC = 1u << 2,
	ARCH_ALL = ARCH_X86 | ARCH_ARM64 | ARCH_POWERPC,
};

enum mm_event_id {
	EV_FAULT_ENTRY,
	EV_FAULT_DONE,
	EV_TASK_FORK,
	EV_TASK_EXIT,
	EV_TASK_EXEC,
	EV_TLB_FLUSH,
	EV_TLB_SEND,
	EV_SWITCH,
	EV_SWITCH_FLUSH,
	EV_TLBIE,
	EV_HASH_FAULT,
	EV_TLB_FN,
	EV_ARM64_TLBI,
	EV_INSN_READ,
	EV_SLB,
	EV_HCALL,
	EV_TASK_FREE,
	EV_NR,
};

#define HOOK_MAX_POINTS 8

/* One program attached to one place (or, for a kprobe, to a comma-separated list of
 * functions, each with its index in the list as the BPF cookie). */
struct hook_point {
	/* The program: offsetof(struct mmscope, progs.NAME) (catalog.c PROG()), read with
	 * hook_prog(); 0 when the kernel counts the event itself (HM_PMU, HM_PERF_COUNT). */
	size_t prog;
	const char *target; /* function(s), "category:tracepoint", perf or PMU event name */
};

/* A point whose program bpf/ builds only for another architecture than this build's. */
#define PROG_OTHER_ARCH ((size_t)-1)

struct hook_candidate {
	enum hook_method method;
	unsigned int arches;
	struct hook_point points[HOOK_MAX_POINTS];
	const char *yields; /* what this hook can tell */
	const char *gone;   /* removed upstream: "v5.9 (773b3e53df5b)"; NULL if current */
	unsigned int mmu;   /* MMU_* the hook needs; 0: any */
};

enum mmu_kind {
	MMU_ANY = 0,
	MMU_RADIX = 1u << 0,
	MMU_HASH = 1u << 1,
};

struct event_desc {
	enum mm_event_id id;
	const char *name;
	const char *what;
	const struct hook_candidate *cands;
	int ncands;
	bool infra; /* bookkeeping (task tracking): --method does not apply */
};

/*
 * The BPF features mmscope's programs use where the kernel has them, each with a fallback
 * chosen before the load (bpf/compat.bpf.h; user/core/kcaps.c probes them, `mmscope probes` prints
 * them).
 */
enum bpf_feature {
	BF_TASK_BTF,	  /* bpf_get_current_task_btf() */
	BF_TASK_STORAGE,  /* BPF_MAP_TYPE_TASK_STORAGE */
	BF_TASK_PT_REGS,  /* bpf_task_pt_regs() */
	BF_CALLBACKS,	  /* callbacks (ld_imm64 BPF_PSEUDO_FUNC) */
	BF_LOOP,	  /* bpf_loop() */
	BF_MMAP_BUILD_ID, /* build IDs in the kernel's mmap records (perf attr.build_id) */
	BF_FIND_VMA,	  /* bpf_find_vma(): the DWARF unwinder's mappings */
	BF_NR,
};

/* What a kernel offers. Callbacks answer for one name; priv is theirs. */
struct kcaps {
	unsigned int arch; /* one of enum arch_bits */
	bool btf;	   /* vmlinux BTF available to libbpf (kernel's or --btf) */
	bool kernel_btf;   /* the kernel itself has BTF (tp_btf and fentry need it) */
	unsigned int mmu;  /* powerpc: MMU_RADIX or MMU_HASH; 0 elsewhere */
	bool jit_off;	   /* net.core.bpf_jit_enable is 0: programs are interpreted */
	/* enum bpf_feature: the kernel has it (kcaps_bpf_features()); else how it was found
	 * missing or why it is not used; THREAD_SIZE for the task_pt_regs() fallback. */
	bool feat[BF_NR];
	char feat_why[BF_NR][96];
	unsigned int thread_size;
	/* 0, or -errno with *why set to a static explanation. */
	int (*fentry_ok)(const struct kcaps *k, const char *func, const char **why);
	int (*kprobe_ok)(const struct kcaps *k, const char *func, const char **why);
	bool (*tracepoint_exists)(const struct kcaps *k, const char *category, const char *name);
	int (*perf_sw_ok)(const struct kcaps *k, const char *event, const char **why);
	int (*pmu_ok)(const struct kcaps *k, const char *event, const char **why);
	/*
	 * Not the kernel but the run: it only counts (mmscope stat) and its target is a scope a
	 * perf counting event can have (host, CPUs, a cgroup, a thread, processes and their
	 * children), so HM_PERF_COUNT may stand in for a program. Else perf_count_why says why.
	 */
	bool perf_count_ok;
	const char *perf_count_why;
	void *priv;
};

enum cand_status {
	CAND_UNTRIED, /* a better candidate won */
	CAND_CHOSEN,
	CAND_REFUSED,
};

struct cand_result {
	enum cand_status status;
	char reason[160];
	/* A group of members (hook_candidate.members): bit i set when point i is not in this
	 * kernel, and why, "ptep_set_access_flags: not in kallsyms (...)". */
	unsigned int missing;
	char missing_why[160];
};

#define MAX_CANDS 8

struct event_selection {
	const struct event_desc *ev;
	bool wanted;
	int chosen; /* index into ev->cands, -1 when none works */
	struct cand_result results[MAX_CANDS];
};

struct selection {
	struct event_selection events[EV_NR];
};

/* The powerpc flush functions hooked as one kprobe family (cookie = index in the list). */
extern const char tlb_fn_list_powerpc[];
/* The index-th name of a comma-separated list into buf; false past the end. */
bool list_item(const char *list, int index, char *buf, size_t len);

const struct event_desc *catalog_event(enum mm_event_id id);
const char *hook_method_name(enum hook_method m);
/* "exceptions:page_fault_user+page_fault_kernel": the attach points, joined. */
void hook_cand_describe(const struct hook_candidate *c, char *buf, size_t len);
const char *arch_name(unsigned int arch_bit);
unsigned int arch_from_uname(const char *machine);

/*
 * Select hooks for the wanted events (bit per enum mm_event_id). force_method >= 0 keeps only
 * candidates of that method (enum hook_method). excluded: per event, a bitmask of candidates
 * refused at attach time in an earlier try, with their reasons in prev (may be NULL).
 */
void catalog_select(struct selection *sel, const struct kcaps *k, unsigned int wanted,
		    int force_method, const unsigned int *excluded, const struct selection *prev);
/* Every event, every candidate checked (for `mmscope probes`): fallbacks that would work
 * are CAND_UNTRIED with reason "available as a fallback". */
void catalog_probe_all(struct selection *sel, const struct kcaps *k);
const struct hook_candidate *selection_chosen(const struct selection *sel, enum mm_event_id id);

struct mmscope;
struct bpf_program;
/* The skeleton's program for the point; NULL when it has none here (HM_PMU, HM_PERF_COUNT,
 * PROG_OTHER_ARCH). */
struct bpf_program *hook_prog(const struct mmscope *skel, const struct hook_point *p);

#endif
