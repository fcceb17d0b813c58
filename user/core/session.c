// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <linux/perf_event.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/btf.h"
#include "core/btfcheck.h"
#include "core/kcaps.h"
#include "core/unwind.h"
#include "cfi/cfi_cache.h"
#include "core/session.h"
#include "core/target.h"
#include "core/faults_avail.h"
#include "core/mmap_log.h"
#include "core/mmap_settle.h"
#include "out/metrics.h"
#include "mmscope.skel.h"
#include "mmscope_nocb.skel.h"

_Static_assert((int)FORCE_FENTRY == (int)HM_FENTRY && (int)FORCE_KPROBE == (int)HM_KPROBE &&
		       (int)FORCE_TP_BTF == (int)HM_TP_BTF && (int)FORCE_RAW_TP == (int)HM_RAW_TP &&
		       (int)FORCE_TRACEPOINT == (int)HM_TRACEPOINT &&
		       (int)FORCE_PERF == (int)HM_PERF_SW,
	       "--method values follow enum hook_method");

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t signals_seen;
/* The -o temporary file, removed by a second Ctrl-C: no half-written output is left. */
static const char *volatile signal_tmp_path;
static const char *volatile signal_svg_tmp_path;   /* --svg's */
static const char *volatile signal_pprof_tmp_path; /* --pprof's */

static void on_stop_signal(int sig)
{
	(void)sig;
	if (++signals_seen > 1) {
		/* A second Ctrl-C: now. The kernel frees every BPF object we hold. */
		if (signal_tmp_path)
			unlink(signal_tmp_path);
		if (signal_svg_tmp_path)
			unlink(signal_svg_tmp_path);
		if (signal_pprof_tmp_path)
			unlink(signal_pprof_tmp_path);
		_exit(130);
	}
	stop_requested = 1;
}

/*
 * Hold Ctrl-C while an output file is committed (written out, synced, renamed into place):
 * a second one in the middle would exit with the temporary file left behind (its path is
 * freed by the commit). It takes effect right after, with the file complete.
 */
static void block_stop_signals(sigset_t *saved)
{
	sigset_t stop;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, saved);
}

static void install_signals(void)
{
	struct sigaction sa = {0};

	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL); /* EPIPE on write instead: ends quietly */
}

/* ---- the traced command: forked first, held until the hooks are attached ---- */

