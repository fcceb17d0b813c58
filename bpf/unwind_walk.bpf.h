/* SPDX-License-Identifier: GPL-2.0 */
/* The DWARF walk of a user stack (x86_64, arm64): see bpf/unwind.bpf.h. Included by
 * bpf/state.bpf.h after the frame-pointer walk it falls back to (user_frame_at()). */
#ifndef MMSCOPE_UNWIND_WALK_BPF_H
#define MMSCOPE_UNWIND_WALK_BPF_H

#include "unwind.bpf.h"

#define VM_EXEC_FLAG 0x4UL /* include/linux/mm.h VM_EXEC */

/*
 * Walk the current thread's user stack from its saved registers into the stack scratch's walk
 * (addresses, for the cache key) and u.f (the frames to send); its depth, with the hash of its
 * addresses in uw.hash. A global function, defined in state.bpf.c alone: the verifier checks
 * it, and its bpf_loop() callback, once per program with its arguments unknown, not once per
 * state of the fault-entry code that reaches it. Scalar arguments only (see store_user_stack()).
 * The object with callbacks also loads where there is no bpf_loop() (5.13 to 5.16), and a
 * global function is checked there even if its callers never reach it: the walk's helpers are
 * behind unwind_dwarf, which userspace sets only where they exist.
 */
__u32 unwind_user_stack(__u32 tgid, __u64 image);

#ifdef MMSCOPE_DEFINE_STATE

/* bpf_find_vma()'s callback: the mapping into the walk's state (map memory: the walk's stack,
 * three calls deep with this one, has no room for it on 6.1's verifier, which counts 512 bytes
 * for the chain). */
static long unwind_vma_found(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	__u32 zero = 0;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct file *file = vma->vm_file;
	struct unwind_vma *v;

	if (!sc)
		return 0;
	v = &sc->uw.vma;

	v->start = vma->vm_start;
	v->end = vma->vm_end;
	v->pgoff = (__u64)vma->vm_pgoff << unwind_page_shift;
	v->exec = (vma->vm_flags & VM_EXEC_FLAG) != 0;
	v->key.dev = 0;
	v->key.pad = 0;
	v->key.ino = 0;
	if (file) {
		v->key.dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
		v->key.ino = BPF_CORE_READ(file, f_inode, i_ino);
	}
	return 0;
}

#define UNWIND_VMA_NONE	 0
#define UNWIND_VMA_FOUND 1
#define UNWIND_VMA_BUSY	 2  /* the address space is locked for writing (mprotect, munmap) */
#define UNWIND_EBUSY	 16 /* errno EBUSY: bpf_find_vma()'s trylock failed */

/* The mapping holding addr in w->vma, from this CPU's cache or bpf_find_vma(). */
static __always_inline int unwind_vma_of(struct unwind_walk *w, __u64 addr)
{
	struct unwind_vma *v = &w->vma;
	long err;

	__u32 idx = cache_slot(((__u64)w->tgid << 32) ^ (addr >> 21), UNWIND_VMA_BITS);
	struct unwind_vma *slot = bpf_map_lookup_elem(&unwind_vmas, &idx);

	struct unwind_vma_key key = {.tgid = w->tgid, .region = (__u32)(addr >> 21)};
	struct unwind_vma *shared;

	if (slot && !slot->busy && slot->mm == w->mm && slot->start <= addr && addr < slot->end) {
		*v = *slot;
		return UNWIND_VMA_FOUND;
	}
	shared = bpf_map_lookup_elem(&unwind_proc_vmas, &key);
	if (shared && shared->mm == w->mm && shared->start <= addr && addr < shared->end) {
		*v = *shared;
	} else {
		count_inc(CNT_UNWIND_VMA_LOOKUPS);
		v->start = v->end = 0;
		err = bpf_find_vma(bpf_get_current_task_btf(), addr, unwind_vma_found, NULL, 0);
		if (err)
			return err == -UNWIND_EBUSY ? UNWIND_VMA_BUSY : UNWIND_VMA_NONE;
		v->mm = w->mm;
		v->busy = 0;
		bpf_map_update_elem(&unwind_proc_vmas, &key, v, BPF_ANY);
	}
	v->busy = 0;
	/* A program interrupting this one on the CPU (an IPI's) finds the slot busy and looks
	 * its mapping up itself instead of reading half a write. */
	if (slot && !slot->busy) {
		slot->busy = 1;
		barrier();
		*slot = *v;
		slot->busy = 1;
		barrier();
		slot->busy = 0;
	}
	return UNWIND_VMA_FOUND;
}

