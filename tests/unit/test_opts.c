// SPDX-License-Identifier: GPL-2.0
/* Option parsing: accepted forms, and the one-line errors of bad input. */
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test.h"
#include "cmd/opts.h"
#include "lib/util.h"

static int run_noop(struct mm_opts *o)
{
	(void)o;
	return 0;
}

static const struct command tracer = {.name = "faults",
				      .summary = "test",
				      .flags = CMD_TRACES | CMD_STACKS | CMD_LATENCY,
				      .run = run_noop};
static const struct command stacker = {
	.name = "tlb", .summary = "test", .flags = CMD_TRACES | CMD_STACKS, .run = run_noop};
static const struct command counter = {
	.name = "stat", .summary = "test", .flags = CMD_TRACES, .run = run_noop};
static const struct command plain = {.name = "probes", .summary = "test", .run = run_noop};
static const struct command server = {
	.name = "serve", .summary = "test", .flags = CMD_TRACES | CMD_SERVE, .run = run_noop};

static int four_cpus(void)
{
	return 4;
}

/* Parse a NULL-terminated list of arguments (argv[0] is the subcommand). */
static int parse(struct mm_opts *o, const struct command *c, const char **args)
{
	int argc = 0;

	while (args[argc])
		argc++;
	opts_possible_cpus = four_cpus;
	return opts_parse(o, c, argc, (char **)args);
}

static void good_options(void)
{
	struct mm_opts o;
	char pid[32];
	const char *a[] = {"faults", "-p", pid,	    "-d",    "2.5", "-i", "0.5",	 "-T",
			   "--json", "-C", "0,2-3", "--top", "5",   "-o", "/tmp/x.json", NULL};

	snprintf(pid, sizeof(pid), "%d,1", getpid());
	EXPECT(parse(&o, &tracer, a) == 0);
	EXPECT(o.npids == 2 && o.pids[0] == getpid() && o.pids[1] == 1);
	EXPECT(o.duration == 2.5 && o.interval == 0.5 && o.timestamp && o.json);
	EXPECT(o.cpu_filter && o.cpu_mask[0] == 0xd);
	EXPECT(o.top == 5);
	EXPECT_STREQ(o.output, "/tmp/x.json");
	EXPECT(o.argv == NULL);
	EXPECT(!o.quiet);
}

/* -q, --quiet: no start line; a tracing option, refused by probes. */
static void quiet(void)
{
	struct mm_opts o;
	const char *a[] = {"faults", "-q", "-d", "1", NULL};
	const char *b[] = {"faults", "--quiet", "--json", NULL};
	const char *c[] = {"probes", "-q", NULL};

	EXPECT(parse(&o, &tracer, a) == 0 && o.quiet);
	EXPECT(parse(&o, &tracer, b) == 0 && o.quiet && o.json);
	EXPECT(parse(&o, &plain, c) == -1);
}

static void command_after_separator(void)
{
	struct mm_opts o;
	const char *a[] = {"stat", "-v", "--", "ls", "-l", "--", "x", NULL};

	EXPECT(parse(&o, &counter, a) == 0);
	EXPECT(o.argv && !strcmp(o.argv[0], "ls") && !strcmp(o.argv[1], "-l"));
	EXPECT(o.argv && !strcmp(o.argv[2], "--") && !strcmp(o.argv[3], "x") && !o.argv[4]);
	verbose = 0;
}

