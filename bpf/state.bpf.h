/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The state every mmscope BPF program shares: configuration (const volatile rodata, fixed by
 * userspace before load, so the verifier prunes what a run does not use), maps, the target
 * filter, and the per-CPU statistics block.
 *
 * state.bpf.c defines everything here (it includes this header with MMSCOPE_DEFINE_STATE);
 * every other *.bpf.c sees extern declarations, and `bpftool gen object` links them into one
 * object with one skeleton.
 */
#ifndef MMSCOPE_STATE_BPF_H
#define MMSCOPE_STATE_BPF_H

#include "mmscope.h"

#ifdef MMSCOPE_DEFINE_STATE
#define STATE_DECL
#define RODATA(type, name)	    const volatile type name = 0
#define RODATA_ARRAY(type, name, n) const volatile type name[n] = {}
#else
#define STATE_DECL		    extern
#define RODATA(type, name)	    extern const volatile type name
#define RODATA_ARRAY(type, name, n) extern const volatile type name[n]
#endif

#include "compat.bpf.h" /* after RODATA: it declares the kernel's features */

/* Target filter (see trace_allowed()). */
RODATA(bool, filter_cpu);
RODATA_ARRAY(__u64, cpu_mask, MMSCOPE_MAX_CPUS / 64);
RODATA(__u32, targ_tid);       /* kernel pid of one thread; 0: off */
RODATA(bool, filter_cgroup);   /* cgroup in cgroup_filter[0], descendants included */
RODATA(bool, filter_tgid);     /* processes in the tracked map */
RODATA(bool, follow_children); /* add children of tracked processes at fork */
/* mmscope's own process, never traced: host-wide, its symbol reading was the host's biggest
 * page-faulter (issue 26). 0: none. */
RODATA(__u32, self_tgid);

/* What to collect beyond the hot counters. */
RODATA(bool, collect_procs);
/* Process rows read at the end only: their counts pend per CPU (struct proc_slot). */
RODATA(bool, procs_pending);
RODATA(bool, collect_locations);
RODATA(bool, collect_files);	    /* faults on files, by file and process (faults' by_file) */
RODATA(bool, collect_stacks);	    /* fault stacks (faults --folded) */
RODATA(bool, collect_tlb_stacks);   /* TLB flush stacks (tlb --folded) */
RODATA(bool, collect_tlb_detail);   /* TLB events by process and by system call */
RODATA(bool, collect_switch_procs); /* context switches by process */
RODATA(bool, track_mm_cpus);	    /* CPUs each mm ran on (avoidable broadcasts) */
/*
 * Counting only (mmscope stat): no per-thread open fault, so no pairing, latency or
 * attribution; minor/major are counted where they are accounted and incomplete is derived.
 * Saves the hash-map updates that dominate the per-fault cost.
 */
RODATA(bool, count_only);
/* Faults are paired for their class and TLB work only (tlb): no clock read at entry and
 * completion, no latency histogram. */
RODATA(bool, untimed_faults);
/* A thread's open fault is in a per-CPU slot while it runs, in its own entry of open_faults
 * only once switched out with it open (bpf/faults.bpf.h): where the switch hook is attached. */
RODATA(bool, open_fault_percpu);
/* Latency comes from handle_mm_fault entry/exit (fentry or kprobe) rather than pairing. */
RODATA(bool, lat_from_calls);
/* faults --major, --min-latency, --type: the stacks of those faults only (0: every fault). */
RODATA(bool, stack_major_only);
RODATA(__u64, stack_min_latency_ns);
RODATA(__u32, stack_type_mask);
/* --sample N: the stacks of one event in N on average, per CPU (0, 1: every event); see
 * stack_sampled(). */
RODATA(__u32, stack_sample_every);
RODATA(bool, untrack_at_free); /* a process leaves tracked when its leader is freed */
/* The fault's protection bit does not say whether the page was present (powerpc's hash MMU:
 * bpf/faults.bpf.h perf_regs_class()): no protection class, no copy-on-write type. */
RODATA(bool, prot_unknown);
/* The JIT is off (net.core.bpf_jit_enable = 0, the default of Debian's ppc64el kernels): the
 * interpreter refuses a program that passes a callback (bpf_loop()): plain loops instead. */
RODATA(bool, interpreted);
/* With -c: the cgroup's id, to test the task switched in (not current) at sched_switch. */
RODATA(__u64, targ_cgroup_id);

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_stats);
} stats SEC(".maps");

/* Processes (tgid) traced with -p or --, grown at fork unless --no-children. */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} tracked SEC(".maps");

/*
 * The tracked map's generation: bumped after every change to it (fork, exit, userspace), so
 * that a CPU's cached decision for a process (filter_cache) taken before the change is
 * looked up again.
 */
STATE_DECL __u64 tracked_gen;

/*
 * Set by userspace while it reads the kernel's perf mmap records (user/core/mmap_log.c): the
 * mappings of every image exec'ed from then on are known without asking the kernel for build
 * IDs. exec_images holds those images' address spaces, with their process.
 */
STATE_DECL __u32 mmap_records_on;

/*
 * mmscope's own view of the files (its mount namespace, and its root's inode and device, in
 * the kernel's encoding), set with mmap_records_on: an image the records name by a path that
 * means another file here (another mount namespace, a chroot) is not resolved from them.
 */
STATE_DECL __u32 own_mnt_ns;
STATE_DECL __u32 own_root_dev;
STATE_DECL __u64 own_root_ino;

/* By address space: the exec'ed image it holds (an mm_struct freed and reused by a later
 * image gets that image's entry at its exec, before any of its faults). */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct exec_image);
} exec_images SEC(".maps");

/* Bumped at every exec recorded in exec_images: the per-CPU image_cache answers are stale. */
STATE_DECL __u64 exec_gen;

/* Per CPU: the last exec_images answer. A new process's faults come in a row, nearly all at
 * new locations, and the LRU lookup (a cold bucket, its reference bit written) cost ~450 ns
 * of each on an exec loop. */
struct image_cache {
	__u64 gen;
	__u64 mm;
	__u64 ns;
	__u32 tgid;
	__u32 pad;
};

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct image_cache);
} image_cache SEC(".maps");

/* The exec time that names process tgid's image mm if userspace has its mmap records, else 0. */
static __always_inline __u64 image_in_mmap_records(__u32 tgid, __u64 mm)
{
	__u64 gen = exec_gen, ns = 0;
	struct image_cache *c;
	struct exec_image *im;
	__u32 zero = 0;

	if (!mmap_records_on)
		return 0;
	c = bpf_map_lookup_elem(&image_cache, &zero);
	if (c && c->gen == gen && c->mm == mm && c->tgid == tgid)
		return c->ns;
	im = bpf_map_lookup_elem(&exec_images, &mm);
	if (im && im->tgid == tgid)
		ns = im->ns;
	if (c) {
		c->gen = gen;
		c->mm = mm;
		c->tgid = tgid;
		c->ns = ns;
	}
	return ns;
}

/*
 * The slot, of 2^bits, that a per-CPU cache keeps the entry of hash h in: Fibonacci hashing
 * (the top bits of h times 2^64 / phi), which spreads consecutive pids and addresses.
 */
static __always_inline __u32 cache_slot(__u64 h, __u32 bits)
{
	return (__u32)((h * 0x9e3779b97f4a7c15ULL) >> (64 - bits));
}

