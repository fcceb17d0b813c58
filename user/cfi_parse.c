// SPDX-License-Identifier: GPL-2.0
/*
 * .eh_frame / .debug_frame reader and CFA program interpreter (see cfi_parse.h).
 *
 * Only three things of a frame's state matter to the unwinder: the CFA rule, the rule of the
 * return-address column (named by the CIE) and the rule of the frame-pointer register. The
 * interpreter tracks those and parses, but forgets, the rules of every other register, so that
 * rows differing only in where rbx or x19 is saved come out identical and merge.
 */
#include "cfi_parse.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bounds-checked little-endian reader: an overrun sets bad and reads zeros. */
struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t rd_fixed(struct rd *r, unsigned int n)
{
	uint64_t v = 0;

	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return 0;
	}
	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static uint8_t rd_u8(struct rd *r)
{
	return (uint8_t)rd_fixed(r, 1);
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		b = rd_u8(r);
		if (r->bad)
			return 0;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		else if (b & 0x7f)
			r->bad = true; /* more than 64 bits */
		shift += 7;
	} while (b & 0x80);
	return v;
}

static int64_t rd_sleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		b = rd_u8(r);
		if (r->bad)
			return 0;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/* A block: a ULEB length, then that many bytes, returned as a reader of its own. */
static struct rd rd_block(struct rd *r)
{
	uint64_t len = rd_uleb(r);
	struct rd b = {r->p, r->p, true};

	if (r->bad || len > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		return b;
	}
	b.end = r->p + len;
	b.bad = false;
	r->p += len;
	return b;
}

/* DWARF pointer encodings (the DW_EH_PE_* values of the LSB). */
#define PE_ABSPTR   0x00
#define PE_ULEB128  0x01
#define PE_UDATA2   0x02
#define PE_UDATA4   0x03
#define PE_UDATA8   0x04
#define PE_SLEB128  0x09
#define PE_SDATA2   0x0a
#define PE_SDATA4   0x0b
#define PE_SDATA8   0x0c
#define PE_PCREL    0x10
#define PE_INDIRECT 0x80
#define PE_OMIT	    0xff

/*
 * A pointer in encoding enc, the field at section address field: for an FDE's address
 * (absolute or pc-relative; the other applications are not used by x86_64 and arm64
 * toolchains and are refused), or, with value_only, its range or a pointer skipped over.
 */
static uint64_t rd_ptr(struct rd *r, uint8_t enc, uint64_t field, bool value_only)
{
	uint64_t v;

	if (enc == PE_OMIT) {
		r->bad = true;
		return 0;
	}
	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		v = rd_fixed(r, 8);
		break;
	case PE_ULEB128:
		v = rd_uleb(r);
		break;
	case PE_UDATA2:
		v = rd_fixed(r, 2);
		break;
	case PE_UDATA4:
		v = rd_fixed(r, 4);
		break;
	case PE_SLEB128:
		v = (uint64_t)rd_sleb(r);
		break;
	case PE_SDATA2:
		v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2);
		break;
	case PE_SDATA4:
		v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4);
		break;
	default:
		r->bad = true;
		return 0;
	}
	if (value_only)
		return v;
	if (enc & PE_INDIRECT)
		r->bad = true;
	switch (enc & 0x70) {
	case 0:
		return v;
	case PE_PCREL:
		return v + field;
	default:
		r->bad = true;
		return 0;
	}
}

struct cie {
	uint64_t off; /* of the entry, in the section */
	const uint8_t *insn, *insn_end;
	uint64_t caf; /* code alignment factor */
	int64_t daf;  /* data alignment factor */
	uint64_t ra_col;
	uint8_t fde_enc;
	bool aug_z;  /* FDEs carry augmentation data (skipped) */
	bool signal; /* 'S': the FDEs are signal trampolines */
};

struct fde {
	uint64_t start, end;
	const struct cie *cie;
	const uint8_t *insn, *insn_end;
	uint32_t order; /* position in the section, for a stable sort */
};

/* A column's rule, for the two columns tracked. */
enum col_how { COL_UNSET = 0, COL_UNDEF, COL_SAME, COL_OFF, COL_VAL_OFF, COL_REG, COL_EXPR };

struct col {
	uint8_t how;
	int64_t val; /* the offset (COL_OFF, COL_VAL_OFF) */
};

struct state {
	struct {
		bool expr;
		uint64_t reg;
		int64_t off;
		const uint8_t *e, *e_end; /* the expression */
	} cfa;
	struct col ra, fp;
	bool ra_signed;
};

