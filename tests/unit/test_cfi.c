/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tests of the unwind-table compiler (user/cfi/cfi.c, user/cfi/cfi_parse.c,
 * user/cfi/cfi_program.c).
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
#include "cfi/cfi.h"
#include "cfi/cfi_cache.h"
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
	Dwarf_CFI *cfi_debug; /* a file with both sections: .debug_frame where .eh_frame has none */
	struct mach m;
	unsigned int pc_reg;
	uint64_t entry; /* the ELF entry point: CFI_END there where no FDE covers it (mark_entry) */
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
	if (dwarf_cfi_addrframe(c->cfi, pc, &fr) &&
	    (!c->cfi_debug || dwarf_cfi_addrframe(c->cfi_debug, pc, &fr))) {
		if (r->kind == CFI_GAP) {
			c->agreed++;
			c->gaps++;
		} else if (r->kind == CFI_END && c->entry && pc >= c->entry && pc < c->entry + 64) {
			c->agreed++; /* the entry point without CFI: the outermost frame */
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
	} else if (!strcmp(t->stats.section, ".eh_frame+.debug_frame")) {
		c.cfi = dwarf_getcfi_elf(elf);
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		c.cfi_debug = dw ? dwarf_getcfi(dw) : NULL;
		EXPECT(c.cfi_debug != NULL);
	} else {
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		c.cfi = dw ? dwarf_getcfi(dw) : NULL;
	}
	EXPECT(c.cfi != NULL);
	c.t = t;
	{
		GElf_Ehdr eh;

		if (elf && gelf_getehdr(elf, &eh))
			c.entry = eh.e_entry;
	}
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
		dwarf_end(dw); /* and the .debug_frame CFI it owns */
	if (c.cfi && strcmp(t->stats.section, ".debug_frame"))
		dwarf_cfi_end(c.cfi); /* the .eh_frame CFI, read from the ELF file itself */
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
			if (run_quiet(cc_g) && run_quiet(strip_eh)) {
				check_file(dbg_only, "page_touch .debug_frame");
				/* Both: its own code in .debug_frame, the C runtime's in .eh_frame.
				 */
				check_file(dbg, "page_touch .eh_frame+.debug_frame");
			} else
				printf("SKIP cfi-workload-debug-frame (gcc -g or objcopy "
				       "failed)\n");
		}
	}
	unlink(exe);
	unlink(dbg);
	unlink(dbg_only);
	rmdir(dir);
}

