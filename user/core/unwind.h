/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The DWARF unwind tables of a run: files' call-frame information compiled (user/cfi/cfi.c) and
 * loaded into the BPF chunk arrays (bpf/unwind.h) within a memory budget, when the BPF walker
 * first meets a file (REC_UNWIND_FILE) or ahead of it (a target's mapped files); evicted when
 * the budget is full and no process maps their file any more.
 */
#ifndef MMSCOPE_UNWIND_TABLES_H
#define MMSCOPE_UNWIND_TABLES_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/unwind.h"

struct usyms;
struct kcaps;

/* What the tables hold and what could not be loaded, for the run's summary. */
struct unwind_stats {
	uint32_t files;		     /* tables loaded */
	uint32_t files_no_cfi;	     /* files without .eh_frame or .debug_frame */
	uint32_t files_unusable;     /* not a 64-bit ELF of this machine, malformed, ... */
	uint32_t files_gone;	     /* the process exited before its file could be opened */
	uint32_t files_budget;	     /* left out: the tables' memory was full */
	uint32_t files_evicted;	     /* tables removed: no process mapped their file any more */
	uint64_t rows, rules, pages; /* of the tables loaded */
	uint64_t bytes;		     /* of the tables in the chunk arrays now */
	uint64_t bytes_evicted;	     /* of the tables evicted */
	uint64_t budget_bytes;	     /* their size */
	uint64_t load_ns;	     /* spent compiling and loading */
	uint32_t cache_hits;	     /* tables read back from the cache */
	uint32_t cache_stores;	     /* tables compiled and kept there */
};

/* Why user stacks cannot be walked with DWARF tables here (the architecture, the BPF features
 * the walk needs, as probed into k), or NULL when they can. */
const char *unwind_why_not_dwarf(const struct kcaps *k);

/* The chunk counts a budget of mb megabytes gives each array (before the maps are created). */
void unwind_budget(int mb, uint32_t *row_chunks, uint32_t *page_chunks, uint32_t *rule_chunks);

struct unwind_tables;
/* The maps' fds (bpf/unwind.bpf.h) and their sizes in chunks, and the directory of compiled
 * tables kept by build ID (user/cfi/cfi_cache.c; NULL: none, kept by the caller); NULL on ENOMEM.
 */
struct unwind_tables *unwind_tables_new(int files_fd, int rows_fd, int pages_fd, int rules_fd,
					uint32_t row_chunks, uint32_t page_chunks,
					uint32_t rule_chunks, const char *cache_dir);
void unwind_tables_free(struct unwind_tables *u);
/* A REC_UNWIND_FILE record: queue the file it names. */
void unwind_tables_request(struct unwind_tables *u, const struct unwind_file_record *r);
/* Queue, ahead of the walker, every executable file mapping of pid. */
void unwind_tables_add_pid(struct unwind_tables *u, int pid);
/* Whether files are queued, or wait for evicted tables' space. */
bool unwind_tables_busy(const struct unwind_tables *u);
/* Load queued files (registering them with us for symbols) until budget_ns is spent, at least
 * one; budget 0: all of them. */
void unwind_tables_work(struct unwind_tables *u, struct usyms *us, uint64_t budget_ns);
/* Load the file at path. */
void unwind_tables_add_path(struct unwind_tables *u, struct usyms *us, const char *path);
/* Load the C library and the dynamic loader, as mmscope itself maps them: every dynamically
 * linked process of this system maps the same files. */
void unwind_tables_add_runtime(struct unwind_tables *u, struct usyms *us);
/* Load the binary a command runs (argv0 looked up in PATH as execvp() does). */
void unwind_tables_add_command(struct unwind_tables *u, struct usyms *us, const char *argv0);
const struct unwind_stats *unwind_tables_stats(const struct unwind_tables *u);

#endif
