/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libFuzzer target for the option parser, opts_parse() (user/cmd/opts.c): the command line is the
 * first thing a user (or a script feeding it untrusted words) controls.
 *
 * The input is split on NUL bytes into argv[1..]; argv[0] is the subcommand's name. Each input
 * is parsed for every command descriptor: the five real ones of the command table
 * (user/cmd/cmd_*.c) and synthetic ones covering every combination of CMD_TRACES / CMD_STACKS, so
 * that the "not used by this subcommand" paths run too.
 *
 * Sanitizers catch memory errors. The checks below catch a parser that accepts what it must
 * refuse, or breaks its error contract:
 *  - 0 (run): nothing printed; every field within its documented range; the combinations
 *    opts_parse() refuses are absent (--json with --folded, --folded with -i or on a command
 *    without stacks, -i longer than -d, --no-children without -p or --); a command without
 *    CMD_TRACES got no tracing option; strings point into argv; argv unchanged; the command
 *    (-- CMD) is exactly what follows the separator, as a reference tokenizer of the
 *    documented options, written here apart from opts.c, finds it ("x -- ls": x is a stray
 *    word; "-o -- ls": "--" is -o's value);
 *  - 1 (--help): usage on stdout, nothing on stderr;
 *  - -1 (error): exactly one line on stderr, starting "mmscope: ", nothing on stdout.
 *
 * stdout and stderr are swapped for in-memory counting streams (fopencookie): no /dev/null,
 * no output noise, and libFuzzer's own reports (written to the original stderr) are kept.
 * opts_parse() does stat() and access() on paths from the input (/proc/PID, -c, --btf): reads
 * only, nothing is created. getopt's hidden state is reset before each call (see
 * reset_getopt(): opts_parse() alone does not, a latent use-after-free on a second call).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <getopt.h>
#include <unistd.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/opts.h"
#include "lib/util.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(real_stderr,                                                       \
				"ERROR: fuzz_opts.c:%d: CHECK(%s) failed (command %s, "            \
				"ret %d)\n",                                                       \
				__LINE__, #cond, cur_cmd ? cur_cmd->name : "?", cur_ret);          \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define MAX_ARGS 48

static FILE *real_stderr;
static const struct command *cur_cmd;
static int cur_ret;

/* ---- counting output streams ---- */

struct counter {
	size_t bytes, lines;
	char first[16]; /* the first bytes written */
	size_t nfirst;
};

static struct counter out_count, err_count;

static ssize_t count_write(void *cookie, const char *buf, size_t size)
{
	struct counter *c = cookie;

	for (size_t i = 0; i < size; i++) {
		if (c->nfirst < sizeof(c->first))
			c->first[c->nfirst++] = buf[i];
		if (buf[i] == '\n')
			c->lines++;
	}
	c->bytes += size;
	return (ssize_t)size;
}

static FILE *counting_stream(struct counter *c)
{
	cookie_io_functions_t io = {.write = count_write};
	FILE *f = fopencookie(c, "w", io);

	if (!f)
		abort();
	setvbuf(f, NULL, _IONBF, 0); /* every byte counted at once, no buffer to flush */
	return f;
}

/* ---- command descriptors ---- */

static int run_never(struct mm_opts *o)
{
	(void)o;
	abort(); /* opts_parse() must never run the command */
}

static const struct command synth[] = {
	{.name = "plain", .summary = "no tracing options", .run = run_never},
	{.name = "traces", .summary = "tracing, no stacks", .flags = CMD_TRACES, .run = run_never},
	{.name = "stacks",
	 .summary = "tracing and stacks",
	 .help = "help text\n",
	 .flags = CMD_TRACES | CMD_STACKS,
	 .run = run_never},
	{.name = "oddity",
	 .summary = "stacks without tracing",
	 .flags = CMD_STACKS,
	 .run = run_never},
};

static int ncpus = 4;

static int fake_possible_cpus(void)
{
	return ncpus;
}

/*
 * glibc's getopt keeps hidden state that only optind = 0 resets: the position inside a
 * cluster of short options ("-vh") and the argument ordering (from the optstring's '+' at
 * initialization). opts_parse() sets optind = 1, which is enough for the one call mmscope
 * makes, but a later call would continue inside the previous argv (freed here). Reset the
 * state the documented way before each call, with the same REQUIRE_ORDER ('+') that
 * opts_parse() asks for.
 */
static void reset_getopt(void)
{
	static char arg0[] = "fuzz", *dummy[] = {arg0, NULL};

	optind = 0;
	opterr = 0;
	(void)getopt(1, dummy, "+");
}