#define STATE_STACK 32 /* remember_state depth: GCC nests one or two */

struct machine {
	uint64_t sp, fp, lr, pc; /* DWARF register numbers; lr ~0 where there is none */
};

struct interp {
	const struct cfi_section *sec;
	const struct machine *m;
	const struct cie *cie;
	struct state st, init;
	struct state stack[STATE_STACK];
	unsigned int depth;
	struct cfi_raw *out;
	struct cfi_stats *stats;
	uint64_t loc, end;
	bool signal;
};

static const struct machine x86_64_regs = {.sp = 7, .fp = 6, .lr = ~0ULL, .pc = 16};
static const struct machine aarch64_regs = {.sp = 31, .fp = 29, .lr = 30, .pc = ~0ULL};

/* DWARF expression opcodes recognised in CFA expressions. */
#define OP_DEREF       0x06
#define OP_AND	       0x1a
#define OP_PLUS	       0x22
#define OP_PLUS_UCONST 0x23
#define OP_SHL	       0x24
#define OP_GE	       0x2a
#define OP_LIT0	       0x30
#define OP_BREG0       0x70
#define OP_BREGX       0x92

/* A base-register operation: DW_OP_breg<n> or DW_OP_bregx; false if r does not start with one. */
static bool expr_breg(struct rd *r, uint64_t *reg, int64_t *off)
{
	uint8_t op = rd_u8(r);

	if (op >= OP_BREG0 && op < OP_BREG0 + 32)
		*reg = op - OP_BREG0;
	else if (op == OP_BREGX)
		*reg = rd_uleb(r);
	else
		return false;
	*off = rd_sleb(r);
	return !r->bad;
}

/*
 * The CFA expressions the BPF side follows:
 *  - x86_64 lazy-binding PLT entries: rsp + N + ((rip & 15) >= T) << 3, i.e.
 *    breg7 N; breg16 0; lit15; and; litT; ge; lit3; shl; plus;
 *  - stack realignment: breg(sp|fp) N; deref; [plus_uconst K].
 */
static void classify_cfa_expr(const struct interp *in, const struct state *s, struct cfi_rule *r)
{
	static const uint8_t plt_mid[] = {OP_LIT0 + 15, OP_AND};
	static const uint8_t plt_tail[] = {OP_GE, OP_LIT0 + 3, OP_SHL, OP_PLUS};
	struct rd e = {s->cfa.e, s->cfa.e_end, false};
	uint64_t reg, reg2;
	int64_t off, off2;

	r->kind = CFI_UNSUPPORTED;
	r->why = CFI_WHY_CFA_EXPR;
	if (!expr_breg(&e, &reg, &off))
		return;
	if (reg == in->m->pc)
		return;
	if (reg == in->m->sp &&
	    (size_t)(e.end - e.p) == 2 + sizeof(plt_mid) + 1 + sizeof(plt_tail) &&
	    expr_breg(&e, &reg2, &off2) && reg2 == in->m->pc && off2 == 0 &&
	    (size_t)(e.end - e.p) == sizeof(plt_mid) + 1 + sizeof(plt_tail) &&
	    !memcmp(e.p, plt_mid, sizeof(plt_mid)) && e.p[2] >= OP_LIT0 && e.p[2] < OP_LIT0 + 16 &&
	    !memcmp(e.p + 3, plt_tail, sizeof(plt_tail)) && off >= INT32_MIN && off <= INT32_MAX) {
		r->kind = CFI_NORMAL;
		r->why = CFI_WHY_NONE;
		r->cfa = CFI_CFA_PLT;
		r->cfa_off = (int32_t)off;
		r->cfa_add = (int16_t)(e.p[2] - OP_LIT0);
		return;
	}
	/* Not a PLT expression: start over after the first operation. */
	e = (struct rd){s->cfa.e, s->cfa.e_end, false};
	expr_breg(&e, &reg, &off);
	if ((reg != in->m->sp && reg != in->m->fp) || rd_u8(&e) != OP_DEREF)
		return;
	off2 = 0;
	if (e.p < e.end) {
		if (rd_u8(&e) != OP_PLUS_UCONST)
			return;
		off2 = (int64_t)rd_uleb(&e);
		if (e.bad || e.p != e.end)
			return;
	}
	if (off < INT32_MIN || off > INT32_MAX || off2 < 0 || off2 > INT16_MAX) {
		r->why = CFI_WHY_RANGE;
		return;
	}
	r->kind = CFI_NORMAL;
	r->why = CFI_WHY_NONE;
	r->cfa = reg == in->m->sp ? CFI_CFA_DEREF_SP : CFI_CFA_DEREF_FP;
	r->cfa_off = (int32_t)off;
	r->cfa_add = (int16_t)off2;
}

