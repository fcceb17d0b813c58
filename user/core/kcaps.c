// SPDX-License-Identifier: GPL-2.0
/*
 * Capability probes. Each answer comes from the kernel itself: a tiny fentry or kprobe program
 * (probe.bpf.c) is loaded and attached to the very function the catalog wants, a perf event is
 * opened and closed, tracefs is looked at. Guessing from kernel versions or config files would
 * be wrong on exactly the locked-down kernels mmscope is for.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/kcaps.h"
#include "lib/util.h"
#include <linux/bpf.h>
#include <bpf/bpf.h>

bool libbpf_quiet;

int libbpf_print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (verbose || (!libbpf_quiet && level == LIBBPF_WARN))
		return vfprintf(stderr, fmt, args);
	return 0;
}

#define CACHE_MAX 32

struct probe_answer {
	char func[64];
	int err;
	char why[128];
};

struct live_priv {
	const char *btf_path;
	struct btf *btf; /* for tracepoint checks without tracefs */
	bool btf_loaded;
	struct probe_answer fentry[CACHE_MAX], kprobe[CACHE_MAX];
	int fentry_refused;
	char fentry_refused_why[128];
	int nfentry, nkprobe;
};

static struct probe_answer *cache_find(struct probe_answer *tab, int *n, const char *func,
				       bool *found)
{
	for (int i = 0; i < *n; i++) {
		if (strcmp(tab[i].func, func) == 0) {
			*found = true;
			return &tab[i];
		}
	}
	*found = false;
	if (*n >= CACHE_MAX)
		return NULL;
	memset(&tab[*n], 0, sizeof(tab[*n]));
	snprintf(tab[*n].func, sizeof(tab[*n].func), "%s", func);
	return &tab[(*n)++];
}

static struct btf *live_btf(struct live_priv *p)
{
	if (!p->btf_loaded) {
		p->btf_loaded = true;
		libbpf_quiet = true;
		p->btf = p->btf_path ? btf__parse(p->btf_path, NULL) : btf__load_vmlinux_btf();
		libbpf_quiet = false;
	}
	return p->btf;
}

/*
 * Can an fentry program load and attach on func? A two-instruction program is enough for the
 * kernel to say (EPERM where fentry is refused, ENOTSUPP without trampolines, EBUSY for a
 * function that cannot be traced). One parsed copy of the kernel's BTF serves every probe.
 */
static int probe_fentry(struct live_priv *p, const char *func, char *why, size_t whylen)
{
	struct bpf_insn insns[2] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, lo, .expected_attach_type = BPF_TRACE_FENTRY);
	struct btf *btf = live_btf(p);
	int id, fd, link, err;

	if (!btf) {
		snprintf(why, whylen, "kernel BTF unreadable");
		return -ENOENT;
	}
	id = btf__find_by_name_kind(btf, func, BTF_KIND_FUNC);
	if (id <= 0) {
		snprintf(why, whylen, "not in kernel BTF");
		return -ENOENT;
	}
	lo.attach_btf_id = (__u32)id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "mmscope_probe", "GPL", insns, 2, &lo);
	if (fd < 0) {
		err = -errno;
		if (err == -EPERM || err == -EACCES)
			snprintf(why, whylen, "fentry programs refused by this kernel (load: %s)",
				 strerror(-err));
		else if (err == -524 /* ENOTSUPP */)
			snprintf(why, whylen,
				 "no BPF trampoline support in this kernel (ENOTSUPP)");
		else
			snprintf(why, whylen, "probe program refused (load: %s)", strerror(-err));
		return err;
	}
	link = bpf_raw_tracepoint_open(NULL, fd);
	err = link < 0 ? -errno : 0;
	if (link >= 0)
		close(link);
	close(fd);
	if (err == -EBUSY)
		snprintf(why, whylen, "not traceable (attach: %s)", strerror(-err));
	else if (err == -524)
		snprintf(why, whylen, "no BPF trampoline for this function (ENOTSUPP)");
	else if (err)
		snprintf(why, whylen, "attach failed: %s", strerror(-err));
	return err;
}

