/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Symbols for kernel and user addresses.
 *
 * Kernel: /proc/kallsyms (or any file in its format), sorted, binary-searched.
 *
 * User: the BPF side records user frames as (ELF build ID, file offset) where it can
 * (BPF_F_STACK_BUILD_ID), which stays valid after the process exits or re-execs, and as a raw
 * address otherwise. So the user symbolizer is a cache keyed by build ID: files are registered
 * when mmscope sees them (the traced command's binary, exec'ed files, the mappings of live
 * processes in /proc/PID/maps), and resolution needs only the build ID and the offset. Raw
 * addresses are resolved against a per-pid snapshot of the mappings taken while the process
 * was alive.
 *
 * The files and /proc/PID/maps of traced processes are attacker-controlled: every parser here
 * must survive arbitrary bytes, and files of a process are opened inside that process's root
 * (never following a symlink out of it), only if they are regular files.
 */
#ifndef MMSCOPE_SYM_H
#define MMSCOPE_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYM_BUILD_ID_SIZE 20

struct ksyms;
struct ksyms *ksyms_load(const char *path); /* NULL on error, errno set */
void ksyms_free(struct ksyms *ks);
/* Name of the symbol containing addr, and addr's offset in it; NULL when none. */
const char *ksyms_resolve(const struct ksyms *ks, uint64_t addr, uint64_t *offset);
/* Address of a symbol by name, 0 when absent. */
uint64_t ksyms_addr(const struct ksyms *ks, const char *name);
/* The running kernel's GNU build ID (/sys/kernel/notes) into out: its length, or -errno. */
int kernel_build_id(unsigned char *out, size_t size);

struct usym {
	const char *name;     /* symbol name (demangled), NULL when the DSO is known but not
			       * the symbol */
	const char *dso;      /* path of the file as registered, NULL when unknown */
	uint64_t offset;      /* offset of the address in the symbol */
	uint64_t file_offset; /* offset of the address in the file, when dso is known */
	/* The file's GNU build ID as its note holds it (build_id_len bytes; 0 when unknown). */
	const unsigned char *build_id;
	size_t build_id_len;
};

struct usyms;
struct usyms *usyms_new(void);
void usyms_free(struct usyms *us);
/*
 * Register a file by path (as seen from mmscope's own root): reads its build ID and
 * remembers path for it. Returns 0, or a negative errno (not ELF, no build ID, not a regular
 * file, ...). Registering the same build ID twice is fine.
 */
int usyms_add_file(struct usyms *us, const char *path);
/* The same for the file opened at path (/proc/PID/map_files/...), shown as name. */
int usyms_add_file_named(struct usyms *us, const char *path, const char *name);
/*
 * Snapshot /proc/PID/maps: register each file-backed mapping's file (opened through
 * /proc/PID/map_files or inside /proc/PID/root) and remember the mappings for raw-address
 * resolution of that pid. Returns 0 or a negative errno (e.g. -ESRCH when the process is gone).
 */
int usyms_add_pid(struct usyms *us, int pid);
/* The same snapshot, kept under key instead of pid (for usyms_resolve_addr()): a key no pid
 * takes (negative) holds a snapshot that a later one of the same pid, maybe another process
 * by then, does not replace. key 0 is -EINVAL. */
int usyms_add_pid_as(struct usyms *us, int pid, int key);
/* Same as usyms_add_pid, but reads the maps text from a buffer and files from root_dir
 * (for tests and fuzzing; root_dir NULL means no file is opened). */
int usyms_add_maps_text(struct usyms *us, int pid, const char *maps, size_t len,
			const char *root_dir);
/* Resolve (build ID, file offset). Returns true when at least the DSO is known. */
bool usyms_resolve_build_id(struct usyms *us, const unsigned char build_id[SYM_BUILD_ID_SIZE],
			    uint64_t file_offset, struct usym *out);
/* Resolve a raw address of pid from its snapshot (or of the snapshot kept under key pid). */
bool usyms_resolve_addr(struct usyms *us, int pid, uint64_t addr, struct usym *out);

/* Read the GNU build ID of an ELF image in memory (for fuzzing the ELF parser).
 * Returns the ID length (> 0) or a negative errno. */
int elf_build_id_from_mem(const void *image, size_t size, unsigned char *out, size_t out_size);

#endif
