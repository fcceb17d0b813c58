// SPDX-License-Identifier: GPL-2.0
/*
 * Unwind tables from an ELF file's CFI (see cfi.h): the section is found with libelf, read by
 * cfi_parse.c, and its rows are turned into the compact table here: rules deduplicated,
 * addresses split into a 64 KiB page index and 16-bit row starts.
 */
#include "cfi/cfi.h"
#include "cfi/cfi_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Rule deduplication: open addressing over indices into t->rules, sized a power of two. */
struct rule_set {
	uint32_t *slot; /* index + 1; 0 is empty */
	size_t mask;
};

static uint64_t rule_hash(const struct cfi_rule *r)
{
	const uint8_t *b = (const uint8_t *)r;
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (size_t i = 0; i < sizeof(*r); i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

/* The index of rule r in t->rules, added if new; -1 when the 16-bit index space is full. */
static int64_t rule_index(struct cfi_table *t, struct rule_set *set, const struct cfi_rule *r)
{
	size_t i = rule_hash(r) & set->mask;

	while (set->slot[i]) {
		uint32_t k = set->slot[i] - 1;

		if (!memcmp(&t->rules[k], r, sizeof(*r)))
			return k;
		i = (i + 1) & set->mask;
	}
	if (t->nrules > UINT16_MAX)
		return -1;
	t->rules[t->nrules] = *r;
	set->slot[i] = ++t->nrules;
	return t->nrules - 1;
}

static void count_row(struct cfi_stats *st, const struct cfi_rule *r)
{
	st->kind_rows[r->kind < CFI_KIND_COUNT ? r->kind : CFI_UNSUPPORTED]++;
	if (r->kind == CFI_UNSUPPORTED)
		st->why_rows[r->why < CFI_WHY_COUNT ? r->why : CFI_WHY_NONE]++;
	if (r->kind != CFI_NORMAL)
		return;
	st->plt_rows += r->cfa == CFI_CFA_PLT;
	st->deref_rows += r->cfa == CFI_CFA_DEREF_SP || r->cfa == CFI_CFA_DEREF_FP;
	st->lr_rows += r->ra == CFI_RA_IN_LR;
	st->signed_rows += !!(r->flags & CFI_RA_SIGNED);
}

/* The table of the rows (sorted, merged, starting at or above t->base). */
static int build(struct cfi_table *t, const struct cfi_raw *raw)
{
	/* At most 65536 rules, and no more than there are rows: the hash table at most half full.
	 */
	size_t max_rules = raw->n < (size_t)UINT16_MAX + 1 ? raw->n : (size_t)UINT16_MAX + 1;
	struct rule_set set = {0};
	size_t nslots = 16;
	uint32_t page = 0;
	int err = 0;

	if (!raw->n)
		return 0;
	if (raw->rows[raw->n - 1].addr - t->base > 0xffffffffULL || raw->n > UINT32_MAX)
		return -E2BIG;
	while (nslots < 2 * max_rules)
		nslots *= 2;
	set.slot = calloc(nslots, sizeof(*set.slot));
	set.mask = nslots - 1;
	t->rules = calloc(max_rules, sizeof(*t->rules));
	t->rows = calloc(raw->n, sizeof(*t->rows));
	t->npages = (uint32_t)((raw->rows[raw->n - 1].addr - t->base) >> 16) + 1;
	t->page_first = calloc((size_t)t->npages + 1, sizeof(*t->page_first));
	if (!set.slot || !t->rules || !t->rows || !t->page_first) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < raw->n; i++) {
		uint64_t off = raw->rows[i].addr - t->base;
		int64_t k;

		/* The page index relies on sorted rows above base: never index past it. A row
		 * beyond the last one is caught here, before its pages are written (npages was
		 * sized by the last row): the order check alone sees it one row too late. */
		if (raw->rows[i].addr < t->base || raw->rows[i].addr > raw->rows[raw->n - 1].addr ||
		    (i && raw->rows[i].addr <= raw->rows[i - 1].addr)) {
			err = -EINVAL;
			goto out;
		}
		k = rule_index(t, &set, &raw->rows[i].rule);
		if (k < 0) {
			err = -E2BIG;
			goto out;
		}
		while (page <= off >> 16)
			t->page_first[page++] = (uint32_t)i;
		t->rows[i].addr_lo = (uint16_t)off;
		t->rows[i].rule = (uint16_t)k;
		count_row(&t->stats, &raw->rows[i].rule);
	}
	t->page_first[t->npages] = (uint32_t)raw->n;
	t->nrows = (uint32_t)raw->n;
	t->stats.rows = t->nrows;
	t->stats.rules = t->nrules;
out:
	free(set.slot);
	return err;
}

/* The data of section scn, decompressed if need be; NULL if unreadable. */
static Elf_Data *section_data(Elf_Scn *scn, const GElf_Shdr *sh)
{
	if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return NULL;
	return elf_getdata(scn, NULL);
}

/*
 * The GNU build ID in the note segment ph, copied to id (CFI_BUILD_ID_MAX bytes); its length,
 * 0 when the segment has none. Frames the BPF walker sends are named by it, as the kernel's
 * build-ID frames are.
 */
static uint32_t note_build_id(Elf *elf, const GElf_Phdr *ph, unsigned char *id)
{
	Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph->p_offset, ph->p_filesz, ELF_T_NHDR);
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	if (!d)
		return 0;
	while (off < d->d_size && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz > 0) {
			uint32_t n =
				nh.n_descsz < CFI_BUILD_ID_MAX ? nh.n_descsz : CFI_BUILD_ID_MAX;

			memcpy(id, (const char *)d->d_buf + desc_off, n);
			return n;
		}
	}
	return 0;
}

