// SPDX-License-Identifier: GPL-2.0
/*
 * Does a BTF file describe the running kernel? mmscope's programs find the kernel's structure
 * fields at the offsets a BTF gives (CO-RE): with the BTF of another kernel they read other
 * fields and print wrong numbers without any error (seen: 6.1's BTF on a 6.12 kernel). So a BTF
 * the kernel did not provide itself is checked first: bpf/btfcheck.bpf.c reads the current
 * task's fields through it, and each value must be what the kernel reports about this process
 * without BTF (system calls, /proc/self). Any difference refuses the BTF.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/btfcheck.h"
#include "btfcheck_facts.h"
#include "btfcheck.skel.h"
#include "core/kcaps.h"
#include "lib/util.h"

/* /proc/self/stat fields 20 (num_threads), 26-28 and 45-51 (mm bounds), proc(5). */
static int read_stat(struct btfcheck_facts *f)
{
	static const struct {
		int field;
		enum btfcheck_mm idx;
	} mmf[] = {
		{26, BTFCHECK_START_CODE}, {27, BTFCHECK_END_CODE}, {28, BTFCHECK_START_STACK},
		{45, BTFCHECK_START_DATA}, {46, BTFCHECK_END_DATA}, {47, BTFCHECK_START_BRK},
		{48, BTFCHECK_ARG_START},  {49, BTFCHECK_ARG_END},  {50, BTFCHECK_ENV_START},
		{51, BTFCHECK_ENV_END},
	};
	char buf[2048], *p, *save = NULL;
	long n = read_small_file("/proc/self/stat", buf, sizeof(buf));
	int field = 3, got = 0;

	if (n <= 0)
		return n < 0 ? (int)n : -EIO;
	/* The command name (field 2) may hold spaces and parentheses: fields go on after the last
	 * ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	for (char *tok = strtok_r(p + 1, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		unsigned long long v = strtoull(tok, NULL, 10);

		if (field == 20) {
			f->nr_threads = (__s32)v;
			got++;
		}
		for (size_t i = 0; i < sizeof(mmf) / sizeof(mmf[0]); i++) {
			if (mmf[i].field == field) {
				f->mm[mmf[i].idx] = v;
				got++;
			}
		}
		field++;
	}
	return got == 11 ? 0 : -EIO;
}

/* The kernel's own account of this process, gathered right before the program runs. */
static int gather_oracle(struct btfcheck_facts *f)
{
	struct stat root, ns, exe;
	char comm[32];
	long n;
	int err;

	memset(f, 0, sizeof(*f));
	if (stat("/", &root) || stat("/proc/self/ns/mnt", &ns) || stat("/proc/self/exe", &exe))
		return -errno;
	n = read_small_file("/proc/self/comm", comm, sizeof(comm));
	if (n <= 0)
		return n < 0 ? (int)n : -EIO;
	comm[strcspn(comm, "\n")] = '\0';
	memcpy(f->comm, comm, sizeof(f->comm) - 1); /* comm is at most 15 bytes */
	f->pid = (__u32)syscall(SYS_gettid);
	f->tgid = (__u32)getpid();
	f->ppid = (__u32)getppid();
	f->leader_pid = f->tgid;
	f->root_ino = root.st_ino;
	/* The kernel's dev_t (MAJOR << 20 | MINOR), not the one stat() encodes. */
	f->root_dev = (major(root.st_dev) << 20) | minor(root.st_dev);
	f->mnt_ns = (__u32)ns.st_ino;
	f->exe_ino = exe.st_ino;
	f->syscall_nr = SYS_bpf;
	err = read_stat(f);
	return err;
}

/* The first fact that differs, as "what: read R through it, the kernel says K (source)". */
static bool first_difference(const struct btfcheck_facts *b, const struct btfcheck_facts *k,
			     char *why, size_t len, int *nfacts)
{
	static const char *const mm_names[BTFCHECK_MM_NR] = {
		"start_code", "end_code",  "start_stack", "start_data", "end_data",
		"start_brk",  "arg_start", "arg_end",	  "env_start",	"env_end",
	};
	static const int mm_fields[BTFCHECK_MM_NR] = {26, 27, 28, 45, 46, 47, 48, 49, 50, 51};
	const struct {
		const char *what, *src;
		unsigned long long bpf, kernel;
	} u[] = {
		{"task_struct.pid", "gettid()", b->pid, k->pid},
		{"task_struct.tgid", "getpid()", b->tgid, k->tgid},
		{"task_struct.real_parent->tgid", "getppid()", b->ppid, k->ppid},
		{"task_struct.group_leader->pid", "getpid()", b->leader_pid, k->leader_pid},
		{"signal_struct.nr_threads", "/proc/self/stat field 20", (unsigned)b->nr_threads,
		 (unsigned)k->nr_threads},
		{"nsproxy->mnt_ns->ns.inum", "stat(/proc/self/ns/mnt)", b->mnt_ns, k->mnt_ns},
		{"fs_struct.root's inode", "stat(/)", b->root_ino, k->root_ino},
		{"fs_struct.root's super_block.s_dev", "stat(/)", b->root_dev, k->root_dev},
		{"mm_struct.exe_file's inode", "stat(/proc/self/exe)", b->exe_ino, k->exe_ino},
	};

	*nfacts = 0;
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++, ++*nfacts) {
		if (u[i].bpf != u[i].kernel) {
			snprintf(why, len, "%s read through it is %llu, the kernel says %llu (%s)",
				 u[i].what, u[i].bpf, u[i].kernel, u[i].src);
			return true;
		}
	}
	if (strncmp(b->comm, k->comm, sizeof(b->comm)) != 0) {
		snprintf(why, len,
			 "task_struct.comm read through it is \"%.16s\", the kernel says \"%.16s\" "
			 "(/proc/self/comm)",
			 b->comm, k->comm);
		return true;
	}
	++*nfacts;
	for (int i = 0; i < BTFCHECK_MM_NR; i++, ++*nfacts) {
		if (b->mm[i] != k->mm[i]) {
			snprintf(why, len,
				 "mm_struct.%s read through it is %#llx, the kernel says %#llx "
				 "(/proc/self/stat field %d)",
				 mm_names[i], (unsigned long long)b->mm[i],
				 (unsigned long long)k->mm[i], mm_fields[i]);
			return true;
		}
	}
	if (b->syscall_nr != -1) {
		if (b->syscall_nr != k->syscall_nr) {
			snprintf(
				why, len,
				"the user registers' system call number (thread.regs->gpr[0]) read "
				"through it is %lld, the kernel is running bpf() (%lld)",
				(long long)b->syscall_nr, (long long)k->syscall_nr);
			return true;
		}
		++*nfacts;
	}
	return false;
}

