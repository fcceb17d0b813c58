/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tests of user/sym/sym.c. Run from the repository root (fixtures are found relative to it), as
 * root: usyms_add_pid() reads /proc/PID/map_files, which needs CAP_SYS_ADMIN.
 *
 * User symbolization is checked against the test binary itself: the file offset of a known
 * function is computed here from /proc/self/maps, independently of sym.c, and the build ID
 * from the raw bytes of the file.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sym/sym.h"
#include "test.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FIXTURES "tests/unit/fixtures/sym/"

/* The function symbolized in the tests: not inlined, and longer than 5 bytes. */
__attribute__((noinline, used)) int sym_test_target(int n)
{
	volatile int acc = 0;

	for (int i = 0; i < n; i++)
		acc += i * 3;
	return acc;
}

static unsigned char *read_all(const char *path, size_t *len)
{
	unsigned char *buf = NULL;
	size_t cap = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*len = 0;
	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t r;

		if (*len == cap) {
			unsigned char *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb)
				break;
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		r = read(fd, buf + *len, cap - *len);
		if (r <= 0)
			break;
		*len += (size_t)r;
	}
	close(fd);
	return buf;
}

static bool write_all(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, buf, len) == (ssize_t)len;
	close(fd);
	return ok;
}

/* File offset and path of the mapping holding addr, from /proc/self/maps. */
static bool self_file_offset(uint64_t addr, uint64_t *off, char *path, size_t path_size)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long start, end, pgoff;
		int pos = 0;

		if (sscanf(line, "%lx-%lx %*4s %lx %*s %*s %n", &start, &end, &pgoff, &pos) < 3)
			continue;
		if (addr < start || addr >= end)
			continue;
		*off = pgoff + (addr - start);
		if (path) {
			snprintf(path, path_size, "%s", line + pos);
			path[strcspn(path, "\n")] = '\0';
		}
		found = true;
	}
	fclose(f);
	return found;
}

/* The GNU build-ID note found by scanning bytes, without any ELF parsing. */
static bool scan_build_id(const unsigned char *buf, size_t len, unsigned char id[20])
{
	static const unsigned char hdr[16] = {4, 0, 0, 0, 20,  0,   0,	 0,
					      3, 0, 0, 0, 'G', 'N', 'U', 0};

	for (size_t i = 0; i + sizeof(hdr) + 20 <= len; i += 4) {
		if (!memcmp(buf + i, hdr, sizeof(hdr))) {
			memcpy(id, buf + i + sizeof(hdr), 20);
			return true;
		}
	}
	return false;
}

static bool file_build_id(const char *path, unsigned char id[SYM_BUILD_ID_SIZE])
{
	size_t len;
	unsigned char *buf = read_all(path, &len);
	int r;

	memset(id, 0, SYM_BUILD_ID_SIZE);
	r = buf ? elf_build_id_from_mem(buf, len, id, SYM_BUILD_ID_SIZE) : -1;
	free(buf);
	return r > 0;
}

static uint64_t target_addr(void)
{
	return (uint64_t)(uintptr_t)&sym_test_target;
}

/* ---------------------------------------------------------------------------------------- */

