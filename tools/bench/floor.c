// SPDX-License-Identifier: GPL-2.0
/*
 * floor [--only PROG,...] [--stats] OBJECT -- COMMAND [ARGS]: attach the programs of
 * tools/bench/floor.bpf.c (all of them, or those named), run COMMAND, wait for it, detach.
 * The benchmark's watcher reads the programs' run_time_ns and run_cnt from this process's
 * descriptors while COMMAND runs; --stats prints them too, one line a program, when COMMAND
 * has exited. perf_event programs go on the minor-faults software event of every CPU, as
 * mmscope's fault completion does. Exit status: COMMAND's, or 1 when the programs could not
 * be loaded or attached.
 */
#include <errno.h>
#include <stdbool.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define MAX_LINKS 1024

static struct bpf_link *links[MAX_LINKS];
static int nlinks;

static int attach_minor_faults(struct bpf_program *prog)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);

	for (long cpu = 0; cpu < ncpus && nlinks < MAX_LINKS; cpu++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(attr),
			.config = PERF_COUNT_SW_PAGE_FAULTS_MIN,
			.sample_period = 1,
		};
		int fd = (int)syscall(SYS_perf_event_open, &attr, -1, (int)cpu, -1,
				      PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV) /* an offline CPU */
				continue;
			return -errno;
		}
		links[nlinks] = bpf_program__attach_perf_event(prog, fd);
		if (!links[nlinks]) {
			close(fd);
			return -errno;
		}
		nlinks++;
	}
	return 0;
}

/* name is one of the comma-separated names of list (NULL: every name). */
static bool listed(const char *list, const char *name)
{
	size_t len = strlen(name);

	if (!list)
		return true;
	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == len && strncmp(p, name, n) == 0)
			return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

static void print_stats(struct bpf_object *obj)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (!bpf_program__autoload(prog) ||
		    bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		printf("floor: %-16s runs %llu ns/run %.1f\n", bpf_program__name(prog),
		       (unsigned long long)info.run_cnt,
		       info.run_cnt ? (double)info.run_time_ns / (double)info.run_cnt : 0.0);
	}
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	struct bpf_object *obj;
	struct bpf_program *prog;
	int status = 1, err, arg = 1;
	bool stats = false;
	pid_t child;

	for (; arg < argc && argv[arg][0] == '-' && strcmp(argv[arg], "--") != 0; arg++) {
		if (strcmp(argv[arg], "--only") == 0 && arg + 1 < argc)
			only = argv[++arg];
		else if (strcmp(argv[arg], "--stats") == 0)
			stats = true;
		else
			break;
	}
	if (argc - arg < 3 || strcmp(argv[arg + 1], "--") != 0) {
		fprintf(stderr, "usage: %s [--only PROG,...] [--stats] OBJECT -- COMMAND [ARGS]\n",
			argv[0]);
		return 2;
	}
	obj = bpf_object__open_file(argv[arg], NULL);
	if (!obj) {
		fprintf(stderr, "floor: %s: %s\n", argv[arg], strerror(errno));
		return 1;
	}
	/* A hook this kernel lacks (no exceptions tracepoints off x86) is left out. */
	bpf_object__for_each_program(prog, obj)
	{
		const char *sec = bpf_program__section_name(prog);

		if (!listed(only, bpf_program__name(prog)) ||
		    (strncmp(sec, "tp_btf/", 7) == 0 &&
		     libbpf_find_vmlinux_btf_id(sec + 7, BPF_TRACE_RAW_TP) < 0))
			bpf_program__set_autoload(prog, false);
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "floor: load: %s\n", strerror(-err));
		goto out;
	}
	bpf_object__for_each_program(prog, obj)
	{
		if (!bpf_program__autoload(prog))
			continue;
		if (bpf_program__type(prog) == BPF_PROG_TYPE_PERF_EVENT) {
			err = attach_minor_faults(prog);
		} else if (nlinks < MAX_LINKS) {
			links[nlinks] = bpf_program__attach(prog);
			err = links[nlinks] ? 0 : -errno;
			nlinks += links[nlinks] != NULL;
		}
		if (err) {
			fprintf(stderr, "floor: attach %s: %s\n", bpf_program__name(prog),
				strerror(-err));
			goto out;
		}
	}
	child = fork();
	if (child == 0) {
		execvp(argv[arg + 2], argv + arg + 2);
		fprintf(stderr, "floor: %s: %s\n", argv[arg + 2], strerror(errno));
		_exit(127);
	}
	if (child < 0 || waitpid(child, &status, 0) < 0) {
		status = 1;
		goto out;
	}
	status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	/* The bench's sampler (bpfprof.py) reads the run counts from this process's fds every
	 * 50 ms: keep them a while, so that its last poll sees the whole workload (a 22 ms
	 * page_touch loop ended between two polls once, and the floor was lost). */
	usleep(300 * 1000);
	if (stats)
		print_stats(obj);
out:
	while (nlinks > 0)
		bpf_link__destroy(links[--nlinks]);
	bpf_object__close(obj);
	return status;
}
