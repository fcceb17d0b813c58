/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel and architecture differences, in one place. Each entry says which kernels differ and
 * why the code below copes with both.
 */
#ifndef MMSCOPE_COMPAT_BPF_H
#define MMSCOPE_COMPAT_BPF_H

#include "mmscope.h"

/*
 * What the running kernel's BPF offers, probed by userspace before the load by loading a tiny
 * program or creating a map (user/core/kcaps.c kcaps_bpf_features(); `mmscope probes` prints them),
 * never from its version. They are rodata: the verifier knows their values, never walks the
 * branch that calls a helper the kernel lacks, and removes it as dead code, so one object loads
 * on 5.10 and on 6.x. Each fallback below says what it costs.
 *
 * has_task_btf: bpf_get_current_task_btf(), v5.11: 3ca1032ab7ab "bpf: Add
 * bpf_get_current_task_btf() helper". Without it, the task's fields are probe reads.
 */
RODATA(bool, has_task_btf);
/*
 * has_task_storage: BPF_MAP_TYPE_TASK_STORAGE (v5.11: 4cf1bc1f1045 "bpf: Implement task local
 * storage", and a10787e6d58c "bpf: Enable task local storage for tracing programs"). Without
 * it, userspace makes open_faults a hash by thread ID (bpf/faults.bpf.h), as on powerpc,
 * preallocated: a perf_event program may use no other hash map before v6.1 ("bpf: Relax the
 * requirement to use preallocated hash maps in tracing progs"; arm64 5.10's fault entry).
 */
RODATA(bool, has_task_storage);
/*
 * has_task_pt_regs: bpf_task_pt_regs(), v5.15: dd6e10fbd9fb "bpf: Add bpf_task_pt_regs()
 * helper". Without it, the user registers are found below the top of the task's kernel stack
 * (task_pt_regs() on x86-64 and arm64: THREAD_SIZE bytes above task->stack, less a pt_regs),
 * thread_size being that size, and the user stack is the kernel's walk every time (no
 * frame-pointer walk of our own: it reads the registers with direct loads).
 */
RODATA(bool, has_task_pt_regs);
RODATA(__u32, thread_size);
/*
 * has_loop: bpf_loop(), v5.17: e6f2dd0f8067 "bpf: Add bpf_loop helper". Without it, plain
 * bounded loops, as for the interpreter (state.bpf.h `interpreted`): verified once per
 * iteration, a longer load.
 */
RODATA(bool, has_loop);
/*
 * Callbacks (a subprogram's address in ld_imm64 BPF_PSEUDO_FUNC, v5.13: the series of
 * 69c087ba6225 "bpf: Add bpf_for_each_map_elem() helper"): an older verifier refuses a
 * program that holds one, even where no path reaches it. So the object is built twice, the
 * second time with MMSCOPE_NO_CALLBACKS (Makefile, mmscope_nocb.skel.h), which compiles every
 * callback out; userspace loads that one where the kernel has no callbacks. Code that passes
 * a callback (bpf_loop(), bpf_find_vma(), ...) must test MMSCOPE_CALLBACKS.
 */
#ifdef MMSCOPE_NO_CALLBACKS
#define MMSCOPE_CALLBACKS 0
#else
#define MMSCOPE_CALLBACKS 1
#endif

/*
 * The current thread's saved user registers: bpf_task_pt_regs() (has_task_pt_regs above) where
 * the kernel has it, else task_pt_regs() computed from the task's kernel stack. Debian's
 * ppc64le kernels have no BTF, so no helper that returns a BTF pointer: powerpc keeps the user
 * registers' address in thread.regs.
 */
static __always_inline struct pt_regs *current_user_regs(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
#if defined(__TARGET_ARCH_powerpc)
	return BPF_CORE_READ(t, thread.regs);
#else
	void *stack;

	if (has_task_pt_regs)
		return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	stack = BPF_CORE_READ(t, stack);
	if (!stack || !thread_size)
		return NULL;
	return (struct pt_regs *)(stack + thread_size) - 1;
#endif
}

