/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's own record of the code each image maps: perf's PERF_RECORD_MMAP2 (with the
 * file's build ID since v5.12, perf_event_attr.build_id) and PERF_RECORD_COMM with the exec
 * flag, read from a dummy software event on every CPU. They are written while the mapping is made,
 * so they hold what a process mapped however short its life, where a /proc/PID/maps snapshot comes
 * too late. A fault location of an image exec'ed during the run is then kept as a raw address
 * (bpf/faults.bpf.c: LOC_MMAP_RECORDS) and resolved here at the end, without the build-ID read that
 * costs the fault ~13 us on kernels whose fault hooks all run with interrupts off.
 */
#ifndef MMSCOPE_MMAP_LOG_H
#define MMSCOPE_MMAP_LOG_H

#include <stdbool.h>
#include <stdint.h>

struct mmap_log;

/* A log fed by hand (mmap_log_add_exec(), mmap_log_add_map()): for tests. */
struct mmap_log *mmap_log_new(void);
/* The kernel's records, as read: process pid exec'ed (PERF_RECORD_COMM, exec) at ns; process
 * pid mapped [start, start + len) of path (taken: freed by the log) at pgoff, at ns, with the
 * file's 20-byte build ID or NULL. */
void mmap_log_add_exec(struct mmap_log *l, uint32_t pid, uint64_t ns);
void mmap_log_add_map(struct mmap_log *l, uint32_t pid, uint64_t ns, uint64_t start, uint64_t len,
		      uint64_t pgoff, const unsigned char *build_id, char *path);
/* Open the records on every CPU into the perf event array map_fd, with the files' build IDs
 * (build_ids: v5.12) or without (paths only, for mmap_log_read_files()); NULL and *err
 * (-errno) when this kernel cannot give them. */
struct mmap_log *mmap_log_open(int map_fd, bool build_ids, int *err);
/* Read what the CPUs have written so far (non-blocking). */
void mmap_log_consume(struct mmap_log *l);
/* An exec seen by the exec hook (REC_EXEC) at ns, of an image whose locations and stacks are
 * named by (tgid, ns). */
void mmap_log_exec(struct mmap_log *l, uint32_t tgid, uint64_t ns);
/* A process forked at ns by process parent_tgid's image (parent_tgid, parent_ns) (REC_FORK):
 * its image is named by (tgid, ns), and holds the parent's mappings made before ns and its
 * own made after. */
void mmap_log_fork(struct mmap_log *l, uint32_t tgid, uint64_t ns, uint32_t parent_tgid,
		   uint64_t parent_ns);
/* A process already running when the records began, given an image at ns (seed_images_iter):
 * its mappings are its own records after ns, and before them those of its /proc/PID/maps
 * snapshot taken after ns, kept under maps_key (user/sym/sym.c usyms_add_pid_as()). */
void mmap_log_seed(struct mmap_log *l, uint32_t tgid, uint64_t ns, int maps_key);
/* Records without build IDs (before 5.12): call read_file once for each file mapped since the
 * last call, so that the caller reads its build ID from the file itself (what perf's build-id
 * pass does). For the stacks whose build IDs the kernel read at the event, of files no live
 * process maps any more. */
void mmap_log_read_files(struct mmap_log *l, void (*read_file)(const char *path, void *arg),
			 void *arg);
/* Records lost by the kernel (a full buffer) or dropped here (the log's cap). */
uint64_t mmap_log_lost(const struct mmap_log *l);

struct mmap_hit {
	const char *path; /* the mapped file, as the process named it */
	bool has_build_id;
	unsigned char build_id[20];
	uint64_t file_offset;
	/* false returned: ip is not in the records of a seeded image, but may be in the maps
	 * snapshot kept under this key (its raw address resolved there); 0: not known at all */
	int maps_key;
};

/* The mapping of instruction ip in process tgid's image exec'ed (forked, seeded) at exec_ns.
 * false when not in the records (see maps_key). */
bool mmap_log_find(struct mmap_log *l, uint32_t tgid, uint64_t exec_ns, uint64_t ip,
		   struct mmap_hit *hit);

/*
 * The code at instruction ip of process tgid's image named by image (its exec time, as in a
 * LOC_MMAP_RECORDS location's build ID): its file's build ID (20 bytes) and the offset in it.
 * false when not in the records. Locations and stacks settled so need no records at the end
 * (the files of records forgotten stay known by build ID, for mmap_log_read_files()). A file
 * without a build ID gets one made of its path (mmap_log_path_of()). log: a struct mmap_log (the
 * type of a to_code_fn).
 */
bool mmap_log_to_code(void *log, uint32_t tgid, const unsigned char *image, uint64_t ip,
		      unsigned char *build_id, uint64_t *offset);
/* The path of a file without a build ID that to_code gave one of its own; NULL for a real
 * build ID. */
const char *mmap_log_path_of(const struct mmap_log *l, const unsigned char *build_id);
/* The path of any file to_code settled something into, by its build ID (real or its own);
 * NULL when none. */
const char *mmap_log_file_path(const struct mmap_log *l, const unsigned char *build_id);
/* The image of process tgid when the records have exactly one: its time in *ns. What names
 * the raw addresses of a process gone before its mappings could be read (a fork child that
 * lived a few milliseconds), whose one image is its fork's. */
bool mmap_log_only_image(struct mmap_log *l, uint32_t tgid, uint64_t *ns);
typedef bool (*to_code_fn)(void *arg, uint32_t tgid, const unsigned char *image, uint64_t ip,
			   unsigned char *build_id, uint64_t *offset);

/*
 * The log is bounded (records and images): a host where short processes come and go fills it
 * in a minute. Nearly full, it is time to settle what may be (above) and forget the rest: keep
 * the records and images of the processes keep() says yes to (those alive, those whose
 * locations or stacks still need them) and of the images their forks chain to; the others go,
 * at the second pass that refuses them (their last locations may still be on their way). The
 * number of records and images forgotten.
 */
bool mmap_log_nearly_full(const struct mmap_log *l);
size_t mmap_log_forget(struct mmap_log *l, bool (*keep)(uint32_t tgid, void *arg), void *arg);
/* Records and images forgotten so far: of processes gone that nothing needed (not lost). */
uint64_t mmap_log_forgotten(const struct mmap_log *l);
void mmap_log_free(struct mmap_log *l);

#endif
