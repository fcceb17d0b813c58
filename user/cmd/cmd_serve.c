// SPDX-License-Identifier: GPL-2.0
/*
 * mmscope serve: keep the in-kernel aggregates attached and answer Prometheus scrapes of
 * /metrics (text format 0.0.4, or OpenMetrics 1.0.0 when the Accept header asks for it).
 *
 * HTTP is libmicrohttpd's, in its own polling thread; the main thread runs the session loop
 * (targets, -d, signals). A scrape reads the per-CPU statistics map with the bpf() syscall:
 * BPF programs never wait for a reader, so a scrape cannot slow the traced side. Scrapes and
 * the once-a-second --labels pass share one lock, on the userspace side only.
 *
 * With -p or -- COMMAND, when the targets end the hooks are detached and the endpoint keeps
 * serving the final counts (mmscope_tracing 0) until SIGTERM/SIGINT or -d, so the last scrape
 * gets them; the exit status is then the command's.
 */
#include "cmd/commands.h"
#include "lib/util.h"

#ifdef MMSCOPE_NO_SERVE

static int run_serve(struct mm_opts *opts)
{
	(void)opts;
	err_msg("serve: this mmscope was built without libmicrohttpd (the static build); use "
		"the dynamically linked build/mmscope");
	return 1;
}

#else

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <netinet/in.h>
#include <microhttpd.h>
#include <netdb.h>

#include "lib/escape.h"
#include "out/metrics.h"
#include "core/proc_table.h"
#include "core/runner.h"
#include "out/serve_series.h"
#include "core/session.h"
#include "out/tlb_report.h"

/* Buckets kept stable from scrape to scrape: fault latency up to 2^35 ns (34 s), pages per
 * flush up to 2^16; larger values are only in +Inf. */
#define LAT_BUCKETS   35
#define PAGES_BUCKETS 16

struct serve {
	struct session s;
	struct run_result res; /* what the pages say of the run: filled once it is open */
	bool session_ok;
	bool tracing;	      /* hooks attached (atomic loads and stores) */
	pthread_mutex_t lock; /* scrapes and label passes */
	struct series_table series;
	double start_time;
	char kernel[65];
	uint64_t scrapes;
};

static struct serve srv;

static const struct {
	int cnt;
	const char *name;
} lost_names[] = {
	{CNT_LOST_OPEN_FAULT, "open_fault"}, {CNT_LOST_STACK, "stack"},
	{CNT_LOST_PROC, "process"},	     {CNT_LOST_LOCATION, "location"},
	{CNT_LOST_FOLDED, "folded"},	     {CNT_LOST_TRACKED, "tracked_process"},
	{CNT_LOST_RINGBUF, "ringbuf"},	     {CNT_LOST_LAT, "latency"},
	{CNT_LOST_TLB_PROC, "tlb_process"},  {CNT_LOST_SWITCH_PROC, "switch_process"},
	{CNT_LOST_MM_CPUS, "mm_cpus"},
};

/* ---- --labels: per-process maps folded into label rows ---- */

static void cgroup_of(uint32_t tgid, char *buf, size_t len)
{
	char path[64], data[4096];
	const char *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", tgid);
	n = read_small_file(path, data, sizeof(data));
	/* cgroup v2: the line "0::/path". A process gone before its first pass: unknown. */
	p = n > 0 ? strstr(data, "0::") : NULL;
	if (!p || (p != data && p[-1] != '\n')) {
		snprintf(buf, len, "%s", n > 0 ? "unknown" : "exited");
		return;
	}
	p += 3;
	snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
}

static void comm_value(const char *comm, char *buf)
{
	size_t n = bounded_strlen(comm, MMSCOPE_COMM_LEN);

	memcpy(buf, comm, n);
	buf[n] = '\0';
}

static void forget_process(uint32_t tgid)
{
	series_forget(&srv.series, tgid);
}

