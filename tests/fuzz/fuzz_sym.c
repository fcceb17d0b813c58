/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libFuzzer target for the parsers of user/sym/sym.c, which all read bytes chosen by the traced
 * processes (or, for kallsyms, a file the user points at). Each input is fed, whole, to:
 *  - usyms_add_maps_text() as /proc/PID/maps text (no root: no file is opened), then looked up;
 *  - elf_build_id_from_mem() as an ELF image;
 *  - usyms_add_file() on the same bytes through a memfd, which runs the file snapshot reader,
 *    the note and symbol table loaders, and then the build-ID lookups;
 *  - ksyms_load() on the memfd as a kallsyms file, then looked up;
 *  - as the file /lib.so of a private fake root on tmpfs, mapped by a fixed maps line, so that
 *    the open-in-root, registration and raw-address paths run on it too.
 *
 * clang -g -O1 -fsanitize=fuzzer,address,undefined -I. -Iuser tests/fuzz/fuzz_sym.c user/sym/sym.c
 *\ -lelf -ldw -lz -o build/fuzz_sym && build/fuzz_sym tests/fuzz/corpus/sym
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sym/demangle.h"
#include "sym/sym.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char root_dir[64], root_file[96];

static void remove_root(void)
{
	unlink(root_file);
	rmdir(root_dir);
}

/* A directory of our own on tmpfs (else /tmp), removed at exit. */
static bool make_root(void)
{
	static const char *const bases[] = {"/dev/shm", "/tmp"};

	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		snprintf(root_dir, sizeof(root_dir), "%s/fuzz_sym.XXXXXX", bases[i]);
		if (mkdtemp(root_dir)) {
			snprintf(root_file, sizeof(root_file), "%s/lib.so", root_dir);
			atexit(remove_root);
			return true;
		}
	}
	root_dir[0] = '\0';
	return false;
}

/* Lookup keys taken from the input itself, so that the fuzzer can aim at what it built. */
static uint64_t word_at(const uint8_t *data, size_t size, size_t i)
{
	uint64_t v = 0;

	if (size >= 8)
		memcpy(&v, data + (i * 8) % (size - 7), 8);
	return v;
}

static void fuzz_usyms(const uint8_t *data, size_t size, const char *path)
{
	unsigned char id[SYM_BUILD_ID_SIZE] = {0};
	struct usyms *us = usyms_new();
	struct usym u;
	int n;

	if (!us)
		return;
	usyms_add_maps_text(us, 1, (const char *)data, size, NULL);
	for (size_t i = 0; i < 8; i++)
		usyms_resolve_addr(us, 1, word_at(data, size, i), &u);
	usyms_resolve_addr(us, 1, 0x400000, &u);
	usyms_resolve_addr(us, 2, 0x400000, &u);

	n = elf_build_id_from_mem(data, size, id, sizeof(id));
	if (usyms_add_file(us, path) == 0 && n > 0) {
		for (size_t i = 0; i < 8; i++) {
			usyms_resolve_build_id(us, id, word_at(data, size, i), &u);
			usyms_resolve_build_id(us, id, word_at(data, size, i) & 0xffff, &u);
		}
	}
	usyms_free(us);
}

static void fuzz_root(const uint8_t *data, size_t size)
{
	static const char maps[] = "10000000-20000000 r-xp 00000000 00:00 1 /lib.so\n"
				   "20000000-30000000 r-xp 00001000 00:00 1 /lib.so\n";
	struct usyms *us;
	struct usym u;
	int fd;

	fd = open(root_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return;
	}
	close(fd);
	us = usyms_new();
	if (!us)
		return;
	usyms_add_maps_text(us, 3, maps, sizeof(maps) - 1, root_dir);
	for (size_t i = 0; i < 8; i++) {
		uint64_t w = word_at(data, size, i);

		usyms_resolve_addr(us, 3, 0x10000000 + (w & 0xffff), &u);
		usyms_resolve_addr(us, 3, 0x20000000 + (w >> 48), &u);
	}
	usyms_free(us);
}

static void fuzz_ksyms(const uint8_t *data, size_t size, const char *path)
{
	struct ksyms *ks = ksyms_load(path);
	uint64_t off;

	if (!ks)
		return;
	for (size_t i = 0; i < 8; i++) {
		uint64_t a = word_at(data, size, i);

		ksyms_resolve(ks, a, &off);
		ksyms_resolve(ks, a + 0x10, &off);
	}
	ksyms_resolve(ks, 0xffffffff81000000ULL, &off);
	ksyms_addr(ks, "_stext");
	ksyms_free(ks);
}

/* The input as a symbol name: "_Z..." and "_R..." prefixes are where the demangler works. */
static void fuzz_demangle(const uint8_t *data, size_t size)
{
	char name[4096];
	size_t n = size < sizeof(name) - 3 ? size : sizeof(name) - 3;

	name[0] = '_';
	name[1] = size && (data[0] & 1) ? 'R' : 'Z';
	memcpy(name + 2, data, n);
	name[n + 2] = '\0';
	free(demangle_symbol(name));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int memfd = -1;
	static bool have_root;
	char path[64];

	/* One memfd for the whole run, rewritten for each input. */
	if (memfd < 0) {
		memfd = memfd_create("fuzz_sym", MFD_CLOEXEC);
		have_root = make_root();
	}
	if (memfd < 0 || ftruncate(memfd, 0) ||
	    (size && pwrite(memfd, data, size, 0) != (ssize_t)size))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	fuzz_usyms(data, size, path);
	fuzz_ksyms(data, size, path);
	fuzz_demangle(data, size);
	if (have_root)
		fuzz_root(data, size);
	return 0;
}
