/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Symbols for kernel and user addresses (the model and the threat model are in sym.h).
 *
 * Kernel: the text symbols (t/T/w/W) of a kallsyms file, sorted by address. A symbol covers
 * the addresses from its own up to the next symbol's, but never more than KSYM_SPAN_MAX bytes:
 * kallsyms gives no sizes, and without the cap an address past the last function of the
 * kernel or of a module (a BPF trampoline not listed, a freed init section) would be blamed
 * on whichever function happens to precede it.
 *
 * User: a DSO is an ELF file identified by its GNU build ID (or, for files without one, by
 * device, inode, size and mtime, so that raw addresses still resolve). Files come from
 * attacker-controlled processes, so:
 *  - they are opened O_PATH first (no open() side effect on devices, no blocking on FIFOs),
 *    checked to be regular files of sane size, and only then reopened for reading through
 *    /proc/self/fd;
 *  - files of a process are reached through /proc/PID/map_files (the very file mapped), or
 *    else with openat2(RESOLVE_IN_ROOT) inside /proc/PID/root, never by plain path;
 *  - the file is never mmap()ed (a truncation by its owner would SIGBUS us) nor given to
 *    libdwfl (which would mmap it, decompress it if it looks like gzip/xz, or search debug
 *    files by paths derived from it in *our* root). Instead we pread() only the parts we need
 *    into an anonymous snapshot, each page at most once, so that libelf parses a consistent
 *    image even if the file changes under us, and hand that snapshot to elf_memory();
 *  - header counts are checked before libelf sees them, since libelf allocates per section.
 * Symbols of the file itself (.symtab, else .dynsym) are copied into a sorted table when the
 * file is registered, so no descriptor stays open. When the file has no .symtab, the separate
 * debug file /usr/lib/debug/.build-id/xx/yyyy.debug (root-owned, trusted) is loaded lazily
 * with libdwfl on first use, and its lookups are cached.
 *
 * Not thread-safe: one struct usyms / ksyms per thread, or a lock around them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sym/demangle.h"
#include "sym/sym.h"
#include "lib/util.h"

#include <limits.h>

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                            */

/* Grow an array to hold need elements; returns the (possibly moved) array, NULL on ENOMEM. */
static void *grow_array(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap && p)
		return p;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return NULL;
		ncap *= 2;
	}
	np = realloc(p, ncap * elem);
	if (!np)
		return NULL;
	*cap = ncap;
	return np;
}

static uint64_t hash_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return hash_mix(h ^ n);
}

/*
 * Open-addressing hash table of pointers. The caller hashes its key and supplies the
 * comparison, so the same code indexes DSOs by build ID, strings, pids, ...
 */
struct hslot {
	uint64_t hash;
	void *val; /* NULL: free slot */
};

struct htab {
	struct hslot *slot;
	size_t cap; /* power of two, or 0 */
	size_t n;
};

typedef bool (*htab_eq_fn)(const void *val, const void *key);

static void *htab_find(const struct htab *h, uint64_t hash, htab_eq_fn eq, const void *key)
{
	if (!h->cap)
		return NULL;
	for (size_t i = hash & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
		const struct hslot *s = &h->slot[i];

		if (!s->val)
			return NULL;
		if (s->hash == hash && eq(s->val, key))
			return s->val;
	}
}

static int htab_add(struct htab *h, uint64_t hash, void *val)
{
	size_t i;

	if ((h->n + 1) * 4 > h->cap * 3) {
		size_t ncap = h->cap ? h->cap * 2 : 16;
		struct hslot *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		for (size_t j = 0; j < h->cap; j++) {
			if (!h->slot[j].val)
				continue;
			i = h->slot[j].hash & (ncap - 1);
			while (ns[i].val)
				i = (i + 1) & (ncap - 1);
			ns[i] = h->slot[j];
		}
		free(h->slot);
		h->slot = ns;
		h->cap = ncap;
	}
	i = hash & (h->cap - 1);
	while (h->slot[i].val)
		i = (i + 1) & (h->cap - 1);
	h->slot[i].hash = hash;
	h->slot[i].val = val;
	h->n++;
	return 0;
}

static void htab_free(struct htab *h, void (*free_val)(void *))
{
	for (size_t i = 0; free_val && i < h->cap; i++)
		if (h->slot[i].val)
			free_val(h->slot[i].val);
	free(h->slot);
	memset(h, 0, sizeof(*h));
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 1 to 16 hex digits; NULL when there are none or too many (the value would not fit). */
static const char *parse_hex(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0, d;

	while (p < end && (d = hex_digit(*p)) >= 0) {
		if (++n > 16)
			return NULL;
		v = v << 4 | (uint64_t)d;
		p++;
	}
	if (!n)
		return NULL;
	*out = v;
	return p;
}

static const char *parse_dec(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0;

	while (p < end && *p >= '0' && *p <= '9') {
		uint64_t d = (uint64_t)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return NULL;
		v = v * 10 + d;
		n++;
		p++;
	}
	if (!n)
		return NULL;
	*out = v;
	return p;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && is_blank(*p))
		p++;
	return p;
}

/* ---------------------------------------------------------------------------------------- */
/* Kernel symbols                                                                           */

#define KSYM_NAME_MAX  512 /* KSYM_NAME_LEN, with the NUL */
#define KSYM_LINE_MAX  4096
#define KSYM_SPAN_MAX  (1ULL << 20)
#define KSYM_COUNT_MAX (1U << 24)

struct ksym {
	uint64_t addr;
	uint32_t name; /* offset in ksyms.str */
	uint32_t rank; /* among symbols at one address, the lowest is shown */
};

struct ksyms {
	struct ksym *sym; /* by address, then rank */
	size_t n;
	uint32_t *uniq; /* the shown symbol of each distinct address, by address */
	size_t nuniq;
	uint32_t *by_name; /* all symbols by name, then address */
	char *str;
};

/*
 * "ADDR TYPE NAME[\t[MODULE]]". Returns false on anything else: the file may be a truncated
 * copy, or fuzz input, and a line we do not understand is skipped, not fatal.
 */
static bool ksym_parse(const char *p, const char *end, uint64_t *addr, char *type,
		       const char **name, size_t *len)
{
	const char *n;

	p = parse_hex(p, end, addr);
	if (!p || p == end || !is_blank(*p))
		return false;
	p = skip_blanks(p, end);
	if (p == end)
		return false;
	*type = *p++;
	if (p == end || !is_blank(*p))
		return false;
	n = p = skip_blanks(p, end);
	/* Kernel symbol names are printable and blank-free; anything else is not a symbol. */
	while (p < end && (unsigned char)*p > ' ' && (unsigned char)*p < 0x7f)
		p++;
	if (p == n || p - n >= KSYM_NAME_MAX || (p < end && !is_blank(*p)))
		return false;
	*name = n;
	*len = (size_t)(p - n);
	return true;
}

static uint32_t ksym_type_rank(char type)
{
	/* At one address, prefer a global name to a weak or a local alias. */
	switch (type) {
	case 'T':
		return 0;
	case 'W':
		return 1;
	case 't':
		return 2;
	case 'w':
		return 3;
	default:
		return UINT32_MAX;
	}
}

