/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel and architecture differences, in one place. Each entry says which kernels differ and
 * why the code below copes with both.
 */
#ifndef MMSCOPE_COMPAT_BPF_H
#define MMSCOPE_COMPAT_BPF_H

#include "mmscope.h"

/*
 * The current thread's saved user registers (bpf_task_pt_regs(), v5.15: 88a16a130933 "bpf: Add
 * bpf_task_pt_regs() helper"). Debian's ppc64le kernels have no BTF, so no helper that returns
 * a BTF pointer: powerpc keeps the user registers' address in thread.regs.
 */
static __always_inline struct pt_regs *current_user_regs(void)
{
#if defined(__TARGET_ARCH_powerpc)
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(t, thread.regs);
#else
	return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
#endif
}

/*
 * Task local storage for tracing programs (v5.11), whose helpers take a BTF task pointer:
 * not on powerpc, whose Debian kernels have no BTF of their own (see above).
 */
#if defined(__TARGET_ARCH_powerpc)
#define MMSCOPE_TASK_STORAGE 0
#else
#define MMSCOPE_TASK_STORAGE 1
#endif

/*
 * The current thread's address space (its mm_struct's address, 0 for a kernel thread). A
 * direct load through bpf_get_current_task_btf() (v5.11: 3ca1032ab7ab "bpf: Add
 * bpf_get_current_task_btf() helper") where the kernel has BTF; a probe read on powerpc,
 * which has none (see above).
 */
static __always_inline __u64 current_mm(void)
{
#if defined(__TARGET_ARCH_powerpc)
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return (__u64)BPF_CORE_READ(t, mm);
#else
	return (__u64)bpf_get_current_task_btf()->mm;
#endif
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
#if defined(__TARGET_ARCH_powerpc)
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct mm_struct *mm = BPF_CORE_READ(t, mm);

	return mm && !BPF_CORE_READ(mm, start_code);
#else
	struct mm_struct *mm = bpf_get_current_task_btf()->mm;

	return mm && !mm->start_code;
#endif
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