/* Per CPU: the processes trace_allowed() and task_allowed() looked up in tracked last, and
 * the answers, in FILTER_CACHE_SLOTS slots by hash of the tgid. A CPU runs a few processes at
 * a time; the lookup (a hash of the pid, a bucket walk) was half of what `mmscope stat` cost
 * per fault, and a switch tests both its sides (with one slot a CPU, a workload of processes
 * taking turns missed it twice a switch: switch_btf ~280 ns a run tracing an idle process). */
#define FILTER_CACHE_BITS  5
#define FILTER_CACHE_SLOTS (1u << FILTER_CACHE_BITS)
struct filter_cache {
	__u64 gen;
	__u32 tgid;
	__u32 state; /* 0: empty; 1: not tracked; 2: tracked */
};

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FILTER_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct filter_cache);
} filter_cache SEC(".maps");

/* A change to tracked was made: every CPU's cached decision is stale. */
static __always_inline void tracked_changed(void)
{
	__sync_fetch_and_add(&tracked_gen, 1);
}

/* Whether process tgid is in tracked, through this CPU's cache. The generation is read
 * before the lookup: a change between the two is cached under the old generation, which the
 * change's bump then makes stale. */
/*
 * tracked values: TRACKED_LIVE, or TRACKED_EXITING once the process's last live thread has
 * exited while another thread may still be tearing its address space down; it is deleted when
 * the process's leader is freed (bpf/state.bpf.c track_free()). Until then its pid may already
 * be another process's: an exiting entry holds only for the tasks of the process that started
 * at exiting_start[tgid] (its leader's start time), and is never cached.
 */
#define TRACKED_LIVE	1
#define TRACKED_EXITING 2

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} exiting_start SEC(".maps");

/* The start time of the process that task t (current when NULL) belongs to. */
static __always_inline __u64 process_start_time(struct task_struct *t)
{
	if (!t)
		t = (struct task_struct *)bpf_get_current_task();
	return BPF_CORE_READ(t, group_leader, start_time);
}

/* Whether process tgid, of task t (current when NULL), is tracked. */
static __always_inline bool tgid_tracked_task(__u32 tgid, struct task_struct *t)
{
	__u32 idx = cache_slot(tgid, FILTER_CACHE_BITS);
	struct filter_cache *fc = bpf_map_lookup_elem(&filter_cache, &idx);
	__u64 gen = *(volatile __u64 *)&tracked_gen, *start;
	__u8 *v;
	bool yes;

	if (fc && fc->state && fc->tgid == tgid && fc->gen == gen)
		return fc->state == 2;
	v = bpf_map_lookup_elem(&tracked, &tgid);
	if (v && *v == TRACKED_EXITING) {
		start = bpf_map_lookup_elem(&exiting_start, &tgid);
		return start && *start == process_start_time(t);
	}
	yes = v != NULL;
	if (fc) {
		fc->gen = gen;
		fc->tgid = tgid;
		fc->state = yes ? 2 : 1;
	}
	return yes;
}

static __always_inline bool tgid_tracked(__u32 tgid)
{
	return tgid_tracked_task(tgid, NULL);
}

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

/*
 * Records to userspace: stacks new to a CPU, counts the per-CPU slots give up, exec and maps
 * requests. 1 MB: a storm of distinct stacks (test_rel_overload: 32768 of ~700 bytes in a
 * fraction of a second) lost a few hundred in a 256 KB ring; none in 1 MB. Runs that read no
 * records shrink it to a page (user/core/session.c).
 */
#define RECORDS_RING_SIZE (1024 * 1024)
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RECORDS_RING_SIZE);
} records SEC(".maps");

/* Per CPU: when it last forced the ring's reader awake (lazy_wakeup()). */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ring_forced SEC(".maps");

/*
 * The submit flags of a record userspace needs only by its next poll (every 50 ms): none of
 * the ring's wakeups, each an irq_work, a self-IPI, tens of microseconds with interrupts off
 * on the benchmark VM; but once an eighth of the ring is filled, one forced wakeup a
 * millisecond per CPU, so that a storm of records is read before the ring overflows (which
 * is counted). At half full, a storm of new stacks (~150 MB/s) overflowed it now and then:
 * the rest of the ring is the reader's time to be scheduled.
 */
static __always_inline __u64 lazy_wakeup(void)
{
	__u32 zero = 0;
	__u64 *last, now;

	if (bpf_ringbuf_query(&records, BPF_RB_AVAIL_DATA) < RECORDS_RING_SIZE / 8)
		return BPF_RB_NO_WAKEUP;
	last = bpf_map_lookup_elem(&ring_forced, &zero);
	now = bpf_ktime_get_ns();
	if (!last || now - *last < 1000000ULL)
		return BPF_RB_NO_WAKEUP;
	*last = now;
	return BPF_RB_FORCE_WAKEUP;
}

/*
 * Per CPU: the ids of the stacks it sent to userspace lately, by id (kernel stacks in the
 * first half, user stacks in the second): a CPU sends a stack again only after another took
 * its slot. Userspace keeps one copy of each.
 */
#define STACKS_SENT_BITS 10
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 << STACKS_SENT_BITS);
	__type(key, __u32);
	__type(value, __u64);
} stacks_sent SEC(".maps");

#include "unwind.bpf.h" /* the DWARF tables (maps defined on every architecture) */

/* Each stack right behind its record header: a stack record is one copy (stack_send()). */
struct stack_scratch {
	struct stack_header kh;
	struct kernel_stack k;
	struct stack_header uh;
	struct user_stack u;
	__u64 walk[USER_STACK_DEPTH];  /* user_fp_walk()'s return addresses */
	__u64 kwalk[USER_STACK_DEPTH]; /* the kernel's raw walk of the same stack */
	__u64 walk_hash;	       /* user_fp_walk()'s hash of walk */
	__u64 walk_sp, walk_fp;	       /* user_fp_walk()'s state between steps */
	__u32 walk_compat;	       /* ... its thread is 32-bit */
	__u32 nwalk;		       /* walk's depth, read back (see capture_user_stack()) */
	struct unwind_walk uw;	       /* the DWARF walk's state */
	__u32 pad;
};

_Static_assert(__builtin_offsetof(struct stack_scratch, k) == sizeof(struct stack_header) &&
		       __builtin_offsetof(struct stack_scratch, u) ==
			       __builtin_offsetof(struct stack_scratch, uh) +
				       sizeof(struct stack_header),
	       "a stack right behind its record header");

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_scratch);
} stack_scratch SEC(".maps");

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FOLDED_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct folded_slot);
} folded_cache SEC(".maps");

/*
 * Per CPU: user stack ids by (process, address space, the frame-pointer walk's depth and
 * return addresses), by hash of that key: see capture_user_stack(). A CPU takes a loop's
 * events in a row from one stack, and a process's stacks of the moment fit its slots; a
 * slot another stack took is only recomputed. (An LRU hash shared by the CPUs cost a lookup
 * per event and an insert of ~300 ns per new stack, which an exec loop has at nearly every
 * fault.) busy is set while a program reads or writes the slot: a program that interrupts
 * it (an invalidation's, in an IPI) computes its stack instead of seeing half a write.
 */
struct ustack_cache_key {
	__u32 tgid;
	__u32 depth;
	__u64 mm;
	__u64 walk_hash;
};

struct ustack_slot {
	struct ustack_cache_key key;
	__u64 id; /* 0: empty */
	__u64 busy;
};

#define USTACK_CACHE_BITS 9

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1 << USTACK_CACHE_BITS);
	__type(key, __u32);
	__type(value, struct ustack_slot);
} ustack_cache SEC(".maps");