static int start_child(struct session *s)
{
	int go[2], errp[2];

	if (pipe2(go, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
		err_msg("pipe: %s", strerror(errno));
		return -1;
	}
	s->child = fork();
	if (s->child < 0) {
		err_msg("fork: %s", strerror(errno));
		return -1;
	}
	if (s->child == 0) {
		char c;
		int e;

		close(go[1]);
		close(errp[0]);
		signal(SIGPIPE, SIG_DFL);
		/* Wait until mmscope is attached (or gone: EOF, then do not run at all). */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(s->opts->argv[0], s->opts->argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	s->child_go_fd = go[1];
	s->child_err_fd = errp[0];
	return 0;
}

/* Let the child exec; report a command that cannot be executed. */
static int release_child(struct session *s)
{
	ssize_t n;
	int e = 0;

	if (write(s->child_go_fd, "g", 1) != 1) {
		err_msg("cannot start the command: %s", strerror(errno));
		return -1;
	}
	close(s->child_go_fd);
	s->child_go_fd = -1;
	/* The error pipe closes on a successful exec (O_CLOEXEC) or carries execvp's errno. */
	n = read(s->child_err_fd, &e, sizeof(e));
	close(s->child_err_fd);
	s->child_err_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		err_msg("cannot execute '%s': %s", s->opts->argv[0], strerror(e));
		waitpid(s->child, NULL, 0);
		s->child = 0;
		return -1;
	}
	return 0;
}

/* ---- hooks ---- */

static int add_link(struct session *s, struct bpf_link *l)
{
	if (s->nlinks == s->caplinks) {
		int cap = s->caplinks ? s->caplinks * 2 : 64;
		struct bpf_link **n = realloc(s->links, (size_t)cap * sizeof(*n));

		if (!n) {
			bpf_link__destroy(l);
			return -ENOMEM;
		}
		s->links = n;
		s->caplinks = cap;
	}
	s->links[s->nlinks++] = l;
	return 0;
}

static int perf_sw_config(const char *name)
{
	if (strcmp(name, "page-faults") == 0)
		return PERF_COUNT_SW_PAGE_FAULTS;
	if (strcmp(name, "minor-faults") == 0)
		return PERF_COUNT_SW_PAGE_FAULTS_MIN;
	if (strcmp(name, "major-faults") == 0)
		return PERF_COUNT_SW_PAGE_FAULTS_MAJ;
	return -1;
}

/* CPUs to open per-CPU perf events on: online ones, within -C. */
static int online_cpus(struct session *s, uint64_t *mask)
{
	char buf[4096];

	memset(mask, 0, MMSCOPE_MAX_CPUS / 8);
	if (read_small_file("/sys/devices/system/cpu/online", buf, sizeof(buf)) <= 0)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	if (parse_cpu_list(buf, mask, MMSCOPE_MAX_CPUS))
		return -1;
	if (s->opts->cpu_filter)
		for (int i = 0; i < MMSCOPE_MAX_CPUS / 64; i++)
			mask[i] &= s->opts->cpu_mask[i];
	return 0;
}

static int attach_perf_sw(struct session *s, struct bpf_program *prog, const char *event)
{
	uint64_t mask[MMSCOPE_MAX_CPUS / 64];
	int cfg = perf_sw_config(event);

	if (cfg < 0 || online_cpus(s, mask))
		return -EINVAL;
	for (int cpu = 0; cpu < MMSCOPE_MAX_CPUS; cpu++) {
		struct perf_event_attr attr = {0};
		struct bpf_link *l;
		int fd;

		if (!(mask[cpu / 64] & (1ULL << (cpu % 64))))
			continue;
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = (unsigned int)cfg;
		attr.sample_period = 1; /* every event runs the program */
		fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			return -errno;
		l = bpf_program__attach_perf_event(prog, fd);
		if (!l) {
			int e = -errno;

			close(fd);
			return e;
		}
		/* The link owns the perf event fd now. */
		if (add_link(s, l))
			return -ENOMEM;
	}
	return 0;
}

static int add_counter(struct session *s, int fd, int cpu, int counter, bool self)
{
	if (s->ncounters == s->capcounters) {
		int cap = s->capcounters ? 2 * s->capcounters : 16;
		struct perf_counter *c = realloc(s->counters, (size_t)cap * sizeof(*c));

		if (!c) {
			close(fd);
			return -ENOMEM;
		}
		s->counters = c;
		s->capcounters = cap;
	}
	s->counters[s->ncounters++] = (struct perf_counter){fd, cpu, counter, self};
	return 0;
}

/* One counting event on task tid (and, inherited, on the threads and children it makes). */
static int count_task(struct session *s, struct perf_event_attr *attr, pid_t tid, int counter)
{
	int fd = (int)syscall(SYS_perf_event_open, attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return -errno;
	return add_counter(s, fd, -1, counter, false);
}

/*
 * HM_PERF_COUNT: the kernel counts the event in the run's scope, no program runs. The scope
 * is the BPF filter's (perf_count_scope() admits only the filters this can express):
 * the command with its children (inherit), the -p processes (each thread's event, inherited
 * by the threads and children it makes: a thread a target starts while its threads are being
 * listed may be missed, as with perf stat -p), one thread (-t), or per CPU for the host, the
 * -C CPUs or a cgroup and its descendants (a cgroup event).
 */
static int open_counting(struct session *s, const char *event)
{
	struct perf_event_attr attr = {0};
	int cfg = perf_sw_config(event);
	int counter = cfg == PERF_COUNT_SW_PAGE_FAULTS_MAJ ? CNT_FAULT_MAJOR : CNT_FAULT_MINOR;
	uint64_t mask[MMSCOPE_MAX_CPUS / 64];
	int err;

	if (cfg != PERF_COUNT_SW_PAGE_FAULTS_MIN && cfg != PERF_COUNT_SW_PAGE_FAULTS_MAJ)
		return -EINVAL;
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = (unsigned int)cfg;
	if (s->opts->tid)
		return count_task(s, &attr, s->opts->tid, counter);
	if (s->child > 0 || s->opts->npids) {
		attr.inherit = 1;
		/* --no-children: the threads, not the child processes (Linux 5.13, 2b26f0aa0049) */
		attr.inherit_thread = s->opts->no_children;
		if (s->child > 0)
			return count_task(s, &attr, s->child, counter);
		for (int i = 0; i < s->opts->npids; i++) {
			char path[64];
			struct dirent *d;
			DIR *dir;

			snprintf(path, sizeof(path), "/proc/%d/task", s->opts->pids[i]);
			dir = opendir(path);
			if (!dir)
				return -errno;
			err = 0;
			while (!err && (d = readdir(dir))) {
				pid_t tid = (pid_t)atoi(d->d_name);

				if (tid <= 0)
					continue;
				err = count_task(s, &attr, tid, counter);
				if (err == -ESRCH) /* the thread exited meanwhile */
					err = 0;
			}
			closedir(dir);
			if (err)
				return err;
		}
		return 0;
	}
	if (online_cpus(s, mask))
		return -EINVAL;
	for (int cpu = 0; cpu < MMSCOPE_MAX_CPUS; cpu++) {
		int fd;

		if (!(mask[cpu / 64] & (1ULL << (cpu % 64))))
			continue;
		if (s->opts->cgroup)
			fd = (int)syscall(SYS_perf_event_open, &attr, s->target.cgroup_fd, cpu, -1,
					  PERF_FLAG_FD_CLOEXEC | PERF_FLAG_PID_CGROUP);
		else
			fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1,
					  PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			return -errno;
		err = add_counter(s, fd, cpu, counter, false);
		if (err)
			return err;
		/*
		 * mmscope's own faults on this CPU, its threads' included, opened after the CPU's
		 * counter and read before it (session_read_stats()): at most what that one saw
		 * of them. The programs leave mmscope out by self_tgid; a count with no program
		 * does it so. In a cgroup it is only if it runs there: not taken out.
		 */
		if (s->opts->cgroup)
			continue;
		attr.inherit = 1;
		fd = (int)syscall(SYS_perf_event_open, &attr, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		attr.inherit = 0;
		if (fd < 0)
			return -errno;
		err = add_counter(s, fd, cpu, counter, true);
		if (err)
			return err;
	}
	return 0;
}

/*
 * A thread's start time (field 22 of /proc/TID/stat, clock ticks since boot), which with its
 * TID names it: a later thread given the same TID is not taken for it. 0 once it has exited
 * (gone, or a zombie leader waiting for its group).
 */
/* Whether kernel-counted events can stand in for programs in this run (open_counting()). */
static void perf_count_scope(struct session *s)
{
	const struct mm_opts *o = s->opts;
	bool task = o->tid || o->npids || s->child > 0;
	int scopes = !!o->tid + (o->npids || s->child > 0) + !!o->cgroup;

	s->caps.perf_count_ok = false;
	if (!s->cfg.count_only)
		s->caps.perf_count_why = "counting runs only (mmscope stat): latency and "
					 "attribution need a program";
	else if (scopes > 1)
		s->caps.perf_count_why = "two target filters at once: a counting event has one "
					 "scope";
	else if (o->cpu_filter && task)
		s->caps.perf_count_why = "-C with a process or thread target: a task's counting "
					 "event counts on every CPU";
	else
		s->caps.perf_count_ok = true;
}

/* One program on each function of a list that this kernel has, cookie = its index. */
static int attach_kprobe_list(struct session *s, struct bpf_program *prog, const char *list)
{
	char name[128];
	int attached = 0;

	for (int i = 0; i < TLB_FN_SLOTS && list_item(list, i, name, sizeof(name)); i++) {
		LIBBPF_OPTS(bpf_kprobe_opts, ko, .bpf_cookie = (__u64)i);
		struct bpf_link *l;

		libbpf_quiet = true;
		l = bpf_program__attach_kprobe_opts(prog, name, &ko);
		libbpf_quiet = false;
		if (!l) {
			verbose_msg("kprobe %s: %s (skipped)", name, strerror(errno));
			continue;
		}
		if (add_link(s, l))
			return -ENOMEM;
		s->fn_attached |= 1u << i;
		attached++;
	}
	return attached ? 0 : -ENOENT;
}

static int attach_point(struct session *s, const struct hook_candidate *c,
			const struct hook_point *p)
{
	struct bpf_program *prog;
	struct bpf_link *l;

	if (c->method == HM_PMU)
		return 0; /* counted by the subcommand with perf_event_open, no program */
	if (c->method == HM_PERF_COUNT)
		return open_counting(s, p->target);
	prog = hook_prog(s->skel, p);
	if (!prog)
		return -ENOENT;
	if (c->method == HM_PERF_SW)
		return attach_perf_sw(s, prog, p->target);
	if (c->method == HM_KPROBE && strchr(p->target, ','))
		return attach_kprobe_list(s, prog, p->target);
	l = bpf_program__attach(prog);
	if (!l)
		return -errno;
	return add_link(s, l);
}

/*
 * The k-th event to attach. Process tracking (fork, exit, exec) comes first: with -p and
 * children followed, a child forked after the counting hooks were attached but before the
 * fork hook would never enter the tracked map, and all its events would be lost, not just
 * those of the few microseconds between two attaches.
 */
static int attach_order(int k)
{
	/* A switch's CR3 load (bpf/switch.bpf.c) is matched to the switch classified just
	 * before it on its CPU: its hook goes first, so that no switch is counted without it
	 * (see detach_links()). */
	static const enum mm_event_id first[] = {EV_TASK_FORK, EV_TASK_EXIT, EV_TASK_EXEC,
						 EV_TASK_FREE, EV_SWITCH_FLUSH};
	const int nfirst = (int)(sizeof(first) / sizeof(first[0]));
	int e = 0;

	if (k < nfirst)
		return first[k];
	/* Then every other event in its catalog order. */
	for (k -= nfirst;; e++) {
		bool listed = false;

		for (int i = 0; i < nfirst; i++)
			listed |= e == (int)first[i];
		if (!listed && k-- == 0)
			return e;
	}
}

/* Wait for every CPU to leave the tracepoint probes it is running: an RCU grace period. */
static void grace_period(void)
{
	/* MEMBARRIER_CMD_GLOBAL is synchronize_rcu() (refused on nohz_full kernels). */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		usleep(20000);
}

/*
 * Detach the hooks, in the order they were attached, but the switch CR3-load hook last, a
 * grace period after the switch hook: a program still running for a switch when its hook
 * goes (unregistering a tracepoint probe does not wait for it) must still find the hook of
 * that switch's CR3 load (docs/reliability.md, B18).
 */
static void detach_links(struct session *s)
{
	for (int i = 0; i < s->nlinks; i++)
		if (i < s->flush_from || i >= s->flush_to)
			bpf_link__destroy(s->links[i]);
	if (s->flush_from < s->flush_to) {
		grace_period();
		for (int i = s->flush_from; i < s->flush_to; i++)
			bpf_link__destroy(s->links[i]);
	}
	s->nlinks = 0;
	s->flush_from = s->flush_to = 0;
}

/* Whether the run resolves exec'ed images from the kernel's mmap records (see session_open). */
static bool mmap_log_wanted(const struct session *s)
{
	return s->cfg.stacks || s->cfg.tlb_stacks ||
	       (s->cfg.locations && !s->skel->rodata->lat_from_calls);
}

/*
 * The per-process table's remainder row ([other], bpf/state.bpf.h proc_other_row()), where
 * the rows are read at the end (faults): what has no row of its own counts there. 0 or -errno.
 */
static int add_other_row(struct session *s)
{
	struct proc_faults zero = {0};
	__u32 key = PROC_OTHER_TGID;

	if (!s->cfg.procs || s->cfg.procs_live)
		return 0;
	memcpy(zero.comm, "[other]", sizeof("[other]"));
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.procs), &key, &zero, BPF_NOEXIST))
		return -errno;
	return 0;
}

/*
 * The task iterators, which bpf/state.bpf.c builds where it keeps open faults in task storage
 * (MMSCOPE_TASK_STORAGE in bpf/compat.bpf.h: not on powerpc).
 */
static struct bpf_program *open_faults_iter(struct session *s)
{
#if defined(__powerpc64__)
	(void)s;
	return NULL;
#else
	return s->skel->progs.open_faults_iter;
#endif
}

static struct bpf_program *seed_images_iter(struct session *s)
{
#if defined(__powerpc64__)
	(void)s;
	return NULL;
#else
	return s->skel->progs.seed_images_iter;
#endif
}

/* Keep the chosen candidates' programs, drop every other one before load. */
static void set_autoload(struct session *s)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, s->skel->obj) bpf_program__set_autoload(prog, false);
	/* Where open faults are in task storage, the end of a run walks them with this. */
	prog = open_faults_iter(s);
	if (prog && !s->cfg.count_only && (s->cfg.events & (1u << EV_FAULT_DONE)) &&
	    s->caps.feat[BF_TASK_STORAGE])
		bpf_program__set_autoload(prog, true);
	/* Where mmap records may name the images (mmap_log_wanted()), the running ones too. */
	prog = seed_images_iter(s);
	if (prog && (s->cfg.stacks || s->cfg.tlb_stacks || s->cfg.locations))
		bpf_program__set_autoload(prog, true);
	for (int e = 0; e < EV_NR; e++) {
		const struct hook_candidate *c = selection_chosen(&s->sel, (enum mm_event_id)e);

		for (int i = 0; c && i < HOOK_MAX_POINTS && c->points[i].prog; i++) {
			/* A member of a group that this kernel does not have. */
			if (s->sel.events[e].results[s->sel.events[e].chosen].missing & (1u << i))
				continue;
			prog = hook_prog(s->skel, &c->points[i]);
			if (prog)
				bpf_program__set_autoload(prog, true);
		}
	}
}

