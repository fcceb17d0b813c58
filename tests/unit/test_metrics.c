// SPDX-License-Identifier: GPL-2.0
/* The exposition formats: escaping, negotiation, families, histograms; --listen parsing. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>

#include "test.h"
#include "out/metrics.h"
#include "cmd/opts.h"
#include "out/serve_series.h"

static void escape_label_values(void)
{
	struct mbuf b = {0};

	metrics_escape_label(&b, "plain", 5);
	EXPECT_STREQ(b.p, "plain");
	b.len = 0;
	metrics_escape_label(&b, "a\"b\\c\nd", 7);
	EXPECT_STREQ(b.p, "a\\\"b\\\\c\\nd");
	b.len = 0;
	/* invalid UTF-8 (0xff, a lone continuation byte, a truncated sequence) and controls */
	metrics_escape_label(&b, "x\xff\x80y\xe2\x82", 6);
	EXPECT_STREQ(b.p, "x\xef\xbf\xbd\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbd");
	b.len = 0;
	metrics_escape_label(&b, "t\tr\r\x7f", 5);
	EXPECT_STREQ(b.p, "t\xef\xbf\xbdr\xef\xbf\xbd\xef\xbf\xbd");
	b.len = 0;
	/* valid multi-byte UTF-8 stays; stops at NUL inside the length (a comm buffer) */
	metrics_escape_label(&b, "\xc3\xa9t\xc3\xa9\0junk", 10);
	EXPECT_STREQ(b.p, "\xc3\xa9t\xc3\xa9");
	mbuf_free(&b);
}

static void negotiate(void)
{
	EXPECT(metrics_negotiate(NULL) == METRICS_TEXT);
	EXPECT(metrics_negotiate("*/*") == METRICS_TEXT);
	EXPECT(metrics_negotiate("text/plain;version=0.0.4") == METRICS_TEXT);
	/* what Prometheus 2.x sends */
	EXPECT(metrics_negotiate("application/openmetrics-text;version=1.0.0,application/"
				 "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
				 "q=0.5,*/*;q=0.1") == METRICS_OPENMETRICS);
	EXPECT(metrics_negotiate("application/openmetrics-text;q=0,text/plain") == METRICS_TEXT);
	EXPECT(metrics_negotiate("application/openmetrics-text; q=0.0") == METRICS_TEXT);
	EXPECT(metrics_negotiate("application/openmetrics-text;q=0.05") == METRICS_OPENMETRICS);
	EXPECT_STREQ(metrics_content_type(METRICS_OPENMETRICS),
		     "application/openmetrics-text; version=1.0.0; charset=utf-8");
	EXPECT_STREQ(metrics_content_type(METRICS_TEXT),
		     "text/plain; version=0.0.4; charset=utf-8");
}

static void families_per_format(void)
{
	struct metrics_writer t = {.fmt = METRICS_TEXT}, o = {.fmt = METRICS_OPENMETRICS};

	metrics_family(&t, "mmscope_x", "counter", NULL, "Help.");
	metrics_sample(&t, "mmscope_x", "_total", 7, LABELS("k", "v"));
	metrics_family(&t, "mmscope_b", "info", NULL, "Info.");
	metrics_sample(&t, "mmscope_b", "_info", 1, LABELS("a", "1", "b", "q\""));
	metrics_end(&t);
	EXPECT_STREQ(t.b.p, "# HELP mmscope_x_total Help.\n"
			    "# TYPE mmscope_x_total counter\n"
			    "mmscope_x_total{k=\"v\"} 7\n"
			    "# HELP mmscope_b_info Info.\n"
			    "# TYPE mmscope_b_info gauge\n"
			    "mmscope_b_info{a=\"1\",b=\"q\\\"\"} 1\n");
	metrics_family(&o, "mmscope_x", "counter", NULL, "Help.");
	metrics_sample(&o, "mmscope_x", "_total", 7, NULL);
	metrics_family(&o, "mmscope_l_seconds", "histogram", "seconds", "Lat.");
	metrics_end(&o);
	EXPECT_STREQ(o.b.p, "# TYPE mmscope_x counter\n"
			    "# HELP mmscope_x Help.\n"
			    "mmscope_x_total 7\n"
			    "# TYPE mmscope_l_seconds histogram\n"
			    "# UNIT mmscope_l_seconds seconds\n"
			    "# HELP mmscope_l_seconds Lat.\n"
			    "# EOF\n");
	mbuf_free(&t.b);
	mbuf_free(&o.b);
}

