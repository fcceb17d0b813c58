// SPDX-License-Identifier: GPL-2.0
/*
 * Defines the shared state (state.bpf.h) and follows the target's processes: a child of a
 * tracked process is tracked from its fork on, and a process leaves the map when it exits, so
 * a later process that reuses its pid is not traced by mistake.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define MMSCOPE_DEFINE_STATE
#include "state.bpf.h"
#include "faults.bpf.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline void track_fork(__u32 parent_tgid, __u32 child_pid, __u32 child_tgid)
{
	__u8 one = 1;

	/* A new thread belongs to a process that is tracked already. The parent is current. */
	if (child_pid != child_tgid || !filter_tgid || !follow_children)
		return;
	if (!tgid_tracked(parent_tgid))
		return;
	if (bpf_map_update_elem(&tracked, &child_tgid, &one, BPF_ANY))
		count_lost(CNT_LOST_TRACKED);
	else
		tracked_changed();
}

/*
 * A thread exits. Without the free hook below, the process leaves tracked when its last live
 * thread exits (do_exit() has just decremented signal->live; the leader can exit before
 * other threads): from then on its pid may be reused by an unrelated process.
 */
static __always_inline void track_exit(struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);

	if (filter_tgid && BPF_CORE_READ(task, signal, live.counter) == 0) {
		if (!untrack_at_free) {
			if (bpf_map_delete_elem(&tracked, &tgid) == 0)
				tracked_changed();
		} else if (bpf_map_lookup_elem(&tracked, &tgid)) {
			/* Its teardown may go on in another thread: still counted, but only for
			 * this process, whose pid may be reused before its leader is freed. */
			__u64 start = process_start_time(task);
			__u8 exiting = TRACKED_EXITING;

			if (bpf_map_update_elem(&exiting_start, &tgid, &start, BPF_ANY) ||
			    bpf_map_update_elem(&tracked, &tgid, &exiting, BPF_EXIST))
				bpf_map_delete_elem(&tracked, &tgid);
			tracked_changed();
		}
	}
	/* Every exiting thread (the current one): a fault still open will never complete, so it
	 * is incomplete. Its slot goes with it. */
	if (!count_only) {
		struct cpu_open_fault *c = open_fault_percpu ? cpu_open_fault_get() : NULL;
		struct open_fault *of;

		/* This CPU's slot, if the thread's (its task_struct may be another's later). */
		if (c && c->task == bpf_get_current_task()) {
			open_fault_close_abandoned(&c->of);
			c->task = 0;
		}
		of = thread_open_fault(false);
		if (!of)
			return;
		open_fault_close_abandoned(of);
		if (!task_storage_on()) {
			__u32 tid = (__u32)bpf_get_current_pid_tgid();

			bpf_map_delete_elem(&open_faults, &tid);
		}
	}
}

/* Whether task t opens a path as mmscope does: same mount namespace and root. */
static __always_inline bool sees_our_files(struct task_struct *t)
{
	struct dentry *root = BPF_CORE_READ(t, fs, root.dentry);

	return own_mnt_ns && BPF_CORE_READ(t, nsproxy, mnt_ns, ns.inum) == own_mnt_ns &&
	       BPF_CORE_READ(root, d_inode, i_ino) == own_root_ino &&
	       BPF_CORE_READ(root, d_sb, s_dev) == own_root_dev;
}

/*
 * A process forked by one whose image userspace has the mmap records of: the child's address
 * space is a copy of the parent's, so its user frames are named by its own image, whose
 * mappings are the parent image's up to the fork and its own records after (REC_FORK;
 * user/core/mmap_log.c), with no build-ID reads (on fork_exec ~15 a round, each an irq_work and
 * ~13 us with interrupts off). Not a thread or a child that shares the parent's address
 * space (vfork), nor one that sees other files under the records' paths.
 */
