// SPDX-License-Identifier: GPL-2.0
/*
 * The CFA program interpreter of the unwind-table compiler (see cfi_parse.h), and the rules it
 * turns each row into.
 *
 * Only three things of a frame's state matter to the unwinder: the CFA rule, the rule of the
 * return-address column (named by the CIE) and the rule of the frame-pointer register. The
 * interpreter tracks those and parses, but forgets, the rules of every other register, so that
 * rows differing only in where rbx or x19 is saved come out identical and merge.
 */
#include "cfi/cfi_parse.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int cfi_run_fdes(const struct cfi_section *sec, const struct fde *fdes, size_t n,
		 struct cfi_raw *out, struct cfi_stats *st)
{
	struct cfi_rule gap = {0};
	uint64_t prev_end = 0;
	bool have_prev = false; /* an FDE has been run: prev_end is its end */
	struct interp *in;
	int err = 0;

	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->sec = sec;
	in->m = sec->machine == EM_X86_64 ? &x86_64_regs : &aarch64_regs;
	in->out = out;
	in->stats = st;
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t end = fdes[i].end;

		if (i + 1 < n && fdes[i + 1].start < end) {
			/* Overlapping FDEs: the later one wins from its start on. */
			st->fdes_overlapping++;
			end = fdes[i + 1].start;
			if (end == fdes[i].start)
				continue;
		}
		if (have_prev && prev_end < fdes[i].start) {
			st->rows_raw++;
			err = emit(out, prev_end, &gap);
		}
		if (!err)
			err = run_fde(in, &fdes[i], end);
		prev_end = end;
		have_prev = true;
	}
	if (!err && have_prev) {
		st->rows_raw++;
		err = emit(out, prev_end, &gap);
	}
	free(in);
	return err;
}
