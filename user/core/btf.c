// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/btf.h"
#include "btf_builtin.h" /* generated: struct builtin_btf builtin_btfs[] */

/* More than any vmlinux BTF (a few MB): a bound on what a corrupt archive can make us write. */
#define BTF_MAX_SIZE (256u << 20)

int btf_xz_to_memfd(const void *xz, size_t len)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	unsigned char out[65536];
	size_t total = 0;
	lzma_ret ret;
	int fd;

	fd = memfd_create("mmscope-btf", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (lzma_stream_decoder(&strm, UINT64_MAX, 0) != LZMA_OK) {
		close(fd);
		return -ENOMEM;
	}
	strm.next_in = xz;
	strm.avail_in = len;
	do {
		strm.next_out = out;
		strm.avail_out = sizeof(out);
		ret = lzma_code(&strm, LZMA_FINISH);
		if (ret != LZMA_OK && ret != LZMA_STREAM_END)
			break;
		size_t n = sizeof(out) - strm.avail_out;

		total += n;
		if (total > BTF_MAX_SIZE || (n && write(fd, out, n) != (ssize_t)n)) {
			ret = LZMA_DATA_ERROR;
			break;
		}
	} while (ret != LZMA_STREAM_END);
	lzma_end(&strm);
	if (ret != LZMA_STREAM_END) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

const char *btf_builtin_list(void)
{
	static char buf[512];
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(builtin_btfs) / sizeof(builtin_btfs[0]); i++) {
		if (!builtin_btfs[i].release)
			continue;
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s", used ? ", " : "",
					 builtin_btfs[i].release);
		if (used >= sizeof(buf))
			break;
	}
	return buf[0] ? buf : "none";
}

const char *btf_auto_path(const char **what)
{
	static char path[64];
	static int fd = -1;
	struct utsname u;

	*what = NULL;
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		return NULL;
	if (fd >= 0)
		return path;
	uname(&u);
	for (size_t i = 0; i < sizeof(builtin_btfs) / sizeof(builtin_btfs[0]); i++) {
		const struct builtin_btf *b = &builtin_btfs[i];

		if (!b->release || strcmp(b->release, u.release) != 0)
			continue;
		fd = btf_xz_to_memfd(b->start, (size_t)(b->end - b->start));
		if (fd < 0)
			return NULL;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		*what = b->release;
		return path;
	}
	return NULL;
}