static void row_faults(uint32_t tgid, const void *v)
{
	const struct proc_faults *p = v;
	static const int fields[] = {SF_FAULT_USER, SF_FAULT_KERNEL, SF_FAULT_MINOR,
				     SF_FAULT_MAJOR};
	uint64_t vals[] = {p->user, p->kernel, p->minor, p->major};
	char comm[MMSCOPE_COMM_LEN + 1];

	comm_value(p->comm, comm);
	series_update(&srv.series, tgid, srv.series.labels == LABELS_COMM ? comm : NULL, fields,
		      vals, 4);
}

static void row_tlb(uint32_t tgid, const void *v)
{
	const struct tlb_proc *p = v;
	int fields[TLB_REASON_SLOTS];
	char comm[MMSCOPE_COMM_LEN + 1];

	for (int i = 0; i < TLB_REASON_SLOTS; i++)
		fields[i] = SF_TLB0 + i;
	comm_value(p->comm, comm);
	series_update(&srv.series, tgid, srv.series.labels == LABELS_COMM ? comm : NULL, fields,
		      (const uint64_t *)p->reason, TLB_REASON_SLOTS);
}

static void row_switch(uint32_t tgid, const void *v)
{
	const struct switch_proc *p = v;
	static const int fields[] = {SF_SW_SAME_MM, SF_SW_MM_CHANGE, SF_SW_KERNEL};
	uint64_t vals[] = {p->same_mm, p->mm_change, p->kernel};
	char comm[MMSCOPE_COMM_LEN + 1];

	comm_value(p->comm, comm);
	series_update(&srv.series, tgid, srv.series.labels == LABELS_COMM ? comm : NULL, fields,
		      vals, 3);
}

/* Under srv.lock. */
static void labels_pass(void)
{
	static void (*const rows[PROC_TABLES])(uint32_t, const void *) = {
		[PROC_TABLE_FAULTS] = row_faults,
		[PROC_TABLE_TLB] = row_tlb,
		[PROC_TABLE_SWITCH] = row_switch,
	};

	if (!srv.series.labels)
		return;
	proc_tables_pass(&srv.s, rows, forget_process);
}

/* ---- the page ---- */

static void counters(struct metrics_writer *w, const char *name, const char *help,
		     const char *label, const char *const *values, const uint64_t *v, int n)
{
	metrics_family(w, name, "counter", NULL, help);
	for (int i = 0; i < n; i++)
		metrics_sample(w, name, "_total", v[i], LABELS(label, values[i]));
}

/* x86: the reasons this kernel names, and any other that occurred; elsewhere the slots are
 * the architecture's operation kinds (3 on powerpc, 4 on arm64). */
static bool tlb_slot_shown(const struct run_result *res, const struct mm_stats *st, unsigned int v)
{
	if (st->tlb_reason[v])
		return true;
	if (res->arch == ARCH_POWERPC)
		return v < 3;
	if (res->arch == ARCH_ARM64)
		return v < 4;
	return strncmp(tlb_reason_key(res, v), "reason_", 7) != 0;
}