/* Whether two keys of n bytes (whole 8-byte words, no padding) are equal: the per-CPU pending
 * slots' test that the next event has the same key. */
_Static_assert(sizeof(struct fault_location_key) == 24 && sizeof(struct folded_key) == 40 &&
		       sizeof(struct ustack_cache_key) == 24,
	       "per-CPU slot keys: whole words, no padding");

static __always_inline bool key_words_eq(const void *a, const void *b, __u32 n)
{
	const __u64 *x = a, *y = b;

	for (__u32 i = 0; i < n / sizeof(__u64); i++)
		if (x[i] != y[i])
			return false;
	return true;
}

/*
 * The kernel stack id of a user-mode fault's entry path, per CPU, [0] data and [1] instruction
 * faults (see capture_stacks_of()); USER_FAULT_NO_KSTACK where the hook has none.
 */
#define USER_FAULT_NO_KSTACK 2 /* never an id: stack ids are odd */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} user_fault_kstack SEC(".maps");

/*
 * Per CPU: the last user address space it ran, and the class of its last context switch
 * (bpf/switch.bpf.c). Here, because an exec changes the first (state.bpf.c).
 */
struct cpu_switch_state {
	__u64 last_user_mm;
	__u64 last_prev; /* the task the last switch switched out: current until its CR3 load */
	__u32 last_class;
	__u32 counted; /* the last switch passed the filter */
};

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_switch_state);
} cpu_switch SEC(".maps");

/* mm -> CPUs it was switched in on (bit per CPU below 63; bit 63: any CPU from 63 up), kept
 * at sched_switch when track_mm_cpus is set. */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} mm_cpus SEC(".maps");

static __always_inline struct mm_stats *stats_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stats, &zero);
}

static __always_inline void count_lost_n(int counter, __u64 events)
{
	struct mm_stats *s = stats_get();

	if (s)
		s->c[counter] += events;
}

static __always_inline void count_lost(int counter)
{
	count_lost_n(counter, 1);
}

/* The same for a counter of what happened, not of what was lost. */
static __always_inline void count_inc(int counter)
{
	count_lost_n(counter, 1);
}

/*
 * One predicate for every target filter. pid_tgid is bpf_get_current_pid_tgid(): the upper
 * half is the kernel's tgid (what users call the PID), the lower half the kernel's pid (the
 * thread ID, TID).
 */
static __always_inline bool trace_allowed(__u64 pid_tgid)
{
	__u32 tgid = pid_tgid >> 32;

	if (filter_cpu) {
		__u32 cpu = bpf_get_smp_processor_id();

		if (cpu >= MMSCOPE_MAX_CPUS || !(cpu_mask[cpu / 64] & (1ULL << (cpu % 64))))
			return false;
	}
	if (targ_tid && (__u32)pid_tgid != targ_tid)
		return false;
	if (tgid == self_tgid)
		return false;
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return false;
	if (filter_tgid && !tgid_tracked(tgid))
		return false;
	return true;
}

/* Whether task t is in the -c cgroup or below it (bpf_current_task_under_cgroup()'s test, for a
 * task that is not current): up its cgroup's ancestors, at most CGROUP_DEPTH_MAX levels.
 * (Testing the cgroup itself only, a switch to a task of a child cgroup went uncounted unless
 * the task switched out was traced.) */
#define CGROUP_DEPTH_MAX 32
static __always_inline bool task_in_cgroup(struct task_struct *t)
{
	struct cgroup *cg = BPF_CORE_READ(t, cgroups, dfl_cgrp);

	for (int i = 0; i < CGROUP_DEPTH_MAX && cg; i++) {
		if (BPF_CORE_READ(cg, kn, id) == targ_cgroup_id)
			return true;
		cg = BPF_CORE_READ(cg, self.parent, cgroup);
	}
	return false;
}

/*
 * The same filter for a task that is not current (the task switched in at sched_switch), of
 * process tgid (read by the caller: a direct load where t is a BTF pointer).
 */
static __always_inline bool task_allowed(struct task_struct *t, __u32 tgid)
{
	if (filter_cpu) {
		__u32 cpu = bpf_get_smp_processor_id();

		if (cpu >= MMSCOPE_MAX_CPUS || !(cpu_mask[cpu / 64] & (1ULL << (cpu % 64))))
			return false;
	}
	if (targ_tid && (__u32)BPF_CORE_READ(t, pid) != targ_tid)
		return false;
	if (tgid == self_tgid)
		return false;
	if (filter_cgroup && !task_in_cgroup(t))
		return false;
	if (filter_tgid && !tgid_tracked_task(tgid, t))
		return false;
	return true;
}

#define FNV_PRIME 0x100000001b3ULL
#define FNV_BASIS 0xcbf29ce484222325ULL

/*
 * Send the stack right behind hdr (its first size bytes) to userspace as a record of type,
 * unless this CPU sent it lately (*sent_now says which). Its id, or 0 when the ring had no
 * room (the stack is lost).
 */
static __always_inline __u64 stack_send(struct stack_header *hdr, __u32 type, __u64 id, __u32 size,
					bool *sent_now)
{
	__u32 idx = (__u32)(id >> (64 - STACKS_SENT_BITS)) +
		    (type == REC_USER_STACK ? 1u << STACKS_SENT_BITS : 0);
	__u64 *sent = bpf_map_lookup_elem(&stacks_sent, &idx);

	*sent_now = false;
	if (sent && *sent == id)
		return id;
	hdr->type = type;
	hdr->pad = 0;
	hdr->id = id;
	if (bpf_ringbuf_output(&records, hdr, sizeof(*hdr) + size, lazy_wakeup()))
		return 0;
	if (sent)
		*sent = id;
	*sent_now = true;
	return id;
}

/*
 * A depth (n) read back from map memory, at most max. A loop "for i: if (i >= n) break; ..."
 * leaves n with another range on each of its exits, and the verifier then checks everything
 * after the loop once per exit (and a second such loop once per exit of the first): the
 * stack-capturing programs took 400 000 instructions and ~350 ms each to load. Read back, n
 * has one range on every path.
 */
static __always_inline __u32 depth_read_back(const __u32 *where, __u32 max)
{
	__u32 n = *(const volatile __u32 *)where;

	return n > max ? max : n;
}

/*
 * Store a kernel stack captured in the stack scratch's k (len bytes, from bpf_get_stack()); its
 * content hash, or 0 when lost. A global function (see store_user_stack() below): its hash
 * loop's 127 steps are checked once per program, not once per state of the caller.
 */
__u64 store_kernel_stack(long len);

#ifdef MMSCOPE_DEFINE_STATE
/*
 * Whether the global functions' loops run as bpf_loop() callbacks, whose body the verifier
 * checks a few times, not once per step: where the kernel has bpf_loop() and the JIT is on
 * (the interpreter runs no callbacks), in the object with callbacks. Elsewhere the same step
 * functions are called from plain bounded loops.
 */
static __always_inline bool loops_as_callbacks(void)
{
	return MMSCOPE_CALLBACKS && has_loop && !interpreted;
}

/* step(i, ctx) for i from 0 while i < n (n <= max), until it returns nonzero: bpf_loop() where
 * loops_as_callbacks(), else a plain loop bounded by max. */
static __always_inline void loop_steps(__u32 n, __u32 max, long (*step)(__u64 i, void *ctx),
				       void *ctx)
{
	if (!loops_as_callbacks()) {
		for (__u32 i = 0; i < max; i++) {
			if (i >= n)
				break;
			if (step(i, ctx))
				break;
		}
	} else {
		bpf_loop(n, step, ctx, 0);
	}
}