static int ksym_cmp_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int ksym_cmp_name(const void *a, const void *b, void *arg)
{
	const struct ksyms *ks = arg;
	const struct ksym *x = &ks->sym[*(const uint32_t *)a], *y = &ks->sym[*(const uint32_t *)b];
	int c = strcmp(ks->str + x->name, ks->str + y->name);

	if (c)
		return c;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

void ksyms_free(struct ksyms *ks)
{
	if (!ks)
		return;
	free(ks->sym);
	free(ks->uniq);
	free(ks->by_name);
	free(ks->str);
	free(ks);
}

static int ksyms_index(struct ksyms *ks)
{
	qsort(ks->sym, ks->n, sizeof(*ks->sym), ksym_cmp_addr);
	ks->uniq = malloc(ks->n * sizeof(*ks->uniq));
	ks->by_name = malloc(ks->n * sizeof(*ks->by_name));
	if (!ks->uniq || !ks->by_name)
		return ENOMEM;
	for (size_t i = 0; i < ks->n; i++) {
		if (!i || ks->sym[i].addr != ks->sym[i - 1].addr)
			ks->uniq[ks->nuniq++] = (uint32_t)i;
		ks->by_name[i] = (uint32_t)i;
	}
	qsort_r(ks->by_name, ks->n, sizeof(*ks->by_name), ksym_cmp_name, ks);
	return 0;
}

struct ksyms *ksyms_load(const char *path)
{
	size_t cap = 0, scap = 0, slen = 0, lcap = 0;
	struct ksyms *ks = NULL;
	bool zero = false;
	char *line = NULL;
	ssize_t len;
	int err = 0;
	FILE *f;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	f = fopen(path, "re");
	if (!f)
		return NULL;
	ks = calloc(1, sizeof(*ks));
	if (!ks) {
		err = ENOMEM;
		goto out;
	}
	errno = 0;
	while ((len = getline(&line, &lcap, f)) >= 0) {
		const char *end = line + len, *name;
		uint64_t addr;
		size_t nlen;
		uint32_t rank;
		char type;
		void *p;

		if (len > KSYM_LINE_MAX)
			continue;
		if (end > line && end[-1] == '\n')
			end--;
		if (!ksym_parse(line, end, &addr, &type, &name, &nlen))
			continue;
		rank = ksym_type_rank(type);
		if (rank == UINT32_MAX)
			continue;
		if (!addr) {
			/* kptr_restrict shows every address as 0: remember why we found nothing. */
			zero = true;
			continue;
		}
		if (ks->n >= KSYM_COUNT_MAX || slen + nlen + 1 > UINT32_MAX) {
			err = EFBIG;
			goto out;
		}
		p = grow_array(ks->sym, &cap, ks->n + 1, sizeof(*ks->sym));
		if (!p) {
			err = ENOMEM;
			goto out;
		}
		ks->sym = p;
		p = grow_array(ks->str, &scap, slen + nlen + 1, 1);
		if (!p) {
			err = ENOMEM;
			goto out;
		}
		ks->str = p;
		memcpy(ks->str + slen, name, nlen);
		ks->str[slen + nlen] = '\0';
		/* The line number breaks ties, so that equal symbols sort as in the file. */
		ks->sym[ks->n].addr = addr;
		ks->sym[ks->n].name = (uint32_t)slen;
		ks->sym[ks->n].rank = rank << 24 | (uint32_t)ks->n;
		ks->n++;
		slen += nlen + 1;
	}
	if (ferror(f)) {
		err = errno ? errno : EIO;
		goto out;
	}
	if (!ks->n) {
		err = zero ? EACCES : ENODATA;
		goto out;
	}
	err = ksyms_index(ks);
out:
	free(line);
	fclose(f);
	if (err) {
		ksyms_free(ks);
		errno = err;
		return NULL;
	}
	return ks;
}

const char *ksyms_resolve(const struct ksyms *ks, uint64_t addr, uint64_t *offset)
{
	const struct ksym *s;
	size_t lo = 0, hi;

	if (!ks || !ks->nuniq)
		return NULL;
	/* First distinct address above addr; the symbol before it is the candidate. */
	hi = ks->nuniq;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->sym[ks->uniq[mid]].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &ks->sym[ks->uniq[lo - 1]];
	if (addr - s->addr >= KSYM_SPAN_MAX)
		return NULL;
	if (offset)
		*offset = addr - s->addr;
	return ks->str + s->name;
}

uint64_t ksyms_addr(const struct ksyms *ks, const char *name)
{
	size_t lo = 0, hi;

	if (!ks || !name || !ks->n)
		return 0;
	hi = ks->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ks->str + ks->sym[ks->by_name[mid]].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Names sort by address too: a static name used in several places gives the lowest. */
	if (lo < ks->n && !strcmp(ks->str + ks->sym[ks->by_name[lo]].name, name))
		return ks->sym[ks->by_name[lo]].addr;
	return 0;
}

/*
 * /sys/kernel/notes is the kernel's .notes section: 4-byte aligned ELF notes of the kernel's
 * own byte order, no ELF header around them (so not elf_build_id_from_mem()'s job).
 */
int kernel_build_id(unsigned char *out, size_t size)
{
	unsigned char buf[4096];
	long n = read_small_file("/sys/kernel/notes", (char *)buf, sizeof(buf));
	size_t pos = 0;

	if (n < 0)
		return (int)n;
	while (pos + 12 <= (size_t)n) {
		uint32_t namesz, descsz, type;
		size_t name_at = pos + 12, desc_at, next;

		memcpy(&namesz, buf + pos, 4);
		memcpy(&descsz, buf + pos + 4, 4);
		memcpy(&type, buf + pos + 8, 4);
		desc_at = name_at + (((size_t)namesz + 3) & ~(size_t)3);
		next = desc_at + (((size_t)descsz + 3) & ~(size_t)3);
		if (namesz > (size_t)n || descsz > (size_t)n || next > (size_t)n)
			break;
		if (type == NT_GNU_BUILD_ID && namesz == sizeof(ELF_NOTE_GNU) &&
		    !memcmp(buf + name_at, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) && descsz) {
			if (descsz > size)
				return -ENOSPC;
			memcpy(out, buf + desc_at, descsz);
			return (int)descsz;
		}
		pos = next;
	}
	return -ENODATA;
}

/* ---------------------------------------------------------------------------------------- */
/* ELF snapshots                                                                            */

#define ELF_FILE_MAX	 (2ULL << 30) /* larger files are not registered */
#define ELF_SECTIONS_MAX 65536	      /* linked objects have tens of sections */
#define ELF_SEGMENTS_MAX 4096
#define NOTE_RANGE_MAX	 (64U << 10) /* bytes of one PT_NOTE / SHT_NOTE looked at */
#define NOTE_RANGES_MAX	 16	     /* of each kind */
#define SYMTAB_MAX	 (256U << 20)
#define IMG_READ_MAX	 (640U << 20) /* bytes read from one file, all parts together */
#define IMG_PAGE	 4096U
#define BUILD_ID_MAX	 64

/*
 * An image of an ELF file in memory: either a complete copy (fd < 0), or a snapshot of the
 * file of the same size in which only the pages we asked for have been read, the others
 * being zero. A page is read at most once, so every byte has one value for the whole parse.
 */
struct img {
	int fd;
	unsigned char *buf;
	size_t size;
	bool mapped;	/* buf is an anonymous mapping of size bytes, else malloc'ed */
	uint64_t *done; /* bitmap of pages read */
	size_t budget;
	bool is64, msb;
	unsigned int type;
	uint64_t phoff, shoff;
	size_t phnum, shnum;
};

struct shdr_info {
	uint32_t type, link;
	uint64_t offset, size, align;
};

struct phdr_info {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, align;
};

static void img_fini(struct img *im)
{
	if (im->buf) {
		if (im->mapped)
			munmap(im->buf, im->size);
		else
			free(im->buf);
	}
	free(im->done);
	memset(im, 0, sizeof(*im));
	im->fd = -1;
}

static int img_init_fd(struct img *im, int fd, uint64_t size)
{
	size_t npages;

	memset(im, 0, sizeof(*im));
	im->fd = fd;
	if (size < sizeof(Elf32_Ehdr))
		return -ENOEXEC;
	if (size > ELF_FILE_MAX)
		return -EFBIG;
	im->size = (size_t)size;
	/* NORESERVE: only the pages we read cost memory. */
	im->buf = mmap(NULL, im->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (im->buf == MAP_FAILED) {
		im->buf = NULL;
		return -ENOMEM;
	}
	im->mapped = true;
	npages = (im->size + IMG_PAGE - 1) / IMG_PAGE;
	im->done = calloc((npages + 63) / 64, sizeof(*im->done));
	if (!im->done)
		return -ENOMEM;
	im->budget = IMG_READ_MAX;
	return 0;
}

static int img_init_mem(struct img *im, const void *image, size_t size)
{
	memset(im, 0, sizeof(*im));
	im->fd = -1;
	if (!image || size < sizeof(Elf32_Ehdr))
		return -ENOEXEC;
	/* A private, aligned copy: libelf wants a writable image, the caller's may be const. */
	im->buf = malloc(size);
	if (!im->buf)
		return -ENOMEM;
	memcpy(im->buf, image, size);
	im->size = size;
	return 0;
}

static bool img_page_done(const struct img *im, size_t pg)
{
	return im->done[pg / 64] >> (pg % 64) & 1;
}

/* Make [off, off + len) (clipped to the file) present in the image. */
static int img_fill(struct img *im, uint64_t off, uint64_t len)
{
	size_t pg, last;

	if (im->fd < 0 || off >= im->size || !len)
		return 0;
	if (len > im->size - off)
		len = im->size - off;
	pg = (size_t)(off / IMG_PAGE);
	last = (size_t)((off + len - 1) / IMG_PAGE);
	while (pg <= last) {
		size_t stop = pg, start_b, end_b, got = 0;

		if (img_page_done(im, pg)) {
			pg++;
			continue;
		}
		while (stop <= last && !img_page_done(im, stop))
			stop++;
		start_b = pg * IMG_PAGE;
		end_b = stop * IMG_PAGE < im->size ? stop * IMG_PAGE : im->size;
		if (end_b - start_b > im->budget)
			return -EFBIG;
		im->budget -= end_b - start_b;
		while (start_b + got < end_b) {
			ssize_t r = pread(im->fd, im->buf + start_b + got, end_b - start_b - got,
					  (off_t)(start_b + got));

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return -errno;
			/* The file shrank: the rest stays zero, which is just more odd bytes. */
			if (r == 0)
				break;
			got += (size_t)r;
		}
		for (; pg < stop; pg++)
			im->done[pg / 64] |= 1ULL << (pg % 64);
	}
	return 0;
}

static uint64_t img_rd(const struct img *im, uint64_t off, unsigned int n)
{
	const unsigned char *p = im->buf + off;
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = im->msb ? v << 8 | p[i] : v | (uint64_t)p[i] << (8 * i);
	return v;
}

static size_t img_shentsize(const struct img *im)
{
	return im->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
}

static size_t img_phentsize(const struct img *im)
{
	return im->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
}

/* Callers stay below im->shnum, whose table img_headers() checked to be inside the file. */
static void img_shdr(const struct img *im, size_t i, struct shdr_info *sh)
{
	uint64_t b = im->shoff + i * img_shentsize(im);

	sh->type = (uint32_t)img_rd(im, b + 4, 4);
	if (im->is64) {
		sh->offset = img_rd(im, b + 24, 8);
		sh->size = img_rd(im, b + 32, 8);
		sh->link = (uint32_t)img_rd(im, b + 40, 4);
		sh->align = img_rd(im, b + 48, 8);
	} else {
		sh->offset = img_rd(im, b + 16, 4);
		sh->size = img_rd(im, b + 20, 4);
		sh->link = (uint32_t)img_rd(im, b + 24, 4);
		sh->align = img_rd(im, b + 32, 4);
	}
}

static void img_phdr(const struct img *im, size_t i, struct phdr_info *ph)
{
	uint64_t b = im->phoff + i * img_phentsize(im);

	ph->type = (uint32_t)img_rd(im, b, 4);
	if (im->is64) {
		ph->flags = (uint32_t)img_rd(im, b + 4, 4);
		ph->offset = img_rd(im, b + 8, 8);
		ph->vaddr = img_rd(im, b + 16, 8);
		ph->filesz = img_rd(im, b + 32, 8);
		ph->align = img_rd(im, b + 48, 8);
	} else {
		ph->offset = img_rd(im, b + 4, 4);
		ph->vaddr = img_rd(im, b + 8, 4);
		ph->filesz = img_rd(im, b + 16, 4);
		ph->flags = (uint32_t)img_rd(im, b + 24, 4);
		ph->align = img_rd(im, b + 28, 4);
	}
}

static bool range_in(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/*
 * Read the ELF header and the section and program header tables. The counts are derived as
 * libelf derives them (extended numbering in section 0, a table that does not fit the file
 * counts as absent), so that the limits checked here are the ones libelf will act on.
 */
static int img_headers(struct img *im)
{
	const unsigned char *b = im->buf;
	uint64_t phnum, shnum;
	int err;

	err = img_fill(im, 0, sizeof(Elf64_Ehdr));
	if (err)
		return err;
	if (memcmp(b, ELFMAG, SELFMAG) ||
	    (b[EI_CLASS] != ELFCLASS32 && b[EI_CLASS] != ELFCLASS64) ||
	    (b[EI_DATA] != ELFDATA2LSB && b[EI_DATA] != ELFDATA2MSB))
		return -ENOEXEC;
	im->is64 = b[EI_CLASS] == ELFCLASS64;
	im->msb = b[EI_DATA] == ELFDATA2MSB;
	if (im->size < (im->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr)))
		return -ENOEXEC;
	im->type = (unsigned int)img_rd(im, 16, 2);
	if (im->is64) {
		im->phoff = img_rd(im, 32, 8);
		im->shoff = img_rd(im, 40, 8);
		phnum = img_rd(im, 56, 2);
		shnum = img_rd(im, 60, 2);
	} else {
		im->phoff = img_rd(im, 28, 4);
		im->shoff = img_rd(im, 32, 4);
		phnum = img_rd(im, 44, 2);
		shnum = img_rd(im, 48, 2);
	}
	if (im->shoff && range_in(im->shoff, img_shentsize(im), im->size)) {
		err = img_fill(im, im->shoff, img_shentsize(im));
		if (err)
			return err;
		if (!shnum)
			shnum = img_rd(im, im->shoff + (im->is64 ? 32 : 20), im->is64 ? 8 : 4);
	}
	if (shnum > ELF_SECTIONS_MAX)
		return -E2BIG;
	if (!range_in(im->shoff, shnum * img_shentsize(im), im->size))
		shnum = 0;
	if (phnum == PN_XNUM && shnum)
		phnum = img_rd(im, im->shoff + (im->is64 ? 44 : 28), 4);
	if (phnum > ELF_SEGMENTS_MAX)
		return -E2BIG;
	if (!range_in(im->phoff, phnum * img_phentsize(im), im->size))
		phnum = 0;
	im->shnum = (size_t)shnum;
	im->phnum = (size_t)phnum;
	err = img_fill(im, im->shoff, shnum * img_shentsize(im));
	if (!err)
		err = img_fill(im, im->phoff, phnum * img_phentsize(im));
	return err;
}

static Elf *img_elf(struct img *im)
{
	Elf *elf = elf_memory((char *)im->buf, im->size);

	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return NULL;
	}
	return elf;
}

struct note_range {
	uint64_t off, len;
	Elf_Type type;
};

static void note_range_add(const struct img *im, struct note_range *r, size_t *n, uint64_t off,
			   uint64_t len, uint64_t align)
{
	if (off >= im->size || !len)
		return;
	if (len > im->size - off)
		len = im->size - off;
	if (len > NOTE_RANGE_MAX)
		len = NOTE_RANGE_MAX;
	r[*n].off = off;
	r[*n].len = len;
	/* Notes aligned to 8 (GNU properties) pad differently. */
	r[*n].type = align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
	(*n)++;
}

/*
 * The first NT_GNU_BUILD_ID note of the PT_NOTE segments (what the kernel reads for
 * BPF_F_STACK_BUILD_ID), else of the SHT_NOTE sections (files without program headers).
 */
static int img_build_id(struct img *im, unsigned char *id, size_t id_size)
{
	struct note_range r[2 * NOTE_RANGES_MAX];
	size_t n = 0, nseg = 0, nsec = 0;
	int ret = -ENODATA, err;
	Elf *elf;

	for (size_t i = 0; i < im->phnum && nseg < NOTE_RANGES_MAX; i++) {
		struct phdr_info ph;

		img_phdr(im, i, &ph);
		if (ph.type == PT_NOTE) {
			note_range_add(im, r, &n, ph.offset, ph.filesz, ph.align);
			nseg++;
		}
	}
	for (size_t i = 0; i < im->shnum && nsec < NOTE_RANGES_MAX; i++) {
		struct shdr_info sh;

		img_shdr(im, i, &sh);
		if (sh.type == SHT_NOTE) {
			note_range_add(im, r, &n, sh.offset, sh.size, sh.align);
			nsec++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		err = img_fill(im, r[i].off, r[i].len);
		if (err)
			return err;
	}
	if (!n)
		return -ENODATA;
	elf = img_elf(im);
	if (!elf)
		return -ENOEXEC;
	/* Like the kernel, the first build-ID note decides, even one too long to use. */
	for (size_t i = 0; i < n && ret == -ENODATA; i++) {
		Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)r[i].off, r[i].len, r[i].type);
		size_t pos = 0, next, name_off, desc_off;
		GElf_Nhdr nh;

		if (!d)
			continue;
		while (pos < d->d_size &&
		       (next = gelf_getnote(d, pos, &nh, &name_off, &desc_off))) {
			const char *name = (const char *)d->d_buf + name_off;

			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof(ELF_NOTE_GNU) &&
			    !memcmp(name, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) && nh.n_descsz) {
				if (nh.n_descsz > id_size) {
					ret = -ENOSPC;
				} else {
					memcpy(id, (const char *)d->d_buf + desc_off, nh.n_descsz);
					ret = (int)nh.n_descsz;
				}
				break;
			}
			pos = next;
		}
	}
	elf_end(elf);
	return ret;
}