/*
 * Task local storage for tracing programs (has_task_storage above), whose helpers take a BTF
 * task pointer: not on powerpc, whose Debian kernels have no BTF of their own (see above).
 */
#if defined(__TARGET_ARCH_powerpc)
#define MMSCOPE_TASK_STORAGE 0
#else
#define MMSCOPE_TASK_STORAGE 1
#endif
#define task_storage_on() (MMSCOPE_TASK_STORAGE && has_task_storage)

/*
 * The current thread's address space (its mm_struct's address, 0 for a kernel thread). A
 * direct load through bpf_get_current_task_btf() (has_task_btf above) where the kernel has it;
 * a probe read elsewhere, and on powerpc, which has no kernel BTF (see above).
 */
static __always_inline __u64 current_mm(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
#if !defined(__TARGET_ARCH_powerpc)
	if (has_task_btf)
		return (__u64)bpf_get_current_task_btf()->mm;
#endif
	return (__u64)BPF_CORE_READ(t, mm);
}

/*
 * Whether the current thread is inside execve() with its new address space but not yet its new
 * image's layout: from exec_mmap() to just after create_elf_tables() in load_elf_binary(), which
 * then sets mm->start_code (zero until then: mm_alloc() zeroes a new mm; every image the ELF
 * loader made, and every fork of one, has it). The kernel's zeroing of the image's bss and its
 * copies to the new stack fault there. The thread's saved user registers are still execve()'s
 * caller's, whose address space is gone: a user stack walked from them reads unmapped memory (a
 * nested fault a frame) and names nothing. mm->start_stack would not do: setup_arg_pages() sets
 * it before the image is loaded. The same order in every kernel since 2.6 (binfmt_elf.c).
 */
static __always_inline bool current_in_exec_load(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct mm_struct *mm;

#if !defined(__TARGET_ARCH_powerpc)
	if (has_task_btf) {
		mm = bpf_get_current_task_btf()->mm;
		return mm && !mm->start_code;
	}
#endif
	mm = BPF_CORE_READ(t, mm);
	return mm && !BPF_CORE_READ(mm, start_code);
}

/*
 * Set bit in *mask, where only this CPU ever sets bit and no one clears it: an atomic add is an
 * or then, and every kernel has it (BPF_XADD), where the atomic or came with v5.12
 * (981f94c3e921 "bpf: Add bitwise atomic instructions"; 5.10's verifier refuses the
 * instruction). A bit shared by several CPUs (mm_cpus' last, for CPU 63 and above) can be
 * added twice by a race: it carries out of the word, nothing else changes, and the next
 * switch on that CPU sets it again.
 */
static __always_inline void atomic_set_own_bit(__u64 *mask, __u64 bit)
{
	__sync_fetch_and_add(mask, bit);
}

#define PF_KTHREAD_FLAG 0x00200000 /* PF_KTHREAD, include/linux/sched.h */

/*
 * Whether the current thread has a user address space, and why not when it has none: a kernel
 * thread (no user stack at all), or a thread in exit() after exit_mm() detached it
 * (current->mm = NULL before mmput()), whose exit_mmap() unmaps everything and issues the
 * process's last invalidations; its saved user registers point into memory it no longer maps.
 * The same order since 2.6 (kernel/exit.c).
 */
enum no_mm_kind { MM_PRESENT, MM_KTHREAD, MM_EXITED };

static __always_inline enum no_mm_kind current_no_mm(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	if (BPF_CORE_READ(t, mm))
		return MM_PRESENT;
	return BPF_CORE_READ(t, flags) & PF_KTHREAD_FLAG ? MM_KTHREAD : MM_EXITED;
}

/*
 * The system call the current thread is in, from its saved user registers.
 * x86 keeps the number in orig_ax (an exception stores its error code there instead, which is
 * why callers test for an open page fault first); arm64 in syscallno; powerpc in r0, valid
 * when the trap is a system call (0xc00, or 0x3000 for scv).
 */