/* Can a kprobe be placed on func? Creating the perf kprobe event is the kernel's full check
 * (symbol exists, not NOKPROBE, not notrace); no program is needed for it. */
static int probe_kprobe(const char *func, char *why, size_t whylen)
{
	struct perf_event_attr attr = {0};
	char buf[32];
	int fd, err;

	if (read_small_file("/sys/bus/event_source/devices/kprobe/type", buf, sizeof(buf)) <= 0) {
		snprintf(why, whylen, "this kernel has no kprobes (no kprobe PMU)");
		return -EOPNOTSUPP;
	}
	attr.size = sizeof(attr);
	attr.type = (unsigned int)strtoul(buf, NULL, 10);
	attr.config1 = (__u64)(uintptr_t)func; /* kprobe_func */
	attr.config2 = 0;		       /* probe_offset */
	fd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	err = -errno;
	if (err == -ENOENT)
		snprintf(why, whylen, "not in kallsyms (inlined or absent in this kernel)");
	else if (err == -EINVAL)
		snprintf(why, whylen, "kprobe refused (NOKPROBE_SYMBOL, notrace, or blacklisted)");
	else
		snprintf(why, whylen, "kprobe refused: %s", strerror(-err));
	return err;
}

static int live_fentry_ok(const struct kcaps *k, const char *func, const char **why)
{
	struct live_priv *p = k->priv;
	bool found;
	struct probe_answer *a = cache_find(p->fentry, &p->nfentry, func, &found);

	if (!a) {
		*why = "too many functions probed";
		return -E2BIG;
	}
	if (!found) {
		/* Refused at load is refused for every function: probe the kernel once. */
		if (p->fentry_refused) {
			a->err = p->fentry_refused;
			snprintf(a->why, sizeof(a->why), "%s", p->fentry_refused_why);
		} else {
			a->err = probe_fentry(p, func, a->why, sizeof(a->why));
			if (a->err == -EPERM || a->err == -EACCES || a->err == -524) {
				p->fentry_refused = a->err;
				snprintf(p->fentry_refused_why, sizeof(p->fentry_refused_why), "%s",
					 a->why);
			}
		}
	}
	*why = a->why;
	return a->err;
}

static bool kprobe_pmu_exists(void)
{
	return access("/sys/bus/event_source/devices/kprobe/type", R_OK) == 0;
}

static int live_kprobe_ok(const struct kcaps *k, const char *func, const char **why)
{
	struct live_priv *p = k->priv;
	bool found;
	struct probe_answer *a;

	if (!kprobe_pmu_exists()) {
		*why = "this kernel has no kprobes (no kprobe PMU: CONFIG_KPROBES is off)";
		return -EOPNOTSUPP;
	}
	a = cache_find(p->kprobe, &p->nkprobe, func, &found);
	if (!a) {
		*why = "too many functions probed";
		return -E2BIG;
	}
	if (!found)
		a->err = probe_kprobe(func, a->why, sizeof(a->why));
	*why = a->why;
	return a->err;
}

static bool live_tracepoint_exists(const struct kcaps *k, const char *cat, const char *name)
{
	static const char *const roots[] = {"/sys/kernel/tracing/events",
					    "/sys/kernel/debug/tracing/events"};
	struct live_priv *p = k->priv;
	char path[256];

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s", roots[i]);
		if (access(path, F_OK) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", roots[i], cat, name);
		return access(path, F_OK) == 0;
	}
	/* No tracefs: every tracepoint has a btf_trace_<name> typedef in the kernel's BTF. */
	if (live_btf(p)) {
		snprintf(path, sizeof(path), "btf_trace_%s", name);
		return btf__find_by_name_kind(p->btf, path, BTF_KIND_TYPEDEF) > 0;
	}
	return false;
}

static int perf_sw_config(const char *event)
{
	if (strcmp(event, "page-faults") == 0)
		return PERF_COUNT_SW_PAGE_FAULTS;
	if (strcmp(event, "minor-faults") == 0)
		return PERF_COUNT_SW_PAGE_FAULTS_MIN;
	if (strcmp(event, "major-faults") == 0)
		return PERF_COUNT_SW_PAGE_FAULTS_MAJ;
	if (strcmp(event, "context-switches") == 0)
		return PERF_COUNT_SW_CONTEXT_SWITCHES;
	return -1;
}