static void ksyms_fixture(void)
{
	struct ksyms *ks = ksyms_load(FIXTURES "kallsyms");
	uint64_t off = 99;

	EXPECT(ks != NULL);
	if (!ks)
		return;
	/* Aliases at one address: the first global one. */
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffff81000000ULL, &off), "_stext");
	EXPECT_EQ_U64(off, 0);
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffff81000010ULL, &off), "_stext");
	EXPECT_EQ_U64(off, 0x10);
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffff81001050ULL, &off), "do_one_initcall");
	EXPECT_EQ_U64(off, 0x50);
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffff81001190ULL, &off), "dup_name");
	EXPECT_EQ_U64(off, 0x10);
	/* Data symbols (D, r, b) are not boundaries: the function before extends over them. */
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffff81001300ULL, &off), "local_helper");
	EXPECT_EQ_U64(off, 0x100);
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffff81001500ULL, &off), "weak_fn");
	EXPECT_EQ_U64(off, 0x100);
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffff81003000ULL, &off), "_etext");
	EXPECT_EQ_U64(off, 0x1000);
	/* Module symbols, listed out of order, with the module suffix dropped. */
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffffc0a00000ULL, &off), "xfs_mod_init");
	EXPECT_EQ_U64(off, 0);
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffffc0a00150ULL, &off), "xfs_file_read_iter");
	EXPECT_EQ_U64(off, 0x50);
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffffc0b00010ULL, &off),
		     "bpf_prog_6deef7357e7b4530_sd_fw_ingress");
	EXPECT_EQ_U64(off, 0x10);
	/* Reach capped at 1 MiB: the lines with control characters were rejected. */
	EXPECT(ksyms_resolve(ks, 0xffffffffc0bfffffULL, &off) != NULL);
	EXPECT(ksyms_resolve(ks, 0xffffffffc0c00000ULL, &off) == NULL);
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffffc0c00010ULL + 0xfffff, &off), "last_weak");
	EXPECT(ksyms_resolve(ks, 0xffffffffc0c00010ULL + 0x100000, &off) == NULL);
	EXPECT(ksyms_resolve(ks, 0xffffffff80ffffffULL, &off) == NULL);
	EXPECT(ksyms_resolve(ks, 0, NULL) == NULL);
	EXPECT(ksyms_resolve(ks, UINT64_MAX, NULL) == NULL);
	EXPECT_STREQ(ksyms_resolve(ks, 0xffffffff81001001ULL, NULL), "do_one_initcall");

	EXPECT_EQ_U64(ksyms_addr(ks, "do_one_initcall"), 0xffffffff81001000ULL);
	EXPECT_EQ_U64(ksyms_addr(ks, "_text"), 0xffffffff81000000ULL);
	EXPECT_EQ_U64(ksyms_addr(ks, "srso_alias_untrain_ret"), 0xffffffff81000000ULL);
	EXPECT_EQ_U64(ksyms_addr(ks, "dup_name"), 0xffffffff81001100ULL);
	EXPECT_EQ_U64(ksyms_addr(ks, "xfs_file_read_iter"), 0xffffffffc0a00100ULL);
	EXPECT_EQ_U64(ksyms_addr(ks, "last_weak"), 0xffffffffc0c00010ULL);
	EXPECT_EQ_U64(ksyms_addr(ks, "some_data"), 0);
	EXPECT_EQ_U64(ksyms_addr(ks, "xfs_bss"), 0);
	EXPECT_EQ_U64(ksyms_addr(ks, "bad_hex"), 0);
	EXPECT_EQ_U64(ksyms_addr(ks, "missing_addr"), 0);
	EXPECT_EQ_U64(ksyms_addr(ks, "too_many_digits"), 0);
	EXPECT_EQ_U64(ksyms_addr(ks, "two_char_type"), 0);
	EXPECT_EQ_U64(ksyms_addr(ks, "with_ctrl"), 0);
	EXPECT_EQ_U64(ksyms_addr(ks, "[xfs]"), 0);
	EXPECT_EQ_U64(ksyms_addr(ks, ""), 0);
	EXPECT_EQ_U64(ksyms_addr(ks, NULL), 0);
	ksyms_free(ks);
}

static void ksyms_errors(void)
{
	errno = 0;
	EXPECT(ksyms_load(FIXTURES "kallsyms_zero") == NULL);
	EXPECT_EQ_U64(errno, EACCES);
	errno = 0;
	EXPECT(ksyms_load(FIXTURES "kallsyms_garbage") == NULL);
	EXPECT_EQ_U64(errno, ENODATA);
	errno = 0;
	EXPECT(ksyms_load(FIXTURES "does_not_exist") == NULL);
	EXPECT_EQ_U64(errno, ENOENT);
	errno = 0;
	EXPECT(ksyms_load("/dev/null") == NULL);
	EXPECT_EQ_U64(errno, ENODATA);
	EXPECT(ksyms_load(NULL) == NULL);
	EXPECT(ksyms_resolve(NULL, 1, NULL) == NULL);
	EXPECT_EQ_U64(ksyms_addr(NULL, "x"), 0);
	ksyms_free(NULL);
}

static void ksyms_proc(void)
{
	struct ksyms *ks = ksyms_load("/proc/kallsyms");
	uint64_t a, off = 1;

	if (!ks) {
		/* Not root, or kptr_restrict=2: the error must say so. */
		EXPECT_EQ_U64(errno, EACCES);
		return;
	}
	a = ksyms_addr(ks, "do_sys_openat2");
	EXPECT(a != 0);
	EXPECT_STREQ(ksyms_resolve(ks, a, &off), "do_sys_openat2");
	EXPECT_EQ_U64(off, 0);
	EXPECT_STREQ(ksyms_resolve(ks, a + 3, &off), "do_sys_openat2");
	EXPECT_EQ_U64(off, 3);
	ksyms_free(ks);
}

/* ---------------------------------------------------------------------------------------- */

static void build_id_self(void)
{
	unsigned char id[SYM_BUILD_ID_SIZE], scanned[20], small[8];
	size_t len;
	unsigned char *buf = read_all("/proc/self/exe", &len);

	EXPECT(buf != NULL);
	if (!buf)
		return;
	EXPECT(scan_build_id(buf, len, scanned));
	EXPECT_EQ_U64(elf_build_id_from_mem(buf, len, id, sizeof(id)), 20);
	EXPECT(!memcmp(id, scanned, 20));
	EXPECT_EQ_U64(elf_build_id_from_mem(buf, len, small, sizeof(small)), (uint64_t)-ENOSPC);
	/* The notes sit in the first page: a prefix still has them. */
	memset(id, 0, sizeof(id));
	EXPECT_EQ_U64(elf_build_id_from_mem(buf, 4096, id, sizeof(id)), 20);
	EXPECT(!memcmp(id, scanned, 20));
	free(buf);
}