/* The file's entry; a file not seen before is entered as pending and asked for. */
static __always_inline struct unwind_file *unwind_file_of(struct unwind_walk *w,
							  const struct unwind_vma *v)
{
	struct unwind_file *f = bpf_map_lookup_elem(&unwind_files, &v->key);
	struct unwind_file_record *r;

	if (f)
		return f;
	if (bpf_map_update_elem(&unwind_files, &v->key, &unwind_file_pending, BPF_NOEXIST))
		return NULL; /* full, or another CPU entered it first */
	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		/* Nobody will load it: forget it, the next walk asks again. */
		bpf_map_delete_elem(&unwind_files, &v->key);
		count_lost(CNT_LOST_RINGBUF);
		return NULL;
	}
	r->type = REC_UNWIND_FILE;
	r->tgid = w->tgid;
	r->key = v->key;
	r->start = v->start;
	r->end = v->end;
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	count_inc(CNT_UNWIND_FILE_REQUESTS);
	return NULL;
}

static __always_inline __u32 unwind_row_word(__u32 g)
{
	__u32 chunk = g / UNWIND_ROW_CHUNK;
	struct unwind_row_chunk *c = bpf_map_lookup_elem(&unwind_rows, &chunk);

	return c ? c->w[g & (UNWIND_ROW_CHUNK - 1)] : 0;
}

static __always_inline __u32 unwind_page_first(__u32 g, bool *ok)
{
	__u32 chunk = g / UNWIND_PAGE_CHUNK;
	struct unwind_page_chunk *c = bpf_map_lookup_elem(&unwind_pages, &chunk);

	if (!c) {
		*ok = false;
		return 0;
	}
	return c->first[g & (UNWIND_PAGE_CHUNK - 1)];
}

/* Through a helper, as the other chunk lookups: a map looked up directly in a global function's
 * body took another place among the object's maps than in the object without callbacks, whose
 * layout must be the same (Makefile, mmscope_nocb.skel.h). */
static __always_inline struct unwind_rule_chunk *unwind_rule_chunk(__u32 chunk)
{
	return bpf_map_lookup_elem(&unwind_rules, &chunk);
}

/*
 * The rule of the row covering offset off of file f, into the walk's rule (user/cfi/cfi.h
 * cfi_table_find(), mirrored): 0 when no row does (outside the file's executable segments or
 * its table). A global function: the verifier checks its search once per program, where
 * inlined in unwind_frame() it was checked for each of the states the frame's lookups leave
 * (8 on x86_64: ~6 000 instructions, half of the callback's). Its pointer argument needs
 * v5.12 (e5069b9c23b3 "bpf: Support pointers in global func args"), older than any kernel
 * that loads this object (callbacks: v5.13), and may be NULL.
 */
__noinline int unwind_rule_at(const struct unwind_file *f, __u64 off)
{
	__u32 zero = 0;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	__u64 vaddr = 0, rel;
	__u32 page, lo, hi, l, key, row, ridx, chunk;
	struct unwind_rule_chunk *rc;
	bool ok = true, found = false;
	struct unwind_walk *w;

	if (!sc || !f)
		return 0;
	w = &sc->uw;
	for (__u32 s = 0; s < UNWIND_MAX_SEGMENTS; s++) {
		if (s >= f->nsegs)
			break;
		if (off >= f->seg[s].off && off < f->seg[s].end) {
			vaddr = off + f->seg[s].delta;
			found = true;
			break;
		}
	}
	if (!found || vaddr < f->base)
		return false;
	rel = vaddr - f->base;
	page = (__u32)(rel >> 16);
	if ((rel >> 16) >= f->npages)
		return false;
	lo = unwind_page_first(f->pages_start + page, &ok);
	hi = unwind_page_first(f->pages_start + page + 1, &ok);
	if (!ok || hi < lo || hi > f->nrows)
		return false;
	/* The last row of the page starting at or before key; none: the previous page's last. */
	key = (__u32)(rel & 0xffff);
	/* The bounds go through map memory (w): as registers, their values would be tracked
	 * from step to step and each of the 2^17 paths verified on its own. */
	w->lo = lo;
	w->hi = hi;
	for (int i = 0; i < 17; i++) {
		__u32 ml = *(volatile __u32 *)&w->lo, mh = *(volatile __u32 *)&w->hi, mid;

		if (ml >= mh)
			break;
		mid = ml + (mh - ml) / 2;
		if ((unwind_row_word(f->rows_start + mid) & 0xffff) <= key)
			w->lo = mid + 1;
		else
			w->hi = mid;
	}
	l = *(volatile __u32 *)&w->lo;
	if (l == 0)
		return false;
	row = unwind_row_word(f->rows_start + l - 1);
	ridx = row >> 16;
	if (ridx >= f->nrules)
		return false;
	ridx += f->rules_start;
	chunk = ridx / UNWIND_RULE_CHUNK;
	rc = unwind_rule_chunk(chunk);
	if (!rc)
		return false;
	w->rule = rc->r[ridx & (UNWIND_RULE_CHUNK - 1)];
	return true;
}