static void configure(struct session *s)
{
	struct mmscope *sk = s->skel;
	struct mm_opts *o = s->opts;
	const struct hook_candidate *done = selection_chosen(&s->sel, EV_FAULT_DONE);

	sk->rodata->filter_cpu = o->cpu_filter;
	memcpy((void *)sk->rodata->cpu_mask, o->cpu_mask, sizeof(o->cpu_mask));
	sk->rodata->targ_tid = (__u32)o->tid;
	sk->rodata->filter_cgroup = o->cgroup != NULL;
	sk->rodata->filter_tgid = o->npids > 0 || s->child > 0;
	sk->rodata->follow_children = !o->no_children;
	sk->rodata->self_tgid = (__u32)getpid();
	sk->rodata->collect_procs = s->cfg.procs;
	sk->rodata->procs_pending = !s->cfg.procs_live;
	sk->rodata->collect_locations = s->cfg.locations;
	sk->rodata->collect_files = s->cfg.files && !s->cfg.count_only;
	sk->rodata->collect_stacks = s->cfg.stacks;
	sk->rodata->collect_tlb_stacks = s->cfg.tlb_stacks;
	sk->rodata->collect_tlb_detail = s->cfg.tlb_detail;
	sk->rodata->collect_switch_procs = s->cfg.switch_procs;
	sk->rodata->track_mm_cpus = s->cfg.track_mm_cpus;
	sk->rodata->count_only = s->cfg.count_only;
	sk->rodata->untimed_faults = s->cfg.untimed_faults;
	sk->rodata->stack_major_only = o->major_only;
	sk->rodata->stack_min_latency_ns = o->min_latency_ns;
	sk->rodata->stack_type_mask = o->type_mask;
	sk->rodata->stack_sample_every = o->sample_every;
	/* Open faults per CPU where the switch hook moves a sleeping thread's to its own entry
	 * (bpf/faults.bpf.h cpu_open_faults). */
	sk->rodata->open_fault_percpu = !s->cfg.count_only &&
					(s->cfg.events & (1u << EV_FAULT_DONE)) &&
					selection_chosen(&s->sel, EV_SWITCH) != NULL;
	sk->rodata->lat_from_calls = done && done->method != HM_PERF_SW && !s->cfg.count_only;
	sk->rodata->untrack_at_free = selection_chosen(&s->sel, EV_TASK_FREE) != NULL;
	/* powerpc's hash MMU: see perf_regs_class() */
	sk->rodata->prot_unknown = s->caps.arch == ARCH_POWERPC && s->caps.mmu == MMU_HASH;
	sk->rodata->interpreted = s->caps.jit_off;
	/* The kernel's BPF features, and the fallbacks where it lacks one (bpf/compat.bpf.h). */
	sk->rodata->has_task_btf = s->caps.feat[BF_TASK_BTF];
	sk->rodata->has_task_storage = s->caps.feat[BF_TASK_STORAGE];
	sk->rodata->has_task_pt_regs = s->caps.feat[BF_TASK_PT_REGS];
	sk->rodata->has_loop = s->caps.feat[BF_LOOP];
	sk->rodata->thread_size = s->caps.thread_size;
	if (!s->caps.feat[BF_TASK_STORAGE] &&
	    bpf_map__type(sk->maps.open_faults) == BPF_MAP_TYPE_TASK_STORAGE) {
		/* By thread ID, as bpf/faults.bpf.h declares it where there is no task storage;
		 * preallocated: before v6.1 ("bpf: Relax the requirement to use preallocated hash
		 * maps in tracing progs") a perf_event program, the fault entry on arm64 and
		 * powerpc, loads with no other hash map (arm64 5.10 refused it). */
		bpf_map__set_type(sk->maps.open_faults, BPF_MAP_TYPE_HASH);
		bpf_map__set_map_flags(sk->maps.open_faults,
				       bpf_map__map_flags(sk->maps.open_faults) &
					       ~BPF_F_NO_PREALLOC);
		bpf_map__set_max_entries(sk->maps.open_faults, 16384);
	}
	/* Maps a run does not use shrink to one entry: no memory for what is not collected. */
	if (!s->cfg.stacks && !s->cfg.tlb_stacks) {
		bpf_map__set_max_entries(sk->maps.stacks_sent, 1);
		bpf_map__set_max_entries(sk->maps.folded_cache, 1);
	}
	if (!s->cfg.locations)
		bpf_map__set_max_entries(sk->maps.location_cache, 1);
	if (!s->cfg.stacks && !s->cfg.tlb_stacks && !s->cfg.locations)
		bpf_map__set_max_entries(sk->maps.records, (__u32)sysconf(_SC_PAGESIZE));
	if (s->cfg.procs && !s->cfg.procs_live)
		/* The processes' rows, the remainder row (add_other_row()), and the rows of
		 * processes gone whose counts still pend in a CPU's slot (one a slot at most):
		 * those leave only once another process takes the slot (proc_fold_sweep()), and
		 * until then they must not take the room of --max-rows live ones (600 short
		 * processes filled --max-rows 32 that way, and a late one found no row). */
		bpf_map__set_max_entries(sk->maps.procs,
					 (__u32)o->max_rows + 1 + PROC_SLOTS * (__u32)s->ncpus);
	if (sk->rodata->collect_files)
		bpf_map__set_max_entries(sk->maps.files, (__u32)o->max_rows);
	if (!s->cfg.procs) {
		bpf_map__set_max_entries(sk->maps.procs, 1);
		bpf_map__set_max_entries(sk->maps.proc_pending, 1);
	}
	if (!sk->rodata->collect_files) {
		bpf_map__set_max_entries(sk->maps.files, 1);
		bpf_map__set_max_entries(sk->maps.file_names, 1);
	}
	if (!s->cfg.tlb_detail) {
		bpf_map__set_max_entries(sk->maps.tlb_procs, 1);
		bpf_map__set_max_entries(sk->maps.tlb_proc_pending, 1);
		bpf_map__set_max_entries(sk->maps.tlb_syscalls, 1);
	}
	if (!s->cfg.switch_procs) {
		bpf_map__set_max_entries(sk->maps.switch_procs, 1);
		bpf_map__set_max_entries(sk->maps.switch_proc_pending, 1);
	}
	if (!s->cfg.track_mm_cpus)
		bpf_map__set_max_entries(sk->maps.mm_cpus, 1);
	if (!mmap_log_wanted(s))
		bpf_map__set_max_entries(sk->maps.exec_images, 1);
	sk->rodata->unwind_dwarf = s->unwind_dwarf;
	sk->rodata->unwind_page_shift = (__u32)__builtin_ctzl((unsigned long)sysconf(_SC_PAGESIZE));
	if (s->unwind_dwarf) {
		bpf_map__set_max_entries(sk->maps.unwind_rows, s->unwind_chunks[0]);
		bpf_map__set_max_entries(sk->maps.unwind_pages, s->unwind_chunks[1]);
		bpf_map__set_max_entries(sk->maps.unwind_rules, s->unwind_chunks[2]);
	} else {
		bpf_map__set_max_entries(sk->maps.unwind_files, 1);
		bpf_map__set_max_entries(sk->maps.unwind_vmas, 1);
		bpf_map__set_max_entries(sk->maps.unwind_pcs, 1);
		bpf_map__set_max_entries(sk->maps.unwind_proc_vmas, 1);
	}
	/* Hash maps are preallocated: the ones this run's hooks never touch cost start-up time
	 * and memory for nothing. */
	if (s->cfg.count_only && bpf_map__type(sk->maps.open_faults) == BPF_MAP_TYPE_HASH)
		bpf_map__set_max_entries(sk->maps.open_faults, 1);
	if (!done || done->method == HM_PERF_SW || s->cfg.count_only)
		bpf_map__set_max_entries(sk->maps.lat_calls, 1);
	if (!selection_chosen(&s->sel, EV_TLB_SEND))
		bpf_map__set_max_entries(sk->maps.send_calls, 1);
	if (!o->npids && s->child <= 0)
		bpf_map__set_max_entries(sk->maps.tracked, 1);
	if (o->cgroup) {
		struct stat st;

		/* A cgroup v2 directory's inode number is its cgroup id (kernfs node id). */
		if (fstat(s->target.cgroup_fd, &st) == 0)
			sk->rodata->targ_cgroup_id = st.st_ino;
	}
}

/*
 * Whether user stacks are walked with DWARF tables (--unwind, bpf/unwind.bpf.h): where stacks
 * are collected, on x86_64 and arm64, with the helpers the walk needs. Else why not, in
 * s->unwind_why; -1 when --unwind dwarf asked for what cannot be.
 */
static int choose_unwind(struct session *s)
{
	const char *why = NULL;

	if (!s->cfg.stacks && !s->cfg.tlb_stacks)
		return 0;
	if (s->opts->unwind == UNWIND_FP)
		why = "--unwind fp";
	else
		why = unwind_why_not_dwarf(&s->caps);
	if (why && s->opts->unwind == UNWIND_DWARF) {
		err_msg("--unwind dwarf: %s", why);
		return -1;
	}
	s->unwind_dwarf = !why;
	snprintf(s->unwind_why, sizeof(s->unwind_why), "%s", why ? why : "");
	if (s->unwind_dwarf)
		unwind_budget(s->opts->unwind_memory_mb ? s->opts->unwind_memory_mb
							: UNWIND_MEMORY_DEFAULT_MB,
			      &s->unwind_chunks[0], &s->unwind_chunks[1], &s->unwind_chunks[2]);
	verbose_msg("user stacks: %s%s%s", s->unwind_dwarf ? "dwarf" : "frame pointers",
		    why ? ": " : "", why ? why : "");
	return 0;
}

/*
 * The DWARF tables, once the maps exist and before any hook runs: the files every dynamically
 * linked process maps (the C library, the loader), the -p targets' code, the command's binary.
 * Everything else is loaded when a walk first meets it (REC_UNWIND_FILE).
 */
static void load_unwind_tables(struct session *s, uint64_t budget_ns)
{
	struct mmscope *sk = s->skel;

	if (!s->unwind_dwarf || !s->usyms)
		return;
	s->unwind = unwind_tables_new(
		bpf_map__fd(sk->maps.unwind_files), bpf_map__fd(sk->maps.unwind_rows),
		bpf_map__fd(sk->maps.unwind_pages), bpf_map__fd(sk->maps.unwind_rules),
		s->unwind_chunks[0], s->unwind_chunks[1], s->unwind_chunks[2],
		s->opts->unwind_cache
			? (strcmp(s->opts->unwind_cache, "none") ? s->opts->unwind_cache : NULL)
			: CFI_CACHE_DIR);
	if (!s->unwind)
		return;
	unwind_tables_add_runtime(s->unwind, s->usyms);
	if (s->opts->argv)
		unwind_tables_add_command(s->unwind, s->usyms, s->opts->argv[0]);
	/* A service's hundred libraries would hold the start for seconds: what the budget does
	 * not load is loaded while the run goes on. */
	for (int i = 0; i < s->opts->npids; i++)
		unwind_tables_add_pid(s->unwind, s->opts->pids[i]);
	unwind_tables_work(s->unwind, s->usyms, budget_ns);
	verbose_msg("unwind tables: %u files, %.1f ms", unwind_tables_stats(s->unwind)->files,
		    (double)unwind_tables_stats(s->unwind)->load_ns / 1e6);
}

/*
 * The files of mmscope and of the -p targets, and the unwind tables of what runs, read once
 * the hooks are attached: tracing starts without waiting for them (up to 250 ms of table
 * loading, more for the symbols of a target with many libraries: issue 26 measured 0.4-2.5 s
 * from launch to attached with --folded). Stacks taken before a file's table is in are walked
 * by frame pointers, as for a file whose table is still loading (unwind_tables_work()).
 */
static void prepare_symbols(struct session *s)
{
	uint64_t t0 = now_ns();

	if (!s->usyms)
		return;
	usyms_add_pid(s->usyms, getpid()); /* shared libraries we map too */
	/* -p targets exec'ed before we came: their files, while they live. */
	for (int i = 0; i < s->opts->npids; i++)
		usyms_add_pid(s->usyms, s->opts->pids[i]);
	/* A held command: 250 ms before it runs. Otherwise the records pend in the ring until
	 * the run's loop reads them: one of its 20 ms slices, the rest in the loop. */
	load_unwind_tables(s, s->child > 0 ? 250000000ULL : 20000000ULL);
	verbose_msg("symbols and unwind tables prepared in %.1f ms, after attaching",
		    (double)(now_ns() - t0) / 1e6);
}