int elf_build_id_from_mem(const void *image, size_t size, unsigned char *out, size_t out_size)
{
	unsigned char id[BUILD_ID_MAX];
	struct img im;
	int ret;

	if (!out)
		return -EINVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	ret = img_init_mem(&im, image, size);
	if (!ret)
		ret = img_headers(&im);
	if (!ret)
		ret = img_build_id(&im, id, sizeof(id));
	if (ret > 0) {
		if ((size_t)ret > out_size)
			ret = -ENOSPC;
		else
			memcpy(out, id, (size_t)ret);
	}
	img_fini(&im);
	return ret;
}

/* ---------------------------------------------------------------------------------------- */
/* User symbols                                                                             */

#define MAPS_TEXT_MAX	 (8U << 20)
#define MAPS_ENTRIES_MAX (1U << 17)
#define MAPS_PATH_MAX	 4096
#define USYMS_BYTES_MAX	 (2ULL << 30) /* symbol tables of all DSOs together */
#define RCACHE_MAX	 (1U << 20)   /* cached lookups per debuginfo DSO */
#define SIZELESS_MAX	 (64U << 10)  /* reach of a symbol without st_size */
#define VDSO_MAX	 (1U << 20)
#define DEBUG_DIR	 "/usr/lib/debug"

struct useg {
	uint64_t off, filesz, vaddr;
	bool exec;
};