int btf_check_running(const char *path, char *why, size_t len, int *nfacts)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = path);
	LIBBPF_OPTS(bpf_test_run_opts, run);
	struct btfcheck_facts kernel;
	struct btfcheck *skel;
	bool quiet = libbpf_quiet;
	char err[128];
	int ret;

	*nfacts = 0;
	libbpf_quiet = true;
	skel = btfcheck__open_opts(&oo);
	if (!skel) {
		ret = -errno;
		libbpf_quiet = quiet;
		libbpf_strerror(-ret, err, sizeof(err));
		snprintf(why, len, "cannot open the check's program with it: %s", err);
		return ret;
	}
	ret = btfcheck__load(skel);
	libbpf_quiet = quiet;
	if (ret) {
		libbpf_strerror(-ret, err, sizeof(err));
		/* A field the BTF lacks (task_struct.mm, mm_struct.arg_start, ...) cannot be
		 * relocated: the verifier then refuses the instruction libbpf poisoned. */
		if (ret == -EINVAL || ret == -ESRCH || ret == -ENOENT) {
			snprintf(why, len,
				 "the fields every kernel has (task_struct.pid, "
				 "mm_struct.start_code, "
				 "...) cannot be found through it (%s)",
				 err);
			ret = 1;
		} else {
			snprintf(why, len, "cannot load the check's program: %s", err);
		}
		goto out;
	}
	ret = gather_oracle(&kernel);
	if (ret) {
		snprintf(why, len, "cannot read /proc/self: %s", strerror(-ret));
		goto out;
	}
	ret = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.btfcheck), &run);
	if (ret || !skel->bss->facts.done) {
		ret = ret ? -errno : -EIO;
		snprintf(why, len, "cannot run the check's program (BPF_PROG_TEST_RUN, v5.10): %s",
			 strerror(-ret));
		goto out;
	}
	ret = first_difference(&skel->bss->facts, &kernel, why, len, nfacts) ? 1 : 0;
out:
	btfcheck__destroy(skel);
	return ret;
}