static int live_perf_sw_ok(const struct kcaps *k, const char *event, const char **why)
{
	struct perf_event_attr attr = {0};
	static char buf[128];
	int cfg = perf_sw_config(event), fd;

	(void)k;
	if (cfg < 0) {
		*why = "unknown software event";
		return -EINVAL;
	}
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = (unsigned int)cfg;
	attr.sample_period = 1;
	attr.disabled = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		snprintf(buf, sizeof(buf), "cannot be opened (%s)", strerror(e));
		*why = buf;
		return -e;
	}
	close(fd);
	return 0;
}

/* powerpc: which MMU runs, and the CPU model, from /proc/cpuinfo. */
static unsigned int cpuinfo_mmu(char *model, size_t len)
{
	char buf[16384];
	const char *p;
	unsigned int mmu = 0;

	model[0] = '\0';
	if (read_small_file("/proc/cpuinfo", buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "\nMMU");
	if (p && (p = strchr(p, ':')))
		mmu = strncmp(p + 2, "Radix", 5) == 0  ? MMU_RADIX
		      : strncmp(p + 2, "Hash", 4) == 0 ? MMU_HASH
						       : 0;
	p = strstr(buf, "\ncpu");
	if (p && (p = strchr(p, ':')))
		sscanf(p + 2, "%31[A-Za-z0-9]", model);
	(void)len;
	return mmu;
}

/*
 * Raw PMU event codes from the kernel's tools/perf/pmu-events/arch/powerpc (kernel-probes.md
 * section 4): POWER8 PM_DSLB_MISS 0xd094, PM_ISLB_MISS 0xd096; POWER9 0xd0a8, 0xd8a8.
 */
int pmu_raw_code(const char *event, const char *model, uint64_t *code)
{
	bool p8 = strncmp(model, "POWER8", 6) == 0, p9 = strncmp(model, "POWER9", 6) == 0;

	if (strcmp(event, "PM_DSLB_MISS") == 0 && (p8 || p9)) {
		*code = p8 ? 0xd094 : 0xd0a8;
		return 0;
	}
	if (strcmp(event, "PM_ISLB_MISS") == 0 && (p8 || p9)) {
		*code = p8 ? 0xd096 : 0xd8a8;
		return 0;
	}
	return -ENOENT;
}

static char cpu_model[32];

const char *kcaps_cpu_model(void)
{
	return cpu_model;
}

static int live_pmu_ok(const struct kcaps *k, const char *event, const char **why)
{
	struct perf_event_attr attr = {0};
	static char buf[160];
	uint64_t code;
	int fd;

	(void)k;
	if (pmu_raw_code(event, cpu_model, &code)) {
		snprintf(buf, sizeof(buf), "no code for this CPU (%s)",
			 cpu_model[0] ? cpu_model : "unknown model");
		*why = buf;
		return -ENOENT;
	}
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_RAW;
	attr.config = code;
	attr.disabled = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		snprintf(buf, sizeof(buf), "the PMU refuses raw event 0x%llx (%s)%s",
			 (unsigned long long)code, strerror(e),
			 e == ENOENT || e == EOPNOTSUPP ? ": no PMU passthrough (a VM, or QEMU TCG)"
							: "");
		*why = buf;
		return -e;
	}
	close(fd);
	return 0;
}

/* Whether the kernel runs BPF programs in its interpreter: net.core.bpf_jit_enable is 0 (the
 * default where the architecture does not ask for the JIT, as Debian's ppc64el kernels). A
 * kernel built without the JIT has no such file and always interprets. A file that cannot be
 * read counts as off too: what "off" selects (plain loops) loads under the JIT as well. */
static bool bpf_jit_off(void)
{
	char buf[16];

	if (read_small_file("/proc/sys/net/core/bpf_jit_enable", buf, sizeof(buf)) <= 0)
		return access("/proc/sys/net/core", F_OK) == 0;
	return buf[0] == '0';
}