/* A kernel stack's content hash, one frame a step (store_kernel_stack()). */
struct stack_hash {
	struct stack_scratch *sc;
	__u64 h;
	bool raw; /* a frame is a raw address (user stacks) */
};

static long hash_kernel_frame(__u64 i, void *data)
{
	struct stack_hash *c = data;

	if (i >= KERNEL_STACK_DEPTH)
		return 1;
	c->h = (c->h ^ c->sc->k.ip[i]) * FNV_PRIME;
	return 0;
}

__noinline __u64 store_kernel_stack(long len)
{
	__u32 zero = 0;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct stack_hash c = {.sc = sc, .h = FNV_BASIS};
	bool sent_now;
	__u32 n;

	if (!sc || len <= 0)
		return 0;
	n = (__u32)len / sizeof(__u64);
	if (n > KERNEL_STACK_DEPTH)
		n = KERNEL_STACK_DEPTH;
	sc->k.nr = n;
	sc->k.pad = 0;
	loop_steps(n, KERNEL_STACK_DEPTH, hash_kernel_frame, &c);
	c.h |= 1; /* never 0 */
	n = depth_read_back(&sc->k.nr, KERNEL_STACK_DEPTH);
	return stack_send(&sc->kh, REC_KERNEL_STACK, c.h, 8 + n * sizeof(__u64), &sent_now);
}
#endif

/* The last REC_MAPS request of this CPU (see want_maps()). */
struct maps_request {
	__u32 tgid;
	__u32 pad;
	__u64 ts;
};

STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct maps_request);
} last_maps_request SEC(".maps");

/*
 * A user frame came back as a raw address, not (build ID, offset): the kernel could not look up
 * its mapping, as when the event happens with the address space's lock held for writing
 * (mprotect, munmap, mmap: where TLB flushes come from). Userspace resolves such an address
 * through a snapshot of /proc/PID/maps, which must be taken while the process lives and after
 * its libraries are mapped; a process of a few milliseconds is gone before any snapshot on a
 * timer. So ask for one now, at most once a millisecond per CPU and process.
 */
static __always_inline void want_maps(__u32 tgid)
{
	__u32 zero = 0;
	struct maps_request *last = bpf_map_lookup_elem(&last_maps_request, &zero);
	__u64 now = bpf_ktime_get_ns(), pending;
	struct mm_record *r;

	if (!last || (last->tgid == tgid && now - last->ts < 1000000ULL))
		return;
	last->tgid = tgid;
	last->ts = now;
	pending = bpf_ringbuf_query(&records, BPF_RB_AVAIL_DATA);
	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		count_lost(CNT_LOST_RINGBUF);
		return;
	}
	r->type = REC_MAPS;
	r->tgid = tgid;
	r->comm[0] = '\0';
	r->filename[0] = '\0';
	/* The ring wakes its reader only for a record at the reader's position: behind an
	 * exec record submitted without a wakeup, this one must force it. */
	bpf_ringbuf_submit(r, pending ? BPF_RB_FORCE_WAKEUP : 0);
}

/*
 * Store the user stack in the stack scratch's u (n frames); its content hash, or 0 when lost.
 * A global function, defined in state.bpf.c alone (the static linker resolves the other
 * objects' calls to it): the verifier checks a global function once per program, with its
 * arguments unknown, whatever the state of its callers. Inlined, it was checked at each of its
 * eight call sites, once per state reaching each (a depth, the flags of the fault), ~55 000 of
 * the 170 000 instructions a stack-capturing program took to verify. Its argument is a
 * scalar and it looks the scratch up itself: 5.10's verifier takes only scalars and the
 * context as a global function's arguments (pointers to memory came with v5.12, e5069b9c23b3
 * "bpf: Support pointers in global func args"), and it must return a scalar.
 */
__u64 store_user_stack(__u32 n);

#ifdef MMSCOPE_DEFINE_STATE
/* The content hash of a user stack (a bpf_loop() callback, one frame a call): a loop here
 * was verified once per depth at each of its four inlined callers (~50 000 instructions).
 * Interpreted programs may pass no callback, and kernels before bpf_loop() (compat.bpf.h
 * has_loop) have none: a loop of calls there. */
static long hash_user_frame(__u64 i, void *data)
{
	struct stack_hash *c = data;
	struct user_frame *f;
	__u64 w;

	if (i >= USER_STACK_DEPTH)
		return 1;
	f = &c->sc->u.f[i];
	__builtin_memcpy(&w, f->build_id, sizeof(w));
	c->h = (c->h ^ f->offset_or_ip) * FNV_PRIME;
	c->h = (c->h ^ w ^ (__u64)f->status) * FNV_PRIME;
	c->raw |= f->status == BPF_STACK_BUILD_ID_IP;
	return 0;
}

__noinline __u64 store_user_stack(__u32 n)
{
	__u32 zero = 0;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct stack_hash c = {.sc = sc, .h = FNV_BASIS};
	bool sent_now;
	__u64 id;

	if (!sc || n == 0)
		return 0;
	if (n > USER_STACK_DEPTH)
		n = USER_STACK_DEPTH;
	sc->u.nr = n;
	sc->u.pad = 0;
	loop_steps(n, USER_STACK_DEPTH, hash_user_frame, &c);
	c.h |= 1; /* never 0 */
	n = depth_read_back(&sc->u.nr, USER_STACK_DEPTH);
	id = stack_send(&sc->uh, REC_USER_STACK, c.h, 8 + n * sizeof(struct user_frame), &sent_now);
	/* Raw addresses, the first time this CPU sees them: snapshot the process's mappings. */
	if (sent_now && c.raw)
		want_maps(bpf_get_current_pid_tgid() >> 32);
	return id;
}
#endif

/* The kernel's user stack, as (build ID, offset) frames; its id, 0 when lost. */
static __always_inline __u64 kernel_user_stack(void *ctx, struct stack_scratch *sc)
{
	long len = bpf_get_stack(ctx, sc->u.f, sizeof(sc->u.f),
				 BPF_F_USER_STACK | BPF_F_USER_BUILD_ID);

	return len > 0 ? store_user_stack((__u32)len / sizeof(struct user_frame)) : 0;
}

#if defined(__TARGET_ARCH_x86) || defined(__TARGET_ARCH_arm64)
/*
 * Why user stacks are not simply bpf_get_stack(BPF_F_USER_STACK | BPF_F_USER_BUILD_ID) on
 * every event (measured on the benchmark VM, a minor fault costing 1-3 us):
 *  - a build ID costs an mmap_read_trylock with interrupts off, an irq_work to unlock and an
 *    ELF note lookup per frame: ~9 us an event;
 *  - the kernel's walker follows the frame pointer of code built without one (libc's
 *    start-up, for one) wherever it points, and a read of an unmapped address is a nested page
 *    fault that the probe read fixes up: ~8 us an event.
 * So the stack is walked here first, by frame pointers, only while each frame lies above the
 * previous one and within USER_FP_WALK_SPAN of the stack pointer (a thread's stack), which
 * never leaves the stack. The return addresses, hashed with the process and its address space,
 * key a cache of user stack ids: the expensive capture runs once per distinct stack. On a miss
 * the kernel's raw walk must begin with the same addresses; its build-ID frames are then cut
 * to this walk's depth, so that what the cache holds is a function of its key (the frames the
 * kernel's walker would add past this walk's end are the garbage being avoided). When the
 * walks disagree (an unwinder unlike this one, pointer authentication codes), the kernel's
 * stack is used as is and nothing is cached: slower, never wrong.
 * Mapping changes within one address space (dlopen, munmap) after a stack was cached are not
 * seen; an exec gets a new mm.
 */