static void bad_options(void)
{
	struct mm_opts o;
	const char *cases[][6] = {
		{"faults", "--bogus", NULL},
		{"faults", "-p", "abc", NULL},
		{"faults", "-p", "0", NULL},
		{"faults", "-p", "999999999", NULL},
		{"faults", "-d", "-1", NULL},
		{"faults", "-d", "0", NULL},
		{"faults", "-d", "nan", NULL},
		{"faults", "-d", "0x10", NULL},
		{"faults", "-d", "inf", NULL},
		{"faults", "-d", " 5", NULL},
		{"faults", "-i", "1e", NULL},
		{"faults", "-T", NULL},
		{"faults", "-i", "5", "-d", "1", NULL},
		{"faults", "--json", "--folded", NULL},
		{"faults", "-t", "1", "--no-children", NULL},
		{"faults", "--method", "bogus", NULL},
		{"faults", "-C", "9", NULL},
		{"faults", "-C", "1-", NULL},
		{"faults", "--", NULL},
		{"faults", "stray", NULL},
		{"faults", "-c", "/nonexistent-cgroup", NULL},
		{"faults", "--btf", "/nonexistent.btf", NULL},
		{"faults", "-d", NULL},
		{"faults", "--top", "0", NULL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = parse(&o, &tracer, cases[i]);

		if (r != -1)
			fprintf(stderr, "case %zu (%s %s) parsed: %d\n", i, cases[i][1],
				cases[i][2] ? cases[i][2] : "", r);
		EXPECT(r == -1);
	}
}

static void folded_needs_stacks(void)
{
	struct mm_opts o;
	const char *a[] = {"stat", "--folded", NULL};
	const char *b[] = {"probes", "-p", "1", NULL};
	const char *c[] = {"probes", "--json", NULL};

	EXPECT(parse(&o, &counter, a) == -1);
	EXPECT(parse(&o, &plain, b) == -1);
	EXPECT(parse(&o, &plain, c) == 0 && o.json);
}

/* --svg on commands with stacks; --weight latency on those with a latency, for --folded/--svg. */
static void svg_and_weight(void)
{
	struct mm_opts o;
	const char *good[] = {"faults", "--svg", "f.svg", "--weight", "latency", "--json", NULL};
	const char *good2[] = {"faults", "--folded", "--weight", "count", NULL};
	const char *good3[] = {"tlb", "--svg", "t.svg", "-i", "1", NULL};
	const char *bad[][6] = {
		{"stat", "--svg", "x.svg", NULL},
		{"tlb", "--svg", "x.svg", "--weight", "latency", NULL},
		{"faults", "--weight", "latency", NULL},
		{"faults", "--svg", "x", "--weight", "ns", NULL},
		{"faults", "--svg", "", NULL},
		{"faults", "--svg", "same", "-o", "same", NULL},
		{"probes", "--svg", "x", NULL},
	};
	const struct command *bad_cmd[] = {&counter, &stacker, &tracer, &tracer,
					   &tracer,  &tracer,  &plain};

	EXPECT(parse(&o, &tracer, good) == 0 && o.svg && !strcmp(o.svg, "f.svg") &&
	       o.weight_latency && o.json);
	EXPECT(parse(&o, &tracer, good2) == 0 && o.folded && !o.weight_latency);
	EXPECT(parse(&o, &stacker, good3) == 0 && o.svg && o.interval == 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse(&o, bad_cmd[i], bad[i]);

		if (r != -1)
			fprintf(stderr, "svg case %zu parsed: %d\n", i, r);
		EXPECT(r == -1);
	}
}

/* faults' stack filters: --major, --min-latency, --type (anon is every anonymous type). */
static void stack_filters(void)
{
	struct mm_opts o;
	const char *good[] = {"faults",
			      "--folded",
			      "--major",
			      "--min-latency",
			      "0.0005",
			      "--type",
			      "anon,file-shared,cow",
			      NULL};
	const char *bad[][6] = {
		{"faults", "--major", NULL},
		{"faults", "--folded", "--type", "bogus", NULL},
		{"faults", "--folded", "--type", "none", NULL},
		{"faults", "--folded", "--type", ",", NULL},
		{"faults", "--folded", "--min-latency", "0", NULL},
		{"tlb", "--folded", "--major", NULL},
	};
	const struct command *bad_cmd[] = {&tracer, &tracer, &tracer, &tracer, &tracer, &stacker};

	EXPECT(parse(&o, &tracer, good) == 0 && o.major_only && o.min_latency_ns == 500000 &&
	       o.type_mask == (1u << FTY_HEAP | 1u << FTY_STACK | 1u << FTY_ANON |
			       1u << FTY_FILE_SHARED | 1u << FTY_COW));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse(&o, bad_cmd[i], bad[i]);

		if (r != -1)
			fprintf(stderr, "filter case %zu parsed: %d\n", i, r);
		EXPECT(r == -1);
	}
	EXPECT(fault_type_parse("file_shared") == FTY_FILE_SHARED &&
	       !strcmp(fault_type_name(FTY_FILE_SHARED), "file-shared") &&
	       fault_type_parse("x") == -1);
}

static void help_returns_one(void)
{
	struct mm_opts o;
	const char *a[] = {"faults", "--help", NULL};
	FILE *saved = stdout;

	stdout = fopen("/dev/null", "w");
	EXPECT(parse(&o, &tracer, a) == 1);
	fclose(stdout);
	stdout = saved;
}