/* ---- hand-built images: the interpreter's cases one by one ---- */

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (n && b->n + n <= sizeof(b->b))
		memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put_u8(struct buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put_u32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put_uleb(struct buf *b, uint64_t v)
{
	do {
		put_u8(b, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
		v >>= 7;
	} while (v);
}

static void put_sleb(struct buf *b, int64_t v)
{
	bool more;

	do {
		uint8_t byte = v & 0x7f;

		v >>= 7;
		more = !((v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40)));
		put_u8(b, byte | (more ? 0x80 : 0));
	} while (more);
}

#define SEC_VADDR  0x2000 /* where the CFI section is in the images below */
#define LOAD_VADDR 0x1000

/* A CIE at the current end of sec: augmentation "zR" + extra, FDE pointers pcrel sdata4. */
static size_t put_cie(struct buf *sec, const char *aug, uint8_t caf, int8_t daf, uint8_t ra,
		      const uint8_t *init, size_t ninit)
{
	size_t at = sec->n;
	struct buf body = {.n = 0};

	put_u32(&body, 0); /* CIE id */
	put_u8(&body, 1);
	put(&body, aug, strlen(aug) + 1);
	put_uleb(&body, caf);
	put_sleb(&body, daf);
	put_u8(&body, ra);
	put_uleb(&body, 1);
	put_u8(&body, 0x1b); /* DW_EH_PE_pcrel | DW_EH_PE_sdata4 */
	put(&body, init, ninit);
	put_u32(sec, (uint32_t)body.n);
	put(sec, body.b, body.n);
	return at;
}

static void put_fde(struct buf *sec, size_t cie, uint64_t start, uint32_t len, const uint8_t *prog,
		    size_t nprog)
{
	struct buf body = {.n = 0};
	size_t id_at = sec->n + 4;

	put_u32(&body, (uint32_t)(id_at - cie));
	put_u32(&body, (uint32_t)(start - (SEC_VADDR + id_at + 4)));
	put_u32(&body, len);
	put_uleb(&body, 0);
	put(&body, prog, nprog);
	put_u32(sec, (uint32_t)body.n);
	put(sec, body.b, body.n);
}

/* A 64-bit LE ELF file: one PT_LOAD at LOAD_VADDR, section name holding sec at SEC_VADDR. */
static size_t make_elf(uint8_t *out, size_t cap, uint16_t machine, const char *name,
		       const struct buf *sec)
{
	static const char strtab_fmt[] = "\0.shstrtab\0";
	Elf64_Ehdr eh = {0};
	Elf64_Phdr ph = {0};
	Elf64_Shdr sh[3] = {{0}};
	size_t data_off = sizeof(eh) + sizeof(ph), str_off = data_off + sec->n, nstr, sh_off;
	char strtab[64];

	memcpy(strtab, strtab_fmt, sizeof(strtab_fmt));
	snprintf(strtab + sizeof(strtab_fmt) - 1, sizeof(strtab) - sizeof(strtab_fmt), "%s", name);
	nstr = sizeof(strtab_fmt) + strlen(name);
	sh_off = (str_off + nstr + 7) & ~(size_t)7;
	if (sh_off + sizeof(sh) > cap)
		return 0;
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = machine;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = sh_off;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph);
	eh.e_phnum = 1;
	eh.e_shentsize = sizeof(sh[0]);
	eh.e_shnum = 3;
	eh.e_shstrndx = 2;
	ph.p_type = PT_LOAD;
	ph.p_vaddr = LOAD_VADDR;
	ph.p_memsz = 0x10000;
	sh[1].sh_name = (uint32_t)sizeof(strtab_fmt) - 1;
	sh[1].sh_type = SHT_PROGBITS;
	sh[1].sh_flags = SHF_ALLOC;
	sh[1].sh_addr = SEC_VADDR;
	sh[1].sh_offset = data_off;
	sh[1].sh_size = sec->n;
	sh[1].sh_addralign = 1;
	sh[2].sh_name = 1;
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = str_off;
	sh[2].sh_size = nstr;
	sh[2].sh_addralign = 1;
	memset(out, 0, sh_off + sizeof(sh));
	memcpy(out, &eh, sizeof(eh));
	memcpy(out + sizeof(eh), &ph, sizeof(ph));
	memcpy(out + data_off, sec->b, sec->n);
	memcpy(out + str_off, strtab, nstr);
	memcpy(out + sh_off, sh, sizeof(sh));
	return sh_off + sizeof(sh);
}

/* The rule at addr, checked field by field against want (kind, cfa, offsets, ra, fp...). */
static void expect_rule(const struct cfi_table *t, uint64_t addr, struct cfi_rule want, int line)
{
	int64_t i = cfi_table_find(t, addr);
	struct cfi_rule got = {0};

	if (i >= 0)
		got = t->rules[t->rows[i].rule];
	if (memcmp(&got, &want, sizeof(got))) {
		fprintf(stderr,
			"%s:%d: at %#" PRIx64
			": kind %u cfa %u%+d add %d ra %u%+d fp %u%+d flags %u "
			"why %u, expected kind %u cfa %u%+d add %d ra %u%+d fp %u%+d flags %u why "
			"%u\n",
			__FILE__, line, addr, got.kind, got.cfa, got.cfa_off, got.cfa_add, got.ra,
			got.ra_off, got.fp, got.fp_off, got.flags, got.why, want.kind, want.cfa,
			want.cfa_off, want.cfa_add, want.ra, want.ra_off, want.fp, want.fp_off,
			want.flags, want.why);
		t_case_failures++;
	}
}

#define EXPECT_RULE(t, addr, ...) expect_rule(t, addr, (struct cfi_rule){__VA_ARGS__}, __LINE__)
#define NORMAL(...)		  .kind = CFI_NORMAL, __VA_ARGS__
#define UNSUPPORTED(w)		  .kind = CFI_UNSUPPORTED, .why = (w)

static uint8_t image[8192];

static struct cfi_table *table_of(uint16_t machine, const char *name, const struct buf *sec,
				  int *err)
{
	size_t n = make_elf(image, sizeof(image), machine, name, sec);
	struct cfi_table *t = NULL;

	*err = cfi_table_from_mem(image, n, &t);
	return t;
}

