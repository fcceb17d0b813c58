// SPDX-License-Identifier: GPL-2.0
/* Built-in BTF: xz images become memory files; corrupt ones are refused. */
#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"
#include "core/btf.h"

static size_t compress(const unsigned char *in, size_t len, unsigned char *out, size_t cap)
{
	size_t pos = 0;

	if (lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, in, len, out, &pos, cap) != LZMA_OK)
		return 0;
	return pos;
}

static void roundtrip(void)
{
	size_t n = 200000, clen;
	unsigned char *in = malloc(n), *xz = malloc(n + 4096), *back = malloc(n + 1);
	int fd;

	for (size_t i = 0; i < n; i++)
		in[i] = (unsigned char)(i * 2654435761u >> 13);
	clen = compress(in, n, xz, n + 4096);
	EXPECT(clen > 0);
	fd = btf_xz_to_memfd(xz, clen);
	EXPECT(fd >= 0);
	if (fd >= 0) {
		EXPECT_EQ_U64(pread(fd, back, n + 1, 0), n);
		EXPECT(memcmp(in, back, n) == 0);
		close(fd);
	}
	free(in);
	free(xz);
	free(back);
}

static void corrupt(void)
{
	unsigned char junk[64] = "not xz at all";
	unsigned char in[4096] = {1, 2, 3}, xz[8192];
	size_t clen = compress(in, sizeof(in), xz, sizeof(xz));

	EXPECT(btf_xz_to_memfd(junk, sizeof(junk)) == -EINVAL);
	EXPECT(btf_xz_to_memfd(xz, clen / 2) == -EINVAL); /* truncated */
	xz[clen / 2] ^= 0x55;				  /* flipped: the CRC catches it */
	EXPECT(btf_xz_to_memfd(xz, clen) == -EINVAL);
	EXPECT(btf_xz_to_memfd(NULL, 0) == -EINVAL);
}

static void host_has_its_own(void)
{
	const char *what = "x";

	/* On a kernel with /sys/kernel/btf/vmlinux nothing built in is used. */
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0) {
		EXPECT(btf_auto_path(&what) == NULL);
		EXPECT(what == NULL);
	}
	EXPECT(btf_builtin_list() != NULL);
}

TEST_MAIN(T(roundtrip), T(corrupt), T(host_has_its_own))