/*
 * Where getopt (REQUIRE_ORDER, '+') stops on argv, worked out independently of opts.c from
 * mmscope's documented options: *stop is the index of the first word not consumed, *sep
 * whether the word just before it is a "--" taken as the separator (not as an option's
 * value, as in "-o --"). Returns false when the reference cannot judge (an unknown or
 * ambiguous option: opts_parse() must have refused the line anyway).
 */
struct ref_opt {
	const char *name;
	bool arg;
};

static const struct ref_opt ref_long[] = {
	{"pid", true},	    {"tid", true},	  {"cgroup", true},	  {"cpu", true},
	{"duration", true}, {"interval", true},	  {"timestamp", false},	  {"output", true},
	{"verbose", false}, {"help", false},	  {"json", false},	  {"folded", false},
	{"btf", true},	    {"method", true},	  {"no-children", false}, {"top", true},
	{"svg", true},	    {"weight", true},	  {"listen", true},	  {"allow-remote", false},
	{"labels", true},   {"max-series", true},
};

static bool ref_stop(bool traces, int argc, char **argv, int *stop, bool *sep)
{
	const char *shorts = traces ? "p:t:c:C:d:i:To:vh" : "vh";
	int i = 1;

	*sep = false;
	while (i < argc) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			*sep = true;
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break; /* a non-option word: getopt stops here */
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			int found = -1, matches = 0;

			for (int k = 0; k < (int)(sizeof(ref_long) / sizeof(ref_long[0])); k++) {
				if (strncmp(ref_long[k].name, name, len) != 0)
					continue;
				if (strlen(ref_long[k].name) == len) {
					found = k; /* exact */
					matches = 1;
					break;
				}
				found = k;
				matches++;
			}
			if (matches != 1)
				return false;
			if (ref_long[found].arg && !eq) {
				if (i + 1 >= argc)
					return false;
				i++; /* the next word is the value, whatever it is */
			} else if (!ref_long[found].arg && eq) {
				return false;
			}
			i++;
			continue;
		}
		for (const char *c = a + 1; *c; c++) {
			const char *o = strchr(shorts, *c);

			if (!o || *c == ':')
				return false;
			if (o[1] == ':') {
				if (!c[1]) {
					if (i + 1 >= argc)
						return false;
					i++; /* "-o VALUE": the next word, even "--" */
				}
				break; /* "-oVALUE": the rest of the word */
			}
		}
		i++;
	}
	*stop = i;
	return true;
}

static bool points_into(const char *p, char **argv, int argc)
{
	for (int i = 0; i < argc; i++)
		if (p >= argv[i] && p <= argv[i] + strlen(argv[i]))
			return true;
	return false;
}