static void unsupported(struct cfi_rule *r, enum cfi_why why)
{
	memset(r, 0, sizeof(*r));
	r->kind = CFI_UNSUPPORTED;
	r->why = (uint8_t)why;
}

/* The rule of the state s. */
static void classify(const struct interp *in, const struct state *s, struct cfi_rule *r)
{
	const struct machine *m = in->m;

	memset(r, 0, sizeof(*r));
	if (in->signal) {
		r->kind = CFI_SIGNAL;
		return;
	}
	if (s->ra.how == COL_UNDEF) {
		r->kind = CFI_END;
		return;
	}
	r->kind = CFI_NORMAL;
	if (s->cfa.expr) {
		classify_cfa_expr(in, s, r);
		if (r->kind != CFI_NORMAL)
			return;
	} else if (s->cfa.reg != m->sp && s->cfa.reg != m->fp) {
		unsupported(r, CFI_WHY_CFA_REG);
		return;
	} else if (s->cfa.off < INT32_MIN || s->cfa.off > INT32_MAX) {
		unsupported(r, CFI_WHY_RANGE);
		return;
	} else {
		r->cfa = s->cfa.reg == m->sp ? CFI_CFA_SP : CFI_CFA_FP;
		r->cfa_off = (int32_t)s->cfa.off;
	}

	if (s->ra.how == COL_OFF) {
		if (s->ra.val < INT32_MIN || s->ra.val > INT32_MAX) {
			unsupported(r, CFI_WHY_RANGE);
			return;
		}
		r->ra = CFI_RA_AT_CFA;
		r->ra_off = (int32_t)s->ra.val;
	} else if ((s->ra.how == COL_UNSET || s->ra.how == COL_SAME) && in->cie->ra_col == m->lr) {
		r->ra = CFI_RA_IN_LR;
	} else {
		unsupported(r, CFI_WHY_RA);
		return;
	}
	if (s->ra_signed)
		r->flags |= CFI_RA_SIGNED;

	switch (s->fp.how) {
	case COL_UNSET:
	case COL_SAME:
		r->fp = CFI_FP_SAME;
		break;
	case COL_UNDEF:
		r->fp = CFI_FP_UNDEFINED;
		break;
	case COL_OFF:
		if (s->fp.val < INT32_MIN || s->fp.val > INT32_MAX) {
			unsupported(r, CFI_WHY_RANGE);
			return;
		}
		r->fp = CFI_FP_AT_CFA;
		r->fp_off = (int32_t)s->fp.val;
		break;
	default:
		unsupported(r, CFI_WHY_FP);
		return;
	}
}

/* Append a row at addr, or extend the last one if the rule is the same. */
static int emit(struct cfi_raw *out, uint64_t addr, const struct cfi_rule *rule)
{
	struct cfi_raw_row *row;

	if (out->n && !memcmp(&out->rows[out->n - 1].rule, rule, sizeof(*rule)))
		return 0;
	if (out->n && out->rows[out->n - 1].addr == addr) {
		/* An empty row is replaced, and may then merge with the one before. */
		out->rows[out->n - 1].rule = *rule;
		if (out->n > 1 && !memcmp(&out->rows[out->n - 2].rule, rule, sizeof(*rule)))
			out->n--;
		return 0;
	}
	if (out->n == out->cap) {
		size_t cap = out->cap ? out->cap * 2 : 1024;
		void *p = realloc(out->rows, cap * sizeof(*out->rows));

		if (!p)
			return -ENOMEM;
		out->rows = p;
		out->cap = cap;
	}
	row = &out->rows[out->n++];
	row->addr = addr;
	row->rule = *rule;
	return 0;
}

/* The row for [in->loc, to): emitted, then the location moves on. */
static int advance(struct interp *in, uint64_t to)
{
	struct cfi_rule rule;
	int err;

	if (to <= in->loc)
		return 0;
	classify(in, &in->st, &rule);
	in->stats->rows_raw++;
	err = emit(in->out, in->loc, &rule);
	in->loc = to;
	return err;
}

/* A factored offset; wrapping (hostile input) is harmless, overflow must not be undefined. */
static int64_t factored(uint64_t v, int64_t factor)
{
	return (int64_t)(v * (uint64_t)factor);
}