static void test_x86_64_cases(void)
{
	static const uint8_t init[] = {0x0c, 7, 8, 0x90, 1}; /* def_cfa rsp+8; rip at cfa-8 */
	static const uint8_t frame[] = {
		0x41, 0x0e, 16,	  0x86, 2, /* +1: def_cfa_offset 16; rbp at cfa-16 */
		0x43, 0x0d, 6,		   /* +3: def_cfa_register rbp */
		0x50, 0x0a, 0x0c, 7,	8, /* +16: remember_state; def_cfa rsp+8 */
		0x41, 0x0b,		   /* +1: restore_state (the CFA too) */
		0x42, 0x2e, 16,	  0xc6,	   /* +2: GNU_args_size 16; restore rbp */
		0x42, 0x08, 6,	  0x07, 6, /* +2: same_value rbp; undefined rbp */
	};
	static const uint8_t plt[] = {0x0f, 11,	  0x77, 8,    0x80, 0,	 0x3f,
				      0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};
	static const uint8_t realign[] = {0x0f, 5, 0x76, 0x78, 0x06, 0x23, 0x10}; /* *(rbp-8)+16 */
	static const uint8_t deref_sp[] = {0x0f, 3,    0x77, 8,	  0x06,
					   0x41, 0x0f, 1,    0x30}; /* then lit0 */
	static const uint8_t outermost[] = {0x07, 16};		    /* undefined rip */
	static const uint8_t bad[] = {0x41, 0x3f};	     /* an opcode that does not exist */
	static const uint8_t cfa_rdi[] = {0x0c, 5, 8};	     /* def_cfa rdi+8 */
	static const uint8_t ra_reg[] = {0x09, 16, 5};	     /* rip in rdi */
	static const uint8_t fp_expr[] = {0x10, 6, 1, 0x30}; /* rbp at an expression */
	static const uint8_t sf[] = {0x12, 7, 0x7e,
				     0x15, 6, 0x7e}; /* def_cfa_sf rsp+16; val_offset rbp */
	struct buf sec = {.n = 0};
	struct cfi_table *t;
	size_t cie, cie_s;
	int err;

	cie = put_cie(&sec, "zR", 1, -8, 16, init, sizeof(init));
	cie_s = put_cie(&sec, "zRS", 1, -8, 16, init, sizeof(init));
	put_fde(&sec, cie, 0x1100, 0x40, frame, sizeof(frame));
	put_fde(&sec, cie, 0x1200, 0x20, plt, sizeof(plt));
	put_fde(&sec, cie, 0x1300, 0x10, realign, sizeof(realign));
	put_fde(&sec, cie, 0x1310, 0x10, deref_sp, sizeof(deref_sp));
	put_fde(&sec, cie, 0x1400, 0x10, outermost, sizeof(outermost));
	put_fde(&sec, cie, 0x1500, 0x10, bad, sizeof(bad));
	put_fde(&sec, cie_s, 0x1600, 0x10, NULL, 0);
	put_fde(&sec, cie, 0x1700, 0x10, cfa_rdi, sizeof(cfa_rdi));
	put_fde(&sec, cie, 0x1710, 0x10, ra_reg, sizeof(ra_reg));
	put_fde(&sec, cie, 0x1720, 0x10, fp_expr, sizeof(fp_expr));
	put_fde(&sec, cie, 0x1730, 0x10, sf, sizeof(sf));
	put_fde(&sec, cie, 0x1800, 0, NULL, 0); /* empty: skipped */
	put_u32(&sec, 0);			/* the terminator */
	t = table_of(EM_X86_64, ".eh_frame", &sec, &err);
	EXPECT_EQ_U64(err, 0);
	if (!t)
		return;
	EXPECT_EQ_U64(t->base, LOAD_VADDR);
	EXPECT_EQ_U64(t->stats.cies, 2);
	EXPECT_EQ_U64(t->stats.fdes, 12);
	EXPECT_EQ_U64(t->stats.fdes_empty, 1);
	EXPECT_EQ_U64(t->stats.fdes_bad, 1);
	EXPECT_EQ_U64(cfi_table_find(t, 0x10ff), -1);
	EXPECT_RULE(t, 0x1100, NORMAL(.cfa_off = 8, .ra_off = -8));
	EXPECT_RULE(t, 0x1101,
		    NORMAL(.cfa_off = 16, .ra_off = -8, .fp = CFI_FP_AT_CFA, .fp_off = -16));
	EXPECT_RULE(t, 0x1103,
		    NORMAL(.cfa_off = 16, .ra_off = -8, .fp = CFI_FP_AT_CFA, .fp_off = -16));
	EXPECT_RULE(t, 0x1104,
		    NORMAL(.cfa = CFI_CFA_FP, .cfa_off = 16, .ra_off = -8, .fp = CFI_FP_AT_CFA,
			   .fp_off = -16));
	EXPECT_RULE(t, 0x1114,
		    NORMAL(.cfa_off = 8, .ra_off = -8, .fp = CFI_FP_AT_CFA, .fp_off = -16));
	EXPECT_RULE(t, 0x1115,
		    NORMAL(.cfa = CFI_CFA_FP, .cfa_off = 16, .ra_off = -8, .fp = CFI_FP_AT_CFA,
			   .fp_off = -16));
	EXPECT_RULE(t, 0x1117, NORMAL(.cfa = CFI_CFA_FP, .cfa_off = 16, .ra_off = -8));
	EXPECT_RULE(t, 0x1119,
		    NORMAL(.cfa = CFI_CFA_FP, .cfa_off = 16, .ra_off = -8, .fp = CFI_FP_UNDEFINED));
	EXPECT_RULE(t, 0x113f,
		    NORMAL(.cfa = CFI_CFA_FP, .cfa_off = 16, .ra_off = -8, .fp = CFI_FP_UNDEFINED));
	EXPECT_RULE(t, 0x1140, .kind = CFI_GAP);
	EXPECT_RULE(t, 0x1200,
		    NORMAL(.cfa = CFI_CFA_PLT, .cfa_off = 8, .cfa_add = 11, .ra_off = -8));
	EXPECT_RULE(t, 0x1300,
		    NORMAL(.cfa = CFI_CFA_DEREF_FP, .cfa_off = -8, .cfa_add = 16, .ra_off = -8));
	EXPECT_RULE(t, 0x1310, NORMAL(.cfa = CFI_CFA_DEREF_SP, .cfa_off = 8, .ra_off = -8));
	EXPECT_RULE(t, 0x1311, UNSUPPORTED(CFI_WHY_CFA_EXPR));
	EXPECT_RULE(t, 0x1400, .kind = CFI_END);
	EXPECT_RULE(t, 0x1500, UNSUPPORTED(CFI_WHY_BAD_FDE));
	EXPECT_RULE(t, 0x150f, UNSUPPORTED(CFI_WHY_BAD_FDE));
	EXPECT_RULE(t, 0x1510, .kind = CFI_GAP);
	EXPECT_RULE(t, 0x1600, .kind = CFI_SIGNAL);
	EXPECT_RULE(t, 0x1700, UNSUPPORTED(CFI_WHY_CFA_REG));
	EXPECT_RULE(t, 0x1710, UNSUPPORTED(CFI_WHY_RA));
	EXPECT_RULE(t, 0x1720, UNSUPPORTED(CFI_WHY_FP));
	EXPECT_RULE(t, 0x1730, UNSUPPORTED(CFI_WHY_FP));
	EXPECT_RULE(t, 0x1740, .kind = CFI_GAP);
	EXPECT_RULE(t, 0x7fffffff, .kind = CFI_GAP);
	/* Rows merge: the three at 0x1101..0x1104 differ, the gap after 0x1140 is one row. */
	EXPECT_EQ_U64(t->stats.kind_rows[CFI_SIGNAL], 1);
	EXPECT_EQ_U64(t->stats.plt_rows, 1);
	EXPECT_EQ_U64(t->stats.deref_rows, 2);
	cfi_table_free(t);

	/* The same section as .debug_frame is not valid (other CIE ids): an error, no crash. */
	t = table_of(EM_X86_64, ".debug_frame", &sec, &err);
	EXPECT(err < 0 || t != NULL);
	cfi_table_free(t);
	/* Another machine, and no CFI section at all. */
	t = table_of(EM_PPC64, ".eh_frame", &sec, &err);
	EXPECT_EQ_U64(err, -ENOTSUP);
	cfi_table_free(t);
	t = table_of(EM_X86_64, ".text", &sec, &err);
	EXPECT_EQ_U64(err, -ENOENT);
	cfi_table_free(t);
}