/* The rows of section scn (.eh_frame when is_eh), appended to raw. */
static int parse_scn(Elf_Scn *scn, const GElf_Shdr *sh, struct cfi_section *sec, bool is_eh,
		     struct cfi_raw *raw, struct cfi_stats *st)
{
	Elf_Data *d = section_data(scn, sh);

	if (!d || !d->d_buf)
		return -EINVAL;
	sec->data = d->d_buf;
	sec->size = d->d_size;
	sec->vaddr = sh->sh_addr;
	sec->is_eh = is_eh;
	return cfi_parse_section(sec, raw, st);
}

/* Room for n more rows. */
static int raw_reserve(struct cfi_raw *r, size_t n)
{
	if (r->n + n > r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 1024;
		struct cfi_raw_row *rows;

		while (cap < r->n + n)
			cap *= 2;
		rows = realloc(r->rows, cap * sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		r->rows = rows;
		r->cap = cap;
	}
	return 0;
}

static int raw_append(struct cfi_raw *r, uint64_t addr, const struct cfi_rule *rule)
{
	if (raw_reserve(r, 1))
		return -ENOMEM;
	r->rows[r->n].addr = addr;
	r->rows[r->n].rule = *rule;
	r->n++;
	return 0;
}

/*
 * Two sections' rows (each sorted, covering every address: a row holds until the next) as
 * one: a's rule wherever it is not a gap, b's elsewhere; equal neighbours merged.
 */
static int merge_raw(const struct cfi_raw *a, const struct cfi_raw *b, struct cfi_raw *out)
{
	static const struct cfi_rule gap;
	const struct cfi_rule *ra = &gap, *rb = &gap, *r;
	size_t i = 0, j = 0;

	while (i < a->n || j < b->n) {
		uint64_t addr = j >= b->n || (i < a->n && a->rows[i].addr <= b->rows[j].addr)
					? a->rows[i].addr
					: b->rows[j].addr;

		while (i < a->n && a->rows[i].addr == addr)
			ra = &a->rows[i++].rule;
		while (j < b->n && b->rows[j].addr == addr)
			rb = &b->rows[j++].rule;
		r = ra->kind != CFI_GAP ? ra : rb;
		if (out->n && !memcmp(&out->rows[out->n - 1].rule, r, sizeof(*r)))
			continue;
		if (raw_append(out, addr, r))
			return -ENOMEM;
	}
	return 0;
}

/* How far past the entry point its outermost frame is assumed when no CFI covers it. */
#define ENTRY_SPAN 64

/*
 * The program's entry point is the outermost frame. Where a file has no CFI there (the dynamic
 * loader's _start, which calls _dl_start and falls into _dl_start_user: no FDE covers either),
 * a walk reaching it ended as a gap, as if it had failed; the rows from the entry point up to
 * the next row (ENTRY_SPAN bytes at most) say CFI_END instead. A file whose entry has a row
 * (crt1's _start, RA undefined) is left as it is.
 */
static int mark_entry(struct cfi_raw *raw, uint64_t entry)
{
	static const struct cfi_rule end = {.kind = CFI_END}, gap;
	size_t i = 0, at;
	uint64_t stop;

	if (!entry)
		return 0;
	while (i < raw->n && raw->rows[i].addr <= entry)
		i++;
	/* rows[i - 1] covers entry (none: before the first row, a gap too) */
	if (i > 0 && raw->rows[i - 1].rule.kind != CFI_GAP)
		return 0;
	stop = i < raw->n && raw->rows[i].addr < entry + ENTRY_SPAN ? raw->rows[i].addr
								    : entry + ENTRY_SPAN;
	at = i > 0 && raw->rows[i - 1].addr == entry ? i - 1 : i;
	/* Room for two more rows: the END row and the gap after it. */
	if (raw_reserve(raw, 2))
		return -ENOMEM;
	if (at == i) { /* a new row at entry */
		memmove(&raw->rows[i + 1], &raw->rows[i], (raw->n - i) * sizeof(raw->rows[0]));
		raw->n++;
	}
	raw->rows[at].addr = entry;
	raw->rows[at].rule = end;
	if (at + 1 >= raw->n || raw->rows[at + 1].addr > stop) {
		memmove(&raw->rows[at + 2], &raw->rows[at + 1],
			(raw->n - at - 1) * sizeof(raw->rows[0]));
		raw->n++;
		raw->rows[at + 1].addr = stop;
		raw->rows[at + 1].rule = gap;
	}
	return 0;
}

static int from_elf(Elf *elf, struct cfi_table **out)
{
	Elf_Scn *scn = NULL, *eh = NULL, *debug = NULL;
	GElf_Shdr sh_eh, sh_debug, sh;
	struct cfi_raw raw = {0};
	struct cfi_section sec = {0};
	struct cfi_table *t;
	const char *ident;
	GElf_Ehdr eh_hdr;
	size_t shstrndx, nph;
	bool have_load = false;
	int err;

	ident = elf_getident(elf, NULL);
	if (elf_kind(elf) != ELF_K_ELF || !ident || !gelf_getehdr(elf, &eh_hdr))
		return -EINVAL;
	if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB ||
	    (eh_hdr.e_machine != EM_X86_64 && eh_hdr.e_machine != EM_AARCH64))
		return -ENOTSUP;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->machine = eh_hdr.e_machine;
	if (!elf_getphdrnum(elf, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph))
				continue;
			if (ph.p_type == PT_NOTE && !t->build_id_len)
				t->build_id_len = note_build_id(elf, &ph, t->build_id);
			if (ph.p_type != PT_LOAD)
				continue;
			if (!have_load || ph.p_vaddr < t->base)
				t->base = ph.p_vaddr;
			have_load = true;
			if ((ph.p_flags & PF_X) && t->nsegs < CFI_MAX_SEGMENTS) {
				t->segs[t->nsegs].off = ph.p_offset;
				t->segs[t->nsegs].end = ph.p_offset + ph.p_filesz;
				t->segs[t->nsegs].delta = (int64_t)(ph.p_vaddr - ph.p_offset);
				t->nsegs++;
			}
		}
	}
	err = -EINVAL;
	if (elf_getshdrstrndx(elf, &shstrndx))
		goto fail;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame") && !eh) {
			eh = scn;
			sh_eh = sh;
		} else if (name && !strcmp(name, ".debug_frame") && !debug) {
			debug = scn;
			sh_debug = sh;
		}
	}
	err = -ENOENT;
	if (!eh && !debug)
		goto fail;
	sec.base = t->base;
	sec.machine = t->machine;
	if (eh) {
		t->stats.section = ".eh_frame";
		err = parse_scn(eh, &sh_eh, &sec, true, &raw, &t->stats);
	}
	/* A file can have both: code built -fno-asynchronous-unwind-tables -g has its CFI in
	 * .debug_frame only, while the C runtime's objects linked with it keep theirs in
	 * .eh_frame. .debug_frame then covers what .eh_frame leaves as gaps. */
	if (debug && (!eh || !err)) {
		struct cfi_raw dbg = {0}, merged = {0};

		err = parse_scn(debug, &sh_debug, &sec, false, eh ? &dbg : &raw, &t->stats);
		if (!err && eh) {
			t->stats.section = ".eh_frame+.debug_frame";
			err = merge_raw(&raw, &dbg, &merged);
			free(raw.rows);
			raw = merged;
		} else if (!eh) {
			t->stats.section = ".debug_frame";
		}
		free(dbg.rows);
	}
	if (!err)
		err = mark_entry(&raw, eh_hdr.e_entry);
	if (!err)
		err = build(t, &raw);
	free(raw.rows);
	if (err)
		goto fail;
	*out = t;
	return 0;
