// SPDX-License-Identifier: GPL-2.0
/*
 * Symbolization happens once, at the end of the run: kernel frames from kallsyms; user frames
 * from (build ID, file offset) pairs that the kernel recorded, so they resolve even for
 * processes that exited or re-exec'ed long before (the exec loop). Files are registered by
 * build ID while their processes live (exec records, mmscope's own libraries); what is still
 * unknown at the end is looked for in the mappings of every live process.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "escape.h"
#include "stacks.h"
#include "mmscope.skel.h"

static int cmp_proc(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;
	uint64_t tx = x->f.user + x->f.kernel, ty = y->f.user + y->f.kernel;

	return tx < ty ? 1 : tx > ty ? -1 : (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

struct proc_row *read_procs(struct session *s, int *n)
{
	int fd = bpf_map__fd(s->skel->maps.procs), cap = 0;
	struct proc_row *rows = NULL;
	__u32 key, next, *prev = NULL;

	*n = 0;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (*n == cap) {
			int ncap = cap ? cap * 2 : 64;
			struct proc_row *nr = realloc(rows, (size_t)ncap * sizeof(*nr));

			if (!nr)
				break;
			rows = nr;
			cap = ncap;
		}
		if (bpf_map_lookup_elem(fd, &key, &rows[*n].f) == 0) {
			rows[*n].tgid = key;
			(*n)++;
		}
	}
	if (rows)
		qsort(rows, (size_t)*n, sizeof(*rows), cmp_proc);
	return rows;
}

static void scan_all_processes(struct session *s)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int scanned = 0;

	if (!d)
		return;
	while ((de = readdir(d)) && scanned < 4096) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		usyms_add_pid(s->usyms, atoi(de->d_name));
		scanned++;
	}
	closedir(d);
}

static bool resolve_user(struct session *s, uint32_t tgid, uint32_t status,
			 const unsigned char *build_id, uint64_t off_or_ip, struct usym *u)
{
	memset(u, 0, sizeof(*u));
	if (!s->usyms)
		return false;
	if (status == 1)
		return usyms_resolve_build_id(s->usyms, build_id, off_or_ip, u);
	if (status == 2)
		return usyms_resolve_addr(s->usyms, (int)tgid, off_or_ip, u);
	return false;
}

static bool scanned_once;

/* Resolve; when a valid build ID is unknown, look once through every live process. */
static bool resolve_user_retry(struct session *s, uint32_t tgid, uint32_t status,
			       const unsigned char *build_id, uint64_t off, struct usym *u)
{
	if (resolve_user(s, tgid, status, build_id, off, u) && u->name)
		return true;
	if (status == 1 && !u->dso && !scanned_once && s->usyms) {
		scanned_once = true;
		scan_all_processes(s);
		return resolve_user(s, tgid, status, build_id, off, u);
	}
	return u->dso != NULL;
}

static int cmp_loc(const void *a, const void *b)
{
	const struct location_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->symbol, y->symbol);
}

struct location_row *read_locations(struct session *s, int *n)
{
	int fd = bpf_map__fd(s->skel->maps.locations), cap = 0;
	struct fault_location_key key, next, *prev = NULL;
	struct location_row *rows = NULL;

	*n = 0;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		char sym[256], dso[512];
		uint64_t count, off;
		int i;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &count))
			continue;
		dso[0] = '\0';
		if (key.kernel_ip) {
			const char *name = session_ksyms(s) ? ksyms_resolve(session_ksyms(s),
									    key.kernel_ip, &off)
							    : NULL;

			snprintf(sym, sizeof(sym), "%s", name ? name : "[unknown]");
			snprintf(dso, sizeof(dso), "[kernel]");
		} else {
			struct usym u;

			resolve_user_retry(s, key.tgid, key.status, key.build_id, key.offset_or_ip,
					   &u);
			snprintf(sym, sizeof(sym), "%s", u.name ? u.name : "[unknown]");
			snprintf(dso, sizeof(dso), "%s", u.dso ? u.dso : "[unknown]");
		}
		for (i = 0; i < *n; i++)
			if (strcmp(rows[i].symbol, sym) == 0 && strcmp(rows[i].dso, dso) == 0)
				break;
		if (i < *n) {
			rows[i].count += count;
			continue;
		}
		if (*n == cap) {
			int ncap = cap ? cap * 2 : 64;
			struct location_row *nr = realloc(rows, (size_t)ncap * sizeof(*nr));

			if (!nr)
				break;
			rows = nr;
			cap = ncap;
		}
		rows[*n].symbol = strdup(sym);
		rows[*n].dso = strdup(dso);
		rows[*n].count = count;
		if (!rows[*n].symbol || !rows[*n].dso) {
			free(rows[*n].symbol);
			free(rows[*n].dso);
			break;
		}
		(*n)++;
	}
	if (rows)
		qsort(rows, (size_t)*n, sizeof(*rows), cmp_loc);
	return rows;
}