static __always_inline int current_syscall(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct pt_regs *regs;
	long nr = -1;

	if (BPF_CORE_READ(t, flags) & PF_KTHREAD_FLAG)
		return SYSCALL_KTHREAD;
	regs = current_user_regs();
	if (!regs)
		return SYSCALL_NONE;
#if defined(__TARGET_ARCH_x86)
	nr = BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	nr = BPF_CORE_READ(regs, syscallno);
#elif defined(__TARGET_ARCH_powerpc)
	{
		unsigned long trap = BPF_CORE_READ(regs, trap) & ~0xfUL;

		if (trap != 0xc00 && trap != 0x3000)
			return SYSCALL_NONE;
		nr = BPF_CORE_READ(regs, gpr[0]);
	}
#else
	nr = -1;
#endif
	return nr >= 0 && nr < 4096 ? (int)nr : SYSCALL_NONE;
}

#if defined(__TARGET_ARCH_x86) || defined(__TARGET_ARCH_arm64)
/*
 * DWARF unwinding (bpf/unwind.bpf.h), per architecture: the link register of the top frame,
 * pointer authentication, and the registers a signal frame saved.
 */
#if defined(__TARGET_ARCH_x86)
static __always_inline __u64 user_regs_lr(struct pt_regs *regs)
{
	return 0; /* no link register: every return address is on the stack */
}

static __always_inline __u64 user_strip_pac(__u64 ra)
{
	return ra;
}

/*
 * At a signal handler's return into glibc's __restore_rt, SP is the rt_sigframe's ucontext
 * (the handler's return popped pretcode): its uc_mcontext at 40 (uc_flags, uc_link, uc_stack)
 * is struct sigcontext_64, whose rbp, rsp and rip are its 11th, 16th and 17th words
 * (arch/x86/include/uapi/asm/sigcontext.h). The interrupted rip is exact, not a return.
 */
static __always_inline bool unwind_signal_regs(__u64 sp, __u64 *pc, __u64 *new_sp, __u64 *fp)
{
	__u64 mc = sp + 40; /* three small reads: the walk's stack has no room for the block */

	if (bpf_probe_read_user(fp, sizeof(*fp), (void *)(mc + 10 * 8)) ||
	    bpf_probe_read_user(new_sp, sizeof(*new_sp), (void *)(mc + 15 * 8)) ||
	    bpf_probe_read_user(pc, sizeof(*pc), (void *)(mc + 16 * 8)))
		return false;
	return *pc != 0;
}
#else
static __always_inline __u64 user_regs_lr(struct pt_regs *regs)
{
	return regs->regs[30];
}

/*
 * A return address signed with a pointer authentication code (-mbranch-protection=pac-ret,
 * CFI's negate_ra_state): the PAC sits in the bits above the virtual address. Debian's arm64
 * user space uses 48-bit addresses (the kernel strips with the mask it reports in
 * NT_ARM_PAC_MASK; 48 bits is its value for 4 KB pages and 48-bit VAs).
 */
static __always_inline __u64 user_strip_pac(__u64 ra)
{
	return ra & ((1ULL << 48) - 1);
}

/*
 * At __kernel_rt_sigreturn SP is the rt_sigframe: siginfo (128 bytes), then the ucontext,
 * whose uc_mcontext (struct sigcontext, 16-byte aligned at 176) holds fault_address, regs[31],
 * sp and pc (arch/arm64/include/uapi/asm/ucontext.h, sigcontext.h). The trampoline is in the
 * vDSO, which has no file and so no table: reached only if a table covers it.
 */
static __always_inline bool unwind_signal_regs(__u64 sp, __u64 *pc, __u64 *new_sp, __u64 *fp)
{
	__u64 regs = sp + 128 + 176 + 8; /* sigcontext.regs[] */

	if (bpf_probe_read_user(fp, sizeof(*fp), (void *)(regs + 29 * 8)) ||
	    bpf_probe_read_user(new_sp, sizeof(*new_sp), (void *)(regs + 31 * 8)) ||
	    bpf_probe_read_user(pc, sizeof(*pc), (void *)(regs + 32 * 8)))
		return false;
	return *pc != 0;
}
#endif
#endif

#endif