fail:
	cfi_table_free(t);
	return err;
}

int cfi_table_from_file(const char *path, struct cfi_table **out)
{
	Elf *elf;
	int fd, err;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = elf ? from_elf(elf, out) : -EINVAL;
	elf_end(elf);
	close(fd);
	return err;
}

int cfi_file_build_id(const char *path, unsigned char id[CFI_BUILD_ID_MAX], uint16_t *machine)
{
	uint32_t len = 0;
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &eh) &&
	    !elf_getphdrnum(elf, &nph)) {
		*machine = eh.e_machine;
		for (size_t i = 0; i < nph && !len; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_NOTE)
				len = note_build_id(elf, &ph, id);
		}
	}
	elf_end(elf);
	close(fd);
	return len ? (int)len : -ENODATA;
}

int cfi_table_from_mem(const void *data, size_t size, struct cfi_table **out)
{
	/* libelf may decompress sections in place: it gets a copy of its own. */
	char *copy = malloc(size ? size : 1);
	Elf *elf;
	int err;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, size);
	elf_version(EV_CURRENT);
	elf = elf_memory(copy, size);
	err = elf ? from_elf(elf, out) : -EINVAL;
	elf_end(elf);
	free(copy);
	return err;
}

void cfi_table_free(struct cfi_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->page_first);
	free(t->rules);
	free(t);
}