static __always_inline void fork_image(struct task_struct *parent, struct task_struct *child)
{
	__u64 parent_mm = (__u64)BPF_CORE_READ(parent, mm), mm = (__u64)BPF_CORE_READ(child, mm);
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid), tgid = BPF_CORE_READ(child, tgid);
	struct exec_image *parent_im, im = {.tgid = tgid};
	struct fork_record *r;

	if (!mmap_records_on || (!collect_stacks && !collect_tlb_stacks && !collect_locations))
		return;
	if (tgid == parent_tgid || !mm || mm == parent_mm ||
	    !trace_allowed(bpf_get_current_pid_tgid()))
		return;
	parent_im = bpf_map_lookup_elem(&exec_images, &parent_mm);
	if (!parent_im || parent_im->tgid != parent_tgid || !sees_our_files(child))
		return;
	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		count_lost(CNT_LOST_RINGBUF);
		return;
	}
	im.ns = bpf_ktime_get_ns();
	r->type = REC_FORK;
	r->tgid = tgid;
	r->ns = im.ns;
	r->parent_tgid = parent_tgid;
	r->pad = 0;
	r->parent_ns = parent_im->ns;
	if (bpf_map_update_elem(&exec_images, &mm, &im, BPF_ANY)) {
		bpf_ringbuf_discard(r, 0);
		return;
	}
	__sync_fetch_and_add(&exec_gen, 1); /* after the update: see image_cache */
	bpf_ringbuf_submit(r, lazy_wakeup());
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_btf, struct task_struct *parent, struct task_struct *child)
{
	track_fork(parent->tgid, child->pid, child->tgid);
	fork_image(parent, child);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(fork_raw, struct task_struct *parent, struct task_struct *child)
{
	track_fork(BPF_CORE_READ(parent, tgid), BPF_CORE_READ(child, pid),
		   BPF_CORE_READ(child, tgid));
	fork_image(parent, child);
	return 0;
}

#if MMSCOPE_TASK_STORAGE
/*
 * At the end of a run, run once by userspace: every thread's fault still open, one struct
 * open_fault each, for userspace to count incomplete (task storage has no walk from
 * userspace).
 */
SEC("iter/task")
int open_faults_iter(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct open_fault *of;

	if (!task)
		return 0;
	of = bpf_task_storage_get(&open_faults, task, NULL, 0);
	if (of && of->ts)
		bpf_seq_write(ctx->meta->seq, of, sizeof(*of));
	return 0;
}

/*
 * Run once by userspace when the kernel's mmap records start (user/core/session.c seed_images()):
 * the processes already running in the run's scope, with no image yet, written to userspace
 * as struct running_image. Userspace reads their mappings from /proc and gives each an image
 * like an exec'ed one's, named by (process, the time before that read): whatever they map
 * later is in the records. Their faults and the children they fork then name their code by raw
 * address, without the build-ID reads that cost each new location or stack ~13 us with
 * interrupts off (an irq_work a read): `faults -p PID` on a fork/exec loop took 833 irq_work
 * interrupts in 50 rounds, against 4 under `-- CMD`.
 */
SEC("iter/task")
int seed_images_iter(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct running_image r = {};

	if (!task)
		return 0;
	r.mm = (__u64)task->mm;
	r.tgid = task->tgid;
	/* One a process: its leader's (an exited leader's threads go unseeded, as before), or
	 * with -t that thread's. */
	if (!r.mm || task->pid != (targ_tid ? targ_tid : r.tgid) ||
	    (filter_cgroup && !task_in_cgroup(task)) ||
	    (filter_tgid && !tgid_tracked_task(r.tgid, task)) || !sees_our_files(task) ||
	    bpf_map_lookup_elem(&exec_images, &r.mm))
		return 0;
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}
#endif

/*
 * The process's leader is freed: every thread has exited and been reaped, so its address
 * space is gone, and its pid is free for reuse (freed in release_task(), reused only once the
 * cyclic pid allocator comes round): the process leaves tracked. Not at its last live
 * thread's exit, when another thread that exited just before may still be in its final
 * mmput(), tearing the address space down: invalidations of the traced process (CI once saw
 * 19 of a powerpc hash MMU's 675 invalidation hcalls missed that way).
 */
static __always_inline void track_free(__u32 pid, __u32 tgid, __u64 start_time)
{
	__u64 *start;
	__u8 *v;

	if (!filter_tgid || pid != tgid)
		return;
	v = bpf_map_lookup_elem(&tracked, &tgid);
	if (!v)
		return;
	if (*v == TRACKED_EXITING) {
		/* Not a process that reused the pid since (tracked as the child of another). */
		start = bpf_map_lookup_elem(&exiting_start, &tgid);
		if (start && *start != start_time)
			return;
		bpf_map_delete_elem(&exiting_start, &tgid);
	}
	if (bpf_map_delete_elem(&tracked, &tgid) == 0)
		tracked_changed();
}

SEC("tp_btf/sched_process_free")
int BPF_PROG(free_btf, struct task_struct *task)
{
	track_free(task->pid, task->tgid, task->start_time);
	return 0;
}

SEC("raw_tp/sched_process_free")
int BPF_PROG(free_raw, struct task_struct *task)
{
	track_free(BPF_CORE_READ(task, pid), BPF_CORE_READ(task, tgid),
		   BPF_CORE_READ(task, start_time));
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_btf, struct task_struct *task)
{
	track_exit(task);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(exit_raw, struct task_struct *task)
{
	track_exit(task);
	return 0;
}

/*
 * A traced process exec'ed: tell userspace the new image's path while the process is alive,
 * so its symbols can be read even if it exits before the run ends.
 */
static __always_inline void emit_exec(const char *filename)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mm_record *r;

	if (!collect_stacks && !collect_tlb_stacks && !collect_locations)
		return;
	if (!trace_allowed(id))
		return;
#if (defined(__TARGET_ARCH_x86) || defined(__TARGET_ARCH_arm64)) && MMSCOPE_CALLBACKS
	if (unwind_dwarf)
		unwind_want_exe(id >> 32);
#endif
	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		count_lost(CNT_LOST_RINGBUF);
		return;
	}
	r->type = REC_EXEC;
	r->tgid = id >> 32;
	r->ns = bpf_ktime_get_ns();
	r->recorded = 0;
	r->pad = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	bpf_probe_read_kernel_str(r->filename, sizeof(r->filename), filename);
	/* An image userspace will know the mappings of: its locations need no build IDs. Not
	 * one that sees other files under the records' paths: its build IDs are read at the
	 * faults, and its maps through /proc/PID (map_files, its root) while it lives. */
	if (mmap_records_on) {
		struct exec_image im = {.tgid = id >> 32, .ns = r->ns};
		__u64 mm = current_mm();

		if (!sees_our_files((struct task_struct *)bpf_get_current_task()))
			/* Not recorded, and no earlier image under this address either: the new mm
			 * can sit where a freed one of the same process was (an exec'ed image's,
			 * freed at its own exec), whose entry would name this image's addresses
			 * from the other's records (unshare -m then exec: every frame unknown). */
			bpf_map_delete_elem(&exec_images, &mm);
		else if (bpf_map_update_elem(&exec_images, &mm, &im, BPF_ANY) == 0)
			r->recorded = 1;
		__sync_fetch_and_add(&exec_gen, 1); /* after the change: see image_cache */
	}
	/* A recorded image is not urgent (the wakeup was ~27 us of this program's ~29 us an
	 * exec on the benchmark VM). Unrecorded images want their maps now. */
	bpf_ringbuf_submit(r, r->recorded ? lazy_wakeup() : 0);
}

/*
 * exec loaded its new address space on this CPU (activate_mm(), before this tracepoint): that
 * is now the last user mm the CPU ran, so that the exec'ing task's next switch back to it is
 * no change (the hardware loads nothing then; x86's CR3 loads say so).
 */
static __always_inline void exec_switched_mm(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct cpu_switch_state *cs;
	__u32 zero = 0;
	__u64 mm;

	cs = bpf_map_lookup_elem(&cpu_switch, &zero);
	mm = (__u64)BPF_CORE_READ(t, mm);
	if (cs && cs->last_user_mm && mm)
		cs->last_user_mm = mm;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(exec_btf, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	exec_switched_mm();
	proc_exec_comm(bpf_get_current_pid_tgid() >> 32);
	emit_exec(BPF_CORE_READ(bprm, filename));
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(exec_raw, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	exec_switched_mm();
	proc_exec_comm(bpf_get_current_pid_tgid() >> 32);
	emit_exec(BPF_CORE_READ(bprm, filename));
	return 0;
}