static void histogram_buckets(void)
{
	struct metrics_writer t = {.fmt = METRICS_TEXT}, o = {.fmt = METRICS_OPENMETRICS};
	uint64_t slots[MMSCOPE_HIST_SLOTS] = {0};

	slots[0] = 1;  /* 0-1 ns */
	slots[2] = 2;  /* 4-7 ns */
	slots[40] = 5; /* beyond the buckets kept: only in +Inf */
	metrics_histogram(&t, "h_seconds", slots, 3, 1e-9, NULL, "result", "minor");
	EXPECT_STREQ(t.b.p, "h_seconds_bucket{result=\"minor\",le=\"1e-09\"} 1\n"
			    "h_seconds_bucket{result=\"minor\",le=\"3e-09\"} 1\n"
			    "h_seconds_bucket{result=\"minor\",le=\"7e-09\"} 3\n"
			    "h_seconds_bucket{result=\"minor\",le=\"+Inf\"} 8\n"
			    "h_seconds_count{result=\"minor\"} 8\n");
	/* OpenMetrics: no _count without a _sum */
	metrics_histogram(&o, "p", slots, 2, 1, NULL, NULL, NULL);
	EXPECT_STREQ(o.b.p, "p_bucket{le=\"1\"} 1\n"
			    "p_bucket{le=\"3\"} 1\n"
			    "p_bucket{le=\"+Inf\"} 8\n");
	/* with the kernel's sum (ns), scaled to the buckets' unit; then _count, in both */
	mbuf_free(&o.b);
	memset(&o.b, 0, sizeof(o.b));
	metrics_histogram(&o, "s_seconds", slots, 1, 1e-9, &(const uint64_t){1500000000}, "result",
			  "major");
	EXPECT_STREQ(o.b.p, "s_seconds_bucket{result=\"major\",le=\"1e-09\"} 1\n"
			    "s_seconds_bucket{result=\"major\",le=\"+Inf\"} 8\n"
			    "s_seconds_sum{result=\"major\"} 1.5\n"
			    "s_seconds_count{result=\"major\"} 8\n");
	mbuf_free(&t.b);
	mbuf_free(&o.b);
}

static void listen_addresses(void)
{
	struct sockaddr_storage a;
	socklen_t len;
	bool lo;

	EXPECT(parse_listen("127.0.0.1:9890", &a, &len, &lo) == 0 && lo);
	EXPECT(a.ss_family == AF_INET && ntohs(((struct sockaddr_in *)&a)->sin_port) == 9890);
	EXPECT(parse_listen("127.1.2.3:0", &a, &len, &lo) == 0 && lo);
	EXPECT(parse_listen("localhost:80", &a, &len, &lo) == 0 && lo);
	EXPECT(parse_listen("[::1]:9890", &a, &len, &lo) == 0 && lo && a.ss_family == AF_INET6);
	EXPECT(parse_listen("[::ffff:127.0.0.1]:1", &a, &len, &lo) == 0 && lo);
	EXPECT(parse_listen("0.0.0.0:9890", &a, &len, &lo) == 0 && !lo);
	EXPECT(parse_listen("10.0.0.5:9890", &a, &len, &lo) == 0 && !lo);
	EXPECT(parse_listen("[::]:9890", &a, &len, &lo) == 0 && !lo);
	EXPECT(parse_listen("127.0.0.1", &a, &len, &lo) == -1);
	EXPECT(parse_listen("127.0.0.1:", &a, &len, &lo) == -1);
	EXPECT(parse_listen(":80", &a, &len, &lo) == -1);
	EXPECT(parse_listen("127.0.0.1:65536", &a, &len, &lo) == -1);
	EXPECT(parse_listen("127.0.0.1:-1", &a, &len, &lo) == -1);
	EXPECT(parse_listen("example.com:80", &a, &len, &lo) == -1);
	EXPECT(parse_listen("::1:80", &a, &len, &lo) == -1);
	EXPECT(parse_listen("[::1:80", &a, &len, &lo) == -1);
	EXPECT(parse_listen("[]:80", &a, &len, &lo) == -1);
}

static void series_rows(void)
{
	struct series_table t;
	static const int f[] = {SF_FAULT_USER};
	uint64_t v;

	EXPECT(series_init(&t, LABELS_COMM, 2) == 0);
	v = 10;
	series_update(&t, 100, "a", f, &v, 1);
	v = 15;
	series_update(&t, 100, "a", f, &v, 1); /* +5 */
	EXPECT_EQ_U64(t.rows[0].v[SF_FAULT_USER], 15);
	v = 20;
	series_update(&t, 100, "b", f, &v, 1); /* exec'ed: +5 goes to b, a keeps 15 */
	EXPECT_EQ_U64(t.rows[0].v[SF_FAULT_USER], 15);
	EXPECT_EQ_U64(t.rows[1].v[SF_FAULT_USER], 5);
	v = 7;
	series_update(&t, 200, "c", f, &v, 1); /* over the cap of 2: __other__ */
	EXPECT(t.capped);
	EXPECT_STREQ(t.rows[2].value, SERIES_OTHER);
	EXPECT_EQ_U64(t.rows[2].v[SF_FAULT_USER], 7);
	series_forget(&t, 100);
	v = 3;
	series_update(&t, 100, "a", f, &v, 1); /* a new process under the pid: from zero */
	EXPECT_EQ_U64(t.rows[0].v[SF_FAULT_USER], 18);
	v = 1;
	series_update(&t, 100, "a", f, &v, 1); /* below the last read: counted from zero */
	EXPECT_EQ_U64(t.rows[0].v[SF_FAULT_USER], 19);
	series_free(&t);
}

TEST_MAIN(T(escape_label_values), T(negotiate), T(families_per_format), T(histogram_buckets),
	  T(listen_addresses), T(series_rows))
