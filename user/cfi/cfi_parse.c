// SPDX-License-Identifier: GPL-2.0
/*
 * .eh_frame / .debug_frame reader of the unwind-table compiler (see cfi_parse.h): the entries,
 * CIEs (augmentations, alignment factors, the return-address column) and FDEs (their address
 * ranges in the CIE's pointer encoding); cfi_program.c runs their programs.
 */
#include "cfi/cfi_parse.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool parse_cie(struct rd *r, const struct cfi_section *sec, struct cie *c)
{
	uint8_t version = rd_u8(r);
	const char *aug = (const char *)r->p;
	size_t aug_len = strnlen(aug, (size_t)(r->end - r->p));

	if (r->bad || aug_len == (size_t)(r->end - r->p) ||
	    (version != 1 && version != 3 && version != 4))
		return false;
	r->p += aug_len + 1;
	if (version == 4) {
		uint8_t address_size = rd_u8(r), segment_size = rd_u8(r);

		if (address_size != 8 || segment_size)
			return false;
	}
	c->caf = rd_uleb(r);
	c->daf = rd_sleb(r);
	c->ra_col = version == 1 ? rd_u8(r) : rd_uleb(r);
	c->fde_enc = sec->is_eh ? PE_ABSPTR : PE_UDATA8;
	if (aug[0] == 'z') {
		struct rd a = rd_block(r);

		c->aug_z = true;
		for (size_t i = 1; i < aug_len && !a.bad; i++) {
			uint8_t enc;

			switch (aug[i]) {
			case 'R':
				c->fde_enc = rd_u8(&a);
				break;
			case 'P':
				enc = rd_u8(&a);
				rd_ptr(&a, enc, 0, true);
				break;
			case 'L':
				rd_u8(&a);
				break;
			case 'S':
				c->signal = true;
				break;
			case 'B': /* arm64: the RA is signed with the B key */
			case 'G': /* arm64: memory tagging */
				break;
			default:
				return false;
			}
		}
		if (a.bad)
			return false;
	} else if (aug_len) {
		return false; /* without 'z', unknown augmentation data cannot be skipped */
	}
	c->insn = r->p;
	c->insn_end = r->end;
	return !r->bad && c->caf != 0;
}

static const struct cie *find_cie(const struct cie *cies, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && cies[lo].off == off ? &cies[lo] : NULL;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* One entry's header: its length and id; false if malformed. */
struct entry {
	uint64_t off; /* of the entry */
	uint64_t id, id_off;
	bool cie;
	struct rd body; /* after the id */
};

/* The entry at *off, which moves to the next; 0, 1 at the end, -EINVAL. */
static int next_entry(const struct cfi_section *sec, uint64_t *off, struct entry *e)
{
	struct rd r = {sec->data + *off, sec->data + sec->size, false};
	uint64_t len = rd_fixed(&r, 4);
	bool dwarf64 = len == 0xffffffff;

	if (r.bad)
		return *off == sec->size ? 1 : -EINVAL;
	if (len == 0)
		return 1; /* the terminator */
	if (dwarf64)
		len = rd_fixed(&r, 8);
	if (r.bad || len > (uint64_t)(r.end - r.p))
		return -EINVAL;
	e->off = *off;
	r.end = r.p + len;
	e->id_off = (uint64_t)(r.p - sec->data);
	/* .eh_frame's CIE pointer is 4 bytes whatever the length's size. */
	e->id = rd_fixed(&r, dwarf64 && !sec->is_eh ? 8 : 4);
	if (r.bad)
		return -EINVAL;
	if (sec->is_eh)
		e->cie = e->id == 0;
	else
		e->cie = e->id == (dwarf64 ? ~0ULL : 0xffffffffULL);
	e->body = r;
	*off = (uint64_t)(r.end - sec->data);
	return 0;
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *q;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	q = reallocarray(*p, c, size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* Every CIE, in section order (so sorted by offset), then every FDE with its CIE. */
static int read_entries(const struct cfi_section *sec, struct cie **cies, size_t *ncies,
			struct fde **fdes, size_t *nfdes, struct cfi_stats *st)
{
	size_t cap = 0, fcap = 0;
	struct entry e;
	uint64_t off;
	int err;

	for (off = 0; !(err = next_entry(sec, &off, &e));) {
		struct cie c = {.off = e.off};

		if (!e.cie)
			continue;
		if (!parse_cie(&e.body, sec, &c))
			return -EINVAL;
		if (grow((void **)cies, &cap, *ncies, sizeof(**cies)))
			return -ENOMEM;
		(*cies)[(*ncies)++] = c;
		st->cies++;
	}
	if (err < 0)
		return err;
	for (off = 0; !(err = next_entry(sec, &off, &e));) {
		struct fde f = {0};
		uint64_t cie_off, range;

		if (e.cie)
			continue;
		st->fdes++;
		if (sec->is_eh) {
			if (e.id > e.id_off)
				return -EINVAL;
			cie_off = e.id_off - e.id;
		} else {
			cie_off = e.id;
		}
		f.cie = find_cie(*cies, *ncies, cie_off);
		if (!f.cie)
			return -EINVAL;
		f.start = rd_ptr(&e.body, f.cie->fde_enc,
				 sec->vaddr + (uint64_t)(e.body.p - sec->data), false);
		range = rd_ptr(&e.body, f.cie->fde_enc, 0, true);
		if (f.cie->aug_z)
			rd_block(&e.body);
		if (e.body.bad)
			return -EINVAL;
		if (!range || !f.start) {
			st->fdes_empty++; /* discarded functions (address 0) and empty ranges */
			continue;
		}
		if (f.start < sec->base)
			return -EINVAL;
		if (range > 0xffffffffULL || f.start - sec->base > 0xffffffffULL - range)
			return -E2BIG;
		f.end = f.start + range;
		f.insn = e.body.p;
		f.insn_end = e.body.end;
		f.order = (uint32_t)*nfdes;
		if (grow((void **)fdes, &fcap, *nfdes, sizeof(**fdes)))
			return -ENOMEM;
		(*fdes)[(*nfdes)++] = f;
	}
	return err < 0 ? err : 0;
}

int cfi_parse_section(const struct cfi_section *sec, struct cfi_raw *out, struct cfi_stats *st)
{
	struct cie *cies = NULL;
	struct fde *fdes = NULL;
	size_t ncies = 0, nfdes = 0;
	int err;

	if (sec->machine == EM_X86_64 || sec->machine == EM_AARCH64)
		err = read_entries(sec, &cies, &ncies, &fdes, &nfdes, st);
	else
		err = -ENOTSUP;
	if (!err && nfdes) {
		qsort(fdes, nfdes, sizeof(*fdes), fde_cmp);
		err = cfi_run_fdes(sec, fdes, nfdes, out, st);
	}
	free(fdes);
	free(cies);
	return err;
}