static void build_id_garbage(void)
{
	unsigned char id[64], junk[512];
	size_t len;
	unsigned char *buf = read_all("/proc/self/exe", &len);
	unsigned int seed = 1;

	EXPECT(elf_build_id_from_mem(NULL, 0, id, sizeof(id)) < 0);
	EXPECT(elf_build_id_from_mem("", 0, id, sizeof(id)) < 0);
	EXPECT(elf_build_id_from_mem("\177ELF", 4, id, sizeof(id)) < 0);
	EXPECT(elf_build_id_from_mem("\177ELF", 4, NULL, 0) < 0);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 7 + 3);
	EXPECT(elf_build_id_from_mem(junk, sizeof(junk), id, sizeof(id)) < 0);
	memcpy(junk, "\177ELF\2\1\1", 7);
	EXPECT(elf_build_id_from_mem(junk, sizeof(junk), id, sizeof(id)) < 0);
	EXPECT(buf != NULL);
	if (!buf)
		return;
	/* Cut inside the ELF header and inside the program headers. */
	EXPECT(elf_build_id_from_mem(buf, 52, id, sizeof(id)) < 0);
	EXPECT(elf_build_id_from_mem(buf, 64, id, sizeof(id)) < 0);
	EXPECT(elf_build_id_from_mem(buf, 200, id, sizeof(id)) < 0);
	/* Random corruption of the headers: any answer, but no crash (ASan watches). */
	for (int round = 0; round < 3000 && len >= 8192; round++) {
		unsigned char *copy = malloc(8192);

		if (!copy)
			break;
		memcpy(copy, buf, 8192);
		for (int k = 0; k < 1 + round % 8; k++) {
			size_t at = (size_t)rand_r(&seed) % (round % 2 ? 64 : 8192);

			copy[at] = (unsigned char)rand_r(&seed);
		}
		(void)elf_build_id_from_mem(copy, 1 + (size_t)rand_r(&seed) % 8192, id, sizeof(id));
		free(copy);
	}
	free(buf);
}

static void resolve_self_build_id(void)
{
	unsigned char id[SYM_BUILD_ID_SIZE], unknown[SYM_BUILD_ID_SIZE] = {1, 2, 3};
	struct usyms *us = usyms_new();
	uint64_t off = 0;
	struct usym u;

	EXPECT(us != NULL);
	EXPECT(file_build_id("/proc/self/exe", id));
	EXPECT(self_file_offset(target_addr(), &off, NULL, 0));
	if (!us)
		return;
	EXPECT(!usyms_resolve_build_id(us, id, off, &u));
	EXPECT(u.dso == NULL && u.name == NULL);
	EXPECT_EQ_U64(usyms_add_file(us, "/proc/self/exe"), 0);
	EXPECT_EQ_U64(usyms_add_file(us, "/proc/self/exe"), 0);
	EXPECT(usyms_resolve_build_id(us, id, off, &u));
	EXPECT_STREQ(u.name, "sym_test_target");
	EXPECT_STREQ(u.dso, "/proc/self/exe");
	EXPECT_EQ_U64(u.offset, 0);
	EXPECT(usyms_resolve_build_id(us, id, off + 5, &u));
	EXPECT_STREQ(u.name, "sym_test_target");
	EXPECT_EQ_U64(u.offset, 5);
	/* Known DSO, offset in no segment: the DSO alone. */
	EXPECT(usyms_resolve_build_id(us, id, UINT64_MAX - 10, &u));
	EXPECT_STREQ(u.dso, "/proc/self/exe");
	EXPECT(u.name == NULL);
	EXPECT(!usyms_resolve_build_id(us, unknown, off, &u));
	EXPECT(u.dso == NULL && u.name == NULL);
	EXPECT(!usyms_resolve_build_id(us, NULL, off, &u));
	EXPECT(!usyms_resolve_build_id(us, id, off, NULL));
	usyms_free(us);
}

static void resolve_self_pid(void)
{
	struct usyms *us = usyms_new();
	char exe[PATH_MAX] = "";
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct usym u;

	EXPECT(us != NULL && n > 0);
	if (!us)
		return;
	if (n > 0)
		exe[n] = '\0';
	EXPECT_EQ_U64(usyms_add_pid(us, getpid()), 0);
	EXPECT(usyms_resolve_addr(us, getpid(), target_addr(), &u));
	EXPECT_STREQ(u.name, "sym_test_target");
	EXPECT_STREQ(u.dso, exe);
	EXPECT_EQ_U64(u.offset, 0);
	EXPECT(usyms_resolve_addr(us, getpid(), target_addr() + 5, &u));
	EXPECT_STREQ(u.name, "sym_test_target");
	EXPECT_EQ_U64(u.offset, 5);
	EXPECT(!usyms_resolve_addr(us, getpid(), 0, &u));
	EXPECT(!usyms_resolve_addr(us, getpid() + 1, target_addr(), &u));
	/* Snapshotting again replaces the snapshot and keeps working. */
	EXPECT_EQ_U64(usyms_add_pid(us, getpid()), 0);
	EXPECT(usyms_resolve_addr(us, getpid(), target_addr(), &u));
	EXPECT_STREQ(u.name, "sym_test_target");
	EXPECT_EQ_U64(usyms_add_pid(us, 0), (uint64_t)-EINVAL);
	EXPECT_EQ_U64(usyms_add_pid(us, 0x3ffffff0), (uint64_t)-ESRCH);
	usyms_free(us);
}