#define USER_FP_WALK_SPAN (64ULL << 20)

/*
 * A 32-bit thread of a 64-bit kernel (x86-64's compat mode, arm64's AArch32), whose frames are
 * not the 64-bit {next frame, return address} pair: on x86-64 the same pair of 32-bit words
 * (perf_callchain_user32()); on arm64 another layout (compat_user_backtrace()), and its frame
 * pointer is r11, not x29. user_fp_walk() reads each as the kernel does (it read 64-bit
 * frames, which stopped at the leaf or disagreed with the kernel's walk, whose build IDs every
 * fault then read: 1021 irq_work interrupts for page_touch32's 1000 faults in the x86_64 VM
 * test, now 17; on arm64, where a walk from x29 kept the leaf alone, the kernel's walk took
 * every fault, ~1030).
 */
#if defined(__TARGET_ARCH_x86)
#define X86_USER_CS_64 0x33 /* __USER_CS: GDT_ENTRY_DEFAULT_USER_CS * 8 + 3 */

static __always_inline bool user_regs_compat(struct pt_regs *regs)
{
	return (__u16)BPF_CORE_READ(regs, cs) != X86_USER_CS_64;
}
#else
#define ARM64_PSR_MODE32_BIT 0x10 /* pstate of an AArch32 task */

static __always_inline bool user_regs_compat(struct pt_regs *regs)
{
	return BPF_CORE_READ(regs, pstate) & ARM64_PSR_MODE32_BIT;
}
#endif

/*
 * Whether the kernel's own walk of this thread's user stack is known to give what
 * user_fp_walk() gives, so that comparing them only costs time (a second unwind through the
 * perf callchain code, ~100-200 ns a new stack on the benchmark VM). On x86-64, for a thread
 * in 64-bit mode (its saved cs is __USER_CS): perf_callchain_user() reads the same {next frame,
 * return address} pairs from the same rbp, and the caller cuts its walk to this one's depth.
 * (One difference is accepted: a frame that returns into a pending uretprobe's trampoline,
 * which get_perf_callchain() replaces by the real return address since 6.12, stays the
 * trampoline's address here, a frame in [uprobes].) A 32-bit thread's walk (its own frame
 * layout) and arm64's (the kernel strips pointer authentication codes from return addresses):
 * compared.
 */
#if defined(__TARGET_ARCH_x86)
static __always_inline bool kernel_walk_is_same(struct pt_regs *regs)
{
	return regs && !user_regs_compat(regs);
}
#else
static __always_inline bool kernel_walk_is_same(struct pt_regs *regs)
{
	return false;
}
#endif

/*
 * The frame at fp of a thread's user stack: *ret its return address, *next_fp the caller's frame
 * pointer; false when it cannot be read. A 64-bit thread's frame is {next frame, return
 * address} at fp; a 32-bit thread's on x86-64 the same in two 32-bit words (struct
 * stack_frame_ia32, perf_callchain_user32()), on arm64 the APCS frame tail {fp, sp, lr} just
 * below fp (struct compat_frame_tail, compat_user_backtrace()).
 */
static __always_inline bool user_frame_at(__u64 fp, bool compat, __u64 *next_fp, __u64 *ret)
{
	struct {
		__u64 next_fp;
		__u64 ret;
	} frame;
#if defined(__TARGET_ARCH_arm64)
	struct {
		__u32 fp;
		__u32 sp;
		__u32 lr;
	} tail;

	if (compat) {
		if (bpf_probe_read_user(&tail, sizeof(tail), (void *)(fp - sizeof(tail))))
			return false;
		*next_fp = tail.fp;
		*ret = tail.lr;
		return true;
	}
#endif
	if (bpf_probe_read_user(&frame, compat ? 8 : sizeof(frame), (void *)fp))
		return false;
	if (compat) { /* x86-64: two 32-bit words */
		frame.ret = frame.next_fp >> 32;
		frame.next_fp = (__u32)frame.next_fp;
	}
	*next_fp = frame.next_fp;
	*ret = frame.ret;
	return true;
}

/*
 * Walk the current thread's user stack by its frame pointers into the stack scratch's walk; its
 * depth, with the hash of its addresses in walk_hash. A global function (see
 * store_user_stack()): checked once per program, where inlined each of the loop's 48 steps was
 * checked again for every state of the fault-entry code reaching it (~40 000 instructions).
 * Called only where has_task_pt_regs is set, and tests it itself: checked on its own, it would
 * otherwise load from the registers a pointer without BTF (compat.bpf.h current_user_regs()).
 */
__u32 user_fp_walk(void);

#ifdef MMSCOPE_DEFINE_STATE
/* One step of user_fp_walk(), to frame i + 1; nonzero: the walk ends. Its state is in the
 * scratch (map memory, which the verifier does not track from step to step). */
static long user_fp_step(__u64 i, void *data)
{
	__u32 zero = 0;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	__u64 sp, fp, next_fp, ret;
	bool compat;

	if (!sc || i + 1 >= USER_STACK_DEPTH)
		return 1;
	sp = sc->walk_sp;
	fp = sc->walk_fp;
	compat = sc->walk_compat;
	if (fp < sp || fp - sp >= USER_FP_WALK_SPAN || (fp & (compat ? 3 : 7)))
		return 1;
	if (!user_frame_at(fp, compat, &next_fp, &ret))
		return 1;
	sc->walk[i + 1] = ret;
	sc->walk_hash = (sc->walk_hash ^ ret) * FNV_PRIME;
	sc->nwalk = i + 2;
	if (next_fp <= fp)
		return 1;
	sc->walk_fp = next_fp;
	return 0;
}

__noinline __u32 user_fp_walk(void)
{
	__u32 zero = 0;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct pt_regs *regs;
	bool compat;

	if (!has_task_pt_regs || !sc)
		return 0;
	regs = current_user_regs();
	if (!regs)
		return 0;
	compat = user_regs_compat(regs);
	/* bpf_task_pt_regs() gives a BTF pointer: direct loads, no probe reads. */
	sc->walk[0] = PT_REGS_IP(regs);
	sc->walk_sp = PT_REGS_SP(regs);
	sc->walk_fp = PT_REGS_FP(regs);
#if defined(__TARGET_ARCH_arm64)
	if (compat) { /* AArch32: r13 and r11 (compat_sp, compat_fp) */
		sc->walk_sp = regs->regs[13];
		sc->walk_fp = regs->regs[11];
	}
#endif
	sc->walk_compat = compat;
	sc->walk_hash = (FNV_BASIS ^ sc->walk[0]) * FNV_PRIME;
	sc->nwalk = 1;
	loop_steps(USER_STACK_DEPTH - 1, USER_STACK_DEPTH - 1, user_fp_step, NULL);
	return sc->nwalk;
}

/* Whether the kernel's raw walk in kwalk (len bytes, from bpf_get_stack()) begins with the n
 * addresses of walk (nwalk). A global function, as user_fp_walk(). */
struct walk_cmp {
	struct stack_scratch *sc;
	__u64 kn; /* frames of the kernel's walk */
	__u64 agree;
};

