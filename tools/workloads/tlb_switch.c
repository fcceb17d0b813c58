/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tlb_switch - processes on one CPU taking turns at writing their own pages.
 *
 * The test from the arm64 "skip tlbi broadcast" thread: C child processes, all pinned to one
 * CPU, take turns; in its turn a child writes one byte to each of its P pages in a shuffled
 * order (a fixed-seed PRNG, so runs are comparable) and passes the turn on. Each turn is a
 * switch to another mm, and the child then walks P pages whose TLB entries the other children
 * may have evicted, or which carry another ASID: this measures what mm switches cost in TLB
 * misses and flushes, and it is the case where a kernel that knows an mm only ever ran on
 * this one CPU can invalidate locally instead of broadcasting. --two-cpu puts the even
 * children on one CPU and the odd ones on the next, so that turns alternate between two
 * CPUs.
 *
 * The turns are strict round robin: child i waits on its own POSIX semaphore and posts child
 * i+1's, all of them in one MAP_SHARED mapping (sem_init() with pshared=1). Each child maps
 * its pages with THP off and, unless --no-prefault, writes them all before the loop, so that
 * the loop itself takes no page faults. The order is shuffled once per child, during setup.
 * The parent starts the clock when every child is ready and stops it when the last child has
 * finished its last turn.
 */
#define _GNU_SOURCE
#define WL_NAME "tlb_switch"
#include <inttypes.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "wl_common.h"

#define MAX_CHILDREN 4096

struct opts {
	uint64_t children;
	uint64_t pages;
	uint64_t turns;
	uint64_t seed;
	long cpu;
	int two_cpu;
	int prefault;
	uint64_t pause_ms;
};

/* Shared by the parent and all children: a MAP_SHARED anonymous mapping made before forking. */
struct shared {
	sem_t ready;	  /* posted once by each child when set up */
	sem_t done;	  /* posted by the last child after its last turn */
	sem_t *turn;	  /* turn[i]: child i may go */
	uint64_t *cpu_ns; /* each child's CPU time in its turn loop */
};

static size_t page_size;

/* The parent's view of its children, for reaping and for killing them on failure. */
static pid_t parent_pid;
static pid_t *pids;
static uint64_t nr_pids; /* children forked so far */
static uint64_t nr_reaped;
static char *reaped; /* reaped[i]: pids[i] has been waited for */

/* The parts of --help around the option lines. */
static const struct wl_usage usage = {
	.about = "CHILDREN processes pinned to one CPU take turns, round robin, each writing its\n"
		 "PAGES pages in a shuffled order per turn, TURNS turns each; then one summary\n"
		 "line.\n",
	.notes = "Summary: tlb_switch: page_size= children= pages= turns= cpus= cpu= seed=\n"
		 "prefault= page_writes= turn_switches= loop_ns= cpu_ns=\n"
		 "cpu_ns is the children's CPU time in their turn loops.\n",
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	uint64_t cpu = 0;
	const struct wl_option options[] = {
		WL_OPT_U64("children", 'c', "C", &o->children, 1, MAX_CHILDREN,
			   "child processes (default 4)"),
		/* Page indices are 32-bit in the shuffled order. */
		WL_OPT_U64("pages", 'p', "P", &o->pages, 1, UINT32_MAX,
			   "pages per child, one byte written per page per turn\n"
			   "(default 256)"),
		WL_OPT_U64("turns", 't', "T", &o->turns, 1, UINT32_MAX,
			   "turns per child (default 1000)"),
		WL_OPT_U64("cpu", 0, "N", &cpu, 0, CPU_SETSIZE - 2,
			   "the CPU the children are pinned to (default 0)"),
		WL_OPT_FLAG("two-cpu", 0, &o->two_cpu, 1,
			    "even children on CPU N, odd ones on CPU N+1, so that\n"
			    "turns alternate between the two CPUs"),
		WL_OPT_U64("seed", 0, "S", &o->seed, 0, UINT64_MAX,
			   "seed of the page-order shuffle (default 1)"),
		WL_OPT_FLAG("no-prefault", 0, &o->prefault, 0,
			    "do not write the pages before the loop (the first turn\n"
			    "then takes one write fault per page)"),
		WL_PAUSE_OPTION(&o->pause_ms),
		WL_OPT_END,
	};

	*o = (struct opts){.children = 4, .pages = 256, .turns = 1000, .seed = 1, .prefault = 1};
	wl_parse_options(argc, argv, options, &usage);
	o->cpu = wl_usable_cpu(cpu);
	if (o->two_cpu && !wl_cpu_allowed(o->cpu + 1))
		wl_usage_error("--two-cpu needs CPU %ld too, which is not available", o->cpu + 1);
	if (o->pages > wl_max_pages(page_size))
		wl_usage_error("--pages %" PRIu64 " is too large", o->pages);
}