static void test_aarch64_cases(void)
{
	static const uint8_t init[] = {0x0c, 31, 0}; /* def_cfa sp+0; x30 unset: the RA is in LR */
	static const uint8_t prog[] = {
		0x2d,				    /* negate_ra_state: paciasp */
		0x41, 0x0e, 32,	  0x9d, 4, 0x9e, 3, /* +4: def_cfa_offset 32; x29, x30 saved */
		0x41, 0x0c, 29,	  32,		    /* +4: def_cfa x29+32 */
		0x42, 0x0a, 0x0c, 31,	0, 0xdd, 0xde,
		0x2d,	    /* +8: remember; sp+0; restore x29 x30; autiasp */
		0x41, 0x0b, /* +4: restore_state */
	};
	static const uint8_t big[] = {
		0x41, 0x0e, 0x80, 0x85, 2,   0x9d,
		0xce, 0x20, 0x9e, 0xcd, 0x20}; /* sp+33408, x29/x30 at cfa-33392/-33384 */
	struct buf sec = {.n = 0};
	struct cfi_table *t;
	size_t cie;
	int err;

	cie = put_cie(&sec, "zR", 4, -8, 30, init, sizeof(init));
	put_fde(&sec, cie, 0x1100, 0x20, prog, sizeof(prog));
	put_fde(&sec, cie, 0x1200, 0x10, big, sizeof(big));
	t = table_of(EM_AARCH64, ".eh_frame", &sec, &err);
	EXPECT_EQ_U64(err, 0);
	if (!t)
		return;
	EXPECT_EQ_U64(t->machine, EM_AARCH64);
	EXPECT_RULE(t, 0x1100, NORMAL(.ra = CFI_RA_IN_LR, .flags = CFI_RA_SIGNED));
	EXPECT_RULE(t, 0x1104,
		    NORMAL(.cfa_off = 32, .ra_off = -24, .fp = CFI_FP_AT_CFA, .fp_off = -32,
			   .flags = CFI_RA_SIGNED));
	EXPECT_RULE(t, 0x1108,
		    NORMAL(.cfa = CFI_CFA_FP, .cfa_off = 32, .ra_off = -24, .fp = CFI_FP_AT_CFA,
			   .fp_off = -32, .flags = CFI_RA_SIGNED));
	EXPECT_RULE(t, 0x1110, NORMAL(.ra = CFI_RA_IN_LR));
	EXPECT_RULE(t, 0x1114,
		    NORMAL(.cfa = CFI_CFA_FP, .cfa_off = 32, .ra_off = -24, .fp = CFI_FP_AT_CFA,
			   .fp_off = -32, .flags = CFI_RA_SIGNED));
	EXPECT_RULE(
		t, 0x1204,
		NORMAL(.cfa_off = 33408, .ra_off = -33384, .fp = CFI_FP_AT_CFA, .fp_off = -33392));
	EXPECT_EQ_U64(t->stats.signed_rows, 4); /* signed again after restore_state */
	cfi_table_free(t);
}