/* A snapshot kept under a key of its own (a seeded image's): found by that key, not by the
 * pid, and not replaced by the pid's next snapshot (the pid may be another process's). */
static void resolve_self_pid_as(void)
{
	struct usyms *us = usyms_new();
	struct usym u;

	EXPECT(us != NULL);
	if (!us)
		return;
	EXPECT_EQ_U64(usyms_add_pid_as(us, getpid(), -1), 0);
	EXPECT(usyms_resolve_addr(us, -1, target_addr(), &u));
	EXPECT_STREQ(u.name, "sym_test_target");
	EXPECT(!usyms_resolve_addr(us, getpid(), target_addr(), &u));
	/* The pid's own snapshot, from a maps text with nothing at the target: key -1 keeps its. */
	EXPECT_EQ_U64(usyms_add_maps_text(us, getpid(), "", 0, NULL), 0);
	EXPECT(!usyms_resolve_addr(us, getpid(), target_addr(), &u));
	EXPECT(usyms_resolve_addr(us, -1, target_addr(), &u));
	EXPECT_STREQ(u.name, "sym_test_target");
	EXPECT_EQ_U64(usyms_add_pid_as(us, getpid(), 0), (uint64_t)-EINVAL);
	EXPECT_EQ_U64(usyms_add_pid_as(us, 0x3ffffff0, -2), (uint64_t)-ESRCH);
	EXPECT(!usyms_resolve_addr(us, -2, target_addr(), &u));
	usyms_free(us);
}

static void resolve_libs(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *fn = libc ? dlsym(libc, "getpid") : NULL;
	uint64_t addr = (uint64_t)(uintptr_t)fn, off = 0;
	unsigned char id[SYM_BUILD_ID_SIZE];
	struct usyms *us = usyms_new();
	char path[PATH_MAX];
	struct usym u;

	EXPECT(fn != NULL && us != NULL);
	if (!fn || !us)
		goto out;
	EXPECT_EQ_U64(usyms_add_pid(us, getpid()), 0);
	EXPECT(usyms_resolve_addr(us, getpid(), addr, &u));
	EXPECT(u.name && strstr(u.name, "getpid"));
	EXPECT(u.dso && strstr(u.dso, "libc"));
	EXPECT_EQ_U64(u.offset, 0);
	/* The same through the build ID, as BPF reports it. */
	EXPECT(self_file_offset(addr, &off, path, sizeof(path)));
	EXPECT(file_build_id(path, id));
	EXPECT(usyms_resolve_build_id(us, id, off + 1, &u));
	EXPECT(u.name && strstr(u.name, "getpid"));
	EXPECT_EQ_U64(u.offset, 1);
	/* libelf: its own .dynsym, or its debug file when installed. */
	addr = (uint64_t)(uintptr_t)&elf_version;
	EXPECT(usyms_resolve_addr(us, getpid(), addr, &u));
	EXPECT_STREQ(u.name, "elf_version");
	EXPECT(u.dso && strstr(u.dso, "libelf"));
out:
	usyms_free(us);
	if (libc)
		dlclose(libc);
}

/* Another process: snapshot it alive, resolve after it is gone. */
static void resolve_child(void)
{
	struct usyms *us = usyms_new();
	int status = 0;
	struct usym u;
	pid_t child;

	EXPECT(us != NULL);
	if (!us)
		return;
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	EXPECT(child > 0);
	if (child > 0) {
		EXPECT_EQ_U64(usyms_add_pid(us, child), 0);
		kill(child, SIGKILL);
		EXPECT(waitpid(child, &status, 0) == child);
		/* The address space of a fork is ours: same addresses, same files. */
		EXPECT(usyms_resolve_addr(us, child, target_addr() + 1, &u));
		EXPECT_STREQ(u.name, "sym_test_target");
		EXPECT_EQ_U64(u.offset, 1);
		EXPECT_EQ_U64(usyms_add_pid(us, child), (uint64_t)-ESRCH);
	}
	usyms_free(us);
}

/* The vdso, read from the process's memory. */
static void resolve_vdso(void)
{
	void *vdso = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *fn = vdso ? dlsym(vdso, "__vdso_clock_gettime") : NULL;
	struct usyms *us = usyms_new();
	struct usym u;

	EXPECT(fn != NULL && us != NULL);
	if (fn && us) {
		EXPECT_EQ_U64(usyms_add_pid(us, getpid()), 0);
		EXPECT(usyms_resolve_addr(us, getpid(), (uint64_t)(uintptr_t)fn + 2, &u));
		EXPECT_STREQ(u.dso, "[vdso]");
		EXPECT_STREQ(u.name, "__vdso_clock_gettime");
		EXPECT_EQ_U64(u.offset, 2);
	}
	usyms_free(us);
	if (vdso)
		dlclose(vdso);
}

