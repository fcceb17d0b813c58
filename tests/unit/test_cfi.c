/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tests of the unwind-table compiler (user/cfi.c, user/cfi_parse.c).
 *
 * The oracle is libdw, an independent CFI reader: for each file, at every row start, the
 * address before it, and one address inside each row, the rule the table gives is evaluated on
 * a made-up register state and compared with libdw's CFA expression and register locations
 * evaluated on the same state (memory reads are a fixed function of the address, so a deref
 * is checked too). Every row the table calls supported must agree; the rest is counted by
 * reason. Each file prints a "# name: ..." line with its statistics.
 *
 * Hand-built ELF images check the interpreter's corner cases one by one, and hostile input
 * (truncated, garbage) must give an error or a table, never a crash (ASan/UBSan are on).
 *
 * Run from the repository root: the workload built without frame pointers is compiled from
 * tools/workloads/ (with gcc, skipped if absent).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cfi.h"
#include "test.h"

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the made-up register state, and both sides evaluated on it ---- */

static uint64_t reg_value(unsigned int reg)
{
	return 0x7ff000000000ULL + 0x10000ULL * (reg + 1) + 0x238;
}

static uint64_t mem_value(uint64_t addr)
{
	return (addr * 0x9e3779b97f4a7c15ULL) ^ 0x5a5a00;
}

struct mach {
	unsigned int sp, fp, ra;
};

static const struct mach mach_x86_64 = {7, 6, 16}, mach_aarch64 = {31, 29, 30};

/*
 * A libdw expression on the state (cfa for DW_OP_call_frame_cfa, pc for the PC register):
 * false if it uses an operation not known here or names a register as the location.
 */
static bool eval_ops(const Dwarf_Op *ops, size_t n, uint64_t cfa, uint64_t pc, unsigned int pc_reg,
		     uint64_t *out, bool *is_value)
{
	uint64_t st[16];
	size_t sp = 0;

	*is_value = false;
	for (size_t i = 0; i < n; i++) {
		const Dwarf_Op *o = &ops[i];
		uint64_t a, b, reg;

		if (sp >= 15)
			return false;
		if (o->atom >= DW_OP_breg0 && o->atom <= DW_OP_breg31) {
			reg = o->atom - DW_OP_breg0;
			st[sp++] = (reg == pc_reg ? pc : reg_value(reg)) + o->number;
			continue;
		}
		if (o->atom >= DW_OP_lit0 && o->atom <= DW_OP_lit31) {
			st[sp++] = o->atom - DW_OP_lit0;
			continue;
		}
		switch (o->atom) {
		case DW_OP_bregx:
			st[sp++] = (o->number == pc_reg ? pc : reg_value(o->number)) + o->number2;
			break;
		case DW_OP_call_frame_cfa:
			st[sp++] = cfa;
			break;
		case DW_OP_const1u:
		case DW_OP_const2u:
		case DW_OP_const4u:
		case DW_OP_const8u:
		case DW_OP_constu:
		case DW_OP_const1s:
		case DW_OP_const2s:
		case DW_OP_const4s:
		case DW_OP_const8s:
		case DW_OP_consts:
			st[sp++] = o->number;
			break;
		case DW_OP_deref:
			if (!sp)
				return false;
			st[sp - 1] = mem_value(st[sp - 1]);
			break;
		case DW_OP_plus_uconst:
			if (!sp)
				return false;
			st[sp - 1] += o->number;
			break;
		case DW_OP_stack_value:
			*is_value = true;
			break;
		case DW_OP_and:
		case DW_OP_ge:
		case DW_OP_shl:
		case DW_OP_plus:
		case DW_OP_minus:
			if (sp < 2)
				return false;
			b = st[--sp];
			a = st[--sp];
			st[sp++] = o->atom == DW_OP_and	   ? a & b
				   : o->atom == DW_OP_ge   ? (int64_t)a >= (int64_t)b
				   : o->atom == DW_OP_shl  ? (b < 64 ? a << b : 0)
				   : o->atom == DW_OP_plus ? a + b
							   : a - b;
			break;
		default:
			return false;
		}
	}
	if (!sp)
		return false;
	*out = st[sp - 1];
	return true;
}