/* The tracked column of register reg, or NULL. */
static struct col *column(struct interp *in, struct state *s, uint64_t reg)
{
	if (reg == in->cie->ra_col)
		return &s->ra;
	if (reg == in->m->fp)
		return &s->fp;
	return NULL;
}

static void set_col(struct interp *in, uint64_t reg, uint8_t how, int64_t val)
{
	struct col *c = column(in, &in->st, reg);

	if (c) {
		c->how = how;
		c->val = val;
	}
}

/*
 * Run a CFA program: the CIE's initial instructions (in->loc == in->end: no row is emitted) or
 * an FDE's. 0 at the end of the program or of the FDE's range, -EINVAL if malformed, -ENOMEM.
 */
static int run(struct interp *in, const uint8_t *p, const uint8_t *end, bool is_cie)
{
	const struct cie *cie = in->cie;
	struct rd r = {p, end, false};
	uint64_t reg, delta;
	struct col *c, *init;
	int err;

	while (r.p < r.end && !r.bad) {
		uint8_t op = rd_u8(&r);

		switch (op >> 6) {
		case 1: /* advance_loc */
			delta = (op & 0x3f) * cie->caf;
			goto advance;
		case 2: /* offset */
			set_col(in, op & 0x3f, COL_OFF, factored(rd_uleb(&r), cie->daf));
			continue;
		case 3: /* restore */
			reg = op & 0x3f;
			goto restore;
		}
		switch (op) {
		case 0x00: /* nop */
			break;
		case 0x01: /* set_loc */
			delta = rd_ptr(&r, cie->fde_enc,
				       in->sec->vaddr + (uint64_t)(r.p - in->sec->data), false);
			if (r.bad || is_cie || delta < in->loc)
				return -EINVAL;
			delta -= in->loc;
			goto advance;
		case 0x02: /* advance_loc1 */
			delta = rd_fixed(&r, 1) * cie->caf;
			goto advance;
		case 0x03: /* advance_loc2 */
			delta = rd_fixed(&r, 2) * cie->caf;
			goto advance;
		case 0x04: /* advance_loc4 */
			delta = rd_fixed(&r, 4) * cie->caf;
			goto advance;
		case 0x05: /* offset_extended */
			reg = rd_uleb(&r);
			set_col(in, reg, COL_OFF, factored(rd_uleb(&r), cie->daf));
			break;
		case 0x06: /* restore_extended */
			reg = rd_uleb(&r);
			goto restore;
		case 0x07: /* undefined */
			set_col(in, rd_uleb(&r), COL_UNDEF, 0);
			break;
		case 0x08: /* same_value */
			set_col(in, rd_uleb(&r), COL_SAME, 0);
			break;
		case 0x09: /* register */
			reg = rd_uleb(&r);
			set_col(in, reg, COL_REG, (int64_t)rd_uleb(&r));
			break;
		case 0x0a: /* remember_state */
			if (in->depth == STATE_STACK)
				return -EINVAL;
			in->stack[in->depth++] = in->st;
			break;
		case 0x0b: /* restore_state: the CFA rule comes back too, as GCC's epilogues expect
			    */
			if (!in->depth)
				return -EINVAL;
			in->st = in->stack[--in->depth];
			break;
		case 0x0c: /* def_cfa */
			in->st.cfa.reg = rd_uleb(&r);
			in->st.cfa.off = (int64_t)rd_uleb(&r);
			in->st.cfa.expr = false;
			break;
		case 0x0d: /* def_cfa_register */
			if (in->st.cfa.expr)
				return -EINVAL;
			in->st.cfa.reg = rd_uleb(&r);
			break;
		case 0x0e: /* def_cfa_offset */
			if (in->st.cfa.expr)
				return -EINVAL;
			in->st.cfa.off = (int64_t)rd_uleb(&r);
			break;
		case 0x0f: { /* def_cfa_expression */
			struct rd b = rd_block(&r);

			in->st.cfa.expr = true;
			in->st.cfa.e = b.p;
			in->st.cfa.e_end = b.end;
			break;
		}
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			reg = rd_uleb(&r);
			rd_block(&r);
			set_col(in, reg, COL_EXPR, 0);
			break;
		case 0x11: /* offset_extended_sf */
			reg = rd_uleb(&r);
			set_col(in, reg, COL_OFF, factored((uint64_t)rd_sleb(&r), cie->daf));
			break;
		case 0x12: /* def_cfa_sf */
			in->st.cfa.reg = rd_uleb(&r);
			in->st.cfa.off = factored((uint64_t)rd_sleb(&r), cie->daf);
			in->st.cfa.expr = false;
			break;
		case 0x13: /* def_cfa_offset_sf */
			if (in->st.cfa.expr)
				return -EINVAL;
			in->st.cfa.off = factored((uint64_t)rd_sleb(&r), cie->daf);
			break;
		case 0x14: /* val_offset */
			reg = rd_uleb(&r);
			set_col(in, reg, COL_VAL_OFF, factored(rd_uleb(&r), cie->daf));
			break;
		case 0x15: /* val_offset_sf */
			reg = rd_uleb(&r);
			set_col(in, reg, COL_VAL_OFF, factored((uint64_t)rd_sleb(&r), cie->daf));
			break;
		case 0x2d: /* arm64 negate_ra_state (SPARC's window_save elsewhere) */
			if (in->sec->machine != EM_AARCH64)
				return -EINVAL;
			in->st.ra_signed = !in->st.ra_signed;
			break;
		case 0x2e: /* GNU_args_size: what a landing pad pops, not needed to unwind */
			rd_uleb(&r);
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = rd_uleb(&r);
			set_col(in, reg, COL_OFF, factored(0 - rd_uleb(&r), cie->daf));
			break;
		default:
			return -EINVAL;
		}
		continue;
	restore:
		/* In the CIE's own program there is no initial rule yet: back to unset. */
		c = column(in, &in->st, reg);
		init = column(in, &in->init, reg);
		if (c && (is_cie || !init))
			memset(c, 0, sizeof(*c));
		else if (c)
			*c = *init;
		continue;
	advance:
		if (is_cie || r.bad)
			return -EINVAL;
		if (delta >= in->end - in->loc)
			return advance(in, in->end);
		err = advance(in, in->loc + delta);
		if (err)
			return err;
	}
	return r.bad ? -EINVAL : 0;
}