/* The generated 32/64-bit, little/big-endian files of fixtures/sym (see gen_elf.py). */
static void synthetic_elves(void)
{
	static const char *const files[] = {"elf64le.so", "elf64be.so", "elf32le.so", "elf32be.so"};
	static const struct {
		uint64_t off;
		const char *name;
		uint64_t sym_off;
	} want[] = {
		{0x1000, "func_a", 0},	   {0x103f, "func_a", 0x3f},   {0x1040, "alias_b", 0},
		{0x1050, "alias_b", 0x10}, {0x1060, NULL, 0},	       {0x1070, NULL, 0},
		{0x1080, "sizeless", 0},   {0x10ff, "sizeless", 0x7f}, {0x1100, NULL, 0},
		{0xfff, NULL, 0},
	};

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		unsigned char id[SYM_BUILD_ID_SIZE];
		struct usyms *us = usyms_new();
		char path[256];
		size_t len;
		unsigned char *img;
		struct usym u;

		snprintf(path, sizeof(path), FIXTURES "%s", files[f]);
		img = read_all(path, &len);
		EXPECT(img != NULL && us != NULL);
		if (!img || !us) {
			free(img);
			usyms_free(us);
			continue;
		}
		EXPECT_EQ_U64(elf_build_id_from_mem(img, len, id, sizeof(id)), 20);
		EXPECT_EQ_U64(id[0], f + 1);
		EXPECT_EQ_U64(id[19], 0x13);
		EXPECT_EQ_U64(usyms_add_file(us, path), 0);
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			EXPECT(usyms_resolve_build_id(us, id, want[i].off, &u));
			EXPECT_STREQ(u.dso, path);
			if (want[i].name) {
				EXPECT_STREQ(u.name, want[i].name);
				EXPECT_EQ_U64(u.offset, want[i].sym_off);
			} else {
				EXPECT(u.name == NULL);
			}
			if ((want[i].name == NULL) != (u.name == NULL))
				fprintf(stderr, "  %s +%#" PRIx64 ": %s\n", files[f], want[i].off,
					u.name ? u.name : "(null)");
		}
		free(img);
		usyms_free(us);
	}
}

/* A string table without its final NUL: names are cut at its end, never read past it. */
static void unterminated_strtab(void)
{
	char dir[] = "/tmp/mmscope_sym_XXXXXX", path[PATH_MAX];
	unsigned char id[SYM_BUILD_ID_SIZE];
	struct usyms *us = usyms_new();
	size_t len;
	unsigned char *img = read_all(FIXTURES "elf64le.so", &len);
	unsigned char *at = img ? memmem(img, len, "sizeless", 9) : NULL;
	struct usym u;

	EXPECT(us && at && mkdtemp(dir));
	if (!us || !at || dir[strlen(dir) - 1] == 'X')
		goto out;
	at[8] = 'X';
	snprintf(path, sizeof(path), "%s/unterminated.so", dir);
	EXPECT(write_all(path, img, len));
	EXPECT(elf_build_id_from_mem(img, len, id, sizeof(id)) == 20);
	EXPECT_EQ_U64(usyms_add_file(us, path), 0);
	EXPECT(usyms_resolve_build_id(us, id, 0x1080, &u));
	EXPECT_STREQ(u.name, "sizeless");
	EXPECT(usyms_resolve_build_id(us, id, 0x1000, &u));
	EXPECT_STREQ(u.name, "func_a");
	unlink(path);
out:
	rmdir(dir);
	usyms_free(us);
	free(img);
}

/* ---------------------------------------------------------------------------------------- */

static const char maps_text[] =
	"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
	"garbage\n"
	"00651000-00652000 r--p 00051000 08:02 173521      /usr/bin/dbus-daemon\n"
	"7f0000000000-7f0000001000 r-xp 00000000 08:02 42 /opt/my app/lib with spaces.so\n"
	"7f0000002000-7f0000003000 r-xp 00001000 08:02 43 /usr/lib/libgone.so (deleted)\n"
	"7f0000004000-7f0000005000 rw-p 00000000 00:00 0 \n"
	"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                  [vdso]\n"
	"10000000000000000-10000000001000 r-xp 00000000 08:02 1 /huge\n"
	"20000000-10000000 r-xp 00000000 08:02 1 /reversed\n"
	"30000000-30001000 r-xp\n"
	"30001000-30002000\n"
	"40000000-40001000 rzxp 00000000 08:02 1 /badperm\n"
	"50000000-50001000 r-xp 00000000 08:02 99999999999999999999999 /bigino\n"
	"60000000-60001000 r-xp 00000000 08:02 1 /nul\0byte\n"
	"70000000-70001000 r-xp 00000000 0802 1 /nodevcolon\n"
	"71000000-71001000 r-xp 00000000 08:02 1x /inodejunk\n"
	"\n\n\r\n-\n--\n"
	"80000000-80001000 r-xp 00000000 08:02 1 /no/newline/at/end";