static __always_inline bool read_user_u64(__u64 addr, __u64 *v)
{
	return bpf_probe_read_user(v, sizeof(*v), (void *)addr) == 0;
}

/*
 * Step the walk to the caller by the frame pointer (code without a table); 0: stop, with end
 * as the reason when the frame pointer is not usable. This and unwind_rule_step() are global
 * functions, as unwind_rule_at(): inlined at their two and three places in unwind_frame(), each
 * was checked again for every state its lookups leave there.
 */
__noinline int unwind_fp_step(__u32 end)
{
	__u32 zero = 0;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct unwind_walk *w;
	__u64 next_fp, ret;

	if (!sc)
		return 0;
	w = &sc->uw;
	if (w->fp == 0) {
		w->end = CNT_UNWIND_END_FP;
		return false;
	}
	if (w->fp < w->sp || w->fp - w->sp >= USER_FP_WALK_SPAN || (w->fp & 7) ||
	    !user_frame_at(w->fp, false, &next_fp, &ret)) {
		w->end = end;
		return false;
	}
	w->frames_fp++;
	w->sp = w->fp + 16;
	w->fp = next_fp;
	w->pc = ret;
	w->exact = 0;
	return true;
}

/* Step the walk to the caller by its rule (uw.rule); 0: stop, uw.end says why. */
__noinline int unwind_rule_step(void)
{
	__u32 zero = 0;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	__u64 cfa, ra, fp, base;
	const struct cfi_rule *r;
	struct unwind_walk *w;

	if (!sc)
		return 0;
	w = &sc->uw;
	r = &w->rule;
	fp = w->fp;

	switch (r->kind) {
	case CFI_NORMAL:
		break;
	case CFI_SIGNAL:
		if (!unwind_signal_regs(w->sp, &w->pc, &w->sp, &w->fp)) {
			w->end = CNT_UNWIND_END_READ;
			return false;
		}
		w->exact = 1;
		w->frames_cfi++;
		return true;
	case CFI_END:
		w->end = CNT_UNWIND_END_ROOT;
		return false;
	case CFI_GAP:
		w->end = CNT_UNWIND_END_GAP;
		return false;
	default:
		w->end = CNT_UNWIND_END_UNSUPPORTED;
		return false;
	}
	base = r->cfa == CFI_CFA_FP || r->cfa == CFI_CFA_DEREF_FP ? w->fp : w->sp;
	if (base == 0 && (r->cfa == CFI_CFA_FP || r->cfa == CFI_CFA_DEREF_FP)) {
		w->end = CNT_UNWIND_END_READ; /* the FP a caller lost (CFI_FP_UNDEFINED) */
		return false;
	}
	cfa = base + (__s64)r->cfa_off;
	if (r->cfa == CFI_CFA_DEREF_SP || r->cfa == CFI_CFA_DEREF_FP) {
		if (!read_user_u64(cfa, &cfa)) {
			w->end = CNT_UNWIND_END_READ;
			return false;
		}
		cfa += (__s64)r->cfa_add;
	} else if (r->cfa == CFI_CFA_PLT) {
		cfa += (w->pc & 15) >= (__u64)r->cfa_add ? 8 : 0;
	}
	if (r->ra == CFI_RA_IN_LR) {
		if (w->n != 1) { /* the link register holds it only in the top frame */
			w->end = CNT_UNWIND_END_UNSUPPORTED;
			return false;
		}
		ra = w->lr;
	} else if (!read_user_u64(cfa + (__s64)r->ra_off, &ra)) {
		w->end = CNT_UNWIND_END_READ;
		return false;
	}
	if (r->flags & CFI_RA_SIGNED)
		ra = user_strip_pac(ra);
	if (r->fp == CFI_FP_AT_CFA) {
		if (!read_user_u64(cfa + (__s64)r->fp_off, &fp)) {
			w->end = CNT_UNWIND_END_READ;
			return false;
		}
	} else if (r->fp == CFI_FP_UNDEFINED) {
		fp = 0;
	}
	if (ra == 0) {
		w->end = CNT_UNWIND_END_ROOT; /* a thread's outermost frame (clone's child) */
		return false;
	}
	/* A stack grows down: a caller's frame is above its callee's. Only an arm64 leaf, whose
	 * return address is still in the link register, may have no frame at all (CFA = SP). */
	if (cfa < w->sp || (cfa == w->sp && r->ra != CFI_RA_IN_LR) ||
	    cfa - w->sp >= USER_FP_WALK_SPAN) {
		w->end = CNT_UNWIND_END_READ;
		return false;
	}
	w->frames_cfi++;
	w->sp = cfa;
	w->fp = fp;
	w->pc = ra;
	w->exact = 0;
	return true;
}

