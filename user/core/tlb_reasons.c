// SPDX-License-Identifier: GPL-2.0
/*
 * The names of the tlb_flush reason slots (core/tlb_reasons.h). Read here, in the core, so
 * that the writers only format: the x86 names come from the kernel, the others from what
 * bpf/tlb.bpf.c counts in each slot.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/tlb_reasons.h"
#include "lib/util.h"

/* x86's names, read once: the kernel's BTF enum, else the tracepoint's print format. */
static char reason_keys[TLB_REASON_SLOTS][RUN_TLB_REASON_LEN];
static bool reasons_loaded;

/* The x86 reasons mmscope names, by the kernel's enum name and by the tracepoint's text. */
static const struct {
	const char *kernel, *text, *key;
} known_reasons[] = {
	{"TLB_FLUSH_ON_TASK_SWITCH", "flush on task switch", "task_switch"},
	{"TLB_REMOTE_SHOOTDOWN", "remote shootdown", "remote_shootdown"},
	{"TLB_LOCAL_SHOOTDOWN", "local shootdown", "local_shootdown"},
	{"TLB_LOCAL_MM_SHOOTDOWN", "local MM shootdown", "local_mm_shootdown"},
	{"TLB_REMOTE_SEND_IPI", "remote IPI send", "remote_ipi_send"},
	{"TLB_REMOTE_WRONG_CPU", "remote wrong CPU", "remote_wrong_cpu"},
};

/* The key of a known reason named by its enum name (by_text false) or its text. */
static bool known_reason_key(const char *name, bool by_text, char *out, size_t len)
{
	for (size_t i = 0; i < sizeof(known_reasons) / sizeof(known_reasons[0]); i++) {
		if (strcmp(name, by_text ? known_reasons[i].text : known_reasons[i].kernel) == 0) {
			snprintf(out, len, "%s", known_reasons[i].key);
			return true;
		}
	}
	return false;
}

static void key_from_enum_name(const char *name, char *out, size_t len)
{
	size_t i;

	if (known_reason_key(name, false, out, len))
		return;
	/* A reason a newer kernel added: its own name, lower case, without TLB_. */
	if (strncmp(name, "TLB_", 4) == 0)
		name += 4;
	for (i = 0; name[i] && i + 1 < len; i++)
		out[i] = (char)tolower((unsigned char)name[i]);
	out[i] = '\0';
}

static void key_from_print_name(const char *name, char *out, size_t len)
{
	size_t i;

	if (known_reason_key(name, true, out, len))
		return;
	for (i = 0; name[i] && i + 1 < len; i++)
		out[i] = isalnum((unsigned char)name[i]) ? (char)tolower((unsigned char)name[i])
							 : '_';
	out[i] = '\0';
}

static bool reasons_from_btf(const char *path)
{
	struct btf *btf = path ? btf__parse(path, NULL) : btf__load_vmlinux_btf();
	const struct btf_type *t;
	const struct btf_enum *e;
	int id;

	if (!btf)
		return false;
	id = btf__find_by_name_kind(btf, "tlb_flush_reason", BTF_KIND_ENUM);
	if (id <= 0) {
		btf__free(btf);
		return false;
	}
	t = btf__type_by_id(btf, (__u32)id);
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++, e++) {
		const char *name = btf__name_by_offset(btf, e->name_off);

		if (e->val < 0 || e->val >= TLB_REASON_SLOTS - 1 || !name ||
		    strncmp(name, "NR_", 3) == 0)
			continue;
		key_from_enum_name(name, reason_keys[e->val], sizeof(reason_keys[0]));
	}
	btf__free(btf);
	return true;
}

static bool reasons_from_format(void)
{
	static const char *const paths[] = {
		"/sys/kernel/tracing/events/tlb/tlb_flush/format",
		"/sys/kernel/debug/tracing/events/tlb/tlb_flush/format"};
	char buf[8192];

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const char *p;

		if (read_small_file(paths[i], buf, sizeof(buf)) <= 0)
			continue;
		/* __print_symbolic(REC->reason, { 0, "flush on task switch" }, ...) */
		for (p = strstr(buf, "{ "); p; p = strstr(p + 1, "{ ")) {
			char name[64];
			int val;

			if (sscanf(p, "{ %d, \"%63[^\"]\" }", &val, name) == 2 && val >= 0 &&
			    val < TLB_REASON_SLOTS - 1)
				key_from_print_name(name, reason_keys[val], sizeof(reason_keys[0]));
		}
		return true;
	}
	return false;
}

/* Off x86 the slots hold the architecture's operation kinds (bpf/tlb.bpf.c). */
static const char *const ppc_kinds[] = {"tlbiel", "tlbie", "hcall"};
static const char *const arm64_kinds[] = {"tlb_flush_mmu", "ptep_clear_flush",
					  "ptep_set_access_flags", "change_protection"};

void tlb_reason_keys(char keys[TLB_REASON_SLOTS][RUN_TLB_REASON_LEN], unsigned int arch,
		     const char *btf_path, bool from_kernel)
{
	if (arch == ARCH_POWERPC || arch == ARCH_ARM64) {
		const char *const *names = arch == ARCH_POWERPC ? ppc_kinds : arm64_kinds;
		unsigned int n = arch == ARCH_POWERPC ? 3 : 4;

		for (unsigned int i = 0; i < TLB_REASON_SLOTS; i++)
			if (i < n)
				snprintf(keys[i], RUN_TLB_REASON_LEN, "%s", names[i]);
			else
				snprintf(keys[i], RUN_TLB_REASON_LEN, "kind_%u", i);
		return;
	}
	if (from_kernel && !reasons_loaded) {
		reasons_loaded = true;
		if (!reasons_from_btf(btf_path))
			reasons_from_format();
	}
	for (int i = 0; i < TLB_REASON_SLOTS; i++)
		if (reason_keys[i][0])
			memcpy(keys[i], reason_keys[i], RUN_TLB_REASON_LEN);
		else
			snprintf(keys[i], RUN_TLB_REASON_LEN, "reason_%d", i);
	snprintf(keys[TLB_REASON_SLOTS - 1], RUN_TLB_REASON_LEN, "reason_%d_up",
		 TLB_REASON_SLOTS - 1);
}