static long walk_cmp_frame(__u64 i, void *data)
{
	struct walk_cmp *c = data;

	if (i >= USER_STACK_DEPTH)
		return 1;
	if (i >= c->kn || c->sc->kwalk[i] != c->sc->walk[i]) {
		c->agree = 0;
		return 1;
	}
	return 0;
}

__noinline int kernel_walk_agrees(long len)
{
	__u32 zero = 0, n;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct walk_cmp c = {.sc = sc, .agree = 1};

	if (!sc)
		return 0;
	n = depth_read_back(&sc->nwalk, USER_STACK_DEPTH);
	c.kn = len > 0 ? (__u32)len / sizeof(__u64) : 0;
	loop_steps(n, USER_STACK_DEPTH, walk_cmp_frame, &c);
	return c.agree ? 1 : 0;
}

/* The n frames of walk (nwalk) as raw addresses of the image exec'ed at time image (see
 * capture_user_stack()), stored; its id, 0 when lost. A global function, as user_fp_walk(). */
struct image_frames {
	struct stack_scratch *sc;
	__u64 image;
};

static long image_frame(__u64 i, void *data)
{
	struct image_frames *c = data;
	struct user_frame *f;

	if (i >= USER_STACK_DEPTH)
		return 1;
	f = &c->sc->u.f[i];
	__builtin_memset(f, 0, sizeof(*f));
	f->status = LOC_MMAP_RECORDS;
	__builtin_memcpy(f->build_id, &c->image, sizeof(c->image));
	f->offset_or_ip = c->sc->walk[i];
	return 0;
}

__noinline __u64 store_image_stack(__u64 image)
{
	__u32 zero = 0, n;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct image_frames c = {.sc = sc, .image = image};

	if (!sc)
		return 0;
	n = depth_read_back(&sc->nwalk, USER_STACK_DEPTH);
	loop_steps(n, USER_STACK_DEPTH, image_frame, &c);
	return store_user_stack(depth_read_back(&sc->nwalk, USER_STACK_DEPTH));
}
#else
int kernel_walk_agrees(long len);
__u64 store_image_stack(__u64 image);
#endif

/* Remember key's stack id in its slot (NULL: not this time). */
static __always_inline void ustack_slot_set(struct ustack_slot *slot,
					    const struct ustack_cache_key *key, __u64 id)
{
	if (!slot || slot->busy)
		return;
	slot->busy = 1;
	barrier();
	slot->key = *key;
	slot->id = id;
	barrier();
	slot->busy = 0;
}

/* The stack id cached for key, 0 if none; *slot the slot to remember it in (NULL: not now). */
static __always_inline __u64 ustack_slot_get(const struct ustack_cache_key *key,
					     struct ustack_slot **slot)
{
	__u32 idx = cache_slot(key->walk_hash ^ ((__u64)key->tgid << 32), USTACK_CACHE_BITS);
	struct ustack_slot *s = bpf_map_lookup_elem(&ustack_cache, &idx);
	__u64 id;

	*slot = NULL;
	if (!s || s->busy)
		return 0; /* interrupted its owner: leave it alone */
	s->busy = 1;
	barrier();
	id = s->id && key_words_eq(&s->key, key, sizeof(*key)) ? s->id : 0;
	barrier();
	s->busy = 0;
	*slot = s;
	return id;
}

/* The DWARF walk passes callbacks (bpf_loop(), bpf_find_vma()): not in the object built without
 * them (compat.bpf.h MMSCOPE_CALLBACKS), whose kernels lack bpf_find_vma() anyway. */
#if MMSCOPE_CALLBACKS
#include "unwind_walk.bpf.h"

/*
 * The DWARF walk (bpf/unwind_walk.bpf.h) writes the frames as it goes, as (build ID, offset)
 * where the file's table is loaded and as raw addresses elsewhere: no kernel walk to compare
 * with, no build-ID reads. Its addresses key the same cache as the frame-pointer walk's.
 */
static __always_inline __u64 capture_user_stack_dwarf(void *ctx, struct stack_scratch *sc,
						      __u32 tgid)
{
	struct ustack_cache_key key = {.tgid = tgid};
	struct ustack_slot *slot;
	__u64 id;
	__u32 n;

	key.mm = current_mm();
	sc->nwalk = unwind_user_stack(tgid, image_in_mmap_records(tgid, key.mm));
	n = *(volatile __u32 *)&sc->nwalk;
	if (n == 0 || n > USER_STACK_DEPTH)
		return kernel_user_stack(ctx, sc);
	key.walk_hash = sc->uw.hash;
	key.depth = n;
	id = ustack_slot_get(&key, &slot);
	if (id)
		return id;
	id = store_user_stack(depth_read_back(&sc->nwalk, USER_STACK_DEPTH));
	if (id)
		ustack_slot_set(slot, &key, id);
	return id;
}
#endif

static __always_inline __u64 capture_user_stack(void *ctx, struct stack_scratch *sc, __u32 tgid)
{
	struct ustack_cache_key key = {.tgid = tgid};
	struct ustack_slot *slot;
	__u64 image, id, size;
	__u32 n;
	long len;

	/* No bpf_task_pt_regs() (compat.bpf.h has_task_pt_regs): the walks below read the
	 * registers with direct loads; the kernel's capture every time instead. */
	if (!has_task_pt_regs)
		return kernel_user_stack(ctx, sc);
#if MMSCOPE_CALLBACKS
	/* A 32-bit thread's code has other tables (not loaded): its frame pointers, below. */
	if (unwind_dwarf) {
		struct pt_regs *regs = current_user_regs();

		if (regs && !user_regs_compat(regs))
			return capture_user_stack_dwarf(ctx, sc, tgid);
	}
#endif
	/* The depth goes through map memory, which the verifier does not track: as the walk's
	 * return value it is a different constant on each of the walk's exits, and everything
	 * below would be verified once per depth (380 000 instructions instead of a few
	 * thousand, ~150 ms of load time per program). */
	sc->nwalk = user_fp_walk();
	n = *(volatile __u32 *)&sc->nwalk;
	if (n == 0 || n > USER_STACK_DEPTH)
		return kernel_user_stack(ctx, sc);
	key.walk_hash = sc->walk_hash;
	key.depth = n;
	key.mm = current_mm();
	id = ustack_slot_get(&key, &slot);
	if (id)
		return id;
	/*
	 * Once per distinct stack: compare with the kernel's walk, then the build IDs. Both of
	 * the kernel's walks are cut to this walk's depth by their buffer's size (its walker
	 * stops when the buffer is full): past this walk's end it follows frame pointers out of
	 * the stack, and every read of an unmapped address is a nested page fault fixed up
	 * (~2500 on a 50-exec loop, whose new processes start with no frame pointer: ~1.8 us a
	 * new stack). Frame 0, the saved instruction pointer, is the same in every walk. Not
	 * where the kernel's walk is known to be this one (kernel_walk_is_same()).
	 */
	if (n > 1 && !kernel_walk_is_same(current_user_regs())) {
		len = bpf_get_stack(ctx, sc->kwalk, n * sizeof(__u64), BPF_F_USER_STACK);
		if (!kernel_walk_agrees(len))
			return kernel_user_stack(ctx, sc);
		n = depth_read_back(&sc->nwalk, USER_STACK_DEPTH);
	}
	/* An image whose mappings userspace has from the kernel's mmap records: raw addresses,
	 * no build-ID reads (user/core/mmap_log.c), the image's exec time in the build ID's place.
	 */
	image = image_in_mmap_records(tgid, key.mm);
	if (image) {
		id = store_image_stack(image);
		if (id)
			ustack_slot_set(slot, &key, id);
		return id;
	}
	/* The size is bounded where it is used: with the calls above, clang keeps n spilled
	 * from before depth_read_back()'s test, and 6.1's verifier does not carry that test to
	 * the spilled copy ("R3 unbounded memory access" at this call). */
	size = n * sizeof(struct user_frame);
	barrier_var(size);
	if (size > sizeof(sc->u.f))
		return 0;
	len = bpf_get_stack(ctx, sc->u.f, size, BPF_F_USER_STACK | BPF_F_USER_BUILD_ID);
	if (len <= 0)
		return 0;
	if ((__u32)len / sizeof(struct user_frame) < n)
		n = (__u32)len / sizeof(struct user_frame);
	id = store_user_stack(n);
	if (id)
		ustack_slot_set(slot, &key, id);
	return id;
}
#else
/* powerpc: no kernel BTF on Debian's ppc64le kernels, so no bpf_task_pt_regs(), and its
 * ABI's back chain is walked differently: the kernel's capture every time. */