static unsigned int wanted_events(const struct session *s)
{
	unsigned int w = s->cfg.events;

	/* Exits also free the faults' per-thread entries (bpf/faults.bpf.h). */
	if (!s->cfg.count_only && (s->cfg.events & (1u << EV_FAULT_DONE)))
		w |= 1u << EV_TASK_EXIT;
	if (s->opts->npids || s->child > 0) {
		w |= 1u << EV_TASK_EXIT | 1u << EV_TASK_FREE;
		if (!s->opts->no_children)
			w |= 1u << EV_TASK_FORK;
	}
	/* exec: symbols of the new image, and the CPU's new address space for switch classes */
	/* exec: also the name of a process's fault row (bpf/faults.bpf.h proc_exec_comm()) */
	if (s->cfg.stacks || s->cfg.tlb_stacks || s->cfg.locations || s->cfg.procs ||
	    (s->cfg.events & (1u << EV_SWITCH)))
		w |= 1u << EV_TASK_EXEC;
	/* fork: a child of an image named from the mmap records is named from them too
	 * (bpf/state.bpf.c fork_image()), host-wide as well */
	if (s->cfg.stacks || s->cfg.tlb_stacks || s->cfg.locations)
		w |= 1u << EV_TASK_FORK;
	return w;
}

/*
 * -p PID means the process and its descendants: those running when the run starts are found
 * in /proc (target_descendants()), those forked later by the fork hook (unless --no-children).
 * Called before the hooks are attached, so that they count from the first event, and again
 * after, for the processes forked in between by a descendant not yet in tracked. A process that
 * exits between its /proc read and its insertion is taken out again: its pid could be a
 * stranger's next. The number added, or -errno.
 */
static int add_descendants(struct session *s)
{
	int fd = bpf_map__fd(s->skel->maps.tracked), added = 0;
	struct proc_id *ids;
	int n = target_descendants(&s->target, &ids);
	__u8 one = 1;

	if (n <= 0)
		return n;
	for (int i = 0; i < n; i++) {
		__u32 pid = (__u32)ids[i].pid;

		if (bpf_map_update_elem(fd, &pid, &one, BPF_NOEXIST))
			continue; /* tracked already (or the map is full: the fork hook counts that)
				   */
		if (!proc_id_same(&ids[i])) {
			bpf_map_delete_elem(fd, &pid);
			continue;
		}
		added++;
	}
	free(ids);
	if (added)
		/* the BPF side's cached decisions (tgid_tracked()) are stale */
		__atomic_fetch_add(&s->skel->bss->tracked_gen, 1, __ATOMIC_SEQ_CST);
	return added;
}

static int populate_filters(struct session *s)
{
	__u8 one = 1;
	int fd = bpf_map__fd(s->skel->maps.tracked);

	for (int i = 0; i < s->opts->npids; i++) {
		__u32 pid = (__u32)s->opts->pids[i];

		if (bpf_map_update_elem(fd, &pid, &one, BPF_ANY))
			return -errno;
	}
	/* With -p, the command only says how long to trace (perf stat -p PID -- sleep 5). */
	if (s->child > 0 && !s->opts->npids) {
		__u32 pid = (__u32)s->child;

		if (bpf_map_update_elem(fd, &pid, &one, BPF_ANY))
			return -errno;
	}
	if (s->opts->cgroup) {
		__u32 zero = 0;

		if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.cgroup_filter), &zero,
					&s->target.cgroup_fd, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* Queue a snapshot of tgid's mappings for time due (0: as soon as possible), once. */
static void queue_snapshot(struct session *s, int tgid, uint64_t due)
{
	for (int i = 0; i < s->nresnap; i++)
		if (s->resnap[i].tgid == tgid && s->resnap[i].due == due)
			return;
	if (s->nresnap < (int)(sizeof(s->resnap) / sizeof(s->resnap[0]))) {
		s->resnap[s->nresnap].tgid = tgid;
		s->resnap[s->nresnap].due = due;
		s->nresnap++;
	}
}

/* How long the main loop may sleep: 50 ms, less when a snapshot falls due sooner. */
static int poll_timeout_ms(const struct session *s)
{
	uint64_t now = now_ns(), first = UINT64_MAX;

	if (unwind_tables_busy(s->unwind))
		return 0;
	for (int i = 0; i < s->nresnap; i++)
		if (s->resnap[i].due < first)
			first = s->resnap[i].due;
	if (first == UINT64_MAX || first >= now + 50000000ULL)
		return 50;
	return first <= now ? 0 : (int)((first - now + 999999ULL) / 1000000ULL);
}

/*
 * A record asks for a maps snapshot of a process that may be gone in milliseconds: take it at
 * once while this poll pass's budget lasts (so that exec storms do not delay -i intervals),
 * else queue it for the next pass.
 */
static void snapshot_now(struct session *s, int tgid, uint64_t now)
{
	if (!s->pass_start)
		s->pass_start = now; /* the first record of this poll */
	if (now - s->pass_start < 20000000ULL)
		usyms_add_pid(s->usyms, tgid);
	else
		queue_snapshot(s, tgid, now);
}

/* A REC_KERNEL_STACK or REC_USER_STACK record: its stack, if whole, under its id. */
static void add_stack_record(struct session *s, const void *data, size_t size)
{
	const struct stack_header *h = data;
	bool user = h->type == REC_USER_STACK;
	size_t frame = user ? sizeof(struct user_frame) : sizeof(__u64);
	size_t depth = user ? USER_STACK_DEPTH : KERNEL_STACK_DEPTH;
	const __u32 *nr = (const __u32 *)(h + 1);

	if (size < sizeof(*h) + 8 || *nr > depth || size < sizeof(*h) + 8 + *nr * frame)
		return;
	stacks_add(user ? &s->ustacks : &s->kstacks, h->id, nr, 8 + *nr * frame);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct mm_record *r = data;
	uint64_t now;

	if (size >= sizeof(struct location_record) && r->type == REC_LOCATION) {
		locations_add(&s->locs, &((const struct location_record *)data)->slot);
		return 0;
	}
	if (size >= sizeof(struct fork_record) && r->type == REC_FORK) {
		const struct fork_record *f = data;

		mmap_log_fork(s->mlog, f->tgid, f->ns, f->parent_tgid, f->parent_ns);
		return 0;
	}
	if (size >= sizeof(struct folded_record) && r->type == REC_FOLDED) {
		const struct folded_record *f = data;

		folded_table_add(&s->folded, &f->key, &f->v);
		return 0;
	}
	if (size >= sizeof(struct stack_header) &&
	    (r->type == REC_KERNEL_STACK || r->type == REC_USER_STACK)) {
		add_stack_record(s, data, size);
		return 0;
	}
	if (size >= sizeof(struct unwind_file_record) && r->type == REC_UNWIND_FILE) {
		if (s->unwind)
			unwind_tables_request(s->unwind, data);
		return 0;
	}
	if (size < sizeof(*r) || !s->usyms)
		return 0;
	now = now_ns();
	/* REC_MAPS: the process is in the middle of the event that needed its mappings. */
	if (r->type == REC_MAPS)
		snapshot_now(s, (int)r->tgid, now);
	/* REC_EXEC of an image whose mappings come from the kernel's mmap records: nothing to
	 * read from /proc. Reading a process's maps (and registering its files) on every exec was
	 * two thirds of mmscope's own CPU time on an exec loop, and took the exec'ing process's
	 * mmap lock while its loader wanted it for writing. */
	if (r->type == REC_EXEC && r->recorded) {
		mmap_log_exec(s->mlog, r->tgid, r->ns);
		return 0;
	}
	/* REC_EXEC: its new image and loader now, its libraries once the loader has mapped
	 * them (and again later, for what it loads at run time). */
	if (r->type == REC_EXEC) {
		snapshot_now(s, (int)r->tgid, now);
		queue_snapshot(s, (int)r->tgid, now + 20000000ULL);
		queue_snapshot(s, (int)r->tgid, now + 300000000ULL);
	}
	return 0;
}

/* Take the snapshots that are due, for at most budget_ns (0: all of them, at the end). */
static void take_due_snapshots(struct session *s, uint64_t budget_ns)
{
	uint64_t start = now_ns();
	int kept = 0;

	for (int i = 0; i < s->nresnap; i++) {
		bool due = !budget_ns || s->resnap[i].due <= start;

		if (due && (!budget_ns || now_ns() - start < budget_ns))
			usyms_add_pid(s->usyms, s->resnap[i].tgid);
		else
			s->resnap[kept++] = s->resnap[i];
	}
	s->nresnap = budget_ns ? kept : 0;
}

static void detach_all(struct session *s)
{
	detach_links(s);
	for (int i = 0; i < s->ncounters; i++)
		close(s->counters[i].fd);
	s->ncounters = 0;
	ring_buffer__free(s->rb);
	s->rb = NULL;
	mmscope__destroy(s->skel);
	s->skel = NULL;
}

/*
 * Open an output file given by option opt: a regular file (or a new one) atomically (a
 * temporary file renamed over it at the end), an existing device or FIFO (/dev/stdout,
 * /dev/full, a pipe) as it is: the atomic rename would replace it with a regular file.
 */
static int open_out_file(const char *opt, const char *path, struct atomic_file *af, FILE **out,
			 bool *direct)
{
	struct stat st;
	int err;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode)) {
			err_msg("%s %s: is a directory", opt, path);
			return -1;
		}
		*out = fopen(path, "w");
		if (!*out) {
			err_msg("%s %s: %s", opt, path, strerror(errno));
			return -1;
		}
		*direct = true;
		return 0;
	}
	err = atomic_file_open(af, path);
	if (err) {
		err_msg("%s %s: cannot create the output file: %s", opt, path, strerror(-err));
		return -1;
	}
	*out = af->f;
	return 0;
}

