/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libFuzzer target for what serve takes from outside: label values (a comm or cgroup path is
 * chosen by whoever runs the process), the scraper's Accept header, and --listen.
 *
 * A label value must come out as one quoted-string body of the exposition formats: only
 * well-formed UTF-8 (checked by assembling code points, tests/common/utf8_oracle.c, not by
 * escape.c), no raw newline, no control byte, every '"' and '\' escaped; and unescaping it must
 * give the input back, with U+FFFD where the input had a control byte or a byte of invalid UTF-8.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "out/metrics.h"
#include "cmd/opts.h"
#include "fuzz_check.h"
#include "utf8_oracle.h"

static void label(const uint8_t *data, size_t size)
{
	static const char fffd[] = "\xef\xbf\xbd";
	struct mbuf b = {0};
	size_t len = strnlen((const char *)data, size), i = 0, j = 0;

	metrics_escape_label(&b, (const char *)data, size);
	CHECK(!b.failed);
	if (!b.p) {
		CHECK(len == 0);
		return;
	}
	CHECK(strlen(b.p) == b.len);
	/* walk the output and the input together */
	while (i < b.len) {
		const unsigned char *o = (const unsigned char *)b.p + i;
		size_t n = oracle_utf8_char(o, b.len - i);

		CHECK(n > 0);
		CHECK(o[0] >= 0x20 && o[0] != 0x7f && o[0] != '"');
		CHECK(j < len);
		if (o[0] == '\\') {
			CHECK(i + 1 < b.len);
			CHECK(o[1] == '\\' || o[1] == '"' || o[1] == 'n');
			CHECK(data[j] == (o[1] == 'n' ? '\n' : o[1]));
			i += 2;
			j++;
		} else if (n == 3 && memcmp(o, fffd, 3) == 0 &&
			   (data[j] < 0x20 || data[j] == 0x7f ||
			    oracle_utf8_char(data + j, len - j) == 0)) {
			i += 3;
			j++; /* one replacement per bad byte */
		} else {
			CHECK(j + n <= len && memcmp(o, data + j, n) == 0);
			i += n;
			j += n;
		}
	}
	CHECK(j == len);
	mbuf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct sockaddr_storage a;
	socklen_t alen;
	bool lo;
	enum metrics_format f;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	label(data, size);
	f = metrics_negotiate(s);
	CHECK(f == METRICS_TEXT || f == METRICS_OPENMETRICS);
	if (parse_listen(s, &a, &alen, &lo) == 0)
		CHECK(alen <= sizeof(a) && (a.ss_family == AF_INET || a.ss_family == AF_INET6));
	free(s);
	return 0;
}
