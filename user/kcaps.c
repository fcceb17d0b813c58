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

#include "kcaps.h"
#include "util.h"
#include "probe.skel.h"

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

/* Load (and attach) one probe program; which: 0 fentry, 1 kprobe. */
static int run_probe(struct live_priv *p, int which, const char *func, char *why, size_t whylen)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = p->btf_path);
	struct mmscope_probe *skel;
	struct bpf_link *link = NULL;
	int err;

	libbpf_quiet = true;
	skel = mmscope_probe__open_opts(&oo);
	if (!skel) {
		err = -errno;
		snprintf(why, whylen, "cannot open probe object: %s", strerror(-err));
		goto out;
	}
	bpf_program__set_autoload(skel->progs.probe_tp_btf, false);
	if (which == 0) {
		bpf_program__set_autoload(skel->progs.probe_kprobe, false);
		err = bpf_program__set_attach_target(skel->progs.probe_fentry, 0, func);
		if (err) {
			snprintf(why, whylen, "not in kernel BTF");
			goto out;
		}
	} else {
		bpf_program__set_autoload(skel->progs.probe_fentry, false);
	}
	err = mmscope_probe__load(skel);
	if (err) {
		if (which == 0 && (err == -ESRCH || err == -ENOENT))
			snprintf(why, whylen, "not in kernel BTF");
		else if (which == 0 && (err == -EPERM || err == -EACCES))
			snprintf(why, whylen, "fentry programs refused by this kernel (load: %s)",
				 strerror(-err));
		else if (err == -524 /* ENOTSUPP */)
			snprintf(why, whylen,
				 "no BPF trampoline support in this kernel (ENOTSUPP)");
		else
			snprintf(why, whylen, "probe program refused (load: %s)", strerror(-err));
		goto out;
	}
	if (which == 0)
		link = bpf_program__attach_trace(skel->progs.probe_fentry);
	else
		link = bpf_program__attach_kprobe(skel->progs.probe_kprobe, false, func);
	if (!link) {
		err = -errno;
		if (which == 0 && err == -EBUSY)
			snprintf(why, whylen, "not traceable (attach: %s)", strerror(-err));
		else if (which == 0 && err == -524)
			snprintf(why, whylen, "no BPF trampoline for this function (ENOTSUPP)");
		else if (which == 1 && err == -ENOENT)
			snprintf(why, whylen, "not in kallsyms (inlined or absent in this kernel)");
		else if (which == 1 && err == -EINVAL)
			snprintf(why, whylen,
				 "kprobe refused (NOKPROBE_SYMBOL, notrace, or blacklisted)");
		else
			snprintf(why, whylen, "attach failed: %s", strerror(-err));
		goto out;
	}
	err = 0;
out:
	bpf_link__destroy(link);
	mmscope_probe__destroy(skel);
	libbpf_quiet = false;
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
	if (!found)
		a->err = run_probe(p, 0, func, a->why, sizeof(a->why));
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
		a->err = run_probe(p, 1, func, a->why, sizeof(a->why));
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
	if (!p->btf_loaded) {
		p->btf_loaded = true;
		p->btf = p->btf_path ? btf__parse(p->btf_path, NULL) : btf__load_vmlinux_btf();
		if (!p->btf)
			p->btf = NULL;
	}
	if (p->btf) {
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
	if (p)
		p->btf_path = btf_path;
	k->priv = p;
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