static void page_labels(struct metrics_writer *w, const struct mm_stats *st)
{
	struct series_table *t = &srv.series;
	const char *ln = t->labels == LABELS_CGROUP ? "cgroup" : "comm";
	char name[96], help[160];
	int nrows = t->nrows + (t->rows[t->max_series].value ? 1 : 0);

	snprintf(name, sizeof(name), "mmscope_%s_page_faults", ln);
	snprintf(help, sizeof(help), "Page faults by %s and mode (user or kernel).", ln);
	metrics_family(w, name, "counter", NULL, help);
	for (int i = 0; i < nrows; i++) {
		const struct series_row *r = i < t->nrows ? &t->rows[i] : &t->rows[t->max_series];

		metrics_sample(w, name, "_total", r->v[SF_FAULT_USER],
			       LABELS(ln, r->value, "mode", "user"));
		metrics_sample(w, name, "_total", r->v[SF_FAULT_KERNEL],
			       LABELS(ln, r->value, "mode", "kernel"));
	}
	snprintf(name, sizeof(name), "mmscope_%s_page_faults_completed", ln);
	snprintf(help, sizeof(help), "Page faults completed, by %s and result (minor or major).",
		 ln);
	metrics_family(w, name, "counter", NULL, help);
	for (int i = 0; i < nrows; i++) {
		const struct series_row *r = i < t->nrows ? &t->rows[i] : &t->rows[t->max_series];

		metrics_sample(w, name, "_total", r->v[SF_FAULT_MINOR],
			       LABELS(ln, r->value, "result", "minor"));
		metrics_sample(w, name, "_total", r->v[SF_FAULT_MAJOR],
			       LABELS(ln, r->value, "result", "major"));
	}
	snprintf(name, sizeof(name), "mmscope_%s_tlb_flushes", ln);
	snprintf(help, sizeof(help),
		 "TLB flushes issued, by %s and reason (x86 issuing-side reasons; the operation "
		 "kind elsewhere).",
		 ln);
	metrics_family(w, name, "counter", NULL, help);
	for (int i = 0; i < nrows; i++) {
		const struct series_row *r = i < t->nrows ? &t->rows[i] : &t->rows[t->max_series];

		for (unsigned int v = 0; v < TLB_REASON_SLOTS; v++)
			if (r->v[SF_TLB0 + v] || tlb_slot_shown(&srv.res, st, v))
				metrics_sample(w, name, "_total", r->v[SF_TLB0 + v],
					       LABELS(ln, r->value, "reason",
						      tlb_reason_key(&srv.res, v)));
	}
	snprintf(name, sizeof(name), "mmscope_%s_context_switches", ln);
	snprintf(help, sizeof(help), "Context switches by %s and kind.", ln);
	metrics_family(w, name, "counter", NULL, help);
	for (int i = 0; i < nrows; i++) {
		const struct series_row *r = i < t->nrows ? &t->rows[i] : &t->rows[t->max_series];

		metrics_sample(w, name, "_total", r->v[SF_SW_SAME_MM],
			       LABELS(ln, r->value, "kind", "same_mm"));
		metrics_sample(w, name, "_total", r->v[SF_SW_MM_CHANGE],
			       LABELS(ln, r->value, "kind", "mm_change"));
		metrics_sample(w, name, "_total", r->v[SF_SW_KERNEL],
			       LABELS(ln, r->value, "kind", "kernel"));
	}
	metrics_family(w, "mmscope_label_values", "gauge", NULL,
		       "Distinct label values with their own series (--max-series caps them).");
	metrics_sample(w, "mmscope_label_values", "", (uint64_t)t->nrows, LABELS("label", ln));
	metrics_family(w, "mmscope_label_values_limit", "gauge", NULL, "The --max-series cap.");
	metrics_sample(w, "mmscope_label_values_limit", "", (uint64_t)t->max_series,
		       LABELS("label", ln));
	metrics_family(w, "mmscope_label_values_capped", "gauge", NULL,
		       "1 once a label value was refused a series (counted under __other__).");
	metrics_sample(w, "mmscope_label_values_capped", "", t->capped, LABELS("label", ln));
}

