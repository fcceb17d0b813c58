// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "cmd/opts.h"
#include "cfi/cfi_cache.h"
#include "lib/util.h"

enum {
	OPT_JSON = 0x100,
	OPT_FOLDED,
	OPT_BTF,
	OPT_METHOD,
	OPT_NO_CHILDREN,
	OPT_TOP,
	OPT_MAX_ROWS,
	OPT_SVG,
	OPT_PPROF,
	OPT_WEIGHT,
	OPT_UNWIND,
	OPT_UNWIND_MEMORY,
	OPT_UNWIND_CACHE,
	OPT_LISTEN,
	OPT_ALLOW_REMOTE,
	OPT_LABELS,
	OPT_MAX_SERIES,
	OPT_MAJOR,
	OPT_MIN_LATENCY,
	OPT_TYPE,
	OPT_BPF_STATS,
	OPT_SAMPLE,
};

static const struct option long_opts[] = {
	{"pid", required_argument, NULL, 'p'},
	{"tid", required_argument, NULL, 't'},
	{"cgroup", required_argument, NULL, 'c'},
	{"cpu", required_argument, NULL, 'C'},
	{"duration", required_argument, NULL, 'd'},
	{"interval", required_argument, NULL, 'i'},
	{"timestamp", no_argument, NULL, 'T'},
	{"output", required_argument, NULL, 'o'},
	{"verbose", no_argument, NULL, 'v'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"json", no_argument, NULL, OPT_JSON},
	{"folded", no_argument, NULL, OPT_FOLDED},
	{"btf", required_argument, NULL, OPT_BTF},
	{"method", required_argument, NULL, OPT_METHOD},
	{"no-children", no_argument, NULL, OPT_NO_CHILDREN},
	{"top", required_argument, NULL, OPT_TOP},
	{"max-rows", required_argument, NULL, OPT_MAX_ROWS},
	{"svg", required_argument, NULL, OPT_SVG},
	{"pprof", required_argument, NULL, OPT_PPROF},
	{"weight", required_argument, NULL, OPT_WEIGHT},
	{"major", no_argument, NULL, OPT_MAJOR},
	{"min-latency", required_argument, NULL, OPT_MIN_LATENCY},
	{"type", required_argument, NULL, OPT_TYPE},
	{"unwind", required_argument, NULL, OPT_UNWIND},
	{"unwind-memory", required_argument, NULL, OPT_UNWIND_MEMORY},
	{"unwind-cache", required_argument, NULL, OPT_UNWIND_CACHE},
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"allow-remote", no_argument, NULL, OPT_ALLOW_REMOTE},
	{"labels", required_argument, NULL, OPT_LABELS},
	{"max-series", required_argument, NULL, OPT_MAX_SERIES},
	{"bpf-stats", no_argument, NULL, OPT_BPF_STATS},
	{"sample", required_argument, NULL, OPT_SAMPLE},
	{NULL, 0, NULL, 0},
};

static const char *const method_names[] = {"fentry", "kprobe",	   "tp_btf",
					   "raw_tp", "tracepoint", "perf"};

static int default_possible_cpus(void)
{
	return libbpf_num_possible_cpus();
}

int (*opts_possible_cpus)(void) = default_possible_cpus;

