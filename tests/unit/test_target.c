// SPDX-License-Identifier: GPL-2.0
/*
 * What a run traces (core/target.c), against the kernel's own view: a cgroup v2 directory or
 * not (statfs), processes by pidfd (a child this test forks and reaps), a thread by its start
 * time, and the descendants of a -p process read from /proc (a grandchild this test makes).
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "core/target.h"

static struct mm_opts opts_none(void)
{
	struct mm_opts o = {0};

	return o;
}

static void cgroup_must_be_v2_directory(void)
{
	struct mm_opts o = opts_none();
	struct target t;
	struct statfs sfs;

	o.cgroup = "/tmp";
	target_init(&t, &o);
	EXPECT(target_open(&t) == -1); /* a directory, not a cgroup */
	target_close(&t);
	o.cgroup = "/nonexistent-cgroup";
	target_init(&t, &o);
	EXPECT(target_open(&t) == -1);
	target_close(&t);
	/* The root of the cgroup v2 hierarchy, where this host mounts one there. */
	if (statfs("/sys/fs/cgroup", &sfs) == 0 && sfs.f_type == 0x63677270) {
		o.cgroup = "/sys/fs/cgroup";
		target_init(&t, &o);
		EXPECT(target_open(&t) == 0 && t.cgroup_fd >= 0);
		target_close(&t);
		EXPECT(t.cgroup_fd == -1);
	}
}

struct gone_seen {
	pid_t want;
	int calls;
};

static void gone(pid_t pid, void *arg)
{
	struct gone_seen *g = arg;

	EXPECT(pid == g->want);
	g->calls++;
}

static void pids_are_held_and_seen_to_exit(void)
{
	struct mm_opts o = opts_none();
	struct gone_seen seen = {0};
	int go[2];
	struct target t;
	pid_t child;

	EXPECT(pipe(go) == 0);
	child = fork();
	if (child == 0) {
		char c;

		close(go[1]);
		(void)!read(go[0], &c, 1); /* until the parent closes its end */
		_exit(0);
	}
	close(go[0]);
	seen.want = child;
	o.pids[0] = child;
	o.pids[1] = getpid();
	o.npids = 2;
	target_init(&t, &o);
	EXPECT(target_open(&t) == 0);
	EXPECT_EQ_U64(t.pids_alive, 2);

	EXPECT_EQ_U64(target_poll_pids(&t, gone, &seen), 2);
	EXPECT_EQ_U64(seen.calls, 0);
	close(go[1]);
	waitpid(child, NULL, 0);
	EXPECT_EQ_U64(target_poll_pids(&t, gone, &seen), 1);
	EXPECT_EQ_U64(seen.calls, 1);
	EXPECT(t.pidfds[0] == -1 && t.pidfds[1] >= 0);
	EXPECT_EQ_U64(target_poll_pids(&t, gone, &seen), 1); /* said once */
	EXPECT_EQ_U64(seen.calls, 1);
	target_close(&t);

	/* The child reaped: its pid names no process now (or, rarely, a stranger's). */
	o.pids[0] = child;
	o.npids = 1;
	target_init(&t, &o);
	if (kill(child, 0) != 0)
		EXPECT(target_open(&t) == -1);
	target_close(&t);
}

static void thread_by_start_time(void)
{
	struct mm_opts o = opts_none();
	struct target t;

	o.tid = getpid();
	target_init(&t, &o);
	EXPECT(target_open(&t) == 0 && t.tid_start > 0);
	EXPECT(!target_thread_gone(&t));
	t.tid_start++; /* a thread that started later under the same tid: another thread */
	EXPECT(target_thread_gone(&t));
	target_close(&t);
}

/* -p CHILD: the grandchild running now is a descendant; the child itself is not listed. */
static void descendants_from_proc(void)
{
	struct mm_opts o = opts_none();
	int ready[2], go[2];
	struct proc_id *ids = NULL, *none = NULL;
	pid_t child, grandchild = 0;
	struct target t;
	int n;

	EXPECT(pipe(ready) == 0 && pipe(go) == 0);
	child = fork();
	if (child == 0) {
		pid_t g = fork();
		char c;

		if (g == 0) {
			close(go[1]);
			(void)!read(go[0], &c, 1);
			_exit(0);
		}
		(void)!write(ready[1], &g, sizeof(g));
		close(go[1]);
		(void)!read(go[0], &c, 1);
		waitpid(g, NULL, 0);
		_exit(0);
	}
	close(go[0]);
	EXPECT(read(ready[0], &grandchild, sizeof(grandchild)) == sizeof(grandchild));
	o.pids[0] = child;
	o.npids = 1;
	target_init(&t, &o);
	EXPECT(target_open(&t) == 0);
	n = target_descendants(&t, &ids);
	EXPECT_EQ_U64(n, 1);
	if (n == 1) {
		EXPECT(ids[0].pid == grandchild);
		EXPECT(proc_id_same(&ids[0]));
	}
	o.no_children = true; /* --no-children: none */
	EXPECT_EQ_U64(target_descendants(&t, &none), 0);
	EXPECT(none == NULL);
	o.no_children = false;
	close(go[1]);
	waitpid(child, NULL, 0);
	if (n == 1)
		EXPECT(!proc_id_same(&ids[0])); /* exited (and reaped by the child) */
	free(ids);
	target_close(&t);
	close(ready[0]);
	close(ready[1]);
}

TEST_MAIN(T(cgroup_must_be_v2_directory), T(pids_are_held_and_seen_to_exit),
	  T(thread_by_start_time), T(descendants_from_proc))