static uint64_t rule_cfa(const struct cfi_rule *r, const struct mach *m, uint64_t pc)
{
	switch (r->cfa) {
	case CFI_CFA_SP:
		return reg_value(m->sp) + (int64_t)r->cfa_off;
	case CFI_CFA_FP:
		return reg_value(m->fp) + (int64_t)r->cfa_off;
	case CFI_CFA_DEREF_SP:
		return mem_value(reg_value(m->sp) + (int64_t)r->cfa_off) + (int64_t)r->cfa_add;
	case CFI_CFA_DEREF_FP:
		return mem_value(reg_value(m->fp) + (int64_t)r->cfa_off) + (int64_t)r->cfa_add;
	case CFI_CFA_PLT:
		return reg_value(m->sp) + (int64_t)r->cfa_off +
		       ((pc & 15) >= (uint64_t)r->cfa_add ? 8 : 0);
	}
	return 0;
}

/* libdw's rule for a register, as: 'u' undefined, 's' same value, 'a' at address *addr. */
static char oracle_reg(Dwarf_Frame *fr, unsigned int reg, uint64_t cfa, uint64_t pc,
		       unsigned int pc_reg, uint64_t *addr)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;
	bool is_value;

	if (dwarf_frame_register(fr, (int)reg, mem, &ops, &n))
		return '?';
	if (!n)
		return ops ? 'u' : 's';
	if (!eval_ops(ops, n, cfa, pc, pc_reg, addr, &is_value) || is_value)
		return '?';
	return 'a';
}

struct check {
	const char *name;
	const struct cfi_table *t;
	Dwarf_CFI *cfi;
	struct mach m;
	unsigned int pc_reg;
	uint64_t checked, agreed, disagreed, unsupported, gaps;
};

static void disagree(struct check *c, uint64_t pc, const char *what)
{
	if (c->disagreed++ < 10)
		fprintf(stderr, "# %s: %#" PRIx64 ": %s\n", c->name, pc, what);
}