void opts_usage(const struct command *cmd, FILE *f)
{
	fprintf(f, "Usage: mmscope %s [OPTIONS]%s\n\n%s\n", cmd->name,
		cmd->flags & CMD_TRACES ? " [-- COMMAND [ARGS...]]" : "", cmd->summary);
	if (cmd->flags & CMD_TRACES) {
		fprintf(f,
			"\nTarget (default: the whole host, until Ctrl-C or -d):\n"
			"  -p, --pid PID[,PID...]  trace these processes and their descendants: "
			"those\n"
			"                          running at the start and those forked "
			"later\n"
			"                          (all threads, across exec)\n"
			"  -t, --tid TID           trace one thread (the run ends when it does)\n"
			"  -c, --cgroup PATH       trace tasks in this cgroup v2 directory and "
			"below\n"
			"  -C, --cpu CPU[,CPU...]  only events on these CPUs (ranges: 0-3)\n"
			"  -- COMMAND [ARGS]       start COMMAND, trace it from its first "
			"instruction,\n"
			"                          %s\n"
			"      --no-children       with -p or --: the processes themselves, "
			"none they\n"
			"                          forked before or after the start\n",
			cmd->flags & CMD_SERVE ? "stop when it exits; its final counts stay served"
					       : "stop when it exits and exit with its status");
		if (cmd->flags & CMD_SERVE)
			fprintf(f,
				"\nServe:\n"
				"      --listen ADDR:PORT  serve /metrics there (default "
				"" SERVE_DEFAULT_LISTEN ");\n"
				"                          numeric IPv4, [IPv6] or localhost; "
				"port 0: any\n"
				"      --allow-remote      allow a --listen address that is not "
				"loopback\n"
				"      --labels KIND       also count by comm (process name) or "
				"by cgroup\n"
				"      --max-series N      at most N comm/cgroup values (default "
				"%d); the\n"
				"                          others are summed as \"__other__\"\n"
				"  -d, --duration SECONDS  stop serving after SECONDS\n",
				SERVE_DEFAULT_MAX_SERIES);
		else
			fprintf(f,
				"\nRun:\n"
				"  -d, --duration SECONDS  stop after SECONDS\n"
				"  -i, --interval SECONDS  print the counts of each interval\n"
				"  -T, --timestamp         prefix each interval with the time of "
				"day\n"
				"\nOutput:\n"
				"      --json              one JSON object at the end (one per "
				"interval with -i)\n");
		if (cmd->flags & CMD_STACKS)
			fprintf(f,
				"      --folded            folded stacks for flame graphs "
				"(comm;user...;kernel...;[kind] COUNT)\n"
				"      --svg FILE          also write a flame graph of the stacks "
				"to FILE (SVG)\n"
				"      --pprof FILE        also write the stacks to FILE as a "
				"pprof "
				"profile\n"
				"                          (gzipped profile.proto: go tool pprof, "
				"Parca, Pyroscope)\n"
				"      --sample N          take the stacks of 1 event in N (on "
				"average, per CPU),\n"
				"                          each weighing N; the counts stay exact "
				"(default 1)\n"
				"      --unwind HOW        user stacks: dwarf (call-frame tables, "
				"for code\n"
				"                          without frame pointers), fp (frame "
				"pointers only),\n"
				"                          auto (default: dwarf where the kernel "
				"can)\n"
				"      --unwind-memory MB  memory for the dwarf tables (default "
				"%d)\n"
				"      --unwind-cache DIR  where compiled tables are kept by build "
				"ID, or none\n"
				"                          (default %s)\n",
				UNWIND_MEMORY_DEFAULT_MB, CFI_CACHE_DIR);
		if (cmd->flags & CMD_LATENCY)
			fprintf(f,
				"      --weight WHAT       of --folded and --svg stacks: count "
				"(default) or\n"
				"                          latency (ns of completed faults); "
				"--pprof has both\n"
				"                          and shows this one first\n"
				"      --major             stacks of major faults only\n"
				"      --min-latency SECS  stacks of faults that took at least "
				"SECS "
				"(e.g. 0.001)\n"
				"      --type T[,T...]     stacks of these fault types only: heap, "
				"stack, anon\n"
				"                          (all three), file, file-shared, shmem, "
				"hugetlb,\n"
				"                          special, cow\n"
				"      --max-rows N        processes and (file, process) pairs the "
				"in-kernel\n"
				"                          tables hold (default 8192); the rest "
				"count in [other]\n");
		if (!(cmd->flags & CMD_SERVE))
			fprintf(f,
				"  -o, --output FILE       write the output to FILE (atomically) "
				"instead of stdout\n"
				"      --top N             rows in per-process and location tables "
				"(default 10)\n");
		fprintf(f, "\nKernel:\n"
			   "      --btf PATH          kernel BTF for kernels without "
			   "/sys/kernel/btf/vmlinux\n"
			   "      --method KIND       force hooks of one kind: fentry, kprobe, "
			   "tp_btf, raw_tp,\n"
			   "                          tracepoint, perf (events that have none are "
			   "n/a)\n"
			   "      --bpf-stats         time mmscope's own BPF programs in this "
			   "run (the kernel's\n"
			   "                          run-time statistics; a few ns more per "
			   "event)\n"
			   "  -v, --verbose           libbpf and attach details on stderr\n"
			   "  -q, --quiet             no \"Tracing ...\" line on stderr when "
			   "tracing begins\n");
	} else {
		fprintf(f, "\nOptions:\n"
			   "      --json              JSON output\n"
			   "      --btf PATH          kernel BTF for kernels without "
			   "/sys/kernel/btf/vmlinux\n"
			   "  -v, --verbose           details on stderr\n");
	}
	fprintf(f, "  -h, --help              this help\n");
	if (cmd->help)
		fprintf(f, "\n%s", cmd->help);
}