/* The rows of one FDE, cut at end; a malformed program gives one unsupported row instead. */
static int run_fde(struct interp *in, const struct fde *f, uint64_t end)
{
	size_t first = in->out->n;
	struct cfi_rule bad;
	int err;

	in->cie = f->cie;
	in->signal = f->cie->signal;
	memset(&in->st, 0, sizeof(in->st));
	in->depth = 0;
	in->loc = f->start;
	in->end = f->start; /* the CIE program emits no row */
	err = run(in, f->cie->insn, f->cie->insn_end, true);
	if (!err) {
		in->init = in->st;
		in->depth = 0;
		in->end = end;
		err = run(in, f->insn, f->insn_end, false);
	}
	if (!err)
		return advance(in, end);
	if (err != -EINVAL)
		return err;
	in->stats->fdes_bad++;
	/* Drop what the program emitted; the row before (a gap, or the previous FDE) stays. */
	in->out->n = first;
	unsupported(&bad, CFI_WHY_BAD_FDE);
	in->stats->rows_raw++;
	return emit(in->out, f->start, &bad);
}

/* Parse a CIE whose body (after the id) is r; false if it cannot be used. */
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
	struct interp *in = NULL;
	struct cfi_rule gap = {0};
	uint64_t prev_end = 0;
	int err;

	if (sec->machine == EM_X86_64 || sec->machine == EM_AARCH64)
		err = read_entries(sec, &cies, &ncies, &fdes, &nfdes, st);
	else
		err = -ENOTSUP;
	if (err)
		goto out;
	if (nfdes)
		qsort(fdes, nfdes, sizeof(*fdes), fde_cmp);
	in = calloc(1, sizeof(*in));
	if (!in) {
		err = -ENOMEM;
		goto out;
	}
	in->sec = sec;
	in->m = sec->machine == EM_X86_64 ? &x86_64_regs : &aarch64_regs;
	in->out = out;
	in->stats = st;
	for (size_t i = 0; i < nfdes && !err; i++) {
		uint64_t end = fdes[i].end;

		if (i + 1 < nfdes && fdes[i + 1].start < end) {
			/* Overlapping FDEs: the later one wins from its start on. */
			st->fdes_overlapping++;
			end = fdes[i + 1].start;
			if (end == fdes[i].start)
				continue;
		}
		if (i && prev_end < fdes[i].start) {
			st->rows_raw++;
			err = emit(out, prev_end, &gap);
		}
		if (!err)
			err = run_fde(in, &fdes[i], end);
		prev_end = end;
	}
	if (!err && nfdes) {
		st->rows_raw++;
		err = emit(out, prev_end, &gap);
	}
out:
	free(in);
	free(fdes);
	free(cies);
	return err;
}