static void page_info(struct metrics_writer *w, bool tracing)
{
	const struct run_result *res = &srv.res;

	metrics_family(w, "mmscope_build", "info", NULL, "mmscope version and the traced kernel.");
	metrics_sample(w, "mmscope_build", "_info", 1,
		       LABELS("version", MMSCOPE_VERSION, "kernel", srv.kernel, "arch",
			      arch_name(res->arch)));
	metrics_family(w, "mmscope_target", "info", NULL, "What is traced.");
	metrics_sample(w, "mmscope_target", "_info", 1, LABELS("target", res->target));
	metrics_family(w, "mmscope_hook", "info", NULL,
		       "The hook each event uses (see 'mmscope probes'); events without one are "
		       "absent.");
	for (int e = 0; e < EV_NR; e++) {
		const struct hook_candidate *c = run_hook(res, (enum mm_event_id)e);
		char where[160];

		if (!c)
			continue;
		hook_cand_describe(c, where, sizeof(where));
		metrics_sample(w, "mmscope_hook", "_info", 1,
			       LABELS("event", catalog_event((enum mm_event_id)e)->name, "method",
				      hook_method_name(c->method), "target", where));
	}
	metrics_family(w, "mmscope_tracing", "gauge", NULL,
		       "1 while the hooks are attached; 0 once the -p/-- targets ended (the "
		       "counters are final).");
	metrics_sample(w, "mmscope_tracing", "", tracing, NULL);
	metrics_family(w, "mmscope_start_time_seconds", "gauge", "seconds",
		       "When the hooks were attached, in seconds since the epoch.");
	mbuf_printf(&w->b, "mmscope_start_time_seconds %.3f\n", srv.start_time);
}

static void page_faults(struct metrics_writer *w, const struct mm_stats *st)
{
	const struct run_result *res = &srv.res;
	static const char *const modes[] = {"user", "kernel"};
	static const char *const access[] = {"read", "write", "exec"};
	static const char *const results[] = {"minor", "major"};

	if (run_hook(res, EV_FAULT_ENTRY)) {
		counters(w, "mmscope_page_faults",
			 "Page faults taken, by the mode they were taken in (each entry into the "
			 "fault handler).",
			 "mode", modes,
			 (const uint64_t[]){st->c[CNT_FAULT_USER], st->c[CNT_FAULT_KERNEL]}, 2);
		if (!res->no_fault_class) {
			counters(w, "mmscope_page_faults_access",
				 "Page faults by access (read, write, instruction fetch).",
				 "access", access,
				 (const uint64_t[]){st->c[CNT_FAULT_READ], st->c[CNT_FAULT_WRITE],
						    st->c[CNT_FAULT_EXEC]},
				 3);
		}
		if (!res->no_fault_prot) {
			metrics_family(w, "mmscope_page_faults_protection", "counter", NULL,
				       "Page faults on present pages (protection faults).");
			metrics_sample(w, "mmscope_page_faults_protection", "_total",
				       st->c[CNT_FAULT_PROT], NULL);
		}
	}
	if (run_hook(res, EV_FAULT_DONE))
		counters(w, "mmscope_page_faults_completed",
			 "Page faults the kernel accounted, by result (minor or major).", "result",
			 results,
			 (const uint64_t[]){st->c[CNT_FAULT_MINOR], st->c[CNT_FAULT_MAJOR]}, 2);
	if (res->fault_latency_method[0]) {
		metrics_family(w, "mmscope_fault_latency_seconds", "histogram", "seconds",
			       "Page fault latency (log2 buckets).");
		metrics_histogram(w, "mmscope_fault_latency_seconds",
				  (const uint64_t *)st->lat[LAT_MINOR], LAT_BUCKETS, 1e-9,
				  (const uint64_t *)&st->lat_sum[LAT_MINOR], "result", "minor");
		metrics_histogram(w, "mmscope_fault_latency_seconds",
				  (const uint64_t *)st->lat[LAT_MAJOR], LAT_BUCKETS, 1e-9,
				  (const uint64_t *)&st->lat_sum[LAT_MAJOR], "result", "major");
	}
}