/* An option's value as it may be echoed in a one-line message: control bytes become '?'. */
static const char *printable(const char *s)
{
	static char buf[4][96];
	static int next;
	char *b = buf[next++ % 4];
	size_t i;

	for (i = 0; s && s[i] && i < sizeof(buf[0]) - 1; i++)
		b[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	b[i] = '\0';
	return b;
}

static int parse_pid_list(struct mm_opts *opts, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int ret = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		char path[64];
		struct stat st;

		if (!parse_u64(tok, &v) || v == 0 || v > 0x3fffffff) {
			err_msg("-p %s: '%s' is not a process ID (a positive number); see 'pgrep'",
				printable(arg), printable(tok));
			ret = -1;
			break;
		}
		snprintf(path, sizeof(path), "/proc/%llu", (unsigned long long)v);
		if (stat(path, &st) != 0) {
			err_msg("-p: no process with PID %llu (is it still running?)",
				(unsigned long long)v);
			ret = -1;
			break;
		}
		if (opts->npids >= MAX_TARGET_PIDS) {
			err_msg("-p: at most %d processes", MAX_TARGET_PIDS);
			ret = -1;
			break;
		}
		opts->pids[opts->npids++] = (int)v;
	}
	if (!ret && opts->npids == 0) {
		err_msg("-p: empty process list");
		ret = -1;
	}
	free(copy);
	return ret;
}

/* By enum fault_type: the names of the folded leaf frames and of the table, and JSON keys. */
static const char *const type_names[FTY_NR] = {
	[FTY_NONE] = "none",   [FTY_HEAP] = "heap",	  [FTY_STACK] = "stack",
	[FTY_ANON] = "anon",   [FTY_FILE] = "file",	  [FTY_FILE_SHARED] = "file-shared",
	[FTY_SHMEM] = "shmem", [FTY_HUGETLB] = "hugetlb", [FTY_SPECIAL] = "special",
	[FTY_COW] = "cow",
};
static const char *const type_keys[FTY_NR] = {
	[FTY_NONE] = "none",   [FTY_HEAP] = "heap",	  [FTY_STACK] = "stack",
	[FTY_ANON] = "anon",   [FTY_FILE] = "file",	  [FTY_FILE_SHARED] = "file_shared",
	[FTY_SHMEM] = "shmem", [FTY_HUGETLB] = "hugetlb", [FTY_SPECIAL] = "special",
	[FTY_COW] = "cow",
};
const char *fault_type_name(unsigned int t)
{
	return t < FTY_NR ? type_names[t] : "?";
}

int fault_type_parse(const char *name)
{
	for (int t = 0; t < FTY_NR; t++)
		if (!strcmp(name, type_names[t]) || !strcmp(name, type_keys[t]))
			return t;
	return -1;
}

const char *fault_type_key(unsigned int t)
{
	return t < FTY_NR ? type_keys[t] : "?";
}

/* --type heap,file,...: "anon" is every anonymous type (heap, stack and other). */
static int parse_type_list(const char *arg, uint32_t *mask)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int err = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int t = fault_type_parse(tok);

		if (t <= FTY_NONE) {
			err_msg("--type %s: unknown fault type '%s' (heap, stack, anon, file, "
				"file-shared, shmem, hugetlb, special, cow)",
				printable(arg), printable(tok));
			err = -1;
			break;
		}
		*mask |= 1u << t;
		if (t == FTY_ANON)
			*mask |= 1u << FTY_HEAP | 1u << FTY_STACK;
	}
	if (!err && !*mask) {
		err_msg("--type: expected a list of fault types");
		err = -1;
	}
	free(copy);
	return err;
}