static int open_output(struct session *s)
{
	s->out = stdout;
	if (s->opts->output) {
		if (open_out_file("-o", s->opts->output, &s->out_file, &s->out, &s->out_direct))
			return -1;
		if (!s->out_direct)
			signal_tmp_path = s->out_file.tmp_path;
	}
	if (s->opts->svg) {
		if (open_out_file("--svg", s->opts->svg, &s->svg_file, &s->svg, &s->svg_direct))
			return -1;
		if (!s->svg_direct)
			signal_svg_tmp_path = s->svg_file.tmp_path;
	}
	if (s->opts->pprof) {
		if (open_out_file("--pprof", s->opts->pprof, &s->pprof_file, &s->pprof,
				  &s->pprof_direct))
			return -1;
		if (!s->pprof_direct)
			signal_pprof_tmp_path = s->pprof_file.tmp_path;
	}
	return 0;
}

/* Finish an output file: commit it when status is 0, else remove its temporary file. */
static int close_out_file(const char *opt, const char *path, struct atomic_file *af, FILE *f,
			  bool direct, int status)
{
	if (direct) {
		bool failed = fflush(f) != 0 || ferror(f);

		if ((fclose(f) != 0 || failed) && status == 0) {
			err_msg("%s %s: %s", opt, path, strerror(errno));
			status = 1;
		}
	} else if (status == 0) {
		int err = atomic_file_commit(af);

		if (err) {
			err_msg("%s %s: %s", opt, path, strerror(-err));
			status = 1;
		}
	} else {
		atomic_file_abort(af);
	}
	return status;
}

static int check_privileges(void)
{
	/* CAP_BPF + CAP_PERFMON (or CAP_SYS_ADMIN) are needed, whatever the uid (root can run
	 * without capabilities); the kernel has the last word. */
	{
		FILE *f = fopen("/proc/self/status", "r");
		char line[256];
		unsigned long long eff = 0;

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "CapEff: %llx", &eff) == 1)
				break;
		if (f)
			fclose(f);
		/* CAP_SYS_ADMIN 21, CAP_PERFMON 38, CAP_BPF 39 */
		if (!(eff & (1ULL << 21)) && (!(eff & (1ULL << 38)) || !(eff & (1ULL << 39)))) {
			err_msg("needs root, or CAP_BPF and CAP_PERFMON (missing: %s%s%s); run "
				"with "
				"sudo",
				eff & (1ULL << 39) ? "" : "CAP_BPF",
				!(eff & (1ULL << 39)) && !(eff & (1ULL << 38)) ? ", " : "",
				eff & (1ULL << 38) ? "" : "CAP_PERFMON");
			return -1;
		}
	}
	return 0;
}

/*
 * The BTF mmscope's programs are relocated against. A kernel with its own
 * (/sys/kernel/btf/vmlinux) is described by it exactly, and its verifier and attach points use
 * that one whatever we pass: it is always preferred. Any other BTF, --btf's file or the one
 * built in for a kernel without BTF, is used only if it describes the running kernel
 * (btf_check_running(): its offsets must read what the kernel reports about this process),
 * because a BTF of another kernel loads fine and makes every number wrong. A --btf file that
 * disagrees is an error even where the kernel's own BTF would do: like perf refusing a vmlinux
 * whose build ID is not the kernel's, a wrong explicit argument is a mistake to show (a script
 * passing the wrong kernel's BTF elsewhere), not one to hide; one that agrees is replaced by
 * the kernel's own, which -v says.
 */
int btf_facts_checked = -1;

int resolve_btf(struct mm_opts *opts)
{
	bool own = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	const char *what = NULL;
	char label[192], why[256];
	struct utsname u;
	int ret, n;

	if (opts->btf) {
		struct btf *btf;
		struct stat st;

		/* A FIFO or device would block or never end: only regular files are parsed. */
		if (stat(opts->btf, &st) != 0 || !S_ISREG(st.st_mode)) {
			err_msg("--btf %s: %s", opts->btf,
				errno == ENOENT ? "no such file" : "not a regular file");
			return -1;
		}

		libbpf_quiet = true;
		btf = btf__parse(opts->btf, NULL);
		libbpf_quiet = false;
		if (!btf) {
			libbpf_strerror(errno, why, sizeof(why));
			err_msg("--btf %s: not a usable BTF file (%s); generate one with pahole "
				"--btf_encode_detached",
				opts->btf, why);
			return -1;
		}
		btf__free(btf);
		snprintf(label, sizeof(label), "--btf %s", opts->btf);
	} else {
		opts->btf = btf_auto_path(&what);
		if (!opts->btf)
			return 0;
		snprintf(label, sizeof(label), "the BTF built in for %s", what);
	}
	uname(&u);
	ret = btf_check_running(opts->btf, why, sizeof(why), &n);
	if (ret == 1) {
		err_msg("%s does not describe the running kernel %s: %s; %s", label, u.release, why,
			own ? "leave --btf out: this kernel has its own BTF "
			      "(/sys/kernel/btf/vmlinux)"
			    : "give this kernel's own (pahole --btf_encode_detached=FILE on its "
			      "vmlinux)");
		return -1;
	}
	if (ret < 0) {
		/* Not a wrong BTF, but no proof of a right one (a kernel before 5.10, no
		 * privileges): said, not hidden. */
		if (!own)
			warn_msg("cannot check that %s describes the running kernel (%s): the "
				 "numbers "
				 "are right only if it does",
				 label, why);
	} else {
		btf_facts_checked = n;
		verbose_msg("%s agrees with the running kernel %s (%d facts about this process "
			    "read through it)",
			    label, u.release, n);
	}
	if (own) {
		verbose_msg("%s: the kernel's own BTF, /sys/kernel/btf/vmlinux, is used instead",
			    label);
		opts->btf = NULL;
	} else if (what) {
		verbose_msg("no kernel BTF: using the BTF built in for %s", what);
	}
	return 0;
}

/*
 * Run the BPF task iterator prog once: fn() for each record of size bytes it writes.
 * -ENOENT when this build or kernel has no such program loaded.
 */
static int run_task_iter(struct session *s, struct bpf_program *prog, size_t size,
			 void (*fn)(struct session *, const void *))
{
	struct bpf_link *link;
	char rec[128]; /* the largest record: struct open_fault_value */
	size_t got = 0;
	ssize_t r;
	int fd, err = 0;

	if (!prog || bpf_program__fd(prog) < 0 || size > sizeof(rec))
		return -ENOENT;
	link = bpf_program__attach_iter(prog, NULL);
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		bpf_link__destroy(link);
		return err;
	}
	for (;;) {
		r = read(fd, rec + got, size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == size) {
			fn(s, rec);
			got = 0;
		}
	}
	if (r < 0)
		err = -errno;
	close(fd);
	bpf_link__destroy(link);
	return err;
}

/* Seeding running processes' images stops after this long (those left read build IDs). */
#define SEED_BUDGET_NS (100 * 1000000ULL)

static void seed_image_rec(struct session *s, const void *rec)
{
	struct exec_image im = {.tgid = ((const struct running_image *)rec)->tgid};
	__u64 mm = ((const struct running_image *)rec)->mm;
	int key;

	if (now_ns() - s->seed_start > SEED_BUDGET_NS && !s->opts->npids) {
		s->seed_skipped++;
		return;
	}
	/* Its mappings after the image's time: what it maps later is in the records. Kept
	 * under a key of its own: its pid may be another process's snapshot by the end. */
	im.ns = now_ns();
	key = -(int)(s->seeded_images + 1);
	if (usyms_add_pid_as(s->usyms, (int)im.tgid, key) ||
	    bpf_map_update_elem(bpf_map__fd(s->skel->maps.exec_images), &mm, &im, BPF_NOEXIST))
		return; /* gone, or exec'ed since (its exec recorded its image) */
	mmap_log_seed(s->mlog, im.tgid, im.ns, key);
	s->seeded_images++;
}

/*
 * The processes of the run's scope already running when the mmap records began: an image
 * each, from their /proc/PID/maps (bpf/state.bpf.c seed_images_iter), so that their faults and
 * stacks, and their children's until they exec, need no build-ID reads. Host-wide that is every
 * process (as perf record -a synthesizes every process's mappings), within SEED_BUDGET_NS; -p
 * targets all. Under -- COMMAND, the command's process too: forked from mmscope before the
 * hooks, it runs mmscope's code until its exec, and on a busy host it may first run after the
 * attach (its copy-on-write faults in libc's fork() and read() then were at locations in no
 * known image: a build-ID read each, and two [unknown] locations in one busy run).
 */
static void seed_images(struct session *s)
{
	int err;

	s->seed_start = now_ns();
	err = run_task_iter(s, seed_images_iter(s), sizeof(struct running_image), seed_image_rec);
	/* The BPF side's per-CPU image answers are stale (image_in_mmap_records()). */
	__atomic_fetch_add(&s->skel->bss->exec_gen, 1, __ATOMIC_SEQ_CST);
	if (err)
		verbose_msg("running processes: build IDs read at their faults (%s)",
			    strerror(-err));
	else
		verbose_msg("running processes: %u images from /proc/PID/maps in %.1f ms, %u left "
			    "to build IDs (over %llu ms)",
			    s->seeded_images, (double)(now_ns() - s->seed_start) / 1e6,
			    s->seed_skipped, SEED_BUDGET_NS / 1000000ULL);
}

/* mmscope's mount namespace and root, for the exec hook to tell processes that see other
 * files under the same paths (bpf/state.bpf.c sees_our_files()); left 0 (no process
 * matches) when they cannot be read. */
static void set_own_view(struct session *s)
{
	struct stat ns, root;

	if (stat("/proc/self/ns/mnt", &ns) || stat("/", &root)) {
		verbose_msg("mmap records: own mount namespace or root unknown: %s",
			    strerror(errno));
		return;
	}
	s->skel->bss->own_root_ino = root.st_ino;
	/* The kernel's dev_t: major in the top 12 bits, minor in the low 20. */
	s->skel->bss->own_root_dev = (major(root.st_dev) << 20) | minor(root.st_dev);
	s->skel->bss->own_mnt_ns = (__u32)ns.st_ino;
}

/*
 * The skeleton, with the object built without callbacks where the kernel has none
 * (bpf/compat.bpf.h MMSCOPE_CALLBACKS): the same maps, programs and variables at the same
 * places (the Makefile checks), so the mmscope skeleton drives it.
 */