struct uent {
	uint64_t addr, size;
	uint32_t name; /* offset in udso.str */
	uint32_t rank;
};

struct filekey {
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec;
};

struct rcache_ent {
	uint64_t vaddr;
	const char *name;
	uint64_t off;
	bool used;
};

struct udso {
	struct udso *next;
	const char *path;
	bool has_id;
	unsigned char key[SYM_BUILD_ID_SIZE]; /* build ID zero-padded (or cut) as BPF reports it */
	unsigned char id[BUILD_ID_MAX];
	size_t id_len;
	struct filekey fk; /* when !has_id */
	struct useg *seg;
	size_t nseg;
	struct uent *sym; /* by address, one per address */
	size_t nsym;
	char *str;
	bool has_symtab;  /* .symtab of the file itself: as good as the debug file */
	bool debug_tried; /* separate debuginfo looked for */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GElf_Addr bias;
	struct rcache_ent *cache;
	size_t cache_cap, cache_n;
};

struct umap {
	uint64_t start, end, pgoff;
	uint64_t dev, ino; /* of the mapped file, as the maps line gives them */
	const char *path;
	struct udso *dso; /* NULL when the file could not be read */
};

struct psnap {
	int pid;
	struct umap *map; /* by start */
	size_t n;
};

struct usyms {
	struct htab strs;      /* interned paths (char *) */
	struct htab demangled; /* struct shown_name *, by the mangled name's address */
	struct htab by_id;     /* struct udso *, by key */
	struct htab by_file;   /* struct udso * without build ID, by filekey */
	struct htab files;     /* struct file_dso *: every file read, by filekey */
	struct htab pids;      /* struct psnap * */
	struct udso *dsos;
	uint64_t sym_bytes;
};

struct strkey {
	const char *s;
	size_t len;
};

static bool str_eq(const void *val, const void *key)
{
	const struct strkey *k = key;

	return !strncmp(val, k->s, k->len) && ((const char *)val)[k->len] == '\0';
}

/* One copy of each path, valid until usyms_free, whatever snapshot refers to it. */
static const char *intern(struct usyms *us, const char *s, size_t len)
{
	struct strkey k = {s, len};
	uint64_t h = hash_bytes(s, len);
	char *v = htab_find(&us->strs, h, str_eq, &k);

	if (v)
		return v;
	v = strndup(s, len);
	if (!v)
		return NULL;
	if (htab_add(&us->strs, h, v)) {
		free(v);
		return NULL;
	}
	return v;
}

static bool dso_id_eq(const void *val, const void *key)
{
	return !memcmp(((const struct udso *)val)->key, key, SYM_BUILD_ID_SIZE);
}

static bool dso_file_eq(const void *val, const void *key)
{
	return !memcmp(&((const struct udso *)val)->fk, key, sizeof(struct filekey));
}

/*
 * A file read before, by its filekey, and what it gave: its DSO, or the error that makes it
 * none of ours (not an ELF executable or library). Each file is read once however many
 * processes map it: host-wide, each new process's libraries were read again (their headers
 * and notes, into fresh pages: issue 26 measured 117k of mmscope's own page faults in 5 s
 * under img_headers <- dso_register_img, 58% of all the faults the run reported).
 */
struct file_dso {
	struct filekey fk;
	struct udso *dso;
	int err;
};

static bool file_dso_eq(const void *val, const void *key)
{
	return !memcmp(&((const struct file_dso *)val)->fk, key, sizeof(struct filekey));
}

static bool psnap_eq(const void *val, const void *key)
{
	return ((const struct psnap *)val)->pid == *(const int *)key;
}

static uint64_t pid_hash(int pid)
{
	return hash_mix((uint64_t)(unsigned int)pid + 1);
}

static void psnap_free(void *p)
{
	struct psnap *ps = p;

	free(ps->map);
	free(ps);
}

static void dso_free(struct udso *d)
{
	if (d->dwfl)
		dwfl_end(d->dwfl);
	free(d->seg);
	free(d->sym);
	free(d->str);
	free(d->cache);
	free(d);
}

struct usyms *usyms_new(void)
{
	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOSYS;
		return NULL;
	}
	return calloc(1, sizeof(struct usyms));
}

/* A symbol's name as shown, demangled once: symbol names live as long as their DSO, so the
 * mangled name's address is the key. */
struct shown_name {
	const char *mangled;
	char *shown; /* NULL: shown as it is */
};