int parse_listen(const char *s, struct sockaddr_storage *addr, socklen_t *len, bool *loopback)
{
	const char *colon = strrchr(s, ':');
	char host[INET6_ADDRSTRLEN + 2];
	size_t hlen;
	uint64_t port;

	if (!colon || colon == s || !parse_u64(colon + 1, &port) || port > 65535)
		return -1;
	hlen = (size_t)(colon - s);
	if (hlen >= sizeof(host))
		return -1;
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	memset(addr, 0, sizeof(*addr));
	if (host[0] == '[') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)addr;

		if (hlen < 3 || host[hlen - 1] != ']')
			return -1;
		host[hlen - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
			return -1;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
		*loopback =
			IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr) ||
			(IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr) && a6->sin6_addr.s6_addr[12] == 127);
		return 0;
	}
	{
		struct sockaddr_in *a4 = (struct sockaddr_in *)addr;

		if (strcmp(host, "localhost") == 0)
			snprintf(host, sizeof(host), "127.0.0.1");
		if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			return -1;
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof(*a4);
		*loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
	}
	return 0;
}

/* serve's own options, and the run options it has no use for. */
static int serve_check(struct mm_opts *opts)
{
	bool loopback = false;

	if (opts->interval || opts->timestamp || opts->json || opts->output || opts->top != 10) {
		err_msg("serve: -i, -T, --json, -o and --top are for the printing subcommands; "
			"serve answers scrapes of /metrics");
		return -1;
	}
	if (!opts->listen)
		opts->listen = SERVE_DEFAULT_LISTEN;
	if (parse_listen(opts->listen, &opts->listen_addr, &opts->listen_addr_len, &loopback)) {
		err_msg("--listen %s: expected ADDR:PORT with a numeric IPv4 address, [IPv6] or "
			"localhost, and a port from 0 to 65535",
			printable(opts->listen));
		return -1;
	}
	if (!loopback && !opts->allow_remote) {
		err_msg("--listen %s: not a loopback address; the metrics would be readable "
			"from the network (add --allow-remote if that is meant)",
			printable(opts->listen));
		return -1;
	}
	if (opts->max_series && !opts->labels) {
		err_msg("--max-series: only meaningful with --labels comm or --labels cgroup");
		return -1;
	}
	if (!opts->max_series)
		opts->max_series = SERVE_DEFAULT_MAX_SERIES;
	return 0;
}