static struct mmscope *skel_open(const struct bpf_object_open_opts *oo, bool nocb)
{
	struct mmscope *obj;
	int err;

	if (!nocb)
		return mmscope__open_opts(oo);
	obj = calloc(1, sizeof(*obj));
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	err = mmscope__create_skeleton(obj);
	if (err) {
		free(obj); /* create_skeleton freed its own on failure */
		errno = -err;
		return NULL;
	}
	obj->skeleton->data = (void *)mmscope_nocb__elf_bytes(&obj->skeleton->data_sz);
	err = bpf_object__open_skeleton(obj->skeleton, oo);
	if (err) {
		mmscope__destroy(obj);
		errno = -err;
		return NULL;
	}
	verbose_msg("no BPF callbacks in this kernel: the programs built without them");
	return obj;
}

/* "1234 (python3)" after prefix: a process or thread (/proc has both) and its name, control
 * bytes shown as '?'. */
static void describe_task(struct mbuf *b, const char *prefix, int id)
{
	char path[64], comm[32];
	long n;

	snprintf(path, sizeof(path), "/proc/%d/comm", id);
	n = read_small_file(path, comm, sizeof(comm));
	while (n > 0 && comm[n - 1] == '\n')
		n--;
	for (long i = 0; i < n; i++)
		if ((unsigned char)comm[i] < 0x20 || comm[i] == 0x7f)
			comm[i] = '?';
	mbuf_printf(b, "%s%d", prefix, id);
	if (n > 0)
		mbuf_printf(b, " (%.*s)", (int)n, comm);
}

/* "0-3,6": the CPUs of -C. */
static void describe_cpus(struct mbuf *b, const uint64_t *mask)
{
	const char *sep = "";

	for (int c = 0; c < MMSCOPE_MAX_CPUS; c++) {
		int last = c;

		if (!(mask[c / 64] & (1ULL << (c % 64))))
			continue;
		while (last + 1 < MMSCOPE_MAX_CPUS &&
		       mask[(last + 1) / 64] & (1ULL << ((last + 1) % 64)))
			last++;
		mbuf_printf(b, last > c ? "%s%d-%d" : "%s%d", sep, c, last);
		sep = ",";
		c = last;
	}
}

/*
 * The line that says tracing has begun, once every hook is attached, as the bcc tools print
 * it: with --json, --folded or -o nothing else on the terminal shows when to start the
 * workload. What is traced, of which target, for how long.
 */
static void announce_start(const struct session *s)
{
	const struct mm_opts *o = s->opts;
	const char *family = o->no_children ? "" : " and its descendants";
	struct mbuf b = {0};

	mbuf_printf(&b, "Tracing %s", o->cmd->traces ? o->cmd->traces : o->cmd->name);
	if (o->argv) {
		mbuf_printf(&b, " of command %s (PID %d)%s", o->argv[0], s->child, family);
	} else if (o->npids) {
		for (int i = 0; i < o->npids; i++)
			describe_task(&b, i ? ", PID " : " of PID ", o->pids[i]);
		mbuf_printf(&b, "%s",
			    o->no_children ? ""
			    : o->npids > 1 ? " and their descendants"
					   : family);
	} else if (o->tid) {
		describe_task(&b, " of TID ", o->tid);
	} else if (o->cgroup) {
		mbuf_printf(&b, " of cgroup %s and the cgroups below it", o->cgroup);
	} else {
		mbuf_printf(&b, " host-wide");
	}
	if (run_self_left_out(s->opts))
		mbuf_printf(&b, " but mmscope itself (PID %d)", (int)getpid());
	if (o->cpu_filter) {
		mbuf_printf(&b, " on CPUs ");
		describe_cpus(&b, o->cpu_mask);
	}
	if (o->duration > 0)
		mbuf_printf(&b, " for %g s", o->duration);
	mbuf_printf(&b, "%s... Hit Ctrl-C to end.\n", o->argv ? " until it exits" : "");
	if (!b.failed)
		fputs(b.p, stderr);
	mbuf_free(&b);
}

int session_open(struct session *s, struct mm_opts *opts, const struct session_config *cfg)
{
	unsigned int excluded[EV_NR] = {0};
	struct selection prev;
	int err, tries;

	uint64_t t_begin = now_ns();

	memset(s, 0, sizeof(*s));
	s->progs.stats_fd = -1;
	s->opts = opts;
	s->cfg = *cfg;
	s->child_go_fd = s->child_err_fd = -1;
	target_init(&s->target, opts);
	libbpf_set_print(libbpf_print_fn);
	install_signals();

	if (check_privileges())
		return -1;
	if (open_output(s))
		return -1;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		err_msg("cannot count CPUs: %s", strerror(-s->ncpus));
		return -1;
	}
	if (resolve_btf(opts))
		return -1;
	kcaps_init_live(&s->caps, opts->btf);
	/* What watching costs is the first thing asked: the interpreter takes several times what
	 * the JIT's code does per event. */
	if (s->caps.jit_off)
		warn_msg("the BPF JIT is off (net.core.bpf_jit_enable = 0): mmscope's programs run "
			 "in the kernel's interpreter, slower per event; sysctl "
			 "net.core.bpf_jit_enable=1 turns it on");
	/* x86 sends shootdown IPIs only to the CPUs in mm_cpumask: no broadcast is avoidable
	 * there (tlb_report_x86()), and the per-switch lookup of the mm would be wasted. */
	if (s->caps.arch == ARCH_X86)
		s->cfg.track_mm_cpus = false;
	if (!s->caps.btf) {
		err_msg("this kernel has no BTF (/sys/kernel/btf/vmlinux): give one with --btf "
			"PATH "
			"(see docs/kernels.md: kernels without BTF)");
		return -1;
	}
	if (target_open(&s->target))
		return -1;
	/* Filled by prepare_symbols(), once the hooks are attached. */
	if (cfg->stacks || cfg->tlb_stacks || cfg->locations)
		s->usyms = usyms_new();
	if (choose_unwind(s))
		return -1;
	if (opts->argv && start_child(s))
		return -1;

	perf_count_scope(s);
	/* open → select → configure → load → attach; a hook refused at attach is excluded and
	 * the next candidate tried, from a fresh object. */
	for (tries = 0; tries < 8; tries++) {
		LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = opts->btf,
			    .kernel_log_level = getenv("MMSCOPE_VERIFIER_STATS") ? 4 : 0);
		const struct hook_candidate *failed_c = NULL;
		int failed_e = -1;

		catalog_select(&s->sel, &s->caps, wanted_events(s), opts->method,
			       tries ? excluded : NULL, tries ? &prev : NULL);
		bool any = false;

		for (int e = 0; e < EV_NR; e++)
			any |= ((cfg->primary ? cfg->primary : cfg->events) & (1u << e)) &&
			       s->sel.events[e].chosen >= 0;
		if (!any) {
			err_msg("%s: none of its events can be observed on this kernel; see "
				"'mmscope "
				"probes'",
				opts->cmd->name);
			return -1;
		}
		for (int e = 0; e < EV_NR; e++) {
			if ((cfg->required & (1u << e)) && s->sel.events[e].chosen < 0) {
				err_msg("%s: cannot observe %s on this kernel; see 'mmscope "
					"probes'",
					opts->cmd->name, s->sel.events[e].ev->what);
				return -1;
			}
		}
		/* Before the command runs: a flame graph by latency needs a latency per fault. */
		if (cfg->fault_latency && s->sel.events[EV_FAULT_DONE].chosen < 0) {
			err_msg("--weight latency: no fault-completion hook%s, so faults have no "
				"latency (see 'mmscope probes'; --weight count works)",
				opts->method != FORCE_NONE ? " of the forced --method"
							   : " on this kernel");
			return -1;
		}
		/* The same for --type: the type of a fault is read by handle_mm_fault()'s hook. */
		if (opts->type_mask) {
			const struct hook_candidate *d = selection_chosen(&s->sel, EV_FAULT_DONE);

			if (!d || d->method == HM_PERF_SW || d->method == HM_PERF_COUNT) {
				err_msg("--type: fault types come from handle_mm_fault()'s "
					"arguments, "
					"and no hook on it (fentry, kprobe) is available%s (see "
					"'mmscope probes')",
					opts->method != FORCE_NONE ? " with the forced --method"
								   : " on this kernel");
				return -1;
			}
		}
		verbose_msg("[%.0f ms] hooks selected", (double)(now_ns() - t_begin) / 1e6);
		s->skel = skel_open(&oo, !s->caps.feat[BF_CALLBACKS]);
		if (!s->skel) {
			err_msg("cannot open the BPF object: %s", strerror(errno));
			return -1;
		}
		set_autoload(s);
		configure(s);
		verbose_msg("[%.0f ms] object opened", (double)(now_ns() - t_begin) / 1e6);
		/* With the DWARF walk on trial (--unwind auto), a refusal is said once, by the
		 * fallback below, not as the verifier's log on stderr (-v still shows it). */
		libbpf_quiet = s->unwind_dwarf && opts->unwind == UNWIND_AUTO && !verbose;
		err = mmscope__load(s->skel);
		libbpf_quiet = false;
		verbose_msg("[%.0f ms] programs loaded", (double)(now_ns() - t_begin) / 1e6);
		/* A verifier that refuses the DWARF walk (its instruction or complexity limits
		 * differ by kernel): frame pointers, said, unless --unwind dwarf asked for it. */
		if (err && s->unwind_dwarf && s->opts->unwind == UNWIND_AUTO) {
			snprintf(s->unwind_why, sizeof(s->unwind_why),
				 "the verifier refused the DWARF walk (%s; -v shows its log)",
				 strerror(-err));
			verbose_msg("user stacks: frame pointers: %s", s->unwind_why);
			s->unwind_dwarf = false;
			detach_all(s);
			tries--; /* not an attach failure: the same selection again */
			continue;
		}
		if (err) {
			err_msg("cannot load the BPF programs: %s (run with -v for the verifier "
				"log)",
				strerror(-err));
			return -1;
		}
		err = populate_filters(s);
		if (err >= 0)
			err = add_descendants(s);
		if (err < 0) {
			err_msg("cannot set up the target filter: %s", strerror(-err));
			return -1;
		}
		s->descendants = err;
		err = add_other_row(s);
		if (!err && s->cfg.procs && !s->cfg.procs_live && !s->gone_procs.rows)
			err = proc_fold_init(&s->gone_procs, opts->max_rows);
		if (err) {
			err_msg("cannot set up the per-process table: %s", strerror(-err));
			return -1;
		}
		/* Before the first hook: the statistics count only the runs made while on. */
		prog_stats_start(&s->progs, opts->bpf_stats);
		for (int k = 0; k < EV_NR && !failed_c; k++) {
			int e = attach_order(k);
			const struct hook_candidate *c =
				selection_chosen(&s->sel, (enum mm_event_id)e);

			if (e == EV_SWITCH_FLUSH)
				s->flush_from = s->nlinks;
			for (int i = 0; c && i < HOOK_MAX_POINTS && c->points[i].target; i++) {
				if (s->sel.events[e].results[s->sel.events[e].chosen].missing &
				    (1u << i))
					continue; /* gone from this kernel: the others count */
				err = attach_point(s, c, &c->points[i]);
				if (err) {
					struct cand_result *r =
						&s->sel.events[e].results[s->sel.events[e].chosen];

					verbose_msg("attach %s %s: %s", hook_method_name(c->method),
						    c->points[i].target, strerror(-err));
					snprintf(r->reason, sizeof(r->reason),
						 "%s: attach failed: %s", c->points[i].target,
						 strerror(-err));
					failed_c = c;
					failed_e = e;
					break;
				}
			}
			if (e == EV_SWITCH_FLUSH)
				s->flush_to = s->nlinks;
		}
		if (!failed_c)
			break;
		excluded[failed_e] |= 1u << s->sel.events[failed_e].chosen;
		prev = s->sel;
		detach_all(s);
		unwind_tables_free(s->unwind); /* the next object's maps get them again */
		s->unwind = NULL;
	}
	if (tries == 8) {
		err_msg("cannot attach the hooks (run with -v)");
		return -1;
	}
	for (int e = 0; e < EV_NR; e++) {
		const struct hook_candidate *c = selection_chosen(&s->sel, (enum mm_event_id)e);
		char where[160];

		if (!c)
			continue;
		hook_cand_describe(c, where, sizeof(where));
		verbose_msg("%s: %s %s", s->sel.events[e].ev->name, hook_method_name(c->method),
			    where);
	}
	if (cfg->stacks || cfg->tlb_stacks || cfg->locations) {
		s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.records), on_record, s, NULL);
		if (!s->rb) {
			err_msg("cannot open the ring buffer: %s", strerror(errno));
			return -1;
		}
	}
	/*
	 * User stacks, and fault locations where no handle_mm_fault() hook reads their build IDs
	 * with interrupts on: those of the images exec'ed from now on are resolved from the
	 * kernel's mmap records. Without them (before 5.12: no build IDs in the records) the
	 * build IDs are read at the events, and the records, paths only, name the files to
	 * read build IDs from when no live process maps one any more (user/sym/stacks.c).
	 */
	if (mmap_log_wanted(s) && s->usyms) {
		bool ids = s->caps.feat[BF_MMAP_BUILD_ID];
		int err = 0;

		s->mlog = mmap_log_open(bpf_map__fd(s->skel->maps.mmap_events), ids, &err);
		if (s->mlog && ids) {
			/* raw addresses settled as code while their records are held */
			s->locs.to_code = mmap_log_to_code;
			s->locs.to_code_arg = s->mlog;
			set_own_view(s);
			s->skel->bss->mmap_records_on = 1;
			seed_images(s);
		} else
			verbose_msg("mmap records: %s (build IDs read at the faults)",
				    s->mlog ? "without build IDs" : strerror(-err));
	}
	/* Forked by a descendant while the hooks were being attached: the fork hook missed it. */
	err = add_descendants(s);
	if (err > 0)
		s->descendants += err;
	if (s->descendants)
		verbose_msg("-p: %d descendants running at the start traced too", s->descendants);
	s->t_start = now_ns();
	s->wall_start = wall_time_s();
	verbose_msg("[%.0f ms] attached", (double)(s->t_start - t_begin) / 1e6);
	/* A command's tables are there before it runs, its first faults unwound with them. */
	if (s->child > 0)
		prepare_symbols(s);
	/* After the command's exec: one that cannot run is an error line alone. */
	if (s->child > 0 && release_child(s))
		return -1;
	if (!opts->quiet)
		announce_start(s);
	if (s->child <= 0)
		prepare_symbols(s);
	return 0;
}