static bool shown_name_eq(const void *val, const void *key)
{
	return ((const struct shown_name *)val)->mangled == key;
}

static void shown_name_free(void *v)
{
	free(((struct shown_name *)v)->shown);
	free(v);
}

static const char *shown_name(struct usyms *us, const char *name)
{
	uint64_t h = hash_mix((uint64_t)(uintptr_t)name);
	struct shown_name *n;

	if (!name || name[0] != '_')
		return name;
	n = htab_find(&us->demangled, h, shown_name_eq, name);
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n)
			return name;
		n->mangled = name;
		n->shown = demangle_symbol(name);
		if (htab_add(&us->demangled, h, n)) {
			shown_name_free(n);
			return name;
		}
	}
	return n->shown ? n->shown : name;
}

void usyms_free(struct usyms *us)
{
	if (!us)
		return;
	while (us->dsos) {
		struct udso *d = us->dsos;

		us->dsos = d->next;
		dso_free(d);
	}
	htab_free(&us->by_id, NULL);
	htab_free(&us->by_file, NULL);
	htab_free(&us->files, free);
	htab_free(&us->pids, psnap_free);
	htab_free(&us->strs, free);
	htab_free(&us->demangled, shown_name_free);
	free(us);
}

static int uent_cmp(const void *a, const void *b)
{
	const struct uent *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static uint32_t sym_rank(unsigned int bind)
{
	/* Among aliases, show the exported name: __GI_memcpy and memcpy share an address. */
	return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

/*
 * Copy the function symbols of section idx (SHT_SYMTAB or SHT_DYNSYM) into d. Returns 0 with
 * d->nsym possibly 0 when the section is unusable: a file without symbols is still a DSO.
 */
static int img_load_symtab(struct usyms *us, struct img *im, size_t idx, struct udso *d)
{
	size_t ent = im->is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym), count, n = 0;
	struct shdr_info sh, st;
	void *shrunk;
	uint64_t bytes;
	Elf_Data *data;
	int err = 0;
	Elf *elf;

	img_shdr(im, idx, &sh);
	if (sh.link == 0 || sh.link >= im->shnum)
		return 0;
	img_shdr(im, sh.link, &st);
	if (st.type != SHT_STRTAB || !st.size || sh.size > SYMTAB_MAX || st.size > SYMTAB_MAX ||
	    !range_in(sh.offset, sh.size, im->size) || !range_in(st.offset, st.size, im->size))
		return 0;
	count = (size_t)(sh.size / ent);
	bytes = (uint64_t)count * sizeof(struct uent) + st.size;
	if (count < 2 || us->sym_bytes + bytes > USYMS_BYTES_MAX)
		return 0;
	err = img_fill(im, sh.offset, count * ent);
	if (!err)
		err = img_fill(im, st.offset, st.size);
	if (err)
		return err;
	d->sym = malloc(count * sizeof(*d->sym));
	d->str = malloc(st.size);
	if (!d->sym || !d->str)
		return -ENOMEM;
	/*
	 * Names are kept by offset in a private copy of the string table, NUL-terminated at its
	 * end so that every name is (a string table without NULs costs one cut name, rather than
	 * a scan to the end of the table for each symbol).
	 */
	memcpy(d->str, im->buf + st.offset, st.size);
	d->str[st.size - 1] = '\0';
	elf = img_elf(im);
	data = elf ? elf_getdata_rawchunk(elf, (int64_t)sh.offset, count * ent, ELF_T_SYM) : NULL;
	for (size_t i = 1; data && i < count; i++) {
		GElf_Sym s;
		unsigned int type;

		if (!gelf_getsym(data, (int)i, &s))
			break;
		type = GELF_ST_TYPE(s.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
		    !s.st_value || !s.st_name || s.st_name >= st.size || !d->str[s.st_name])
			continue;
		d->sym[n].addr = s.st_value;
		d->sym[n].size = s.st_size;
		d->sym[n].name = (uint32_t)s.st_name;
		d->sym[n].rank = sym_rank(GELF_ST_BIND(s.st_info));
		n++;
	}
	if (elf)
		elf_end(elf);
	if (!n) {
		free(d->sym);
		free(d->str);
		d->sym = NULL;
		d->str = NULL;
		return 0;
	}
	qsort(d->sym, n, sizeof(*d->sym), uent_cmp);
	/* One symbol per address, the best ranked, so a binary search lands on it. */
	d->nsym = 0;
	for (size_t i = 0; i < n; i++)
		if (!d->nsym || d->sym[d->nsym - 1].addr != d->sym[i].addr)
			d->sym[d->nsym++] = d->sym[i];
	shrunk = realloc(d->sym, d->nsym * sizeof(*d->sym));
	if (shrunk)
		d->sym = shrunk;
	us->sym_bytes += d->nsym * sizeof(*d->sym) + st.size;
	return 0;
}

static int img_load_symbols(struct usyms *us, struct img *im, struct udso *d)
{
	size_t symtab = SIZE_MAX, dynsym = SIZE_MAX;
	int err;

	for (size_t i = 1; i < im->shnum; i++) {
		struct shdr_info sh;

		img_shdr(im, i, &sh);
		if (sh.type == SHT_SYMTAB && symtab == SIZE_MAX)
			symtab = i;
		if (sh.type == SHT_DYNSYM && dynsym == SIZE_MAX)
			dynsym = i;
	}
	if (symtab != SIZE_MAX) {
		err = img_load_symtab(us, im, symtab, d);
		if (err)
			return err;
		d->has_symtab = d->nsym > 0;
		if (d->has_symtab)
			return 0;
	}
	/* Exported names only, until (unless) a debug file is found. */
	if (dynsym != SIZE_MAX)
		return img_load_symtab(us, im, dynsym, d);
	return 0;
}

static int img_load_segments(struct img *im, struct udso *d)
{
	d->seg = calloc(im->phnum ? im->phnum : 1, sizeof(*d->seg));
	if (!d->seg)
		return -ENOMEM;
	for (size_t i = 0; i < im->phnum; i++) {
		struct phdr_info ph;

		img_phdr(im, i, &ph);
		if (ph.type != PT_LOAD || !ph.filesz)
			continue;
		d->seg[d->nseg].off = ph.offset;
		d->seg[d->nseg].filesz = ph.filesz;
		d->seg[d->nseg].vaddr = ph.vaddr;
		d->seg[d->nseg].exec = ph.flags & PF_X;
		d->nseg++;
	}
	return 0;
}

static void filekey_of(const struct stat *st, struct filekey *fk)
{
	memset(fk, 0, sizeof(*fk));
	fk->dev = st->st_dev;
	fk->ino = st->st_ino;
	fk->size = (uint64_t)st->st_size;
	fk->mtime_sec = st->st_mtim.tv_sec;
	fk->mtime_nsec = st->st_mtim.tv_nsec;
}

/*
 * Register the ELF image im (path is the interned display name). Returns the DSO, possibly one
 * registered before under the same build ID, or NULL with *err set. Without a build ID, the
 * image is registered only when fk identifies its file (it can then serve raw addresses).
 */
static struct udso *dso_register_img(struct usyms *us, struct img *im, const char *path,
				     const struct filekey *fk, int *err)
{
	unsigned char id[BUILD_ID_MAX], key[SYM_BUILD_ID_SIZE] = {0};
	struct udso *d = NULL;
	int idlen = 0;

	*err = img_headers(im);
	if (!*err && im->type != ET_EXEC && im->type != ET_DYN)
		*err = -ENOEXEC;
	if (!*err) {
		/* An ID too long to keep is as good as none. */
		idlen = img_build_id(im, id, sizeof(id));
		if (idlen < 0 && ((idlen != -ENODATA && idlen != -ENOSPC) || !fk))
			*err = idlen;
	}
	if (*err)
		return NULL;
	if (idlen > 0) {
		memcpy(key, id, (size_t)idlen < sizeof(key) ? (size_t)idlen : sizeof(key));
		d = htab_find(&us->by_id, hash_bytes(key, sizeof(key)), dso_id_eq, key);
	} else {
		d = htab_find(&us->by_file, hash_bytes(fk, sizeof(*fk)), dso_file_eq, fk);
	}
	if (d)
		return d;
	d = calloc(1, sizeof(*d));
	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	d->path = path;
	if (idlen > 0) {
		d->has_id = true;
		memcpy(d->key, key, sizeof(key));
		memcpy(d->id, id, (size_t)idlen);
		d->id_len = (size_t)idlen;
	} else {
		d->fk = *fk;
	}
	*err = img_load_segments(im, d);
	if (!*err)
		*err = img_load_symbols(us, im, d);
	if (!*err) {
		if (d->has_id)
			*err = htab_add(&us->by_id, hash_bytes(key, sizeof(key)), d);
		else
			*err = htab_add(&us->by_file, hash_bytes(fk, sizeof(*fk)), d);
	}
	if (*err) {
		dso_free(d);
		return NULL;
	}
	d->next = us->dsos;
	us->dsos = d;
	return d;
}

/* The same for the regular file open as fd; need_id: a file without build ID is an error. */
static struct udso *dso_register(struct usyms *us, int fd, const struct stat *st, const char *path,
				 bool need_id, int *err)
{
	uint64_t h;
	struct udso *d = NULL;
	struct file_dso *seen;
	struct filekey fk;
	struct img im;

	filekey_of(st, &fk);
	h = hash_bytes(&fk, sizeof(fk));
	seen = htab_find(&us->files, h, file_dso_eq, &fk);
	if (seen && (!need_id || !seen->dso || seen->dso->has_id)) {
		*err = seen->err;
		return seen->dso;
	}
	*err = img_init_fd(&im, fd, (uint64_t)st->st_size);
	if (!*err)
		d = dso_register_img(us, &im, path, need_id ? NULL : &fk, err);
	img_fini(&im);
	/* Kept: what was registered, and the files that are no ELF image of code (data files,
	 * fonts, locale archives mapped executable or not); not a failure that may pass (a
	 * read error, no memory). */
	if (!seen && (d || *err == -ENOEXEC)) {
		seen = calloc(1, sizeof(*seen));
		if (seen) {
			seen->fk = fk;
			seen->dso = d;
			seen->err = d ? 0 : *err;
			if (htab_add(&us->files, h, seen))
				free(seen);
		}
	}
	return d;
}

/*
 * From an O_PATH descriptor (consumed), a readable one, if it is a regular file of sane size.
 * Going through O_PATH first means a device is never opened (no driver open() side effect)
 * and a FIFO never blocks us; the reopen through /proc/self/fd reaches the same inode.
 */
static int reopen_regular(int pathfd, struct stat *st)
{
	char proc[64];
	struct stat st2;
	int fd;

	if (fstat(pathfd, st)) {
		fd = -errno;
		goto out;
	}
	if (!S_ISREG(st->st_mode)) {
		fd = S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
		goto out;
	}
	if ((uint64_t)st->st_size > ELF_FILE_MAX) {
		fd = -EFBIG;
		goto out;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pathfd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		fd = -errno;
		goto out;
	}
	if (fstat(fd, &st2) || st2.st_dev != st->st_dev || st2.st_ino != st->st_ino ||
	    !S_ISREG(st2.st_mode) || (uint64_t)st2.st_size > ELF_FILE_MAX) {
		close(fd);
		fd = -EAGAIN;
		goto out;
	}
	*st = st2;
out:
	close(pathfd);
	return fd;
}

/* O_PATH descriptor of path resolved inside rootfd as if it were "/", symlinks included. */
static int open_in_root(int rootfd, const char *path)
{
#ifdef SYS_openat2
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));

	/* Without openat2 (Linux < 5.6) there is no safe way: ENOSYS, and no fallback. */
	return fd < 0 ? -errno : (int)fd;