/* splitmix64: tiny, and any seed, 0 included, gives a good sequence. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Fisher-Yates; the modulo bias is irrelevant here. */
static void shuffle(uint32_t *order, uint64_t n, uint64_t seed)
{
	uint64_t state = seed;

	for (uint64_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j = next_random(&state) % (i + 1);
		uint32_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

static void sem_wait_retry(sem_t *s)
{
	while (sem_wait(s)) {
		if (errno != EINTR)
			wl_die("sem_wait");
	}
}

/* One turn's work: a write to each page, in this child's shuffled order. */
static WL_NOINLINE void write_pages_shuffled(char *base, const uint32_t *order, uint64_t pages,
					     char value)
{
	for (uint64_t i = 0; i < pages; i++)
		((volatile char *)base)[(size_t)order[i] * page_size] = value;
}

static WL_NOINLINE void child_turn_loop(struct shared *sh, uint64_t idx, const struct opts *o,
					char *base, const uint32_t *order)
{
	sem_t *next = &sh->turn[(idx + 1) % o->children];

	for (uint64_t t = 0; t < o->turns; t++) {
		sem_wait_retry(&sh->turn[idx]);
		write_pages_shuffled(base, order, o->pages, (char)t);
		if (sem_post(next))
			wl_die("sem_post");
	}
}

static WL_NOINLINE __attribute__((noreturn)) void run_child(struct shared *sh, uint64_t idx,
							    const struct opts *o)
{
	uint32_t *order;
	uint64_t c0;
	char *base;

	/* A child must not outlive a parent that died: it would wait for its turn forever. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL))
		wl_die("prctl(PR_SET_PDEATHSIG)");
	if (getppid() != parent_pid)
		_exit(1);
	wl_pin_cpu(o->cpu + (o->two_cpu ? (long)(idx % 2) : 0));

	base = wl_map_anon(o->pages * page_size);
	order = malloc(o->pages * sizeof(*order));
	if (!order)
		wl_die("malloc");
	shuffle(order, o->pages, o->seed + idx);
	if (o->prefault)
		write_pages_shuffled(base, order, o->pages, 1);
	if (sem_post(&sh->ready))
		wl_die("sem_post");

	c0 = wl_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	child_turn_loop(sh, idx, o, base, order);
	sh->cpu_ns[idx] = wl_now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	if (idx == o->children - 1 && sem_post(&sh->done))
		wl_die("sem_post");
	_exit(0);
}

static void kill_children(void)
{
	for (uint64_t i = 0; i < nr_pids; i++) {
		if (!reaped[i])
			kill(pids[i], SIGKILL);
	}
}

/* Account for a reaped child: a failed one ends the run, and takes the others with it. */
static void note_reaped(pid_t pid, int status)
{
	for (uint64_t i = 0; i < nr_pids; i++) {
		if (pids[i] == pid && !reaped[i]) {
			reaped[i] = 1;
			nr_reaped++;
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		kill_children();
		wl_fail("child %d failed (wait status 0x%x)", (int)pid, status);
	}
}

/*
 * Wait for a semaphore the children post, but never hang on a child that died before posting
 * (the others would wait for its turn forever): reap whatever has exited every 100 ms.
 * Children that finished normally may be reaped here too, hence the reaped[] bookkeeping.
 */
static void wait_children_sem(sem_t *s)
{
	for (;;) {
		struct timespec ts;
		int status;
		pid_t pid;

		if (clock_gettime(CLOCK_REALTIME, &ts))
			wl_die("clock_gettime");
		ts.tv_nsec += 100000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!sem_timedwait(s, &ts))
			return;
		if (errno != ETIMEDOUT && errno != EINTR)
			wl_die("sem_timedwait");
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			note_reaped(pid, status);
	}
}

int main(int argc, char **argv)
{
	uint64_t t0, loop_ns, cpu_ns = 0;
	struct shared *sh;
	struct opts o;
	size_t len;
	char *mem;

	page_size = wl_page_size();
	parse_args(argc, argv, &o);

	pids = calloc(o.children, sizeof(*pids));
	reaped = calloc(o.children, 1);
	if (!pids || !reaped)
		wl_die("calloc");
	len = sizeof(*sh) + o.children * (sizeof(sem_t) + sizeof(uint64_t));
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		wl_die("mmap of the shared semaphores");
	sh = (struct shared *)mem;
	sh->turn = (sem_t *)(mem + sizeof(*sh));
	sh->cpu_ns = (uint64_t *)(sh->turn + o.children);
	if (sem_init(&sh->ready, 1, 0) || sem_init(&sh->done, 1, 0))
		wl_die("sem_init");
	for (uint64_t i = 0; i < o.children; i++) {
		if (sem_init(&sh->turn[i], 1, 0))
			wl_die("sem_init");
	}
	parent_pid = getpid();
	fflush(NULL);

	for (uint64_t i = 0; i < o.children; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			kill_children();
			wl_die("fork");
		}
		if (pid == 0)
			run_child(sh, i, &o);
		pids[nr_pids++] = pid;
	}
	for (uint64_t i = 0; i < o.children; i++)
		wait_children_sem(&sh->ready);
	if (o.pause_ms)
		wl_sleep_ms(o.pause_ms);

	t0 = wl_now_ns(CLOCK_MONOTONIC);
	if (sem_post(&sh->turn[0]))
		wl_die("sem_post");
	wait_children_sem(&sh->done);
	loop_ns = wl_now_ns(CLOCK_MONOTONIC) - t0;

	while (nr_reaped < nr_pids) {
		int status;
		pid_t pid = waitpid(-1, &status, 0);

		if (pid < 0)
			wl_die("waitpid");
		note_reaped(pid, status);
	}
	for (uint64_t i = 0; i < o.children; i++)
		cpu_ns += sh->cpu_ns[i];

	printf("tlb_switch: page_size=%zu children=%" PRIu64 " pages=%" PRIu64 " turns=%" PRIu64
	       " cpus=%d cpu=%ld seed=%" PRIu64 " prefault=%d page_writes=%" PRIu64
	       " turn_switches=%" PRIu64 " loop_ns=%" PRIu64 " cpu_ns=%" PRIu64 "\n",
	       page_size, o.children, o.pages, o.turns, o.two_cpu ? 2 : 1, o.cpu, o.seed,
	       o.prefault, o.children * o.pages * o.turns, o.children * o.turns, loop_ns, cpu_ns);
	return 0;
}
