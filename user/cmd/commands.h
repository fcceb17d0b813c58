/* SPDX-License-Identifier: GPL-2.0 */
/* The subcommand table: one entry per user/cmd/cmd_*.c. */
#ifndef MMSCOPE_COMMANDS_H
#define MMSCOPE_COMMANDS_H

#include "cmd/opts.h"

extern const struct command cmd_probes;
extern const struct command cmd_stat;
extern const struct command cmd_faults;
extern const struct command cmd_tlb;
extern const struct command cmd_switch;
extern const struct command cmd_serve;

#endif