/* The table and libdw at pc. */
static void check_pc(struct check *c, uint64_t pc)
{
	int64_t i = cfi_table_find(c->t, pc);
	const struct cfi_rule *r;
	static const struct cfi_rule gap;
	Dwarf_Frame *fr = NULL;
	Dwarf_Op *ops;
	size_t nops;
	uint64_t cfa, ocfa, addr;
	bool signalp = false, is_value;
	char ra, fp;

	c->checked++;
	r = i < 0 ? &gap : &c->t->rules[c->t->rows[i].rule];
	if (dwarf_cfi_addrframe(c->cfi, pc, &fr)) {
		if (r->kind == CFI_GAP) {
			c->agreed++;
			c->gaps++;
		} else if (r->kind == CFI_UNSUPPORTED && r->why == CFI_WHY_BAD_FDE) {
			c->unsupported++;
		} else {
			disagree(c, pc, "libdw has no frame, the table a rule");
		}
		return;
	}
	dwarf_frame_info(fr, NULL, NULL, &signalp);
	if (r->kind == CFI_UNSUPPORTED) {
		c->unsupported++;
		goto out;
	}
	if (r->kind == CFI_GAP) {
		disagree(c, pc, "libdw has a frame, the table a gap");
		goto out;
	}
	if (signalp != (r->kind == CFI_SIGNAL)) {
		disagree(c, pc, "signal frame");
		goto out;
	}
	if (r->kind == CFI_SIGNAL) {
		c->agreed++;
		goto out;
	}
	ra = oracle_reg(fr, c->m.ra, 0, pc, c->pc_reg, &addr);
	if (r->kind == CFI_END) {
		if (ra == 'u')
			c->agreed++;
		else
			disagree(c, pc, "end of stack: libdw's RA is not undefined");
		goto out;
	}
	/* CFI_NORMAL: the CFA, then the RA and FP locations. */
	cfa = rule_cfa(r, &c->m, pc);
	if (dwarf_frame_cfa(fr, &ops, &nops) || !nops ||
	    !eval_ops(ops, nops, 0, pc, c->pc_reg, &ocfa, &is_value) || ocfa != cfa) {
		disagree(c, pc, "CFA");
		goto out;
	}
	ra = oracle_reg(fr, c->m.ra, cfa, pc, c->pc_reg, &addr);
	if (r->ra == CFI_RA_AT_CFA ? ra != 'a' || addr != cfa + (int64_t)r->ra_off : ra != 's') {
		disagree(c, pc, "return address");
		goto out;
	}
	fp = oracle_reg(fr, c->m.fp, cfa, pc, c->pc_reg, &addr);
	if ((r->fp == CFI_FP_AT_CFA && (fp != 'a' || addr != cfa + (int64_t)r->fp_off)) ||
	    (r->fp == CFI_FP_SAME && fp != 's') || (r->fp == CFI_FP_UNDEFINED && fp != 'u')) {
		disagree(c, pc, "frame pointer");
		goto out;
	}
	c->agreed++;
out:
	free(fr);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *why_name[CFI_WHY_COUNT] = {"",   "cfa-register", "cfa-expression", "ra",
					      "fp", "range",	    "bad-fde"};

/* The whole table of path against libdw; name for the report line. */
static void check_file(const char *path, const char *name)
{
	struct check c = {.name = name};
	struct cfi_table *t = NULL;
	Dwarf *dw = NULL;
	double t0 = now();
	Elf *elf;
	int fd, err;
	char why[200] = "";
	size_t wlen = 0;

	if (access(path, R_OK)) {
		printf("SKIP cfi-%s (%s absent)\n", name, path);
		return;
	}
	err = cfi_table_from_file(path, &t);
	EXPECT_EQ_U64(err, 0);
	if (err)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!strcmp(t->stats.section, ".eh_frame")) {
		c.cfi = dwarf_getcfi_elf(elf);
	} else {
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		c.cfi = dw ? dwarf_getcfi(dw) : NULL;
	}
	EXPECT(c.cfi != NULL);
	c.t = t;
	c.m = t->machine == EM_X86_64 ? mach_x86_64 : mach_aarch64;
	c.pc_reg = t->machine == EM_X86_64 ? 16 : 32; /* arm64 expressions never name the PC */
	for (uint32_t i = 0; c.cfi && i < t->nrows; i++) {
		uint64_t a = cfi_table_row_addr(t, i);
		uint64_t next = i + 1 < t->nrows ? cfi_table_row_addr(t, i + 1) : a + 64;
		const struct cfi_rule *r = &t->rules[t->rows[i].rule];

		/* The lookup finds each row at its start, and the one before just below it. */
		EXPECT_EQ_U64(cfi_table_find(t, a), i);
		if (a > t->base)
			EXPECT_EQ_U64(cfi_table_find(t, a - 1), (int64_t)i - 1);
		check_pc(&c, a);
		if (a > t->base)
			check_pc(&c, a - 1);
		if (next - a > 2)
			check_pc(&c, a + (next - a) / 2);
		/* A PLT rule depends on the PC's low bits: every byte of its first 64. */
		for (uint64_t pc = a + 1;
		     r->kind == CFI_NORMAL && r->cfa == CFI_CFA_PLT && pc < next && pc < a + 64;
		     pc++)
			check_pc(&c, pc);
	}
	for (int w = 1; w < CFI_WHY_COUNT; w++)
		if (t->stats.why_rows[w])
			wlen += (size_t)snprintf(why + wlen, sizeof(why) - wlen, " %s %u",
						 why_name[w], t->stats.why_rows[w]);
	printf("# %s: %s, %u FDEs, %u rows (%u before merging), %u rules, %zu bytes (%.1f/row); "
	       "rows: %u normal (%u PLT, %u deref, %u RA in LR), %u gap, %u end, %u signal, "
	       "%u unsupported%s%s\n",
	       name, t->stats.section, t->stats.fdes, t->nrows, t->stats.rows_raw, t->nrules,
	       cfi_table_bytes(t), (double)cfi_table_bytes(t) / t->nrows,
	       t->stats.kind_rows[CFI_NORMAL], t->stats.plt_rows, t->stats.deref_rows,
	       t->stats.lr_rows, t->stats.kind_rows[CFI_GAP], t->stats.kind_rows[CFI_END],
	       t->stats.kind_rows[CFI_SIGNAL], t->stats.kind_rows[CFI_UNSUPPORTED], wlen ? ":" : "",
	       why);
	printf("# %s: libdw at %" PRIu64 " PCs: %" PRIu64 " agree (%" PRIu64 " gaps), %" PRIu64
	       " unsupported, %" PRIu64 " disagree; %.2f s\n",
	       name, c.checked, c.agreed, c.gaps, c.unsupported, c.disagreed, now() - t0);
	EXPECT_EQ_U64(c.disagreed, 0);
	EXPECT(c.agreed > 0);
	EXPECT_EQ_U64(c.checked, c.agreed + c.unsupported + c.disagreed);
	if (dw)
		dwarf_end(dw); /* and the CFI it owns */
	else if (c.cfi)
		dwarf_cfi_end(c.cfi);
	elf_end(elf);
	close(fd);
	cfi_table_free(t);
}