int opts_parse(struct mm_opts *opts, const struct command *cmd, int argc, char **argv)
{
	const char *short_opts = cmd->flags & CMD_TRACES ? "+:p:t:c:C:d:i:To:vqh" : "+:vh";
	bool have_cmd_sep = false, have_weight = false, have_unwind = false;
	bool have_stack_filter = false, have_sample = false;
	const char *last_optarg = NULL; /* "--" as an option's value is not the separator */
	int c, ncpus;
	uint64_t v;

	memset(opts, 0, sizeof(*opts));
	opts->cmd = cmd;
	opts->method = FORCE_NONE;
	opts->top = 10;
	opts->max_rows = 8192;
	/* 0, not 1: glibc resets its hidden getopt state (the place inside "-vh", the argument
	 * ordering) only for optind = 0; with 1 a second call goes on in the previous argv. */
	optind = 0;
	opterr = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			have_cmd_sep = true;
			break;
		}
	}
	while ((c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		last_optarg = optarg;
		if (!(cmd->flags & CMD_TRACES) && c != 'v' && c != 'h' && c != OPT_JSON &&
		    c != OPT_BTF && c != '?' && c != ':') {
			/* "--opt VALUE": name the option, not its value. */
			const char *opt = optarg && optind >= 2 && argv[optind - 1] == optarg
						  ? argv[optind - 2]
						  : argv[optind - 1];

			err_msg("%s: option '%s' is not used by this subcommand; see 'mmscope %s "
				"--help'",
				cmd->name, printable(opt), cmd->name);
			return -1;
		}
		switch (c) {
		case 'p':
			if (parse_pid_list(opts, optarg))
				return -1;
			break;
		case 't':
			if (!parse_u64(optarg, &v) || v == 0 || v > 0x3fffffff) {
				err_msg("-t %s: not a thread ID (a positive number)",
					printable(optarg));
				return -1;
			} else {
				char path[64];
				struct stat st;

				snprintf(path, sizeof(path), "/proc/%llu", (unsigned long long)v);
				if (stat(path, &st) != 0) {
					err_msg("-t: no thread with TID %llu",
						(unsigned long long)v);
					return -1;
				}
			}
			opts->tid = (int)v;
			break;
		case 'c':
			opts->cgroup = optarg;
			break;
		case 'C':
			ncpus = opts_possible_cpus();
			if (ncpus <= 0)
				ncpus = MMSCOPE_MAX_CPUS;
			if (ncpus > MMSCOPE_MAX_CPUS)
				ncpus = MMSCOPE_MAX_CPUS;
			switch (parse_cpu_list(optarg, opts->cpu_mask, (unsigned int)ncpus)) {
			case 0:
				break;
			case -ERANGE:
				err_msg("-C %s: this machine has CPUs 0-%d", printable(optarg),
					ncpus - 1);
				return -1;
			default:
				err_msg("-C %s: expected a CPU list such as 0,2-3",
					printable(optarg));
				return -1;
			}
			opts->cpu_filter = true;
			break;
		case 'd':
			if (!parse_seconds(optarg, &opts->duration)) {
				err_msg("-d %s: the duration must be a positive number of seconds",
					printable(optarg));
				return -1;
			}
			break;
		case 'i':
			if (!parse_seconds(optarg, &opts->interval)) {
				err_msg("-i %s: the interval must be a positive number of seconds",
					printable(optarg));
				return -1;
			}
			break;
		case 'T':
			opts->timestamp = true;
			break;
		case 'o':
			opts->output = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'q':
			opts->quiet = true;
			break;
		case 'h':
			opts_usage(cmd, stdout);
			return 1;
		case OPT_JSON:
			opts->json = true;
			break;
		case OPT_FOLDED:
			if (!(cmd->flags & CMD_STACKS)) {
				err_msg("--folded: '%s' collects no stacks (stacks come from "
					"'mmscope "
					"faults --folded')",
					cmd->name);
				return -1;
			}
			opts->folded = true;
			break;
		case OPT_SVG:
			if (!(cmd->flags & CMD_STACKS)) {
				err_msg("--svg: '%s' collects no stacks (flame graphs come from "
					"'mmscope faults --svg FILE' and 'mmscope tlb --svg FILE')",
					cmd->name);
				return -1;
			}
			if (!optarg[0]) {
				err_msg("--svg: expected a file name");
				return -1;
			}
			opts->svg = optarg;
			break;
		case OPT_PPROF:
			if (!(cmd->flags & CMD_STACKS)) {
				err_msg("--pprof: '%s' collects no stacks (profiles come from "
					"'mmscope faults --pprof FILE' and 'mmscope tlb --pprof "
					"FILE')",
					cmd->name);
				return -1;
			}
			if (!optarg[0]) {
				err_msg("--pprof: expected a file name");
				return -1;
			}
			opts->pprof = optarg;
			break;
		case OPT_WEIGHT:
			if (strcmp(optarg, "count") == 0) {
				opts->weight_latency = false;
			} else if (strcmp(optarg, "latency") == 0) {
				if (!(cmd->flags & CMD_LATENCY)) {
					err_msg("--weight latency: '%s' events have no latency "
						"(stacks weighted by latency come from 'mmscope "
						"faults')",
						cmd->name);
					return -1;
				}
				opts->weight_latency = true;
			} else {
				err_msg("--weight %s: expected count or latency",
					printable(optarg));
				return -1;
			}
			have_weight = true;
			break;
		case OPT_MAJOR:
		case OPT_MIN_LATENCY:
		case OPT_TYPE:
			if (!(cmd->flags & CMD_LATENCY)) {
				err_msg("--%s: only 'mmscope faults' filters its stacks so",
					c == OPT_MAJOR	? "major"
					: c == OPT_TYPE ? "type"
							: "min-latency");
				return -1;
			}
			if (c == OPT_MAJOR) {
				opts->major_only = true;
			} else if (c == OPT_MIN_LATENCY) {
				double secs;

				if (!parse_seconds(optarg, &secs)) {
					err_msg("--min-latency %s: expected seconds > 0 (0.0005)",
						printable(optarg));
					return -1;
				}
				opts->min_latency_ns = (uint64_t)(secs * 1e9);
				if (!opts->min_latency_ns)
					opts->min_latency_ns = 1;
			} else if (parse_type_list(optarg, &opts->type_mask)) {
				return -1;
			}
			have_stack_filter = true;
			break;
		case OPT_BTF:
			opts->btf = optarg;
			break;
		case OPT_METHOD:
			opts->method = FORCE_NONE;
			for (size_t m = 0; m < sizeof(method_names) / sizeof(method_names[0]); m++)
				if (strcmp(optarg, method_names[m]) == 0)
					opts->method = (int)m;
			if (opts->method == FORCE_NONE) {
				err_msg("--method %s: expected fentry, kprobe, tp_btf, raw_tp, "
					"tracepoint or perf",
					printable(optarg));
				return -1;
			}
			break;
		case OPT_NO_CHILDREN:
			opts->no_children = true;
			break;
		case OPT_BPF_STATS:
			/* serve's programs run for as long as it serves: bpftool prog shows them */
			if (!(cmd->flags & CMD_TRACES) || (cmd->flags & CMD_SERVE)) {
				err_msg("%s: option '--bpf-stats' is for stat, faults, tlb and "
					"switch",
					cmd->name);
				return -1;
			}
			opts->bpf_stats = true;
			break;
		case OPT_UNWIND:
			if (strcmp(optarg, "auto") == 0) {
				opts->unwind = UNWIND_AUTO;
			} else if (strcmp(optarg, "dwarf") == 0) {
				opts->unwind = UNWIND_DWARF;
			} else if (strcmp(optarg, "fp") == 0) {
				opts->unwind = UNWIND_FP;
			} else {
				err_msg("--unwind %s: expected auto, dwarf or fp",
					printable(optarg));
				return -1;
			}
			have_unwind = true;
			break;
		case OPT_SAMPLE:
			if (!(cmd->flags & CMD_STACKS)) {
				err_msg("--sample: '%s' collects no stacks (stacks come from "
					"'mmscope faults' and 'mmscope tlb')",
					cmd->name);
				return -1;
			}
			if (!parse_u64(optarg, &v) || v < 1 || v > SAMPLE_EVERY_MAX) {
				err_msg("--sample %s: expected a number of events from 1 to %d",
					printable(optarg), SAMPLE_EVERY_MAX);
				return -1;
			}
			opts->sample_every = (uint32_t)v;
			have_sample = true;
			break;
		case OPT_UNWIND_CACHE:
			if (!optarg[0]) {
				err_msg("--unwind-cache: expected a directory, or none");
				return -1;
			}
			opts->unwind_cache = optarg;
			have_unwind = true;
			break;
		case OPT_UNWIND_MEMORY:
			if (!parse_u64(optarg, &v) || v < 1 || v > 4096) {
				err_msg("--unwind-memory %s: expected megabytes from 1 to 4096",
					printable(optarg));
				return -1;
			}
			opts->unwind_memory_mb = (int)v;
			have_unwind = true;
			break;
		case OPT_MAX_ROWS:
			if (!(cmd->flags & CMD_LATENCY)) {
				err_msg("--max-rows: only 'mmscope faults' bounds its tables so");
				return -1;
			}
			if (!parse_u64(optarg, &v) || v < 1 || v > 1000000) {
				err_msg("--max-rows %s: expected a number of rows from 1 to "
					"1000000",
					printable(optarg));
				return -1;
			}
			opts->max_rows = (int)v;
			break;
		case OPT_TOP:
			if (!parse_u64(optarg, &v) || v == 0 || v > 100000) {
				err_msg("--top %s: expected a number of rows from 1 to 100000",
					printable(optarg));
				return -1;
			}
			opts->top = (int)v;
			break;
		case OPT_LISTEN:
		case OPT_ALLOW_REMOTE:
		case OPT_LABELS:
		case OPT_MAX_SERIES:
			if (!(cmd->flags & CMD_SERVE)) {
				err_msg("%s: option '--%s' is for 'mmscope serve' only", cmd->name,
					c == OPT_LISTEN		? "listen"
					: c == OPT_ALLOW_REMOTE ? "allow-remote"
					: c == OPT_LABELS	? "labels"
								: "max-series");
				return -1;
			}
			if (c == OPT_LISTEN) {
				opts->listen = optarg;
			} else if (c == OPT_ALLOW_REMOTE) {
				opts->allow_remote = true;
			} else if (c == OPT_LABELS) {
				if (strcmp(optarg, "comm") == 0) {
					opts->labels = LABELS_COMM;
				} else if (strcmp(optarg, "cgroup") == 0) {
					opts->labels = LABELS_CGROUP;
				} else {
					err_msg("--labels %s: expected comm or cgroup",
						printable(optarg));
					return -1;
				}
			} else if (!parse_u64(optarg, &v) || v == 0 || v > 100000) {
				err_msg("--max-series %s: expected a number from 1 to 100000",
					printable(optarg));
				return -1;
			} else {
				opts->max_series = (int)v;
			}
			break;
		case ':':
			err_msg("%s: option '%s' needs a value; see 'mmscope %s --help'", cmd->name,
				printable(argv[optind - 1]), cmd->name);
			return -1;
		default:
			err_msg("%s: unknown option '%s'; see 'mmscope %s --help'", cmd->name,
				printable(argv[optind - 1]), cmd->name);
			return -1;
		}
	}
	if (optind < argc) {
		/* getopt stops at the first non-option; only a consumed "--" starts the command. */
		if (!have_cmd_sep || !(cmd->flags & CMD_TRACES) || optind == 1 ||
		    strcmp(argv[optind - 1], "--") != 0 || argv[optind - 1] == last_optarg) {
			err_msg("%s: unexpected argument '%s' (a command to trace goes after '--')",
				cmd->name, printable(argv[optind]));
			return -1;
		}
		opts->argv = &argv[optind];
	} else if (have_cmd_sep) {
		err_msg("%s: '--' must be followed by a command to run", cmd->name);
		return -1;
	}
	if (opts->interval && opts->duration && opts->interval > opts->duration) {
		err_msg("-i %g is longer than -d %g: no interval would ever end", opts->interval,
			opts->duration);
		return -1;
	}
	if (opts->timestamp && !opts->interval) {
		err_msg("-T prefixes each interval report with the time: give -i SECONDS too");
		return -1;
	}
	if ((cmd->flags & CMD_SERVE) && serve_check(opts))
		return -1;
	if (opts->json && opts->folded) {
		err_msg("--json and --folded: choose one output format");
		return -1;
	}
	if (opts->folded && opts->interval) {
		err_msg("--folded with -i: folded stacks are printed once, at the end");
		return -1;
	}
	if (have_unwind && !opts_stacks(opts)) {
		err_msg("--unwind: it chooses how the stacks of --folded, --svg or --pprof are "
			"walked; give one of them");
		return -1;
	}
	if (have_sample && !opts_stacks(opts)) {
		err_msg("--sample: it samples the stacks of --folded, --svg or --pprof; give one "
			"of them");
		return -1;
	}
	if (have_stack_filter && !opts_stacks(opts)) {
		err_msg("--major, --min-latency, --type: they choose the stacks of --folded, "
			"--svg or --pprof; give one of them");
		return -1;
	}
	if (have_weight && !opts_stacks(opts)) {
		err_msg("--weight: it weights the stacks of --folded, --svg or --pprof (its "
			"default sample type); give one of them");
		return -1;
	}
	if (opts->svg && opts->output && strcmp(opts->svg, opts->output) == 0) {
		err_msg("--svg %s: -o names the same file", printable(opts->svg));
		return -1;
	}
	if (opts->pprof && ((opts->output && strcmp(opts->pprof, opts->output) == 0) ||
			    (opts->svg && strcmp(opts->pprof, opts->svg) == 0))) {
		err_msg("--pprof %s: %s names the same file", printable(opts->pprof),
			opts->svg && strcmp(opts->pprof, opts->svg) == 0 ? "--svg" : "-o");
		return -1;
	}
	if (opts->no_children && !opts->npids && !opts->argv) {
		err_msg("--no-children: only meaningful with -p or -- COMMAND (-t traces one "
			"thread)");
		return -1;
	}
	if (opts->cgroup) {
		struct stat st;

		if (stat(opts->cgroup, &st) != 0 || !S_ISDIR(st.st_mode)) {
			err_msg("-c %s: no such cgroup directory (give a path under "
				"/sys/fs/cgroup)",
				printable(opts->cgroup));
			return -1;
		}
	}
	if (opts->btf && access(opts->btf, R_OK) != 0) {
		err_msg("--btf %s: %s", printable(opts->btf), strerror(errno));
		return -1;
	}
	return 0;
}