static const struct {
	const char *name, *what, *fallback;
} bpf_features[BF_NR] = {
	[BF_TASK_BTF] = {"task-btf", "bpf_get_current_task_btf() (v5.11)",
			 "the current task's fields read with probe reads"},
	[BF_TASK_STORAGE] = {"task-storage", "BPF_MAP_TYPE_TASK_STORAGE (v5.11)",
			     "open faults in a hash map by thread ID"},
	[BF_TASK_PT_REGS] = {"task-pt-regs", "bpf_task_pt_regs() (v5.15)",
			     "user registers from the top of the kernel stack; user stacks from "
			     "the kernel's walk every time (build IDs read at each stack)"},
	[BF_CALLBACKS] = {"callbacks", "BPF callbacks (v5.13)",
			  "the programs built without callbacks (mmscope_nocb)"},
	[BF_LOOP] = {"bpf-loop", "bpf_loop() (v5.17)", "plain bounded loops (longer load)"},
	[BF_MMAP_BUILD_ID] = {"mmap-build-id", "build IDs in the kernel's mmap records (v5.12)",
			      "build IDs read by the kernel at the faults and stacks, and from the "
			      "files the mmap records name where no live process maps them"},
	[BF_FIND_VMA] = {"find-vma", "bpf_find_vma() (v5.17)",
			 "user stacks by frame pointers only (no DWARF unwinding)"},
};

const char *bpf_feature_name(enum bpf_feature f)
{
	return f < BF_NR ? bpf_features[f].name : "?";
}

const char *bpf_feature_what(enum bpf_feature f)
{
	return f < BF_NR ? bpf_features[f].what : "?";
}

const char *bpf_feature_fallback(enum bpf_feature f)
{
	return f < BF_NR ? bpf_features[f].fallback : "?";
}

/*
 * Does the kernel know helper id? A kprobe program that calls it (with whatever the registers
 * hold) is loaded: the verifier answers "unknown func" / "invalid func" where the kernel has no
 * such helper, and something else about its arguments where it has (libbpf's own probe does
 * the same, but reads its log buffer where the kernel wrote nothing). 1, 0, or -errno.
 */
static int helper_known(enum bpf_func_id id)
{
	struct bpf_insn insns[3] = {
		{.code = BPF_JMP | BPF_CALL, .imm = id},
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	static char log[4096];
	LIBBPF_OPTS(bpf_prog_load_opts, lo, .log_buf = log, .log_size = sizeof(log),
		    .log_level = 1);
	int fd;

	memset(log, 0, sizeof(log));
	fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "mmscope_probe", "GPL", insns, 3, &lo);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	if (strstr(log, "unknown func") || strstr(log, "invalid func"))
		return 0;
	return log[0] ? 1 : -errno;
}

static void probe_helper(struct kcaps *k, enum bpf_feature f, enum bpf_func_id id,
			 bool needs_kernel_btf)
{
	int r = helper_known(id);

	k->feat[f] = r > 0 && (!needs_kernel_btf || k->kernel_btf);
	if (r == 0)
		snprintf(k->feat_why[f], sizeof(k->feat_why[f]),
			 "the verifier knows no such helper");
	else if (r < 0)
		snprintf(k->feat_why[f], sizeof(k->feat_why[f]), "probe failed: %s", strerror(-r));
	else if (!k->feat[f])
		snprintf(k->feat_why[f], sizeof(k->feat_why[f]),
			 "it takes or returns a kernel BTF pointer, and the kernel has no BTF of "
			 "its own");
}

/* THREAD_SIZE: 16 KiB on x86-64 and on arm64 with 4 KiB or 16 KiB pages, 64 KiB with 64 KiB
 * pages (THREAD_SHIFT), doubled by KASAN (whose kmem_cache has kasan_info). */