static void serve_options(void)
{
	struct mm_opts o;
	const char *dflt[] = {"serve", NULL};
	const char *good[] = {"serve",	      "--listen", "[::1]:0", "--labels", "cgroup",
			      "--max-series", "7",	  "-d",	     "3",	 NULL};
	const char *remote[] = {"serve", "--listen", "0.0.0.0:9890", "--allow-remote", NULL};
	const char *cases[][6] = {
		{"serve", "--listen", "0.0.0.0:9890", NULL},
		{"serve", "--listen", "[::]:1", NULL},
		{"serve", "--listen", "host:1", NULL},
		{"serve", "--listen", NULL},
		{"serve", "--labels", "pid", NULL},
		{"serve", "--max-series", "5", NULL},
		{"serve", "--labels", "comm", "--max-series", "0", NULL},
		{"serve", "--labels", "comm", "--max-series", "x", NULL},
		{"serve", "-i", "1", NULL},
		{"serve", "-T", NULL},
		{"serve", "--json", NULL},
		{"serve", "-o", "/tmp/x", NULL},
		{"serve", "--top", "3", NULL},
	};
	const char *not_serve[] = {"faults", "--listen", "127.0.0.1:1", NULL};

	EXPECT(parse(&o, &server, dflt) == 0);
	EXPECT_STREQ(o.listen, SERVE_DEFAULT_LISTEN);
	EXPECT(o.labels == LABELS_NONE && o.max_series == SERVE_DEFAULT_MAX_SERIES);
	EXPECT(parse(&o, &server, good) == 0);
	EXPECT(o.labels == LABELS_CGROUP && o.max_series == 7 && o.duration == 3);
	EXPECT(o.listen_addr.ss_family == AF_INET6);
	EXPECT(parse(&o, &server, remote) == 0 && o.allow_remote);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = parse(&o, &server, cases[i]);

		if (r != -1)
			fprintf(stderr, "serve case %zu (%s %s) parsed: %d\n", i, cases[i][1],
				cases[i][2] ? cases[i][2] : "", r);
		EXPECT(r == -1);
	}
	EXPECT(parse(&o, &tracer, not_serve) == -1);
}

static void numbers(void)
{
	uint64_t v;
	double d;
	uint64_t mask[2] = {0};

	EXPECT(parse_u64("42", &v) && v == 42);
	EXPECT(!parse_u64("", &v) && !parse_u64("-1", &v) && !parse_u64("1x", &v));
	EXPECT(!parse_u64("99999999999999999999999", &v));
	EXPECT(parse_seconds("0.25", &d) && d == 0.25);
	EXPECT(!parse_seconds("0", &d) && !parse_seconds("inf", &d) && !parse_seconds("1s", &d));
	EXPECT(parse_cpu_list("1,3-4,64", mask, 128) == 0);
	EXPECT(mask[0] == 0x1a && mask[1] == 1);
	EXPECT(parse_cpu_list("4-3", mask, 128) != 0);
	EXPECT(parse_cpu_list("200", mask, 128) != 0);
}

/* --sample N: on the commands with stacks, with a stack output, N from 1 to SAMPLE_EVERY_MAX. */
static void sample(void)
{
	struct mm_opts o;
	const char *a[] = {"faults", "--folded", "--sample", "16", NULL};
	const char *b[] = {"tlb", "--svg", "t.svg", "--sample=1000000", NULL};
	const char *c[] = {"faults", "--pprof", "p.pb.gz", "--sample", "1", NULL};
	const char *d[] = {"faults", "--folded", NULL};
	const char *bad[][5] = {
		{"faults", "--folded", "--sample", "0", NULL},
		{"faults", "--folded", "--sample", "1000001", NULL},
		{"faults", "--folded", "--sample", "-2", NULL},
		{"faults", "--folded", "--sample", "2.5", NULL},
		{"faults", "--folded", "--sample", "", NULL},
		{"faults", "--folded", "--sample", NULL},
		{"faults", "--sample", "4", NULL}, /* no stacks to sample */
		{"faults", "--json", "--sample", "4", NULL},
	};
	const char *st[] = {"stat", "--sample", "4", NULL};
	const char *pr[] = {"probes", "--sample", "4", NULL};

	EXPECT(parse(&o, &tracer, a) == 0 && o.sample_every == 16 && o.folded);
	EXPECT(parse(&o, &stacker, b) == 0 && o.sample_every == SAMPLE_EVERY_MAX);
	EXPECT(parse(&o, &tracer, c) == 0 && o.sample_every == 1);
	EXPECT(parse(&o, &tracer, d) == 0 && o.sample_every == 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT(parse(&o, &tracer, bad[i]) == -1);
	EXPECT(parse(&o, &counter, st) == -1);
	EXPECT(parse(&o, &plain, pr) == -1);
}

TEST_MAIN(T(good_options), T(quiet), T(command_after_separator), T(bad_options),
	  T(folded_needs_stacks), T(svg_and_weight), T(stack_filters), T(help_returns_one),
	  T(serve_options), T(numbers), T(sample))