static void maps_text_robust(void)
{
	struct usyms *us = usyms_new();
	const char *old_path;
	struct usym u;

	EXPECT(us != NULL);
	if (!us)
		return;
	EXPECT_EQ_U64(usyms_add_maps_text(us, 7, maps_text, sizeof(maps_text) - 1, NULL), 0);
	EXPECT(usyms_resolve_addr(us, 7, 0x400100, &u));
	EXPECT_STREQ(u.dso, "/usr/bin/dbus-daemon");
	EXPECT(u.name == NULL);
	EXPECT(usyms_resolve_addr(us, 7, 0x651fff, &u));
	EXPECT_STREQ(u.dso, "/usr/bin/dbus-daemon");
	EXPECT(!usyms_resolve_addr(us, 7, 0x652000, &u));
	EXPECT(usyms_resolve_addr(us, 7, 0x7f0000000800, &u));
	EXPECT_STREQ(u.dso, "/opt/my app/lib with spaces.so");
	EXPECT(usyms_resolve_addr(us, 7, 0x7f0000002000, &u));
	EXPECT_STREQ(u.dso, "/usr/lib/libgone.so (deleted)");
	EXPECT(!usyms_resolve_addr(us, 7, 0x7f0000004000, &u));
	EXPECT(usyms_resolve_addr(us, 7, 0x7ffd00001000, &u));
	EXPECT_STREQ(u.dso, "[vdso]");
	EXPECT(!usyms_resolve_addr(us, 7, 0x10000000, &u));
	EXPECT(!usyms_resolve_addr(us, 7, 0x20000000, &u));
	EXPECT(!usyms_resolve_addr(us, 7, 0x30000000, &u));
	EXPECT(!usyms_resolve_addr(us, 7, 0x30001000, &u));
	EXPECT(!usyms_resolve_addr(us, 7, 0x40000000, &u));
	EXPECT(!usyms_resolve_addr(us, 7, 0x50000000, &u));
	EXPECT(!usyms_resolve_addr(us, 7, 0x60000000, &u));
	EXPECT(!usyms_resolve_addr(us, 7, 0x70000000, &u));
	EXPECT(!usyms_resolve_addr(us, 7, 0x71000000, &u));
	EXPECT(usyms_resolve_addr(us, 7, 0x80000fff, &u));
	EXPECT_STREQ(u.dso, "/no/newline/at/end");
	EXPECT(!usyms_resolve_addr(us, 7, 0x80001000, &u));
	EXPECT(!usyms_resolve_addr(us, 8, 0x400100, &u));

	/* A new snapshot replaces the old; strings handed out before stay valid. */
	EXPECT(usyms_resolve_addr(us, 7, 0x400100, &u));
	old_path = u.dso;
	EXPECT_EQ_U64(
		usyms_add_maps_text(us, 7, "1000-2000 r-xp 00000000 00:01 5 /new\n", 37, NULL), 0);
	EXPECT(!usyms_resolve_addr(us, 7, 0x400100, &u));
	EXPECT(usyms_resolve_addr(us, 7, 0x1000, &u));
	EXPECT_STREQ(u.dso, "/new");
	EXPECT_STREQ(old_path, "/usr/bin/dbus-daemon");
	EXPECT_EQ_U64(usyms_add_maps_text(us, 9, NULL, 0, NULL), 0);
	EXPECT_EQ_U64(usyms_add_maps_text(us, 9, NULL, 5, NULL), (uint64_t)-EINVAL);
	EXPECT(usyms_add_maps_text(us, 9, maps_text, 10, "/nonexistent/root") < 0);
	usyms_free(us);
}

/* ---------------------------------------------------------------------------------------- */

struct fake_root {
	char path[32][PATH_MAX];
	int n;
};

static void fr_track(struct fake_root *fr, const char *p)
{
	if (fr->n < 32)
		snprintf(fr->path[fr->n++], PATH_MAX, "%s", p);
}

static void fr_cleanup(struct fake_root *fr)
{
	/* Tracked in creation order: remove in reverse, files before their directories. */
	while (fr->n > 0) {
		const char *p = fr->path[--fr->n];
		struct stat st;

		if (!lstat(p, &st) && S_ISDIR(st.st_mode))
			rmdir(p);
		else
			unlink(p);
	}
}