static void test_libc(void)
{
	check_file("/usr/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6");
}

static void test_python(void)
{
	check_file("/usr/bin/python3.11", "python3.11");
}

static void test_cc1(void)
{
	check_file("/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "cc1");
}

static void test_arm64_libc(void)
{
	check_file("/usr/aarch64-linux-gnu/lib/libc.so.6", "arm64-libc.so.6");
}

/* Run a command (argv), quietly; true if it exited 0. */
static bool run_quiet(char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * A workload built without frame pointers, twice: with .eh_frame, and with its CFI in
 * .debug_frame only (no unwind tables, -g, and the start files' .eh_frame removed).
 */
static void test_workload(void)
{
	char dir[] = "/tmp/test_cfi.XXXXXX", exe[64], dbg[64], dbg_only[64];

	if (!mkdtemp(dir)) {
		EXPECT(0);
		return;
	}
	snprintf(exe, sizeof(exe), "%s/page_touch", dir);
	snprintf(dbg, sizeof(dbg), "%s/page_touch.g", dir);
	snprintf(dbg_only, sizeof(dbg_only), "%s/page_touch.debug_frame", dir);
	{
		char *cc[] = {"gcc", "-O2", "-fomit-frame-pointer",	    "-Itools/workloads",
			      "-o",  exe,   "tools/workloads/page_touch.c", NULL};
		char *cc_g[] = {"gcc",
				"-O2",
				"-g",
				"-fomit-frame-pointer",
				"-fno-asynchronous-unwind-tables",
				"-Itools/workloads",
				"-o",
				dbg,
				"tools/workloads/page_touch.c",
				NULL};
		char *strip_eh[] = {"objcopy",	     "-R", ".eh_frame", "-R",
				    ".eh_frame_hdr", dbg,  dbg_only,	NULL};

		if (!run_quiet(cc)) {
			printf("SKIP cfi-workload (gcc could not build "
			       "tools/workloads/page_touch.c)\n");
		} else {
			check_file(exe, "page_touch -O2 -fomit-frame-pointer");
			if (run_quiet(cc_g) && run_quiet(strip_eh))
				check_file(dbg_only, "page_touch .debug_frame");
			else
				printf("SKIP cfi-workload-debug-frame (gcc -g or objcopy "
				       "failed)\n");
		}
	}
	unlink(exe);
	unlink(dbg);
	unlink(dbg_only);
	rmdir(dir);
}

TEST_MAIN(T(test_libc), T(test_python), T(test_cc1), T(test_arm64_libc), T(test_workload))