int64_t cfi_table_find(const struct cfi_table *t, uint64_t vaddr)
{
	uint64_t off, page;
	uint32_t lo, hi, key;

	if (!t->nrows || vaddr < t->base)
		return -1;
	off = vaddr - t->base;
	page = off >> 16;
	/* Past the last page: the last row, a gap after the last FDE, covers it. */
	if (page >= t->npages)
		return t->nrows - 1;
	lo = t->page_first[page];
	hi = t->page_first[page + 1];
	key = (uint32_t)(off & 0xffff);
	/* The first row of the page starting after key; the one before it covers key, be it in
	 * this page or the last row of an earlier one. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].addr_lo <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int64_t)lo - 1;
}

uint64_t cfi_table_row_addr(const struct cfi_table *t, uint32_t i)
{
	/* The page p with page_first[p] <= i < page_first[p + 1]. */
	uint32_t lo = 0, hi = t->npages;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->page_first[mid + 1] <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return t->base + ((uint64_t)lo << 16) + t->rows[i].addr_lo;
}

size_t cfi_table_bytes(const struct cfi_table *t)
{
	return (size_t)t->nrows * sizeof(*t->rows) +
	       ((size_t)t->npages + 1) * sizeof(*t->page_first) +
	       (size_t)t->nrules * sizeof(*t->rules);
}