/* One frame of the walk (a bpf_loop() callback): write it, step to its caller. */
static long unwind_frame(__u64 i, void *data)
{
	__u32 zero = 0;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct unwind_walk *w;
	struct unwind_file *f = NULL;
	struct user_frame *uf;
	struct unwind_pc_slot *ps;
	struct unwind_vma *v;
	struct cfi_rule *rule;
	__u64 look, off, pc_key;
	__u32 pc_idx;
	bool have_vma;
	int found;
	__u32 n;

	if (!sc)
		return 1;
	w = &sc->uw;
	v = &w->vma;
	rule = &w->rule;
	n = w->n;
	if (n >= USER_STACK_DEPTH) {
		w->end = CNT_UNWIND_END_DEPTH;
		return 1;
	}
	pc_key = w->pc << 1 | (w->exact & 1);
	pc_idx = cache_slot(pc_key ^ w->mm, UNWIND_PC_BITS);
	ps = bpf_map_lookup_elem(&unwind_pcs, &pc_idx);
	if (ps && !ps->busy && ps->pc == pc_key && ps->mm == w->mm) {
		sc->walk[n] = w->pc;
		w->hash = (w->hash ^ w->pc) * FNV_PRIME;
		uf = &sc->u.f[n];
		uf->status = 1; /* BPF_STACK_BUILD_ID_VALID */
		__builtin_memcpy(uf->build_id, ps->build_id, sizeof(uf->build_id));
		uf->offset_or_ip = ps->off;
		*rule = ps->rule;
		w->n = n + 1;
		w->frames_cached++;
		return unwind_rule_step() ? 0 : 1;
	}
	look = w->exact ? w->pc : w->pc - 1;
	/* Where the mapping cannot be looked up now (its lock is held for writing: the
	 * invalidations of mprotect and munmap; or, interrupts off, the lookup before this one
	 * has not released it yet), the frame is sent as its raw address. */
	found = unwind_vma_of(w, look);
	have_vma = found == UNWIND_VMA_FOUND && v->exec;
	if (found == UNWIND_VMA_BUSY) {
		v->key.ino = 0;
		count_inc(CNT_UNWIND_VMA_BUSY);
	} else if (!have_vma && n > 0) {
		w->end = CNT_UNWIND_END_NO_VMA; /* not code: the last step went wrong */
		return 1;
	}
	sc->walk[n] = w->pc;
	w->hash = (w->hash ^ w->pc) * FNV_PRIME;
	uf = &sc->u.f[n];
	__builtin_memset(uf, 0, sizeof(*uf));
	if (have_vma && v->key.ino)
		f = unwind_file_of(w, v);
	if (f && f->state == UNWIND_FILE_READY && f->has_build_id) {
		uf->status = 1; /* BPF_STACK_BUILD_ID_VALID */
		__builtin_memcpy(uf->build_id, f->build_id, sizeof(uf->build_id));
		uf->offset_or_ip = w->pc - v->start + v->pgoff;
	} else if (w->image) {
		uf->status = LOC_MMAP_RECORDS;
		__builtin_memcpy(uf->build_id, &w->image, sizeof(w->image));
		uf->offset_or_ip = w->pc;
	} else {
		uf->status = 2; /* BPF_STACK_BUILD_ID_IP */
		uf->offset_or_ip = w->pc;
	}
	w->n = n + 1;
	/* Its frame pointer, checked to lie in the stack above this frame, is all there is
	 * (exec_loop: 3% of walks meet this, and with it 99.8% reach the outermost frame;
	 * stopping here instead, 97%). A walk it cannot go on ends as mapping_busy. */
	if (found == UNWIND_VMA_BUSY)
		return unwind_fp_step(CNT_UNWIND_END_BUSY) ? 0 : 1;
	if (!have_vma) {
		w->end = CNT_UNWIND_END_NO_VMA;
		return 1;
	}
	if (f && f->state == UNWIND_FILE_READY) {
		off = look - v->start + v->pgoff;
		if (!unwind_rule_at(f, off)) {
			w->end = CNT_UNWIND_END_GAP;
			return 1;
		}
		if (ps && !ps->busy && f->has_build_id) {
			ps->busy = 1;
			barrier();
			ps->mm = w->mm;
			ps->pc = pc_key;
			ps->off = uf->offset_or_ip;
			ps->rule = *rule;
			__builtin_memcpy(ps->build_id, f->build_id, sizeof(ps->build_id));
			barrier();
			ps->busy = 0;
		}
		return unwind_rule_step() ? 0 : 1;
	}
	/* A file met for the first time (f NULL: just asked for) or still loading. */
	return unwind_fp_step(v->key.ino && (!f || f->state == UNWIND_FILE_PENDING)
				      ? CNT_UNWIND_END_PENDING
				      : CNT_UNWIND_END_NO_TABLE)
		       ? 0
		       : 1;
}