static __always_inline __u64 capture_user_stack(void *ctx, struct stack_scratch *sc, __u32 tgid)
{
	return kernel_user_stack(ctx, sc);
}
#endif

/* The user stack of an event where there is none to walk, one frame saying why: LOC_EXEC_LOAD
 * (in execve() while it loads the new image), LOC_EXITING (in exit() after its mm is gone). */
static __always_inline __u64 marker_user_stack(struct stack_scratch *sc, __u32 status)
{
	__builtin_memset(&sc->u.f[0], 0, sizeof(sc->u.f[0]));
	sc->u.f[0].status = status;
	return store_user_stack(1);
}

/*
 * Capture the current kernel and user stacks into the stack maps; *kid and *uid get their
 * content hashes (0: not captured, counted as lost; a kernel stack may also be empty, below).
 * A user-mode fault's kernel stack is the exception entry up to the hook, the same for every
 * fault of one kind (data or instruction) on one CPU: with user_fault set it is unwound once
 * per CPU and kind, which saves a kernel unwind (~2 us on the benchmark VM) per fault.
 * Where the hook is the perf software page-fault event (arm64, powerpc), a user-mode fault's
 * program gets the user's registers, and the kernel's walk from them is empty (0 frames, not
 * an error: get_perf_callchain() walks the kernel only from kernel registers): that fault has
 * no kernel frames, as in perf's own samples of the event, and nothing was lost (every user
 * fault there counted as a lost stack before). Likewise a kernel thread has no user stack, and
 * a thread in exit() after its mm is gone gets the one frame LOC_EXITING (it counted as a lost
 * stack: its exit_mmap() invalidations, the ones `tlb --folded` saw in every process).
 */
static __always_inline void capture_stacks_of(void *ctx, bool user_fault, bool exec, __u64 *kid,
					      __u64 *uid)
{
	__u32 zero = 0, kind = exec;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	__u64 *entry = NULL;
	enum no_mm_kind no_mm;
	long klen = 0;

	*kid = *uid = 0;
	if (!sc)
		return;
	if (user_fault)
		entry = bpf_map_lookup_elem(&user_fault_kstack, &kind);
	if (entry && *entry) {
		*kid = *entry == USER_FAULT_NO_KSTACK ? 0 : *entry;
	} else {
		klen = bpf_get_stack(ctx, sc->k.ip, sizeof(sc->k.ip), 0);
		*kid = store_kernel_stack(klen);
		if (entry && (*kid || klen == 0))
			*entry = *kid ? *kid : USER_FAULT_NO_KSTACK;
	}
	/* A kernel thread (MM_KTHREAD) has no user stack at all: its kernel frames alone, as
	 * perf shows them. */
	no_mm = current_no_mm();
	if (no_mm == MM_EXITED)
		*uid = marker_user_stack(sc, LOC_EXITING);
	else if (no_mm == MM_PRESENT && current_in_exec_load())
		*uid = marker_user_stack(sc, LOC_EXEC_LOAD);
	else if (no_mm == MM_PRESENT)
		*uid = capture_user_stack(ctx, sc, bpf_get_current_pid_tgid() >> 32);
	if ((!*kid && klen != 0) || (!*uid && no_mm != MM_KTHREAD))
		count_lost(CNT_LOST_STACK);
}

/* Per CPU: the events left until the next one whose stacks are taken (stack_sampled()). */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} stack_countdown SEC(".maps");

/*
 * Whether the current event's stacks are to be taken (--sample N): the walk and the capture
 * are most of what a stack-collecting run costs per event, and every table counts each event
 * whether or not its stack is taken. Without --sample, every event. Else one event in N on
 * average, per CPU: a countdown, restarted after each event taken at a length drawn uniformly
 * from 1 to 2N - 1 (mean N), so that userspace weighs each stack taken as N events. A fixed
 * period would alias with a workload's own period (a loop alternating a read and a write
 * fault, sampled every 2nd event, would show only one of them); the draw costs a helper call
 * per event taken only. The first event on each CPU is taken. A program interrupting another
 * on this CPU may lose or repeat one step of the count: the mean stays N.
 */
static __always_inline bool stack_sampled(void)
{
	__u32 zero = 0, *left;

	if (stack_sample_every <= 1)
		return true;
	left = bpf_map_lookup_elem(&stack_countdown, &zero);
	if (!left)
		return false;
	if (*left > 1) {
		(*left)--;
		return false;
	}
	*left = 1 + bpf_get_prandom_u32() % (2 * stack_sample_every - 1);
	count_inc(CNT_STACK_SAMPLES);
	return true;
}

static __always_inline void capture_stacks(void *ctx, __u64 *kid, __u64 *uid)
{
	capture_stacks_of(ctx, false, false, kid, uid);
}

static __always_inline void hist_bump(__u64 *slots, __u64 value)
{
	__u32 slot = mmscope_hist_slot(value);

	if (slot < MMSCOPE_HIST_SLOTS)
		slots[slot]++;
}

/*
 * Insert init under key, for a counter that was not in the map. Another CPU may have created
 * it in between: then its entry, for the caller to add to. NULL when init went in, or when the
 * map is full (the events init counts are added to lost_counter).
 */
static __always_inline void *map_insert_or_get(void *map, const void *key, const void *init,
					       int lost_counter, __u64 events)
{
	void *v;

	if (bpf_map_update_elem(map, key, init, BPF_NOEXIST) == 0)
		return NULL;
	v = bpf_map_lookup_elem(map, key); /* lost a race with another CPU creating it */
	if (!v)
		count_lost_n(lost_counter, events);
	return v;
}

/* Add to a u64 value in a hash map, creating it; count a loss when the map is full. */
static __always_inline void hash_add(void *map, const void *key, __u64 n, int lost_counter)
{
	__u64 *v = bpf_map_lookup_elem(map, key);

	if (!v) {
		v = map_insert_or_get(map, key, &n, lost_counter, n);
		if (!v)
			return;
	}
	__sync_fetch_and_add(v, n);
}

/* ---- per-process tables (struct proc_slot in mmscope.h) ---- */

/* Faults by process (faults' table, serve's labels). */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct proc_faults);
} procs SEC(".maps");

/* Invalidations issued, by process and reason slot. */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct tlb_proc);
} tlb_procs SEC(".maps");

/* Context switches by process (of the traced side). */
STATE_DECL struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct switch_proc);
} switch_procs SEC(".maps");

/* A process row as the tables have it: the comm, then the counters. */
struct proc_row_value {
	char comm[MMSCOPE_COMM_LEN];
	__u64 n[PROC_SLOT_COUNTERS];
};

