/* SPDX-License-Identifier: GPL-2.0 */
/* Options common to every tracing subcommand, parsed once here. */
#ifndef MMSCOPE_OPTS_H
#define MMSCOPE_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "bpf/mmscope.h"

#define MAX_TARGET_PIDS 64

/* --method: force one kind of hook (for testing and for working around a kernel). */
enum method_force {
	FORCE_NONE = -1,
	FORCE_FENTRY,
	FORCE_KPROBE,
	FORCE_TP_BTF,
	FORCE_RAW_TP,
	FORCE_TRACEPOINT,
	FORCE_PERF,
};

/* serve --labels: the per-process breakdown a metric series may carry. */
enum serve_labels {
	LABELS_NONE,
	LABELS_COMM,
	LABELS_CGROUP,
};

#define SERVE_DEFAULT_LISTEN	 "127.0.0.1:9890"
#define SERVE_DEFAULT_MAX_SERIES 100

/* --unwind */
enum unwind_method {
	UNWIND_AUTO = 0, /* dwarf where the kernel can, else fp */
	UNWIND_DWARF,	 /* refuse to run where it cannot */
	UNWIND_FP,
};

#define UNWIND_MEMORY_DEFAULT_MB 32

/* --sample N: its largest N. 2N - 1 stays far below 2^32: a 32-bit random number modulo it is
 * uniform within 1 part in 2000 (bpf/state.bpf.h stack_sampled()). */
#define SAMPLE_EVERY_MAX 1000000

struct command;

struct mm_opts {
	const struct command *cmd;
	int pids[MAX_TARGET_PIDS];
	int npids;
	int tid;
	const char *cgroup;
	bool cpu_filter;
	uint64_t cpu_mask[MMSCOPE_MAX_CPUS / 64];
	double duration; /* seconds, 0: until Ctrl-C or the target ends */
	double interval; /* seconds, 0: only the final summary */
	bool timestamp;
	bool json;
	bool folded;
	const char *svg;     /* --svg FILE: flame graph */
	const char *pprof;   /* --pprof FILE: gzipped profile.proto */
	bool weight_latency; /* --weight latency: stacks weighted by latency, not count */
	/* faults --folded/--svg: the stacks of these faults only (0: no filter) */
	bool major_only;	  /* --major: faults that completed major */
	uint64_t min_latency_ns;  /* --min-latency: faults that took at least this long */
	uint32_t type_mask;	  /* --type: bits 1 << enum fault_type */
	int unwind;		  /* enum unwind_method: how user stacks are walked */
	int unwind_memory_mb;	  /* --unwind-memory: the DWARF tables' budget (0: default) */
	const char *unwind_cache; /* --unwind-cache DIR, or "none"; NULL: the default */
	/* --sample N: the stacks of one event in N (on average, per CPU), each weighing N in
	 * the folded, SVG and pprof outputs; 0 or 1: every event's */
	uint32_t sample_every;
	const char *output;
	const char *btf;
	int method; /* enum method_force */
	bool no_children;
	bool bpf_stats; /* --bpf-stats: the kernel times mmscope's programs for this run */
	bool quiet;	/* -q: no start line on stderr */
	int top;
	int max_rows; /* --max-rows: entries of the per-process and per-file BPF tables */
	char **argv;  /* -- CMD ARGS..., NULL-terminated; NULL when absent */
	/* serve */
	const char *listen; /* --listen as given (default SERVE_DEFAULT_LISTEN) */
	struct sockaddr_storage listen_addr;
	socklen_t listen_addr_len;
	bool allow_remote; /* --allow-remote: a non-loopback --listen address is meant */
	int labels;	   /* enum serve_labels */
	int max_series;	   /* distinct label values kept (--max-series) */
};

/* Stacks are collected: --folded, --svg or --pprof. */
static inline bool opts_stacks(const struct mm_opts *o)
{
	return o->folded || o->svg || o->pprof;
}

/* What a subcommand accepts and needs. */
enum command_flags {
	CMD_TRACES = 1u << 0,  /* takes the tracing options */
	CMD_STACKS = 1u << 1,  /* collects stacks: --folded and --svg allowed */
	CMD_LATENCY = 1u << 2, /* its stacked events have a latency: --weight latency */
	CMD_SERVE = 1u << 3,   /* serves metrics: --listen & co., no -i/-o/--json/--top */
};

struct command {
	const char *name;
	const char *summary;
	const char *help; /* description + examples, printed by --help */
	unsigned int flags;
	const char *traces; /* what the start line says is traced: "page faults" */
	int (*run)(struct mm_opts *opts);
};

/*
 * Parse argv (argv[0] is the subcommand name). Returns 0 to run, 1 when --help was printed
 * (exit 0), or -1 after printing a one-line error (exit 2).
 */
/* enum fault_type's name ("anon", "file-shared"), its JSON key ("file_shared"), and the type
 * of a name or key (-1: none). */
const char *fault_type_name(unsigned int t);
const char *fault_type_key(unsigned int t);
int fault_type_parse(const char *name);

int opts_parse(struct mm_opts *opts, const struct command *cmd, int argc, char **argv);
void opts_usage(const struct command *cmd, FILE *f);
/*
 * "ADDR:PORT" with a numeric IPv4 address, "[IPv6]:PORT", or "localhost:PORT" (127.0.0.1):
 * 0 with *loopback set, or -1 (no message printed). Port 0 picks a free port.
 */
int parse_listen(const char *s, struct sockaddr_storage *addr, socklen_t *len, bool *loopback);
/* Number of CPUs the kernel may have (for -C validation); overridable in tests. */
extern int (*opts_possible_cpus)(void);

#endif