#else
	(void)rootfd;
	(void)path;
	return -ENOSYS;
#endif
}

int usyms_add_file(struct usyms *us, const char *path)
{
	return usyms_add_file_named(us, path, path);
}

int usyms_add_file_named(struct usyms *us, const char *path, const char *name)
{
	const char *ipath;
	struct stat st;
	int fd, err;

	if (!us || !path || !*path || !name || !*name)
		return -EINVAL;
	ipath = intern(us, name, strlen(name));
	if (!ipath)
		return -ENOMEM;
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	fd = reopen_regular(fd, &st);
	if (fd < 0)
		return fd;
	dso_register(us, fd, &st, ipath, true, &err);
	close(fd);
	return err;
}

/* Where the files of a process are: /proc/PID (for map_files) and/or its root. */
struct proc_ctx {
	int procfd;
	int rootfd;
};

struct maps_line {
	uint64_t start, end, pgoff, dev_major, dev_minor, ino;
	bool exec;
	const char *path;
	size_t path_len;
};

/* "START-END PERMS OFFSET MAJOR:MINOR INODE [PATH]", the path running to the end of line. */
static bool maps_parse_line(const char *p, const char *end, struct maps_line *ml)
{
	static const char perm_ok[4][2] = {{'r', '-'}, {'w', '-'}, {'x', '-'}, {'p', 's'}};

	memset(ml, 0, sizeof(*ml));
	p = parse_hex(p, end, &ml->start);
	if (!p || p == end || *p++ != '-')
		return false;
	p = parse_hex(p, end, &ml->end);
	if (!p || p == end || *p++ != ' ' || end - p < 5)
		return false;
	for (int i = 0; i < 4; i++)
		if (p[i] != perm_ok[i][0] && p[i] != perm_ok[i][1])
			return false;
	ml->exec = p[2] == 'x';
	p += 4;
	if (*p++ != ' ')
		return false;
	p = parse_hex(p, end, &ml->pgoff);
	if (!p || p == end || *p++ != ' ')
		return false;
	p = parse_hex(p, end, &ml->dev_major);
	if (!p || p == end || *p++ != ':')
		return false;
	p = parse_hex(p, end, &ml->dev_minor);
	if (!p || p == end || *p++ != ' ')
		return false;
	p = parse_dec(p, end, &ml->ino);
	if (!p || (p < end && !is_blank(*p)))
		return false;
	p = skip_blanks(p, end);
	ml->path = p;
	ml->path_len = (size_t)(end - p);
	if (ml->start >= ml->end || ml->path_len >= MAPS_PATH_MAX ||
	    memchr(ml->path, '\0', ml->path_len))
		return false;
	return true;
}

/* The files of one snapshot, so that a library mapped five times is read once. */
struct seen {
	struct seen *next;
	const char *path;
	uint64_t dev_major, dev_minor, ino;
	struct udso *dso;
};

static bool seen_eq(const void *val, const void *key)
{
	const struct seen *a = val, *b = key;

	return a->path == b->path && a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       a->ino == b->ino;
}

static uint64_t seen_hash(const struct seen *s)
{
	uint64_t v[4] = {(uint64_t)(uintptr_t)s->path, s->dev_major, s->dev_minor, s->ino};

	return hash_bytes(v, sizeof(v));
}