/* A -p process exited: its pid leaves the filter before a stranger can be given it. */
static void pid_gone(pid_t tgid, void *arg)
{
	struct session *s = arg;
	__u32 pid = (__u32)tgid;

	if (bpf_map_delete_elem(bpf_map__fd(s->skel->maps.tracked), &pid) == 0)
		/* the BPF side's cached decisions (tgid_tracked()) are stale */
		__atomic_fetch_add(&s->skel->bss->tracked_gen, 1, __ATOMIC_SEQ_CST);
}

static bool targets_gone(struct session *s)
{
	/* -t: the run ends when its thread does. */
	if (target_thread_gone(&s->target))
		return true;
	if (s->child > 0 && !s->child_exited) {
		int status;
		pid_t r = waitpid(s->child, &status, WNOHANG);

		if (r == s->child) {
			s->child_exited = true;
			s->child_status = status;
		}
		if (s->child_exited)
			return true;
		return false; /* with -- the command's life is the run's */
	}
	if (s->opts->npids)
		return target_poll_pids(&s->target, pid_gone, s) == 0;
	return false;
}

/* The value layout of open_faults (bpf/faults.bpf.h), for reading it here. */
struct open_fault_value {
	__u64 ts;
	__u32 cls, tgid;
	__u32 tlb, pad;
	__u64 user_stack, kernel_stack;
	char comm[MMSCOPE_COMM_LEN];
	__u64 loc_ip;
	__u64 file_ino;
	__u32 file_dev, stacked;
};

/* One open fault found at the end: incomplete, with its class's invalidations. */
static void count_open_fault(struct session *s, const struct open_fault_value *v)
{
	unsigned int i = fault_class_index(v->cls);

	if (v->ts == 0) /* ts 0: closed */
		return;
	s->open_faults++;
	s->open_fault_tlb[i][FT_FAULTS]++;
	if (v->tlb & OF_TLB_LOCAL)
		s->open_fault_tlb[i][FT_LOCAL]++;
	if (v->tlb & OF_TLB_BROADCAST)
		s->open_fault_tlb[i][FT_BROADCAST]++;
}

/*
 * Once the hooks are detached, what the BPF per-CPU slots of map still hold (value_size bytes
 * a slot and CPU) goes to the table their ring records filled: add() for each slot of each
 * CPU.
 */
static void drain_percpu_slots(struct session *s, const struct bpf_map *map, size_t value_size,
			       const char *what, void (*add)(struct session *, const void *))
{
	unsigned char *v = calloc((size_t)s->ncpus, value_size);
	int fd = bpf_map__fd(map);

	for (__u32 i = 0; v && i < bpf_map__max_entries(map); i++) {
		if (bpf_map_lookup_elem(fd, &i, v)) {
			warn_msg("%s still held per CPU not added: %s", what, strerror(errno));
			break;
		}
		for (int c = 0; c < s->ncpus; c++)
			add(s, v + (size_t)c * value_size);
	}
	if (!v)
		warn_msg("%s still held per CPU not added: out of memory", what);
	free(v);
}

/* The value layout of cpu_open_faults (bpf/faults.bpf.h). */
struct cpu_open_fault_value {
	__u64 task;
	struct open_fault_value of;
};

static void count_cpu_open_fault(struct session *s, const void *slot)
{
	struct cpu_open_fault_value v;

	memcpy(&v, slot, sizeof(v));
	if (v.task)
		count_open_fault(s, &v.of);
}

static void count_open_fault_rec(struct session *s, const void *rec)
{
	struct open_fault_value v;

	memcpy(&v, rec, sizeof(v));
	count_open_fault(s, &v);
}

/*
 * Faults still open when the hooks are detached never complete in this run: incomplete.
 * Counted then, before a command still running is ended (its threads' task storage, where
 * the open faults are on most architectures, goes with them).
 */
static void collect_open_faults(struct session *s)
{
	int fd = bpf_map__fd(s->skel->maps.open_faults), err;
	struct open_fault_value v;
	__u32 key, next;
	void *prev = NULL;

	_Static_assert(sizeof(v) == 80, "open_fault layout");
	if (s->cfg.count_only || !(s->cfg.events & (1u << EV_FAULT_DONE)))
		return;
	/* Those of the threads running when the hooks went: in the CPUs' slots. */
	if (s->skel->rodata->open_fault_percpu)
		drain_percpu_slots(s, s->skel->maps.cpu_open_faults,
				   sizeof(struct cpu_open_fault_value), "open faults",
				   count_cpu_open_fault);
	if (bpf_map__type(s->skel->maps.open_faults) != BPF_MAP_TYPE_HASH) {
		/* In task storage: the open_faults_iter program writes each one. */
		err = run_task_iter(s, open_faults_iter(s), sizeof(struct open_fault_value),
				    count_open_fault_rec);
		if (err)
			warn_msg("faults still open at the end not counted: %s", strerror(-err));
		return;
	}
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) == 0)
			count_open_fault(s, &v);
	}
}

static void add_location_slot(struct session *s, const void *slot)
{
	locations_add(&s->locs, slot);
}

static void add_folded_slot(struct session *s, const void *data)
{
	const struct folded_slot *slot = data;

	folded_table_add(&s->folded, &slot->key, &slot->v);
}