static void root_dir_symlinks(void)
{
	char top[] = "/tmp/mmscope_sym_XXXXXX";
	struct fake_root fr = {.n = 0};
	char root[128], p[PATH_MAX], target[PATH_MAX], maps[8192];
	size_t exe_len, len = 0;
	unsigned char *exe = read_all("/proc/self/exe", &exe_len);
	struct usyms *us = usyms_new();
	uint64_t off = 0;
	struct usym u;
	static const struct {
		const char *path;
		bool inside;
	} cases[] = {
		{"/lib/real.so", true},		  {"/lib/inroot_abs.so", true},
		{"/lib/inroot_rel.so", true},	  {"/lib/../lib/./real.so", true},
		{"/lib/escape_abs.so", false},	  {"/lib/escape_rel.so", false},
		{"/lib/escape_deep.so", false},	  {"/lib/escape_proc.so", false},
		{"/../outside/victim.so", false}, {"/../../outside/victim.so", false},
		{"/lib/fifo.so", false},	  {"/lib/dir.so", false},
		{"/lib/missing.so", false},
	};

	EXPECT(exe && us && mkdtemp(top));
	EXPECT(self_file_offset(target_addr(), &off, NULL, 0));
	if (!exe || !us || !top[0] || top[strlen(top) - 1] == 'X')
		goto out;
	fr_track(&fr, top);
	snprintf(root, sizeof(root), "%s/root", top);
#define MKDIR(...)                                                                                 \
	do {                                                                                       \
		snprintf(p, sizeof(p), __VA_ARGS__);                                               \
		EXPECT(!mkdir(p, 0755));                                                           \
		fr_track(&fr, p);                                                                  \
	} while (0)
#define SYMLINK(to, ...)                                                                           \
	do {                                                                                       \
		snprintf(p, sizeof(p), __VA_ARGS__);                                               \
		EXPECT(!symlink(to, p));                                                           \
		fr_track(&fr, p);                                                                  \
	} while (0)
	MKDIR("%s", root);
	MKDIR("%s/lib", root);
	MKDIR("%s/outside", top);
	snprintf(p, sizeof(p), "%s/lib/real.so", root);
	EXPECT(write_all(p, exe, exe_len));
	fr_track(&fr, p);
	snprintf(p, sizeof(p), "%s/outside/victim.so", top);
	EXPECT(write_all(p, exe, exe_len));
	fr_track(&fr, p);
	SYMLINK("/lib/real.so", "%s/lib/inroot_abs.so", root);
	SYMLINK("../lib/real.so", "%s/lib/inroot_rel.so", root);
	snprintf(target, sizeof(target), "%s/outside/victim.so", top);
	SYMLINK(target, "%s/lib/escape_abs.so", root);
	SYMLINK("../../outside/victim.so", "%s/lib/escape_rel.so", root);
	snprintf(target, sizeof(target), "../../../../../../../../..%s/outside/victim.so", top);
	SYMLINK(target, "%s/lib/escape_deep.so", root);
	SYMLINK("/proc/self/exe", "%s/lib/escape_proc.so", root);
	snprintf(p, sizeof(p), "%s/lib/fifo.so", root);
	EXPECT(!mkfifo(p, 0644));
	fr_track(&fr, p);
	MKDIR("%s/lib/dir.so", root);
#undef MKDIR
#undef SYMLINK

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		len += (size_t)snprintf(maps + len, sizeof(maps) - len,
					"%zx-%zx r-xp 00000000 08:01 %zu %s\n", (i + 1) << 28,
					(i + 2) << 28, 100 + i, cases[i].path);
	EXPECT_EQ_U64(usyms_add_maps_text(us, 42, maps, len, root), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool ok = usyms_resolve_addr(us, 42, ((i + 1) << 28) + off, &u);

		EXPECT(ok);
		EXPECT_STREQ(u.dso, cases[i].path);
		if (cases[i].inside) {
			EXPECT_STREQ(u.name, "sym_test_target");
		} else if (u.name) {
			fprintf(stderr, "  %s: escaped the root, resolved to %s\n", cases[i].path,
				u.name);
			EXPECT(u.name == NULL);
		}
	}
	/* Without a root, nothing is opened. */
	EXPECT_EQ_U64(usyms_add_maps_text(us, 43, maps, len, NULL), 0);
	EXPECT(usyms_resolve_addr(us, 43, (1 << 28) + off, &u));
	EXPECT_STREQ(u.dso, "/lib/real.so");
	EXPECT(u.name == NULL);
	/*
	 * A later snapshot of pid 42 that opens no file (the process exiting: its maps read, its
	 * map_files and root gone) keeps the files of the one it replaces where the same file
	 * (device, inode) is mapped at the same place and offset; not where the inode differs.
	 */
	len = (size_t)snprintf(maps, sizeof(maps),
			       "%x-%x r-xp 00000000 08:01 100 /lib/real.so\n"
			       "%x-%x r-xp 00000000 08:01 999 /lib/inroot_abs.so\n",
			       1 << 28, 2 << 28, 2 << 28, 3 << 28);
	EXPECT_EQ_U64(usyms_add_maps_text(us, 42, maps, len, NULL), 0);
	EXPECT(usyms_resolve_addr(us, 42, (1 << 28) + off, &u));
	EXPECT_STREQ(u.dso, "/lib/real.so");
	EXPECT_STREQ(u.name, "sym_test_target");
	EXPECT(usyms_resolve_addr(us, 42, (2 << 28) + off, &u));
	EXPECT_STREQ(u.dso, "/lib/inroot_abs.so");
	EXPECT(u.name == NULL);
	EXPECT(!usyms_resolve_addr(us, 42, (3 << 28) + off, &u));
out:
	fr_cleanup(&fr);
	usyms_free(us);
	free(exe);
}

/* ---------------------------------------------------------------------------------------- */