static struct udso *maps_open_file(struct usyms *us, const struct proc_ctx *pc,
				   const struct umap *m)
{
	struct udso *d;
	struct stat st;
	int fd = -1, err;

	if (pc->procfd >= 0) {
		char name[64];

		/* The very file mapped, even if deleted or replaced since. */
		snprintf(name, sizeof(name), "map_files/%" PRIx64 "-%" PRIx64, m->start, m->end);
		fd = openat(pc->procfd, name, O_PATH | O_CLOEXEC);
	}
	if (fd < 0 && pc->rootfd >= 0 && m->path[0] == '/')
		fd = open_in_root(pc->rootfd, m->path);
	if (fd < 0 && pc->rootfd >= 0 && pc->procfd >= 0 && m->path[0] == '/') {
		/* /proc/PID/maps writes paths from the reader's root: for a process in a chroot
		 * they start with its root's path. Strip that and look inside its root, still
		 * with RESOLVE_IN_ROOT. */
		char root[PATH_MAX];
		ssize_t n = readlinkat(pc->procfd, "root", root, sizeof(root) - 1);

		if (n > 1) {
			root[n] = '\0';
			if (strncmp(m->path, root, (size_t)n) == 0 && m->path[n] == '/')
				fd = open_in_root(pc->rootfd, m->path + n);
		}
	}
	if (fd < 0)
		return NULL;
	fd = reopen_regular(fd, &st);
	if (fd < 0)
		return NULL;
	d = dso_register(us, fd, &st, m->path, false, &err);
	close(fd);
	return d;
}

/*
 * The vdso is no file, but the kernel maps the same small ELF image in every process of an
 * ABI: read it from the process's memory (not ours: a 32-bit process has another one).
 */