static unsigned int thread_size(struct kcaps *k)
{
	struct btf *btf = live_btf(k->priv);
	unsigned int size = 16384;
	const struct btf_type *t;
	int id;

	if (k->arch != ARCH_X86 && sysconf(_SC_PAGESIZE) == 65536)
		size = 65536;
	id = btf ? btf__find_by_name_kind(btf, "kmem_cache", BTF_KIND_STRUCT) : -1;
	t = id > 0 ? btf__type_by_id(btf, (__u32)id) : NULL;
	for (int i = 0; t && i < btf_vlen(t); i++)
		if (strcmp(btf__name_by_offset(btf, btf_members(t)[i].name_off), "kasan_info") == 0)
			size *= 2;
	return size;
}

void kcaps_bpf_features(struct kcaps *k)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_DUMMY,
		.mmap = 1,
		.mmap2 = 1,
		.build_id = 1,
		.disabled = 1,
	};
	int r, fd;

	libbpf_quiet = true;
	probe_helper(k, BF_TASK_BTF, BPF_FUNC_get_current_task_btf, true);
	probe_helper(k, BF_TASK_PT_REGS, BPF_FUNC_task_pt_regs, true);
	/* Callbacks came with bpf_for_each_map_elem(), the first helper that takes one. */
	probe_helper(k, BF_CALLBACKS, BPF_FUNC_for_each_map_elem, false);
	probe_helper(k, BF_LOOP, BPF_FUNC_loop, false);
	probe_helper(k, BF_FIND_VMA, BPF_FUNC_find_vma, true);
	/* Task storage: the map itself (its helpers came with it, for tracing programs). */
	r = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL);
	k->feat[BF_TASK_STORAGE] = r > 0 && k->feat[BF_TASK_BTF];
	libbpf_quiet = false;
	if (r <= 0)
		snprintf(k->feat_why[BF_TASK_STORAGE], sizeof(k->feat_why[0]),
			 r == 0 ? "the kernel refuses to create such a map" : "probe failed: %s",
			 strerror(-r));
	else if (!k->feat[BF_TASK_STORAGE])
		snprintf(k->feat_why[BF_TASK_STORAGE], sizeof(k->feat_why[0]),
			 "its helpers take a BTF task pointer (no bpf_get_current_task_btf())");
	if (k->feat[BF_LOOP] && k->jit_off) {
		k->feat[BF_LOOP] = false;
		snprintf(k->feat_why[BF_LOOP], sizeof(k->feat_why[0]),
			 "the interpreter runs no callbacks (BPF JIT off)");
	}
	/* The mmap records' build IDs: the perf event mmap_log.c opens, on this thread. */
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	k->feat[BF_MMAP_BUILD_ID] = fd >= 0;
	if (fd >= 0)
		close(fd);
	else
		snprintf(k->feat_why[BF_MMAP_BUILD_ID], sizeof(k->feat_why[0]),
			 "perf refuses attr.build_id (%s)", strerror(errno));
	if (k->arch == ARCH_X86 || k->arch == ARCH_ARM64)
		k->thread_size = thread_size(k);
}

void kcaps_init_live(struct kcaps *k, const char *btf_path)
{
	struct live_priv *p = calloc(1, sizeof(*p));
	struct utsname u;

	memset(k, 0, sizeof(*k));
	uname(&u);
	k->arch = arch_from_uname(u.machine);
	k->kernel_btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	k->btf = k->kernel_btf || btf_path;
	k->fentry_ok = live_fentry_ok;
	k->kprobe_ok = live_kprobe_ok;
	k->tracepoint_exists = live_tracepoint_exists;
	k->perf_sw_ok = live_perf_sw_ok;
	k->pmu_ok = live_pmu_ok;
	if (k->arch == ARCH_POWERPC)
		k->mmu = cpuinfo_mmu(cpu_model, sizeof(cpu_model));
	k->jit_off = bpf_jit_off();
	if (p)
		p->btf_path = btf_path;
	k->priv = p;
	if (p)
		kcaps_bpf_features(k);
}

void kcaps_free_live(struct kcaps *k)
{
	struct live_priv *p = k->priv;

	if (p) {
		btf__free(p->btf);
		free(p);
	}
	k->priv = NULL;
}

const char *kcaps_btf_path(const struct kcaps *k)
{
	const struct live_priv *p = k->priv;

	return p ? p->btf_path : NULL;
}