static void check_result(const struct command *cmd, struct mm_opts *o, int ret, char **argv,
			 int argc, char **saved)
{
	bool traces = cmd->flags & CMD_TRACES;

	/* argv is the caller's: neither reordered nor written to. */
	for (int i = 0; i <= argc; i++)
		CHECK(argv[i] == saved[i]);

	if (ret < 0) {
		CHECK(err_count.lines == 1);
		CHECK(err_count.nfirst >= 9 && memcmp(err_count.first, "mmscope: ", 9) == 0);
		CHECK(err_count.bytes > 10);
		CHECK(out_count.bytes == 0);
		return;
	}
	if (ret == 1) {
		CHECK(err_count.bytes == 0);
		CHECK(out_count.nfirst >= 6 && memcmp(out_count.first, "Usage:", 6) == 0);
		return;
	}
	CHECK(ret == 0);
	CHECK(err_count.bytes == 0 && out_count.bytes == 0);
	CHECK(o->cmd == cmd);
	CHECK(o->npids >= 0 && o->npids <= MAX_TARGET_PIDS);
	for (int i = 0; i < o->npids; i++)
		CHECK(o->pids[i] > 0);
	CHECK(o->tid >= 0);
	CHECK(o->top >= 1 && o->top <= 100000);
	CHECK(o->method >= FORCE_NONE && o->method <= FORCE_PERF);
	CHECK(isfinite(o->duration) && o->duration >= 0);
	CHECK(isfinite(o->interval) && o->interval >= 0);
	if (o->duration > 0 && o->interval > 0)
		CHECK(o->interval <= o->duration);
	CHECK(!(o->json && o->folded));
	CHECK(!(o->folded && o->interval > 0));
	if (o->folded)
		CHECK(cmd->flags & CMD_STACKS);
	if (o->svg) {
		CHECK(cmd->flags & CMD_STACKS);
		CHECK(points_into(o->svg, argv, argc) && o->svg[0]);
		CHECK(!o->output || strcmp(o->svg, o->output) != 0);
	}
	if (o->weight_latency)
		CHECK((cmd->flags & CMD_LATENCY) && (o->folded || o->svg));
	if (o->sample_every)
		CHECK((cmd->flags & CMD_STACKS) && opts_stacks(o) &&
		      o->sample_every <= SAMPLE_EVERY_MAX);
	if (o->no_children)
		CHECK(o->npids > 0 || o->argv);
	if (cmd->flags & CMD_SERVE) {
		/* serve answers scrapes: none of the printing options, a parsed address */
		CHECK(!o->json && !o->output && !o->folded && !o->svg && o->interval == 0);
		CHECK(!o->timestamp && o->top == 10);
		CHECK(o->listen && o->listen_addr_len > 0);
		CHECK(o->max_series > 0);
		CHECK(o->labels || o->max_series == SERVE_DEFAULT_MAX_SERIES);
	} else {
		CHECK(!o->listen && !o->allow_remote && !o->labels && !o->max_series);
	}
	if (o->cpu_filter) {
		bool any = false;

		for (int c = 0; c < MMSCOPE_MAX_CPUS; c++) {
			bool set = o->cpu_mask[c / 64] & (1ULL << (c % 64));

			CHECK(!set || c < ncpus);
			any |= set;
		}
		CHECK(any);
	}
	if (o->output)
		CHECK(points_into(o->output, argv, argc));
	if (o->cgroup)
		CHECK(points_into(o->cgroup, argv, argc));
	if (o->btf)
		CHECK(points_into(o->btf, argv, argc));
	if (o->argv) {
		CHECK(traces);
		CHECK(o->argv > argv && o->argv < argv + argc && o->argv[0]);
		CHECK(strcmp(o->argv[-1], "--") == 0);
		CHECK(argv[argc] == NULL);
	}
	/* The command is exactly what follows the separator; without one, every word was an
	 * option or an option's value. */
	{
		int stop;
		bool sep;

		if (ref_stop(traces, argc, argv, &stop, &sep)) {
			if (o->argv)
				CHECK(sep && o->argv == argv + stop);
			else
				CHECK(stop == argc && !sep);
		}
	}
	if (!traces) {
		CHECK(!o->npids && !o->tid && !o->cgroup && !o->cpu_filter);
		CHECK(o->duration == 0 && o->interval == 0 && !o->timestamp);
		CHECK(!o->output && !o->folded && !o->no_children && !o->argv);
		CHECK(!o->svg && !o->weight_latency && !o->sample_every);
		CHECK(o->top == 10 && o->method == FORCE_NONE);
	}
}

static void parse_one(const struct command *cmd, char **args, int nargs)
{
	char *argv[MAX_ARGS + 2], *saved[MAX_ARGS + 2];
	char *name = strdup(cmd->name);
	struct mm_opts o;
	int argc = 0;

	if (!name)
		return;
	argv[argc++] = name;
	for (int i = 0; i < nargs; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	memcpy(saved, argv, sizeof(argv[0]) * (size_t)(argc + 1));

	memset(&out_count, 0, sizeof(out_count));
	memset(&err_count, 0, sizeof(err_count));
	verbose = 0;
	reset_getopt();
	cur_cmd = cmd;
	cur_ret = opts_parse(&o, cmd, argc, argv);
	check_result(cmd, &o, cur_ret, argv, argc, saved);
	cur_cmd = NULL;
	free(name);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	real_stderr = fdopen(dup(2), "w");
	if (!real_stderr)
		abort();
	setvbuf(real_stderr, NULL, _IONBF, 0);
	stdout = counting_stream(&out_count);
	stderr = counting_stream(&err_count);
	opts_possible_cpus = fake_possible_cpus;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct command *const real[] = {&cmd_stat,	  &cmd_faults, &cmd_tlb,
						     &cmd_switch, &cmd_probes, &cmd_serve};
	char *args[MAX_ARGS];
	int nargs = 0;
	size_t pos = 0;

	if (size > 4096)
		return 0;
	/* The CPU count -C is checked against: 1, 4 or the maximum, from the first byte. */
	if (size) {
		static const int counts[] = {4, 1, MMSCOPE_MAX_CPUS, 64};

		ncpus = counts[data[0] & 3];
	}
	/* Each argument in a buffer of its own, so that reading past its end is caught. */
	while (pos < size && nargs < MAX_ARGS) {
		const uint8_t *nul = memchr(data + pos, 0, size - pos);
		size_t len = nul ? (size_t)(nul - (data + pos)) : size - pos;
		char *a = malloc(len + 1);

		if (!a)
			break;
		memcpy(a, data + pos, len);
		a[len] = '\0';
		args[nargs++] = a;
		pos += len + 1;
	}
	for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++)
		parse_one(real[i], args, nargs);
	for (size_t i = 0; i < sizeof(synth) / sizeof(synth[0]); i++)
		parse_one(&synth[i], args, nargs);
	for (int i = 0; i < nargs; i++)
		free(args[i]);
	return 0;
}