static struct udso *maps_read_vdso(struct usyms *us, const struct proc_ctx *pc,
				   const struct umap *m)
{
	size_t len = (size_t)(m->end - m->start), got = 0;
	struct udso *d = NULL;
	unsigned char *buf;
	struct img im;
	int fd, err;

	if (pc->procfd < 0 || m->end - m->start > VDSO_MAX)
		return NULL;
	fd = openat(pc->procfd, "mem", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(len);
	while (buf && got < len) {
		ssize_t r = pread(fd, buf + got, len - got, (off_t)(m->start + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (buf && got == len && !img_init_mem(&im, buf, len)) {
		d = dso_register_img(us, &im, m->path, NULL, &err);
		img_fini(&im);
	}
	free(buf);
	return d;
}

static int umap_cmp(const void *a, const void *b)
{
	const struct umap *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/*
 * The files of a new snapshot that could not be opened, taken from the snapshot it replaces
 * where that one mapped the same file (device and inode) at the same place and offset: the
 * same code. A snapshot asked for late, when the process is already exiting, reads its maps
 * but then finds /proc/PID/map_files and /proc/PID/root gone: without this it replaced a good
 * snapshot with paths only, and every raw address of the process resolved at the end lost its
 * symbols (VM, faults --folded on page_touch: 95 of its 500 write faults and 81 of its 500 read
 * faults under frames all [unknown], in 1 of 24 runs).
 */
static void inherit_files(struct umap *map, size_t n, const struct psnap *old)
{
	for (size_t i = 0; i < n; i++) {
		size_t lo = 0, hi = old->n;
		const struct umap *o;

		if (map[i].dso)
			continue;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (old->map[mid].start < map[i].start)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < old->n && old->map[lo].start == map[i].start; lo++) {
			o = &old->map[lo];
			if (o->dso && o->end == map[i].end && o->pgoff == map[i].pgoff &&
			    o->dev == map[i].dev && o->ino == map[i].ino &&
			    o->path == map[i].path) {
				map[i].dso = o->dso;
				break;
			}
		}
	}
}

static int add_maps(struct usyms *us, int pid, const char *text, size_t len,
		    const struct proc_ctx *pc)
{
	const char *p = text, *end = text + (len > MAPS_TEXT_MAX ? MAPS_TEXT_MAX : len);
	struct seen *seen_list = NULL;
	struct htab seen = {0};
	struct umap *map = NULL;
	size_t n = 0, cap = 0;
	struct psnap *ps;
	int err = 0;

	while (p < end && n < MAPS_ENTRIES_MAX) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		struct maps_line ml;
		struct umap m;
		void *np;

		if (!eol)
			eol = end;
		if (!maps_parse_line(p, eol, &ml) || !ml.path_len) {
			/* Unparsable, or anonymous memory: nothing to symbolize there. */
			p = eol + (eol < end);
			continue;
		}
		p = eol + (eol < end);
		m.start = ml.start;
		m.end = ml.end;
		m.pgoff = ml.pgoff;
		m.dev = ml.dev_major << 32 | ml.dev_minor;
		m.ino = ml.ino;
		m.dso = NULL;
		m.path = intern(us, ml.path, ml.path_len);
		if (!m.path) {
			err = -ENOMEM;
			goto out;
		}
		/*
		 * Only code is looked up, so only the files of executable mappings are read:
		 * this spares opening data files (locale archives, fonts, databases).
		 */
		if (ml.exec && ((m.path[0] == '/' && (pc->procfd >= 0 || pc->rootfd >= 0)) ||
				(pc->procfd >= 0 && !strcmp(m.path, "[vdso]")))) {
			struct seen key = {NULL, m.path, ml.dev_major, ml.dev_minor, ml.ino, NULL};
			uint64_t h = seen_hash(&key);
			struct seen *s = htab_find(&seen, h, seen_eq, &key);

			if (!s) {
				s = malloc(sizeof(*s));
				if (!s) {
					err = -ENOMEM;
					goto out;
				}
				*s = key;
				s->next = seen_list;
				seen_list = s;
				if (htab_add(&seen, h, s)) {
					err = -ENOMEM;
					goto out;
				}
				if (m.path[0] == '/')
					s->dso = maps_open_file(us, pc, &m);
				else
					s->dso = maps_read_vdso(us, pc, &m);
			}
			m.dso = s->dso;
		}
		np = grow_array(map, &cap, n + 1, sizeof(*map));
		if (!np) {
			err = -ENOMEM;
			goto out;
		}
		map = np;
		map[n++] = m;
	}
	if (n)
		qsort(map, n, sizeof(*map), umap_cmp);
	/* A new snapshot of a pid replaces the old one: the process may have exec'ed. Files it
	 * could not open are the old one's where that mapped the very same. */
	ps = htab_find(&us->pids, pid_hash(pid), psnap_eq, &pid);
	if (ps) {
		inherit_files(map, n, ps);
		free(ps->map);
	} else {
		ps = calloc(1, sizeof(*ps));
		if (!ps || htab_add(&us->pids, pid_hash(pid), ps)) {
			free(ps);
			err = -ENOMEM;
			goto out;
		}
		ps->pid = pid;
	}
	ps->map = map;
	ps->n = n;
	map = NULL;
out:
	free(map);
	while (seen_list) {
		struct seen *s = seen_list;

		seen_list = s->next;
		free(s);
	}
	htab_free(&seen, NULL);
	return err;
}

int usyms_add_maps_text(struct usyms *us, int pid, const char *maps, size_t len,
			const char *root_dir)
{
	struct proc_ctx pc = {-1, -1};
	int err;

	if (!us || (!maps && len))
		return -EINVAL;
	if (root_dir) {
		pc.rootfd = open(root_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (pc.rootfd < 0)
			return -errno;
	}
	err = add_maps(us, pid, maps ? maps : "", len, &pc);
	if (pc.rootfd >= 0)
		close(pc.rootfd);
	return err;
}

int usyms_add_pid(struct usyms *us, int pid)
{
	return usyms_add_pid_as(us, pid, pid);
}

int usyms_add_pid_as(struct usyms *us, int pid, int key)
{
	struct proc_ctx pc = {-1, -1};
	size_t len = 0, cap = 64 << 10;
	char dir[32], *buf = NULL;
	int fd = -1, err = 0;

	if (!us || pid <= 0 || !key)
		return -EINVAL;
	snprintf(dir, sizeof(dir), "/proc/%d", pid);
	/*
	 * Everything goes through this directory descriptor: if the process dies and its pid is
	 * reused, lookups through it fail instead of reaching the new process.
	 */
	pc.procfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pc.procfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	fd = openat(pc.procfd, "maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno == ENOENT ? -ESRCH : -errno;
		goto out;
	}
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (len == cap) {
			char *nb;

			if (cap >= MAPS_TEXT_MAX)
				break;
			nb = realloc(buf, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = errno == ENOENT ? -ESRCH : -errno;
			goto out;
		}
		if (!r)
			break;
		len += (size_t)r;
	}
	/* No mappings: a zombie (or a kernel thread) has no address space left. Its earlier
	 * snapshot, if any, is what its stacks need: keep it. */
	if (!len) {
		err = -ESRCH;
		goto out;
	}
	/* Over the cap, the cut line is dropped rather than misread. */
	if (len == cap) {
		while (len && buf[len - 1] != '\n')
			len--;
	}
	pc.rootfd = openat(pc.procfd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	err = add_maps(us, key, buf, len, &pc);
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	if (pc.rootfd >= 0)
		close(pc.rootfd);
	close(pc.procfd);
	return err;
}

static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	(void)mod;
	(void)userdata;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	(void)debuginfo_file_name;
	/* The module reported *is* the debug file: nothing more to look for. */
	errno = 0;
	return -1;
}

static const Dwfl_Callbacks debug_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/*
 * Load the separate debug file of d from the build-ID tree, the one place it can be found
 * without trusting paths from the traced process. It is read by libdwfl directly (trusted,
 * root-owned), and its build ID must match.
 */
static void dso_load_debuginfo(struct udso *d)
{
	char path[sizeof(DEBUG_DIR) + 16 + 2 * BUILD_ID_MAX + 8];
	const unsigned char *bits;
	struct stat st;
	GElf_Addr vaddr;
	Dwfl_Module *mod;
	size_t len;
	Dwfl *dwfl;

	d->debug_tried = true;
	if (!d->has_id || d->id_len < 2)
		return;
	len = (size_t)snprintf(path, sizeof(path), DEBUG_DIR "/.build-id/%02x/", d->id[0]);
	for (size_t i = 1; i < d->id_len; i++)
		len += (size_t)snprintf(path + len, sizeof(path) - len, "%02x", d->id[i]);
	snprintf(path + len, sizeof(path) - len, ".debug");
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return;
	dwfl = dwfl_begin(&debug_callbacks);
	if (!dwfl)
		return;
	dwfl_report_begin(dwfl);
	mod = dwfl_report_offline(dwfl, d->path, path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod || dwfl_module_build_id(mod, &bits, &vaddr) != (int)d->id_len ||
	    memcmp(bits, d->id, d->id_len) || dwfl_module_getsymtab(mod) <= 0 ||
	    !dwfl_module_getelf(mod, &d->bias)) {
		dwfl_end(dwfl);
		return;
	}
	d->dwfl = dwfl;
	d->mod = mod;
}

/* dwfl_module_addrinfo scans the whole symbol table: remember its answers. */
static struct rcache_ent *rcache_slot(struct udso *d, uint64_t vaddr)
{
	size_t i;

	if ((d->cache_n + 1) * 4 > d->cache_cap * 3) {
		size_t ncap = d->cache_cap ? d->cache_cap * 2 : 64;
		struct rcache_ent *nc;

		if (d->cache_n >= RCACHE_MAX)
			return NULL;
		nc = calloc(ncap, sizeof(*nc));
		if (!nc)
			return NULL;
		for (size_t j = 0; j < d->cache_cap; j++) {
			if (!d->cache[j].used)
				continue;
			i = hash_mix(d->cache[j].vaddr) & (ncap - 1);
			while (nc[i].used)
				i = (i + 1) & (ncap - 1);
			nc[i] = d->cache[j];
		}
		free(d->cache);
		d->cache = nc;
		d->cache_cap = ncap;
	}
	i = hash_mix(vaddr) & (d->cache_cap - 1);
	while (d->cache[i].used && d->cache[i].vaddr != vaddr)
		i = (i + 1) & (d->cache_cap - 1);
	return &d->cache[i];
}

static void dso_lookup_dwfl(struct udso *d, uint64_t vaddr, struct usym *out)
{
	struct rcache_ent *c = rcache_slot(d, vaddr);
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name;

	if (c && c->used) {
		out->name = c->name;
		out->offset = c->off;
		return;
	}
	name = dwfl_module_addrinfo(d->mod, vaddr + d->bias, &off, &sym, NULL, NULL, NULL);
	if (name && !*name)
		name = NULL;
	out->name = name;
	out->offset = name ? off : 0;
	if (c) {
		c->used = true;
		c->vaddr = vaddr;
		c->name = out->name;
		c->off = out->offset;
		d->cache_n++;
	}
}

static void dso_lookup_table(const struct udso *d, uint64_t vaddr, struct usym *out)
{
	size_t lo = 0, hi = d->nsym;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->sym[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Nested or overlapping symbols are rare: look back a little, not through all. */
	for (size_t k = lo, tries = 0; k > 0 && tries < 8; k--, tries++) {
		const struct uent *s = &d->sym[k - 1];
		uint64_t reach = s->size;

		if (!reach) {
			/* Assembly without .size: up to the next symbol, within reason. */
			reach = k < d->nsym ? d->sym[k].addr - s->addr : SIZELESS_MAX;
			if (reach > SIZELESS_MAX)
				reach = SIZELESS_MAX;
		}
		if (vaddr - s->addr < reach) {
			out->name = d->str + s->name;
			out->offset = vaddr - s->addr;
			return;
		}
	}
}

static void dso_symbolize(struct udso *d, uint64_t file_offset, struct usym *out)
{
	const struct useg *best = NULL;
	uint64_t vaddr;

	/* File offset to link-time address, through the PT_LOAD segment holding it. */
	for (size_t i = 0; i < d->nseg; i++) {
		const struct useg *s = &d->seg[i];

		if (file_offset >= s->off && file_offset - s->off < s->filesz &&
		    (!best || (s->exec && !best->exec)))
			best = s;
	}
	if (!best)
		return;
	vaddr = best->vaddr + (file_offset - best->off);
	if (!d->has_symtab && !d->debug_tried)
		dso_load_debuginfo(d);
	if (d->mod)
		dso_lookup_dwfl(d, vaddr, out);
	else
		dso_lookup_table(d, vaddr, out);
}

bool usyms_resolve_build_id(struct usyms *us, const unsigned char build_id[SYM_BUILD_ID_SIZE],
			    uint64_t file_offset, struct usym *out)
{
	struct udso *d;

	if (!out)
		return false;
	memset(out, 0, sizeof(*out));
	if (!us || !build_id)
		return false;
	d = htab_find(&us->by_id, hash_bytes(build_id, SYM_BUILD_ID_SIZE), dso_id_eq, build_id);
	if (!d)
		return false;
	out->dso = d->path;
	out->file_offset = file_offset;
	if (d->has_id) {
		out->build_id = d->id;
		out->build_id_len = d->id_len;
	}
	dso_symbolize(d, file_offset, out);
	out->name = shown_name(us, out->name);
	return true;
}

bool usyms_resolve_addr(struct usyms *us, int pid, uint64_t addr, struct usym *out)
{
	const struct psnap *ps;
	const struct umap *m;
	size_t lo = 0, hi;

	if (!out)
		return false;
	memset(out, 0, sizeof(*out));
	if (!us)
		return false;
	ps = htab_find(&us->pids, pid_hash(pid), psnap_eq, &pid);
	if (!ps)
		return false;
	hi = ps->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ps->map[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= ps->map[lo - 1].end)
		return false;
	m = &ps->map[lo - 1];
	/* The path as the process sees it, even when the DSO was first met under another. */
	out->dso = m->path;
	out->file_offset = m->pgoff + (addr - m->start);
	if (m->dso && m->dso->has_id) {
		out->build_id = m->dso->id;
		out->build_id_len = m->dso->id_len;
	}
	if (m->dso)
		dso_symbolize(m->dso, out->file_offset, out);
	out->name = shown_name(us, out->name);
	return true;
}