/* Invariants of any table that compiled: sorted rows, valid rule indices, lookups in range. */
static void expect_sane(const struct cfi_table *t)
{
	uint64_t prev = 0;

	for (uint32_t i = 0; i < t->nrows; i++) {
		uint64_t a = cfi_table_row_addr(t, i);

		if (i)
			EXPECT(a > prev);
		EXPECT(t->rows[i].rule < t->nrules);
		EXPECT_EQ_U64(cfi_table_find(t, a), i);
		prev = a;
	}
	EXPECT(t->nrules <= 65536);
}

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_hostile(void)
{
	static const uint8_t init[] = {0x0c, 7, 8, 0x90, 1};
	static const uint8_t prog[] = {0x41, 0x0e, 16,
				       0x0a, 0x0b, 0x0b}; /* restore, one too many */
	struct buf sec = {.n = 0}, cut;
	struct cfi_table *t;
	size_t cie, n;
	int err;

	cie = put_cie(&sec, "zR", 1, -8, 16, init, sizeof(init));
	put_fde(&sec, cie, 0x1100, 0x40, prog, sizeof(prog));
	t = table_of(EM_X86_64, ".eh_frame", &sec, &err);
	EXPECT_EQ_U64(err, 0);
	if (t)
		EXPECT_RULE(t, 0x1100, UNSUPPORTED(CFI_WHY_BAD_FDE));
	cfi_table_free(t);

	/* Two FDEs at one start: the first is cut to nothing, and no gap row may come before
	 * the second (a row below base once overran the page index: found by fuzz_cfi). */
	cut = (struct buf){.n = 0};
	cie = put_cie(&cut, "zR", 1, -8, 16, init, sizeof(init));
	put_fde(&cut, cie, 0x1100, 0x10, NULL, 0);
	put_fde(&cut, cie, 0x1100, 0x20, NULL, 0);
	t = table_of(EM_X86_64, ".eh_frame", &cut, &err);
	EXPECT_EQ_U64(err, 0);
	if (t) {
		EXPECT_EQ_U64(t->stats.fdes_overlapping, 1);
		EXPECT_EQ_U64(t->nrows, 2);
		EXPECT_RULE(t, 0x111f, NORMAL(.cfa_off = 8, .ra_off = -8));
		EXPECT_RULE(t, 0x1120, .kind = CFI_GAP);
		expect_sane(t);
	}
	cfi_table_free(t);

	/* Every truncation of the section: an entry running past the end is an error; cut
	 * right after the CIE, it is a valid section without FDEs. */
	for (size_t len = 1; len < sec.n; len++) {
		cut = sec;
		cut.n = len;
		t = table_of(EM_X86_64, ".eh_frame", &cut, &err);
		if (len == sec.b[0] + 4u)
			EXPECT(!err && t && !t->nrows);
		else
			EXPECT(err < 0 && !t);
		cfi_table_free(t);
	}
	/* A length larger than the section, and an FDE whose CIE pointer points nowhere. */
	cut = sec;
	memset(cut.b, 0xff, 4);
	t = table_of(EM_X86_64, ".eh_frame", &cut, &err);
	EXPECT(err < 0 && !t);
	cfi_table_free(t);
	cut = sec;
	n = cut.b[0] + 4u; /* the FDE's length field, then its CIE pointer */
	cut.b[n + 4] ^= 0x40;
	t = table_of(EM_X86_64, ".eh_frame", &cut, &err);
	EXPECT(err < 0 && !t);
	cfi_table_free(t);

	/* Garbage, and the section with random bytes changed: an error or a sane table. */
	for (int round = 0; round < 3000; round++) {
		cut = sec;
		if (round < 1000) {
			cut.n = rng() % 200;
			for (size_t i = 0; i < cut.n; i++)
				cut.b[i] = (uint8_t)rng();
		} else {
			for (int k = 0; k < 1 + round % 4; k++)
				cut.b[rng() % cut.n] = (uint8_t)rng();
		}
		t = table_of(round & 1 ? EM_X86_64 : EM_AARCH64,
			     round % 3 ? ".eh_frame" : ".debug_frame", &cut, &err);
		EXPECT(err ? !t : t != NULL);
		if (t)
			expect_sane(t);
		cfi_table_free(t);
	}
	/* Whole-file truncations: libelf or the parser refuses them. */
	n = make_elf(image, sizeof(image), EM_X86_64, ".eh_frame", &sec);
	for (size_t len = 0; len < n; len += 7) {
		t = NULL;
		err = cfi_table_from_mem(image, len, &t);
		EXPECT(err < 0 && !t);
		cfi_table_free(t);
	}
}