static void bad_files(void)
{
	char dir[] = "/tmp/mmscope_sym_XXXXXX", p[PATH_MAX];
	struct usyms *us = usyms_new();
	unsigned char hdr[4096];
	size_t exe_len;
	unsigned char *exe = read_all("/proc/self/exe", &exe_len);
	struct timespec t0, t1;

	EXPECT(us && exe && exe_len > sizeof(hdr) && mkdtemp(dir));
	if (!us || !exe || exe_len <= sizeof(hdr) || dir[strlen(dir) - 1] == 'X')
		goto out;
	EXPECT_EQ_U64(usyms_add_file(us, "/nonexistent/file"), (uint64_t)-ENOENT);
	EXPECT_EQ_U64(usyms_add_file(us, "/tmp"), (uint64_t)-EISDIR);
	EXPECT(usyms_add_file(us, "/dev/null") < 0);
	EXPECT(usyms_add_file(us, "") < 0);
	EXPECT(usyms_add_file(us, NULL) < 0);
	EXPECT(usyms_add_file(NULL, "/proc/self/exe") < 0);

	snprintf(p, sizeof(p), "%s/text", dir);
	EXPECT(write_all(p, "#!/bin/sh\necho not an ELF\n", 26));
	EXPECT_EQ_U64(usyms_add_file(us, p), (uint64_t)-ENOEXEC);
	unlink(p);

	snprintf(p, sizeof(p), "%s/empty", dir);
	EXPECT(write_all(p, "", 0));
	EXPECT_EQ_U64(usyms_add_file(us, p), (uint64_t)-ENOEXEC);
	unlink(p);

	/* Truncated ELF: inside the ELF header, then inside the program headers. */
	snprintf(p, sizeof(p), "%s/trunc", dir);
	EXPECT(write_all(p, exe, 40));
	EXPECT(usyms_add_file(us, p) < 0);
	EXPECT(write_all(p, exe, 64));
	EXPECT(usyms_add_file(us, p) < 0);
	EXPECT(write_all(p, exe, 200));
	EXPECT(usyms_add_file(us, p) < 0);

	/* A header claiming 2^31 sections through the extended count: refused. */
	memcpy(hdr, exe, sizeof(hdr));
	{
		Elf64_Ehdr *eh = (Elf64_Ehdr *)hdr;
		Elf64_Shdr *sh0 = (Elf64_Shdr *)(hdr + 1024);

		eh->e_shnum = 0;
		eh->e_shoff = 1024;
		memset(sh0, 0, sizeof(*sh0));
		sh0->sh_size = 0x7fffffff;
	}
	EXPECT(write_all(p, hdr, sizeof(hdr)));
	EXPECT(usyms_add_file(us, p) < 0);
	unlink(p);

	/* Valid ELF header, no notes at all. */
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, exe, sizeof(Elf64_Ehdr));
	((Elf64_Ehdr *)hdr)->e_phnum = 0;
	((Elf64_Ehdr *)hdr)->e_shnum = 0;
	((Elf64_Ehdr *)hdr)->e_shoff = 0;
	snprintf(p, sizeof(p), "%s/noid", dir);
	EXPECT(write_all(p, hdr, sizeof(hdr)));
	EXPECT_EQ_U64(usyms_add_file(us, p), (uint64_t)-ENODATA);
	unlink(p);

	/* A FIFO must be refused without blocking. */
	snprintf(p, sizeof(p), "%s/fifo", dir);
	EXPECT(!mkfifo(p, 0644));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT(usyms_add_file(us, p) < 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT(t1.tv_sec - t0.tv_sec < 2);
	unlink(p);

	EXPECT_EQ_U64(usyms_add_file(us, "/proc/self/exe"), 0);
out:
	rmdir(dir);
	usyms_free(us);
	free(exe);
}

static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* Nothing stays open after usyms_free (files are read at registration, then closed). */
static void no_fd_leaks(void)
{
	int before = count_fds(), during;
	struct usyms *us = usyms_new();
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *fn = libc ? dlsym(libc, "getpid") : NULL;
	struct usym u;

	EXPECT(us && fn);
	if (!us || !fn)
		goto out;
	EXPECT_EQ_U64(usyms_add_pid(us, getpid()), 0);
	EXPECT_EQ_U64(usyms_add_file(us, "/proc/self/exe"), 0);
	during = count_fds();
	EXPECT_EQ_U64(during, before);
	/* A separate debug file, when used, is held by libdwfl until usyms_free. */
	EXPECT(usyms_resolve_addr(us, getpid(), (uint64_t)(uintptr_t)fn, &u));
	EXPECT(count_fds() <= during + 1);
out:
	usyms_free(us);
	if (libc)
		dlclose(libc);
	EXPECT_EQ_U64(count_fds(), before);
}

TEST_MAIN(T(ksyms_fixture), T(ksyms_errors), T(ksyms_proc), T(build_id_self), T(build_id_garbage),
	  T(resolve_self_build_id), T(resolve_self_pid), T(resolve_self_pid_as), T(resolve_libs),
	  T(resolve_child), T(resolve_vdso), T(synthetic_elves), T(unterminated_strtab),
	  T(maps_text_robust), T(root_dir_symlinks), T(bad_files), T(no_fd_leaks))
