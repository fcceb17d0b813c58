// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/util.h"

int verbose;

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "mmscope: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void err_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void warn_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void verbose_msg(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

bool parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return false;
	/* Decimal only: strtod alone would also take "0x10", "inf" and leading blanks. */
	if (strspn(s, "0123456789.eE+-") != strlen(s) || !(isdigit((unsigned char)*s) || *s == '.'))
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v <= 0 || v > 1e9)
		return false;
	*out = v;
	return true;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

double wall_time_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void format_clock(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

int atomic_file_open(struct atomic_file *af, const char *path)
{
	size_t n = strlen(path) + 16;
	int fd;

	memset(af, 0, sizeof(*af));
	af->path = strdup(path);
	af->tmp_path = malloc(n);
	if (!af->path || !af->tmp_path)
		goto nomem;
	snprintf(af->tmp_path, n, "%s.tmp.XXXXXX", path);
	fd = mkstemp(af->tmp_path);
	if (fd < 0) {
		int e = errno;

		free(af->path);
		free(af->tmp_path);
		memset(af, 0, sizeof(*af));
		return -e;
	}
	fchmod(fd, 0644);
	af->f = fdopen(fd, "w");
	if (!af->f) {
		close(fd);
		unlink(af->tmp_path);
		goto nomem;
	}
	return 0;
nomem:
	free(af->path);
	free(af->tmp_path);
	memset(af, 0, sizeof(*af));
	return -ENOMEM;
}

int atomic_file_commit(struct atomic_file *af)
{
	int ret = 0;

	if (!af->f)
		return -EINVAL;
	if (fflush(af->f) || fsync(fileno(af->f)))
		ret = -errno;
	if (fclose(af->f) && !ret)
		ret = -errno;
	af->f = NULL;
	if (!ret && rename(af->tmp_path, af->path))
		ret = -errno;
	if (ret)
		unlink(af->tmp_path);
	free(af->path);
	free(af->tmp_path);
	af->path = af->tmp_path = NULL;
	return ret;
}

void atomic_file_abort(struct atomic_file *af)
{
	if (af->f) {
		fclose(af->f);
		unlink(af->tmp_path);
	}
	free(af->path);
	free(af->tmp_path);
	memset(af, 0, sizeof(*af));
}

long read_small_file(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	if (size == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	buf[n] = '\0';
	return n;
}

int parse_cpu_list(const char *s, uint64_t *mask, unsigned int nbits)
{
	const char *p = s;

	if (!s || !*s)
		return -EINVAL;
	while (*p) {
		unsigned long lo, hi;
		char *end;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		lo = strtoul(p, &end, 10);
		hi = lo;
		if (*end == '-') {
			p = end + 1;
			if (*p < '0' || *p > '9')
				return -EINVAL;
			hi = strtoul(p, &end, 10);
		}
		if (hi < lo)
			return -EINVAL;
		if (hi >= nbits)
			return -ERANGE;
		for (unsigned long c = lo; c <= hi; c++)
			mask[c / 64] |= 1ULL << (c % 64);
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			return -EINVAL;
	}
	return 0;
}

int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}