/* libc's .eh_frame with bytes changed at random: whatever comes out is sane, nothing crashes. */
static void test_mutated_libc(void)
{
	const char *path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	struct cfi_table *t;
	struct stat stb;
	uint8_t *file, *copy;
	size_t off = 0, size = 0, shstrndx;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd, nok = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &stb)) {
		printf("SKIP cfi-mutated-libc (%s absent)\n", path);
		if (fd >= 0)
			close(fd);
		return;
	}
	file = malloc((size_t)stb.st_size);
	copy = malloc((size_t)stb.st_size);
	EXPECT(file && copy && read(fd, file, (size_t)stb.st_size) == stb.st_size);
	elf = elf_memory((char *)file, (size_t)stb.st_size);
	if (elf && !elf_getshdrstrndx(elf, &shstrndx)) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (name && !strcmp(name, ".eh_frame")) {
				off = sh.sh_offset;
				size = sh.sh_size;
			}
		}
	}
	elf_end(elf);
	EXPECT(size > 0);
	for (int round = 0; size && round < 40; round++) {
		memcpy(copy, file, (size_t)stb.st_size);
		for (int k = 0; k < 1 + round % 8; k++)
			copy[off + rng() % size] = (uint8_t)rng();
		t = NULL;
		if (!cfi_table_from_mem(copy, (size_t)stb.st_size, &t)) {
			expect_sane(t);
			nok++;
		}
		cfi_table_free(t);
	}
	printf("# mutated libc.so.6: 40 runs, %d tables, %d errors\n", nok, 40 - nok);
	free(file);
	free(copy);
	close(fd);
}

