// SPDX-License-Identifier: GPL-2.0
/*
 * mmscope: where MMU work goes. One binary, subcommands dispatched from one table
 * (perf/bpftool style); each subcommand is a user/cmd/cmd_*.c file.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/commands.h"
#include "lib/util.h"

static const struct command *const commands[] = {&cmd_stat,   &cmd_faults, &cmd_tlb,
						 &cmd_switch, &cmd_serve,  &cmd_probes};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: mmscope [--version] [--help] COMMAND [OPTIONS] [-- COMMAND ARGS]\n\n"
		"Trace the costs of the memory-management unit: page faults, TLB invalidations,\n"
		"and the context switches that change address spaces.\n\nCommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const char *nl = strchr(commands[i]->summary, '\n');
		int len = nl ? (int)(nl - commands[i]->summary) : (int)strlen(commands[i]->summary);

		fprintf(f, "  %-8s %.*s\n", commands[i]->name, len, commands[i]->summary);
	}
	fprintf(f, "\nSee 'mmscope COMMAND --help' for a command's options and examples.\n");
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	struct mm_opts opts;
	int ret;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("mmscope %s\n", MMSCOPE_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "help") == 0) {
		if (argc < 3) {
			usage(stdout);
			return 0;
		}
		cmd = find_command(argv[2]);
		if (!cmd) {
			err_msg("no command '%s'; see 'mmscope --help'", argv[2]);
			return 2;
		}
		opts_usage(cmd, stdout);
		return 0;
	}
	cmd = find_command(argv[1]);
	if (!cmd) {
		err_msg("'%s' is not a mmscope command; see 'mmscope --help'", argv[1]);
		return 2;
	}
	ret = opts_parse(&opts, cmd, argc - 1, argv + 1);
	if (ret > 0)
		return 0;
	if (ret < 0)
		return 2;
	return cmd->run(&opts);
}