static void page_tlb(struct metrics_writer *w, const struct mm_stats *st)
{
	const struct run_result *res = &srv.res;
	bool x86 = run_hook(res, EV_TLB_FLUSH) != NULL;
	bool any = x86 || run_hook(res, EV_TLBIE) || run_hook(res, EV_ARM64_TLBI) ||
		   run_hook(res, EV_HCALL);
	static const char *const kinds[] = {"local", "broadcast"};

	if (!any)
		return;
	metrics_family(w, "mmscope_tlb_flushes", "counter", NULL,
		       "TLB flush operations by reason (x86 tlb:tlb_flush, one per flushing CPU); "
		       "by operation kind on powerpc and arm64.");
	for (unsigned int v = 0; v < TLB_REASON_SLOTS; v++)
		if (tlb_slot_shown(res, st, v))
			metrics_sample(w, "mmscope_tlb_flushes", "_total", st->tlb_reason[v],
				       LABELS("reason", tlb_reason_key(res, v)));
	counters(w, "mmscope_tlb_invalidations",
		 "TLB invalidations issued, by kind: on the issuing CPU only, or broadcast to "
		 "others.",
		 "kind", kinds, (const uint64_t[]){st->c[CNT_TLB_LOCAL], st->c[CNT_TLB_BROADCAST]},
		 2);
	if (x86) {
		metrics_family(w, "mmscope_tlb_full_flushes", "counter", NULL,
			       "TLB flushes of the whole TLB (x86 pages -1).");
		metrics_sample(w, "mmscope_tlb_full_flushes", "_total", st->c[CNT_TLB_FULL], NULL);
		metrics_family(w, "mmscope_tlb_flush_pages", "histogram", NULL,
			       "Pages per TLB flush, full flushes apart (log2 buckets).");
		metrics_histogram(w, "mmscope_tlb_flush_pages", (const uint64_t *)st->tlb_pages,
				  PAGES_BUCKETS, 1, (const uint64_t *)&st->tlb_pages_sum, NULL,
				  NULL);
	}
}

static void page_switch(struct metrics_writer *w, const struct mm_stats *st)
{
	const struct run_result *res = &srv.res;
	static const char *const kinds[] = {"same_mm", "mm_change", "kernel"};
	static const char *const tlb[] = {"mm_change_flush", "mm_change_noflush", "lazy_flush"};

	if (!run_hook(res, EV_SWITCH))
		return;
	counters(w, "mmscope_context_switches",
		 "Context switches by kind: to a thread of the same mm, to another mm, or to a "
		 "kernel thread.",
		 "kind", kinds,
		 (const uint64_t[]){st->c[CNT_SW_SAME_MM], st->c[CNT_SW_MM_CHANGE],
				    st->c[CNT_SW_KERNEL]},
		 3);
	if (run_hook(res, EV_SWITCH_FLUSH))
		counters(w, "mmscope_context_switch_tlb",
			 "What the TLB did at switches: mm changes that flushed it or kept it "
			 "(ASID), and lazy-TLB catch-up flushes.",
			 "kind", tlb,
			 (const uint64_t[]){st->c[CNT_SW_MM_FLUSH], st->c[CNT_SW_MM_NOFLUSH],
					    st->c[CNT_SW_LAZY_FLUSH]},
			 3);
}

/* The whole page into w; under srv.lock. */
static int render(struct metrics_writer *w)
{
	/* Read before the counters: a scrape that says 0 (hooks detached) holds final counts. */
	bool tracing = __atomic_load_n(&srv.tracing, __ATOMIC_SEQ_CST);
	struct mm_stats st;

	if (session_read_stats(&srv.s, &st, NULL))
		return -1;
	labels_pass();
	srv.scrapes++;
	page_info(w, tracing);
	page_faults(w, &st);
	page_tlb(w, &st);
	page_switch(w, &st);
	metrics_family(w, "mmscope_lost_events", "counter", NULL,
		       "Events not counted in full, by the table that was full or the data that "
		       "was unavailable.");
	for (size_t i = 0; i < sizeof(lost_names) / sizeof(lost_names[0]); i++)
		metrics_sample(w, "mmscope_lost_events", "_total", st.c[lost_names[i].cnt],
			       LABELS("what", lost_names[i].name));
	if (srv.series.labels)
		page_labels(w, &st);
	metrics_family(w, "mmscope_scrapes", "counter", NULL, "Scrapes of /metrics answered.");
	metrics_sample(w, "mmscope_scrapes", "_total", srv.scrapes, NULL);
	metrics_end(w);
	return w->b.failed ? -1 : 0;
}

