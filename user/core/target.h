/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a run traces, checked against the kernel once: the host (no option), -C CPUs, a cgroup
 * (-c: a cgroup v2 directory, held open), processes (-p: each held by a pidfd, so that a pid
 * reused by a stranger is never taken for the process, and with their descendants unless
 * --no-children), one thread (-t: its start time, to see it end), or a command (--: started
 * by the session, core/session.c start_child()). Parsing is the options' (cmd/opts.c); the BPF
 * filters built from a target are the session's (populate_filters()).
 */
#ifndef MMSCOPE_TARGET_H
#define MMSCOPE_TARGET_H

#include <stdbool.h>
#include <sys/types.h>

#include "cmd/opts.h"

struct target {
	const struct mm_opts *opts;
	int cgroup_fd;		     /* -c: the cgroup's directory, or -1 */
	int pidfds[MAX_TARGET_PIDS]; /* -p: one per process while it lives, -1 after */
	int pids_alive;
	unsigned long long tid_start; /* -t: the thread's start time, 0 without -t */
};

/* A process as /proc showed it: the pid and its start time tell it from a later one. */
struct proc_id {
	pid_t pid;
	unsigned long long start;
};

/* Nothing held yet: target_close() is safe after it. */
void target_init(struct target *t, const struct mm_opts *opts);
/* Check each part of the target with the kernel and hold it: 0, or -1 after a one-line error
 * naming the option and what is wrong. */
int target_open(struct target *t);
void target_close(struct target *t);

/* -t: the thread has exited (or its tid now names another thread). */
bool target_thread_gone(const struct target *t);
/* -p: how many of the processes still live; gone(pid, arg) once for each found exited since
 * the last call, whose pidfd is then closed. */
int target_poll_pids(struct target *t, void (*gone)(pid_t pid, void *arg), void *arg);
/*
 * -p without --no-children: the descendants of the -p processes running now (from /proc), not
 * the -p processes themselves; *out is malloc'ed (caller frees). The number, or -errno.
 */
int target_descendants(const struct target *t, struct proc_id **out);
/* Whether p is still the process /proc showed (not exited, its pid not reused). */
bool proc_id_same(const struct proc_id *p);

#endif