/*
 * The current process exec'ed: ask for its executable's table now, not at its first walk. The
 * loader's relocations take the first milliseconds of a large program (cc1: ~1000 faults,
 * all in ld.so, whose table is loaded at the start), time enough for userspace to read or
 * compile the table before the program's own code faults (cc1: ~300 write faults zeroing its
 * heap at start-up, otherwise walked with a table still loading). userspace opens it as
 * /proc/TGID/exe (start and end 0).
 */
static __always_inline void unwind_want_exe(__u32 tgid)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct unwind_file_record *r;
	struct unwind_file_key key = {};
	struct file *exe;

	exe = BPF_CORE_READ(t, mm, exe_file);
	if (!exe)
		return;
	key.dev = BPF_CORE_READ(exe, f_inode, i_sb, s_dev);
	key.ino = BPF_CORE_READ(exe, f_inode, i_ino);
	if (bpf_map_update_elem(&unwind_files, &key, &unwind_file_pending, BPF_NOEXIST))
		return; /* known, or asked for already */
	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		bpf_map_delete_elem(&unwind_files, &key);
		count_lost(CNT_LOST_RINGBUF);
		return;
	}
	r->type = REC_UNWIND_FILE;
	r->tgid = tgid;
	r->key = key;
	r->start = 0;
	r->end = 0;
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	count_inc(CNT_UNWIND_FILE_REQUESTS);
}

__noinline __u32 unwind_user_stack(__u32 tgid, __u64 image)
{
	__u32 zero = 0;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct pt_regs *regs;
	struct unwind_walk *w;
	struct mm_stats *st;
	__u32 end;

	if (!unwind_dwarf || !sc)
		return 0;
	regs = current_user_regs();
	if (!regs)
		return 0;
	w = &sc->uw;
	/* The walk's state lives in map memory, not on the stack: the verifier does not track
	 * its values, so it checks the callback once, not once per depth reached. */
	w->tgid = tgid;
	w->image = image;
	w->mm = current_mm();
	w->pc = PT_REGS_IP(regs);
	w->sp = PT_REGS_SP(regs);
	w->fp = PT_REGS_FP(regs);
	w->lr = user_regs_lr(regs);
	w->hash = FNV_BASIS;
	w->n = 0;
	w->end = 0;
	w->exact = 1;
	w->frames_cfi = 0;
	w->frames_fp = 0;
	w->frames_cached = 0;
	bpf_loop(USER_STACK_DEPTH + 1, unwind_frame, NULL, 0);
	end = w->end;
	st = stats_get();
	if (st) {
		st->c[CNT_UNWIND_WALKS]++;
		st->c[CNT_UNWIND_FRAMES_CFI] += w->frames_cfi;
		st->c[CNT_UNWIND_FRAMES_FP] += w->frames_fp;
		st->c[CNT_UNWIND_FRAMES_CACHED] += w->frames_cached;
		/* The mask bounds the register the index is computed in (a compare of a copy
		 * would leave it unbounded for the verifier). */
		end &= 127;
		if (end && end < CNT_NR)
			st->c[end]++;
	}
	return w->n;
}
#endif /* MMSCOPE_DEFINE_STATE */

#endif
