// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/target.h"
#include "lib/util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/*
 * From /proc/ID/stat: the parent's pid (field 4) and the start time (field 22) of a process or
 * thread; 0, or -1 when it is gone or a zombie.
 */
static int proc_stat_read(pid_t id, int *ppid, unsigned long long *start)
{
	char path[64], buf[1024];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", id);
	if (read_small_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	/* The name (field 2) may hold spaces and parentheses: fields count from the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return -1;
	if (sscanf(p + 2, "%*c %d", ppid) != 1)
		return -1;
	for (int field = 2; field < 22 && p; field++) /* to the space before field 22 */
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", start) != 1)
		return -1;
	return 0;
}

static unsigned long long thread_start_time(pid_t tid)
{
	unsigned long long start;
	int ppid;

	return proc_stat_read(tid, &ppid, &start) ? 0 : start;
}

void target_init(struct target *t, const struct mm_opts *opts)
{
	memset(t, 0, sizeof(*t));
	t->opts = opts;
	t->cgroup_fd = -1;
	for (int i = 0; i < MAX_TARGET_PIDS; i++)
		t->pidfds[i] = -1;
}

int target_open(struct target *t)
{
	const struct mm_opts *o = t->opts;

	if (o->cgroup) {
		struct statfs sfs;

		t->cgroup_fd = open(o->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (t->cgroup_fd < 0 || fstatfs(t->cgroup_fd, &sfs) ||
		    sfs.f_type != CGROUP2_SUPER_MAGIC) {
			err_msg("-c %s: not a cgroup v2 directory (give a path under "
				"/sys/fs/cgroup)",
				o->cgroup);
			return -1;
		}
	}
	for (int i = 0; i < o->npids; i++) {
		t->pidfds[i] = pidfd_open_(o->pids[i]);
		if (t->pidfds[i] < 0) {
			err_msg("-p %d: %s", o->pids[i],
				errno == ESRCH ? "no such process" : strerror(errno));
			return -1;
		}
	}
	t->pids_alive = o->npids;
	if (o->tid) {
		t->tid_start = thread_start_time(o->tid);
		if (!t->tid_start) {
			err_msg("-t %d: no such thread (or it has exited)", o->tid);
			return -1;
		}
	}
	return 0;
}

void target_close(struct target *t)
{
	for (int i = 0; i < MAX_TARGET_PIDS; i++)
		if (t->pidfds[i] >= 0) {
			close(t->pidfds[i]);
			t->pidfds[i] = -1;
		}
	if (t->cgroup_fd >= 0)
		close(t->cgroup_fd);
	t->cgroup_fd = -1;
}

bool target_thread_gone(const struct target *t)
{
	return t->tid_start && thread_start_time(t->opts->tid) != t->tid_start;
}

int target_poll_pids(struct target *t, void (*gone)(pid_t pid, void *arg), void *arg)
{
	int alive = 0;

	for (int i = 0; i < t->opts->npids; i++) {
		struct pollfd p = {.fd = t->pidfds[i], .events = POLLIN};

		if (t->pidfds[i] < 0)
			continue;
		if (poll(&p, 1, 0) == 0) {
			alive++;
			continue;
		}
		/* It exited (possibly before the hooks were attached: a zombie's exit event came
		 * before them). Said now, before its pid can be reused by a stranger. */
		gone(t->opts->pids[i], arg);
		close(t->pidfds[i]);
		t->pidfds[i] = -1;
	}
	t->pids_alive = alive;
	return alive;
}

struct proc_node {
	int pid, ppid;
	unsigned long long start;
	int state; /* 0: not known yet; 1: a -p process or one of its descendants; 2: neither */
};

static int cmp_proc_node(const void *a, const void *b)
{
	const struct proc_node *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static struct proc_node *find_proc_node(struct proc_node *nodes, size_t n, int pid)
{
	struct proc_node key = {.pid = pid};

	if (!nodes || !n)
		return NULL;
	return bsearch(&key, nodes, n, sizeof(*nodes), cmp_proc_node);
}

/* Up from p to the first process whose state is known (a -p process is 1, the top 2), then
 * that state down the path walked. */
static int proc_node_state(struct proc_node *nodes, size_t n, struct proc_node *p)
{
	struct proc_node *q = p;
	int state;

	for (size_t steps = 0; q && !q->state && steps < n; steps++)
		q = find_proc_node(nodes, n, q->ppid);
	state = q && q->state ? q->state : 2;
	for (q = p; q && !q->state;) {
		q->state = state;
		q = find_proc_node(nodes, n, q->ppid);
	}
	return state;
}

/* Every process in /proc with its parent and start time, sorted by pid: the number, or
 * -errno. */
static int proc_nodes_read(struct proc_node **out)
{
	struct proc_node *nodes = NULL, *grown;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct proc_node pn = {0};
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || proc_stat_read((pid_t)pid, &pn.ppid, &pn.start))
			continue;
		pn.pid = (int)pid;
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			grown = realloc(nodes, cap * sizeof(*nodes));
			if (!grown) {
				free(nodes);
				closedir(d);
				return -ENOMEM;
			}
			nodes = grown;
		}
		nodes[n++] = pn;
	}
	closedir(d);
	if (n)
		qsort(nodes, n, sizeof(*nodes), cmp_proc_node);
	*out = nodes;
	return (int)n;
}

int target_descendants(const struct target *t, struct proc_id **out)
{
	const struct mm_opts *o = t->opts;
	struct proc_node *nodes = NULL;
	struct proc_id *ids;
	int n, found = 0;

	*out = NULL;
	if (!o->npids || o->no_children)
		return 0;
	n = proc_nodes_read(&nodes);
	if (n <= 0 || !nodes) {
		free(nodes);
		return n < 0 ? n : 0;
	}
	for (int k = 0; k < o->npids; k++) {
		struct proc_node *root = find_proc_node(nodes, (size_t)n, o->pids[k]);

		if (root)
			root->state = 1;
	}
	ids = malloc((size_t)n * sizeof(*ids));
	if (!ids) {
		free(nodes);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		bool listed = false;

		for (int k = 0; k < o->npids; k++)
			listed |= nodes[i].pid == o->pids[k];
		if (listed || proc_node_state(nodes, (size_t)n, &nodes[i]) != 1)
			continue;
		ids[found++] = (struct proc_id){nodes[i].pid, nodes[i].start};
	}
	free(nodes);
	*out = ids;
	return found;
}

bool proc_id_same(const struct proc_id *p)
{
	unsigned long long start;
	int ppid;

	return !proc_stat_read(p->pid, &ppid, &start) && start == p->start;
}