int session_run(struct session *s, interval_fn on_interval)
{
	uint64_t deadline =
		s->opts->duration ? s->t_start + (uint64_t)(s->opts->duration * 1e9) : 0;
	uint64_t step = s->opts->interval ? (uint64_t)(s->opts->interval * 1e9) : 0;
	uint64_t next = step ? s->t_start + step : 0;
	double iv_start = s->wall_start;
	int index = 0;

	while (!stop_requested) {
		uint64_t now;
		int err;

		if (s->rb) {
			s->pass_start = 0;
			err = ring_buffer__poll(s->rb, poll_timeout_ms(s));
			/* Records submitted without a wakeup (exec records of recorded images)
			 * are read here, after a poll that timed out. */
			if (err == 0)
				err = ring_buffer__consume(s->rb);
			if (err < 0 && err != -EINTR) {
				err_msg("ring buffer: %s", strerror(-err));
				break;
			}
		} else {
			usleep(50000);
		}
		mmap_log_consume(s->mlog);
		now = now_ns();
		/* Once a second, and at once when the log nears its cap (mmap_settle.h). */
		if (now - s->last_settle >= 1000000000ULL || mmap_log_nearly_full(s->mlog)) {
			mmap_settle(s->mlog, &s->locs, &s->folded, &s->ustacks);
			s->last_settle = now;
		}
		if (step && now >= next) {
			double t1 = wall_time_s();

			on_interval(s, index++, iv_start, t1);
			iv_start = t1;
			next += step;
		}
		if (deadline && now >= deadline)
			break;
		if (targets_gone(s))
			break;
		/* Twice a second, the rows of processes gone leave the per-process table, which
		 * then keeps room for the ones to come. */
		if (s->gone_procs.rows && now - s->last_sweep >= 500000000ULL) {
			err = proc_fold_sweep(&s->gone_procs, s->skel->maps.procs,
					      s->skel->maps.proc_pending, s->ncpus);
			/* Not a failure: the table works as it did, filling up into [other]. */
			if (err)
				verbose_msg("the rows of processes gone stay in the per-process "
					    "table (lookup-and-delete: %s): once full, what has no "
					    "row counts in [other]",
					    strerror(-err));
			s->last_sweep = now;
		}
		/* Symbols after the counts: 20 ms per pass at most, so intervals stay on time. */
		if (s->nresnap)
			take_due_snapshots(s, 20000000ULL);
		/* Unwind tables: 20 ms per pass too (one file at least), so that the ring is
		 * read meanwhile. */
		if (unwind_tables_busy(s->unwind))
			unwind_tables_work(s->unwind, s->usyms, 20000000ULL);
		if (s->out_broken)
			break;
	}
	s->stopped_by_signal = stop_requested;
	/* Detach every hook before reading anything: the maps then hold one consistent
	 * snapshot (per-process rows add up to the totals), and the run's cost ends here. */
	detach_links(s);
	prog_stats_read(&s->progs, s->skel->obj);
	prog_stats_stop(&s->progs);
	collect_open_faults(s);
	if (s->rb)
		ring_buffer__consume(s->rb);
	if (s->cfg.locations)
		drain_percpu_slots(s, s->skel->maps.location_cache, sizeof(struct location_slot),
				   "fault locations", add_location_slot);
	if (s->cfg.stacks || s->cfg.tlb_stacks)
		drain_percpu_slots(s, s->skel->maps.folded_cache, sizeof(struct folded_slot),
				   "folded stacks", add_folded_slot);
	mmap_log_consume(s->mlog);
	if (mmap_log_lost(s->mlog))
		warn_msg("%llu mmap records lost: some fault locations may show [unknown]",
			 (unsigned long long)mmap_log_lost(s->mlog));
	if (mmap_log_forgotten(s->mlog))
		verbose_msg("%llu mmap records of processes gone forgotten (their locations and "
			    "stacks settled first)",
			    (unsigned long long)mmap_log_forgotten(s->mlog));
	if (s->nresnap)
		take_due_snapshots(s, 0);
	s->t_end = now_ns();
	/* A signal or -d ended the run while the command still runs: end it too, and wait. */
	if (s->child > 0 && !s->child_exited) {
		kill(s->child, SIGTERM);
		if (waitpid(s->child, &s->child_status, 0) == s->child)
			s->child_exited = true;
	}
	return 0;
}

void session_linger(struct session *s)
{
	uint64_t deadline =
		s->opts->duration ? s->t_start + (uint64_t)(s->opts->duration * 1e9) : 0;

	if (s->stopped_by_signal)
		return;
	while (!stop_requested && (!deadline || now_ns() < deadline))
		usleep(50000);
	s->stopped_by_signal = stop_requested;
}

int session_read_stats(struct session *s, struct mm_stats *out, struct mm_stats **percpu_out)
{
	struct mm_stats *percpu = calloc((size_t)s->ncpus, sizeof(*percpu));
	__u32 zero = 0;
	int err;

	memset(out, 0, sizeof(*out));
	if (!percpu)
		return -ENOMEM;
	err = bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stats), &zero, percpu);
	if (err) {
		err = -errno;
		free(percpu);
		return err;
	}
	/* Counters the kernel kept (HM_PERF_COUNT): no program counted these. mmscope's own
	 * first (pass 0), then the CPUs' that hold them, so that those hold at least as many. */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < s->ncounters; i++) {
			const struct perf_counter *c = &s->counters[i];
			uint64_t v;

			if (c->self != !pass || read(c->fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
				continue;
			if (c->self)
				percpu[c->cpu].c[c->counter] -= v;
			else if (c->cpu >= 0 && c->cpu < s->ncpus)
				percpu[c->cpu].c[c->counter] += v;
			else
				out->c[c->counter] += v; /* a task's: not per CPU */
		}
	}
	/* struct mm_stats is all __u64: sum it as one array. */
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		const __u64 *src = (const __u64 *)&percpu[cpu];
		__u64 *dst = (__u64 *)out;

		for (size_t i = 0; i < sizeof(*out) / sizeof(__u64); i++)
			dst[i] += src[i];
	}
	out->c[CNT_LOST_LOCATION] += s->locs.lost; /* counts userspace had no room for */
	/* Pairing times completed faults only, each minor or major: the completion program
	 * bumps one histogram, and "all" is their sum (fexit/kretprobe time every call). */
	if (!s->skel->rodata->lat_from_calls) {
		for (int i = 0; i < MMSCOPE_HIST_SLOTS; i++)
			out->lat[LAT_ALL][i] = out->lat[LAT_MINOR][i] + out->lat[LAT_MAJOR][i];
		out->lat_sum[LAT_ALL] = out->lat_sum[LAT_MINOR] + out->lat_sum[LAT_MAJOR];
	}
	if (percpu_out)
		*percpu_out = percpu;
	else
		free(percpu);
	return 0;
}

uint64_t session_open_faults(struct session *s, struct mm_stats *st)
{
	for (int i = 0; st && i < FAULT_CLASS_SLOTS; i++)
		for (int c = 0; c < FT_NR; c++)
			st->fault_tlb[i][c] += s->open_fault_tlb[i][c];
	return s->open_faults;
}

struct ksyms *session_ksyms(struct session *s)
{
	/* Read at the end, when needed: /proc/kallsyms takes a few hundred ms to generate,
	 * which would delay the start of tracing. */
	if (!s->ksyms && !s->ksyms_failed) {
		s->ksyms = ksyms_load("/proc/kallsyms");
		if (!s->ksyms) {
			s->ksyms_failed = true;
			warn_msg("kernel symbols unavailable (/proc/kallsyms: %s)",
				 strerror(errno));
		}
	}
	return s->ksyms;
}

double session_duration_s(const struct session *s)
{
	uint64_t end = s->t_end ? s->t_end : now_ns();

	return (double)(end - s->t_start) / 1e9;
}

const struct hook_candidate *session_hook(const struct session *s, enum mm_event_id id)
{
	return selection_chosen(&s->sel, id);
}

int session_close(struct session *s, int status)
{
	sigset_t saved;

	prog_stats_stop(&s->progs);
	if (s->child > 0 && !s->child_exited) {
		/* An error before or during the run: do not leave the command behind. */
		if (s->child_go_fd >= 0) {
			close(s->child_go_fd); /* EOF: it exits without running the command */
			s->child_go_fd = -1;
		} else {
			kill(s->child, SIGTERM);
		}
		waitpid(s->child, NULL, 0);
	}
	if (s->child_go_fd >= 0)
		close(s->child_go_fd);
	if (s->child_err_fd >= 0)
		close(s->child_err_fd);
	detach_all(s);
	free(s->links);
	free(s->counters);
	for (int h = 0; h < 4; h++)
		for (int i = 0; i < s->hw[h].nfds; i++)
			close(s->hw[h].fds[i]);
	target_close(&s->target);
	unwind_tables_free(s->unwind);
	usyms_free(s->usyms);
	locations_free(&s->locs);
	proc_fold_free(&s->gone_procs);
	stacks_free(&s->kstacks);
	stacks_free(&s->ustacks);
	folded_table_free(&s->folded);
	mmap_log_free(s->mlog);
	ksyms_free(s->ksyms);
	kcaps_free_live(&s->caps);

	/* The flame graph and the profile first: a failure to write them fails the run, and
	 * then -o is not committed either. */
	if (s->pprof) {
		block_stop_signals(&saved);
		status = close_out_file("--pprof", s->opts->pprof, &s->pprof_file, s->pprof,
					s->pprof_direct, status);
		signal_pprof_tmp_path = NULL;
		sigprocmask(SIG_SETMASK, &saved, NULL);
		s->pprof = NULL;
	}
	if (s->svg) {
		block_stop_signals(&saved);
		status = close_out_file("--svg", s->opts->svg, &s->svg_file, s->svg, s->svg_direct,
					status);
		signal_svg_tmp_path = NULL;
		sigprocmask(SIG_SETMASK, &saved, NULL);
		s->svg = NULL;
	}
	if (s->out && s->out != stdout) {
		block_stop_signals(&saved);
		status = close_out_file("-o", s->opts->output, &s->out_file, s->out, s->out_direct,
					status);
		signal_tmp_path = NULL;
		sigprocmask(SIG_SETMASK, &saved, NULL);
		s->out = NULL;
	} else if (s->out == stdout) {
		if (fflush(stdout) && errno != EPIPE) {
			err_msg("writing the output: %s", strerror(errno));
			status = 1;
		}
	}
	if (status == 0 && s->child > 0 && s->child_exited) {
		if (WIFEXITED(s->child_status))
			status = WEXITSTATUS(s->child_status);
		else if (WIFSIGNALED(s->child_status))
			status = 128 + WTERMSIG(s->child_status);
	}
	return status;
}