/* ---- HTTP ---- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int code, const char *type,
			     char *body, size_t len, bool owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

#define TEXT_TYPE "text/plain; charset=utf-8"

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **state)
{
	static char not_found[] = "404 not found: mmscope serves /metrics\n";
	static char bad_method[] = "405 method not allowed: GET or HEAD\n";
	static char unavailable[] = "503 the statistics map cannot be read\n";
	static char index_page[] = "mmscope: metrics at /metrics\n";
	struct metrics_writer w = {0};
	int err;

	(void)cls;
	(void)version;
	(void)upload;
	(void)upload_size;
	(void)state;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT_TYPE, bad_method,
			     sizeof(bad_method) - 1, false);
	if (strcmp(url, "/") == 0)
		return reply(c, MHD_HTTP_OK, TEXT_TYPE, index_page, sizeof(index_page) - 1, false);
	if (strcmp(url, "/metrics") != 0)
		return reply(c, MHD_HTTP_NOT_FOUND, TEXT_TYPE, not_found, sizeof(not_found) - 1,
			     false);
	w.fmt = metrics_negotiate(
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
	pthread_mutex_lock(&srv.lock);
	err = srv.session_ok ? render(&w) : -1;
	pthread_mutex_unlock(&srv.lock);
	if (err) {
		mbuf_free(&w.b);
		return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT_TYPE, unavailable,
			     sizeof(unavailable) - 1, false);
	}
	return reply(c, MHD_HTTP_OK, metrics_content_type(w.fmt), w.b.p, w.b.len, true);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[256];

	(void)cls;
	if (!verbose)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	verbose_msg("http: %s", buf);
}

/* The listening socket, bound here so that a bad address fails with its reason. */
static int listen_socket(struct mm_opts *opts)
{
	int fd = socket(opts->listen_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd < 0) {
		err_msg("--listen %s: socket: %s", opts->listen, strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (opts->listen_addr.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&opts->listen_addr, opts->listen_addr_len) != 0 ||
	    listen(fd, 128) != 0) {
		err_msg("--listen %s: %s", opts->listen, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void on_interval(struct session *s, int index, double t0, double t1)
{
	(void)s;
	(void)index;
	(void)t0;
	(void)t1;
	/* Processes that live less than a scrape interval still get their label (cgroup) and
	 * are removed from the maps once gone. */
	pthread_mutex_lock(&srv.lock);
	labels_pass();
	pthread_mutex_unlock(&srv.lock);
}

static int run_serve(struct mm_opts *opts)
{
	struct session_config cfg = {
		.events = 1u << EV_FAULT_ENTRY | 1u << EV_FAULT_DONE | 1u << EV_TLB_FLUSH |
			  1u << EV_SWITCH | 1u << EV_SWITCH_FLUSH | 1u << EV_TLBIE |
			  1u << EV_HCALL | 1u << EV_ARM64_TLBI,
		.procs = opts->labels != LABELS_NONE,
		.procs_live = true,
		.tlb_detail = opts->labels != LABELS_NONE,
		.switch_procs = opts->labels != LABELS_NONE,
		.tlb_reasons = true,
	};
	struct MHD_Daemon *d = NULL;
	sigset_t block, old;
	struct sockaddr_storage bound = {0};
	socklen_t blen = sizeof(bound);
	char host[NI_MAXHOST], port[NI_MAXSERV];
	struct utsname u;
	int fd, status = 1;

	memset(&srv, 0, sizeof(srv));
	pthread_mutex_init(&srv.lock, NULL);
	if (series_init(&srv.series, opts->labels, opts->max_series ? opts->max_series : 1)) {
		err_msg("serve: out of memory");
		return 1;
	}
	if (opts->labels == LABELS_CGROUP)
		srv.series.resolve = cgroup_of;
	if (uname(&u) == 0)
		snprintf(srv.kernel, sizeof(srv.kernel), "%s", u.release);
	fd = listen_socket(opts);
	if (fd < 0) {
		series_free(&srv.series);
		return 1;
	}
	/* The HTTP thread leaves SIGINT/SIGTERM to the main thread's session loop. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
				     (opts->listen_addr.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0) |
				     MHD_USE_ERROR_LOG,
			     0, NULL, NULL, on_request, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)256,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
			     MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!d) {
		err_msg("serve: cannot start the HTTP server on %s", opts->listen);
		close(fd);
		series_free(&srv.series);
		return 1;
	}
	/* Intervals: the once-a-second --labels pass (-i itself is refused for serve). */
	if (opts->labels)
		opts->interval = opts->duration && opts->duration < 1 ? opts->duration : 1;
	if (session_open(&srv.s, opts, &cfg))
		goto out;
	/* Read here, not in the HTTP thread: the target, the hooks, the reason names. Nothing
	 * the pages show of it changes while the run goes on. */
	session_result(&srv.s, &srv.res);
	srv.start_time = srv.s.wall_start;
	__atomic_store_n(&srv.tracing, true, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&srv.lock);
	srv.session_ok = true;
	pthread_mutex_unlock(&srv.lock);
	if (getsockname(fd, (struct sockaddr *)&bound, &blen) == 0 &&
	    getnameinfo((struct sockaddr *)&bound, blen, host, sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		fprintf(stderr, "mmscope serve: serving http://%s%s%s:%s/metrics\n",
			bound.ss_family == AF_INET6 ? "[" : "", host,
			bound.ss_family == AF_INET6 ? "]" : "", port);
	session_run(&srv.s, opts->labels ? on_interval : NULL);
	__atomic_store_n(&srv.tracing, false, __ATOMIC_SEQ_CST);
	/* Targets gone: the final counts stay readable until SIGTERM or -d. */
	session_linger(&srv.s);
	status = 0;
out:
	MHD_stop_daemon(d); /* closes the listening socket too */
	pthread_mutex_lock(&srv.lock);
	srv.session_ok = false;
	pthread_mutex_unlock(&srv.lock);
	series_free(&srv.series);
	return session_close(&srv.s, status);
}

#endif /* MMSCOPE_NO_SERVE */

const struct command cmd_serve = {
	.name = "serve",
	.summary = "Serve the counters to Prometheus at http://127.0.0.1:9890/metrics.\n"
		   "Faults by class, TLB flushes by reason and kind, context switches, lost\n"
		   "events, fault latency and pages-per-flush histograms; until SIGTERM.",
	.help = "Scrapes get the Prometheus text format 0.0.4, or OpenMetrics 1.0.0 when their\n"
		"Accept header asks for it. Counters run from the start of serve and never go\n"
		"down. Only loopback addresses unless --allow-remote: the metrics name the\n"
		"processes of this host.\n"
		"Without a target, the whole host until SIGTERM/SIGINT (or -d). With -p or\n"
		"-- COMMAND, when the targets end the hooks are detached and the final counts\n"
		"stay served (mmscope_tracing 0) until SIGTERM/SIGINT or -d; then the exit status\n"
		"is the command's.\n"
		"\nExamples:\n"
		"  mmscope serve                              # whole host on 127.0.0.1:9890\n"
		"  mmscope serve --labels comm --max-series 50\n"
		"  mmscope serve --listen [::1]:9890 -c /sys/fs/cgroup/system.slice\n"
		"  mmscope serve --listen 10.0.0.5:9890 --allow-remote\n",
	.flags = CMD_TRACES | CMD_SERVE,
	.traces = "page faults, TLB invalidations and context switches",
	.run = run_serve,
};