void free_locations(struct location_row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		free(rows[i].symbol);
		free(rows[i].dso);
	}
	free(rows);
}

/* ---- folded stacks ---- */

struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->cap ? b->cap * 2 : 256) + n;
		char *np = realloc(b->p, cap);

		if (!np)
			return;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_frame(struct sbuf *b, const char *name)
{
	char *e = folded_escape(name, strlen(name));

	if (b->len)
		sb_add(b, ";", 1);
	if (e) {
		sb_add(b, e, strlen(e));
		free(e);
	}
}

/* BPF, tracing and perf plumbing between the hooked event and the program: not the
 * workload's code path, so not shown. */
static bool infra_frame(const char *name)
{
	static const char *const prefixes[] = {"bpf_",	   "__bpf_", "perf_",	"__perf_",
					       "___perf_", "trace_", "__trace", "__traceiter_"};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

struct folded_line {
	char *text;
	uint64_t count;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

int write_folded(struct session *s, FILE *out, kind_name_fn kind_name, uint64_t *total)
{
	int fd = bpf_map__fd(s->skel->maps.folded), kfd = bpf_map__fd(s->skel->maps.kernel_stacks);
	int ufd = bpf_map__fd(s->skel->maps.user_stacks), n = 0, cap = 0, written = 0;
	struct folded_key key, next, *prev = NULL;
	struct folded_line *lines = NULL;
	static struct kernel_stack ks;
	static struct user_stack us;

	*total = 0;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		struct sbuf b = {0};
		char kind[64], comm[MMSCOPE_COMM_LEN + 1];
		const char *names[KERNEL_STACK_DEPTH];
		uint64_t count;
		int nk = 0, nu = 0, first;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &count))
			continue;
		memcpy(comm, key.comm, MMSCOPE_COMM_LEN);
		comm[bounded_strlen(key.comm, MMSCOPE_COMM_LEN)] = '\0';
		sb_frame(&b, comm[0] ? comm : "[unknown]");
		us.nr = 0;
		if (key.user_stack && bpf_map_lookup_elem(ufd, &key.user_stack, &us) == 0)
			nu = us.nr < USER_STACK_DEPTH ? (int)us.nr : USER_STACK_DEPTH;
		if (nu == USER_STACK_DEPTH)
			sb_frame(&b, "[truncated]");
		for (int i = nu - 1; i >= 0; i--) {
			struct usym u;

			/* Frames above the leaf are return addresses: the call is the byte
			 * before, which may be the end of another function. */
			resolve_user_retry(s, key.tgid, (uint32_t)us.f[i].status, us.f[i].build_id,
					   us.f[i].offset_or_ip - (i > 0), &u);
			sb_frame(&b, u.name ? u.name : "[unknown]");
		}
		ks.nr = 0;
		if (key.kernel_stack && bpf_map_lookup_elem(kfd, &key.kernel_stack, &ks) == 0)
			nk = ks.nr < KERNEL_STACK_DEPTH ? (int)ks.nr : KERNEL_STACK_DEPTH;
		for (int i = 0; i < nk; i++) {
			uint64_t off;
			const char *name =
				session_ksyms(s)
					? ksyms_resolve(session_ksyms(s), ks.ip[i] - (i > 0), &off)
					: NULL;

			names[i] = name ? name : "[unknown]";
		}
		/* Skip the leaf-side plumbing: everything up to the last infra frame near the
		 * leaf. */
		first = 0;
		for (int i = 0; i < nk && i < 12; i++)
			if (infra_frame(names[i]))
				first = i + 1;
		if (nk == KERNEL_STACK_DEPTH)
			sb_frame(&b, "[truncated]");
		for (int i = nk - 1; i >= first; i--)
			sb_frame(&b, names[i]);
		kind_name(key.kind, kind, sizeof(kind));
		sb_frame(&b, kind);
		if (!b.p)
			continue;
		if (n == cap) {
			int ncap = cap ? cap * 2 : 256;
			struct folded_line *nl = realloc(lines, (size_t)ncap * sizeof(*nl));

			if (!nl) {
				free(b.p);
				break;
			}
			lines = nl;
			cap = ncap;
		}
		lines[n].text = b.p;
		lines[n].count = count;
		n++;
		*total += count;
	}
	if (lines)
		qsort(lines, (size_t)n, sizeof(*lines), cmp_line);
	for (int i = 0; i < n; i++) {
		uint64_t c = lines[i].count;

		/* Stacks that symbolize alike are one line. */
		while (i + 1 < n && strcmp(lines[i].text, lines[i + 1].text) == 0) {
			free(lines[i].text);
			c += lines[++i].count;
		}
		fprintf(out, "%s %llu\n", lines[i].text, (unsigned long long)c);
		free(lines[i].text);
		written++;
	}
	free(lines);
	return written;
}