/* A shell command's first output line, in buf; false if none. */
static bool first_line(const char *cmd, char *buf, size_t len)
{
	FILE *p = popen(cmd, "r");
	bool ok = p && fgets(buf, (int)len, p);

	if (p)
		pclose(p);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/*
 * What the BPF walker is given besides the rows: the build ID (oracle: readelf -n) and the
 * executable PT_LOAD segments (oracle: readelf -l); and the cache of compiled tables: a table
 * read back is the one stored, byte for byte, and a damaged, truncated or foreign file is
 * refused.
 */
static void test_cache(void)
{
	const char *path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	char dir[] = "/tmp/test_cfi_cache.XXXXXX", want[128], hex[64] = "", cmd[512], file[600];
	unsigned char id[CFI_BUILD_ID_MAX], other[CFI_BUILD_ID_MAX];
	struct cfi_table *t = NULL, *back = NULL;
	unsigned long long off, vaddr, filesz;
	uint16_t machine = 0;
	int idlen;
	FILE *f;

	if (access(path, R_OK) || cfi_table_from_file(path, &t)) {
		printf("# cache: %s not readable, skipped\n", path);
		return;
	}
	idlen = cfi_file_build_id(path, id, &machine);
	EXPECT(idlen == 20);
	EXPECT_EQ_U64(machine, EM_X86_64);
	EXPECT_EQ_U64(t->build_id_len, 20);
	EXPECT(idlen == 20 && !memcmp(t->build_id, id, 20));
	for (int i = 0; i < idlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	snprintf(cmd, sizeof(cmd), "readelf -n %s | awk '/Build ID/ {print $3}'", path);
	if (first_line(cmd, want, sizeof(want)))
		EXPECT_STREQ(hex, want);
	/* The first executable LOAD segment: its offset, vaddr and file size. */
	snprintf(cmd, sizeof(cmd),
		 "readelf -lW %s | awk '$1 == \"LOAD\" && $7 ~ /E/ {print $2, $3, $5; exit}'",
		 path);
	if (first_line(cmd, want, sizeof(want)) &&
	    sscanf(want, "%llx %llx %llx", &off, &vaddr, &filesz) == 3) {
		EXPECT(t->nsegs >= 1);
		EXPECT_EQ_U64(t->segs[0].off, off);
		EXPECT_EQ_U64(t->segs[0].end, off + filesz);
		EXPECT_EQ_U64((uint64_t)t->segs[0].delta, vaddr - off);
	}
	printf("# cache: libc.so.6 build ID %s, %u executable segment(s), %u rows\n", hex, t->nsegs,
	       t->nrows);

	if (!mkdtemp(dir)) {
		EXPECT(0);
		cfi_table_free(t);
		return;
	}
	EXPECT_EQ_U64(cfi_cache_load(dir, id, 20, EM_X86_64, &back), (uint64_t)-ENOENT);
	EXPECT_EQ_U64(cfi_cache_store(dir, t), 0);
	EXPECT_EQ_U64(cfi_cache_load(dir, id, 20, EM_X86_64, &back), 0);
	if (back) {
		EXPECT_EQ_U64(back->nrows, t->nrows);
		EXPECT_EQ_U64(back->npages, t->npages);
		EXPECT_EQ_U64(back->nrules, t->nrules);
		EXPECT_EQ_U64(back->base, t->base);
		EXPECT_EQ_U64(back->nsegs, t->nsegs);
		EXPECT(!memcmp(back->segs, t->segs, sizeof(t->segs)));
		EXPECT(!memcmp(back->rows, t->rows, t->nrows * sizeof(*t->rows)));
		EXPECT(!memcmp(back->page_first, t->page_first,
			       (t->npages + 1) * sizeof(*t->page_first)));
		EXPECT(!memcmp(back->rules, t->rules, t->nrules * sizeof(*t->rules)));
		cfi_table_free(back);
		back = NULL;
	}
	/* Another machine's or another build's table is not this one. */
	EXPECT_EQ_U64(cfi_cache_load(dir, id, 20, EM_AARCH64, &back), (uint64_t)-ENOENT);
	memcpy(other, id, sizeof(other));
	other[0] ^= 1;
	EXPECT_EQ_U64(cfi_cache_load(dir, other, 20, EM_X86_64, &back), (uint64_t)-ENOENT);
	/* A row naming a rule past the table's: refused whole. */
	snprintf(file, sizeof(file), "%s/%s-%u.cfi", dir, hex, EM_X86_64);
	f = fopen(file, "r+b");
	EXPECT(f != NULL);
	if (f) {
		uint16_t bad = 0xffff;

		/* the first row's rule: past the header (its size is the file's minus the arrays)
		 */
		struct stat st;

		EXPECT(stat(file, &st) == 0);
		fseek(f,
		      (long)((size_t)st.st_size - t->nrules * sizeof(*t->rules) -
			     (t->npages + 1) * sizeof(uint32_t) - t->nrows * sizeof(*t->rows)) +
			      2,
		      SEEK_SET);
		fwrite(&bad, sizeof(bad), 1, f);
		fclose(f);
		EXPECT_EQ_U64(cfi_cache_load(dir, id, 20, EM_X86_64, &back), (uint64_t)-EINVAL);
		/* Truncated: refused. */
		EXPECT_EQ_U64(cfi_cache_store(dir, t), 0);
		EXPECT(truncate(file, 4096) == 0);
		EXPECT_EQ_U64(cfi_cache_load(dir, id, 20, EM_X86_64, &back), (uint64_t)-EINVAL);
		unlink(file);
	}
	EXPECT(back == NULL);
	rmdir(dir);
	cfi_table_free(t);
}

/*
 * The dynamic loader's entry point has no FDE (libdw finds no frame there): the table says it
 * is the outermost frame for ENTRY_SPAN bytes, up to the next row, and nothing else changed.
 */
static void test_loader_entry(void)
{
	const char *path = "/lib64/ld-linux-x86-64.so.2";
	struct cfi_table *t = NULL;
	Dwarf_Frame *fr = NULL;
	Dwarf_CFI *cfi;
	GElf_Ehdr eh;
	int64_t at, next;
	Elf *elf;
	int fd;

	if (access(path, R_OK) || cfi_table_from_file(path, &t)) {
		printf("# loader entry: %s not readable, skipped\n", path);
		return;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	EXPECT(elf && gelf_getehdr(elf, &eh));
	cfi = elf ? dwarf_getcfi_elf(elf) : NULL;
	EXPECT(cfi != NULL);
	if (cfi && elf && gelf_getehdr(elf, &eh)) {
		EXPECT(dwarf_cfi_addrframe(cfi, eh.e_entry, &fr) != 0); /* no FDE: libdw */
		at = cfi_table_find(t, eh.e_entry);
		next = cfi_table_find(t, eh.e_entry + 64);
		EXPECT(at >= 0 && t->rules[t->rows[at].rule].kind == CFI_END);
		EXPECT_EQ_U64(cfi_table_row_addr(t, (uint32_t)at), eh.e_entry);
		EXPECT(next > at && t->rules[t->rows[next].rule].kind != CFI_END);
		printf("# loader entry %#" PRIx64 ": the outermost frame up to %#" PRIx64 "\n",
		       (uint64_t)eh.e_entry, cfi_table_row_addr(t, (uint32_t)at + 1));
	}
	if (cfi)
		dwarf_cfi_end(cfi);
	elf_end(elf);
	close(fd);
	cfi_table_free(t);
}

TEST_MAIN(T(test_loader_entry), T(test_cache), T(test_x86_64_cases), T(test_aarch64_cases),
	  T(test_hostile), T(test_mutated_libc), T(test_libc), T(test_python), T(test_cc1),
	  T(test_arm64_libc), T(test_workload))