/* Copy task t's comm (NULL: the current task's) to comm. */
static __always_inline void proc_comm_of(char *comm, struct task_struct *t)
{
	if (t)
		bpf_probe_read_kernel_str(comm, MMSCOPE_COMM_LEN, t->comm);
	else
		bpf_get_current_comm(comm, MMSCOPE_COMM_LEN);
}

/*
 * tgid's row in rows. With create set, it is made if missing, and its comm is t's (NULL: the
 * current task's) as of now: a process renamed since (PR_SET_NAME) or exec'ed (also done at
 * the exec, proc_exec_comm()) shows its new name; rows are looked up when a process takes its
 * per-CPU slot, or at every event when the rows are read live (serve). NULL, with lost_counter
 * counted, when the table is full; NULL too when it is not there and create is not set.
 */
static __always_inline __u64 *proc_row(void *rows, __u32 tgid, struct task_struct *t, bool create,
				       int lost_counter)
{
	struct proc_row_value *row = bpf_map_lookup_elem(rows, &tgid), init = {};

	if (row && create)
		proc_comm_of(row->comm, t);
	if (row || !create)
		return row ? row->n : NULL;
	proc_comm_of(init.comm, t);
	bpf_map_update_elem(rows, &tgid, &init, BPF_NOEXIST);
	row = bpf_map_lookup_elem(rows, &tgid);
	if (!row) {
		count_lost(lost_counter);
		return NULL;
	}
	return row->n;
}

/*
 * The remainder row of a table (key PROC_OTHER_TGID), which userspace puts in before the
 * programs run where it shows one ([other]): a process the table has no row for counts there,
 * so the rows add up to the totals. NULL where there is none.
 */
static __always_inline __u64 *proc_other_row(void *rows)
{
	__u32 other = PROC_OTHER_TGID;
	struct proc_row_value *row = bpf_map_lookup_elem(rows, &other);

	if (!row)
		return NULL;
	/* Else the compiler offsets the pointer before its test, which the verifier refuses. */
	barrier_var(row);
	return row->n;
}

/* Add what a slot holds to its process's row and empty it. Rows are not deleted while their
 * counts can pend (serve, which deletes the rows of processes gone, counts into them live). */
static __always_inline void proc_slot_flush(void *rows, struct proc_slot *slot, __u32 ncounters)
{
	struct proc_row_value *row;

	if (!slot->valid)
		return;
	slot->valid = 0;
	/* A row userspace deleted (a process gone, its row folded: user/core/proc_table.c) while
	 * counts pended for it: they go to the remainder. */
	row = bpf_map_lookup_elem(rows, &slot->tgid);
	if (!row) {
		__u32 other = PROC_OTHER_TGID;

		row = bpf_map_lookup_elem(rows, &other);
	}
	if (row) {
		for (__u32 i = 0; i < ncounters && i < PROC_SLOT_COUNTERS; i++)
			if (slot->n[i])
				__sync_fetch_and_add(&row->n[i], slot->n[i]);
	}
	for (__u32 i = 0; i < ncounters && i < PROC_SLOT_COUNTERS; i++)
		slot->n[i] = 0;
}

/*
 * Where to count an event of process tgid in a per-process table (rows, ncounters counters;
 * slots: its per-CPU proc_slot array): this CPU's slot for tgid, where counts are plain adds
 * (*atomic false), or, when the rows are read live (serve), the row itself (*atomic true).
 * A process new to its slot has its row looked up (created when create is set; see proc_row())
 * and takes the slot from the process before it, whose counts go to their row. A CPU runs a
 * few processes at a time: the row's lookup (a hash and a bucket walk) and atomic adds, most
 * of a counting program's time, are paid when a slot changes hands, not per event.
 */
static __always_inline __u64 *proc_counters(void *rows, void *slots, __u32 ncounters, __u32 tgid,
					    struct task_struct *t, bool create, int lost_counter,
					    bool *atomic)
{
	__u32 idx = cache_slot(tgid, PROC_SLOT_BITS);
	struct proc_slot *slot = NULL;
	__u64 *row;

	*atomic = false;
	if (procs_pending) {
		slot = bpf_map_lookup_elem(slots, &idx);
		if (slot && slot->valid && slot->tgid == tgid)
			return slot->n;
	}
	row = proc_row(rows, tgid, t, create, lost_counter);
	if (!row) {
		*atomic = true;
		return proc_other_row(rows);
	}
	if (!slot) {
		*atomic = true;
		return row;
	}
	proc_slot_flush(rows, slot, ncounters);
	slot->tgid = tgid;
	slot->valid = 1;
	return slot->n;
}

static __always_inline void proc_row_comm(void *rows, __u32 tgid)
{
	struct proc_row_value *row = bpf_map_lookup_elem(rows, &tgid);

	if (row)
		bpf_get_current_comm(row->comm, sizeof(row->comm));
}

/* The current process exec'ed: its rows show the new image's name from now on. */
static __always_inline void proc_exec_comm(__u32 tgid)
{
	if (collect_procs)
		proc_row_comm(&procs, tgid);
	if (collect_tlb_detail)
		proc_row_comm(&tlb_procs, tgid);
	if (collect_switch_procs)
		proc_row_comm(&switch_procs, tgid);
}

/* Add one to counter i of what proc_counters() returned. */
static __always_inline void proc_counter_inc(__u64 *counters, __u32 i, bool atomic)
{
	if (i >= PROC_SLOT_COUNTERS)
		return;
	if (atomic)
		__sync_fetch_and_add(&counters[i], 1);
	else
		counters[i]++;
}

/* Counts of a folded stack to userspace (a REC_FOLDED record); lost, counted, if the ring is
 * full. */
static __always_inline void folded_send(const struct folded_key *key, __u64 count, __u64 latency_ns)
{
	struct folded_record *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);

	if (!r) {
		count_lost_n(CNT_LOST_FOLDED, count);
		return;
	}
	r->type = REC_FOLDED;
	r->pad = 0;
	r->key = *key;
	r->v.count = count;
	r->v.latency_ns = latency_ns;
	bpf_ringbuf_submit(r, lazy_wakeup());
}

/*
 * One event on a folded stack, with its latency (0: none), in this CPU's slot for it. A CPU
 * takes a loop's events in a row from one stack, and a process's stacks of the moment fit
 * the slots. A BPF hash of folded records cost a lookup of a 40-byte key per event and a
 * cold insert per new record (~350 ns an event on an exec loop, where most are new).
 */
static __always_inline void folded_add(const struct folded_key *key, __u64 latency_ns)
{
	__u32 idx = cache_slot(key->user_stack ^ (key->kernel_stack >> 1) ^
				       ((__u64)key->tgid << 32) ^ key->kind,
			       FOLDED_CACHE_BITS);
	struct folded_slot *slot = bpf_map_lookup_elem(&folded_cache, &idx);

	if (!slot || slot->busy) {
		folded_send(key, 1, latency_ns);
		return;
	}
	slot->busy = 1;
	barrier();
	if (slot->v.count && key_words_eq(&slot->key, key, sizeof(*key))) {
		slot->v.count++;
		slot->v.latency_ns += latency_ns;
	} else {
		if (slot->v.count)
			folded_send(&slot->key, slot->v.count, slot->v.latency_ns);
		slot->key = *key;
		slot->v.count = 1;
		slot->v.latency_ns = latency_ns;
	}
	barrier();
	slot->busy = 0;
}

#endif
