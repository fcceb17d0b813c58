#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Reliability under overload: many threads and processes faulting in parallel, more
# processes than the per-process map holds (8192), more distinct stacks than the stack and
# folded maps hold. The in-kernel aggregates must lose nothing; whatever a full map drops
# must be counted, in JSON "lost" and in a warning on stderr, never silently.
#
# Oracles: perf stat's page-faults, counting the same execution (mmscope traces perf, which
# counts its command: the perf process's own row is left out of the comparison), the
# workloads' arithmetic, and mmscope's own identities: every fault is either in a by_process
# row or in [other] (lost.processes: those the map had no room for); every fault is either in
# the folded output or counted as lost in the folded map (its [other] line).
. "$(dirname "$0")/lib.sh" || exit 1
: "${TMP:?lib.sh sets TMP}"
# The system's python3 (lib.sh's json_get): a pyenv shim first in PATH takes ~1 s a call here.
[ -x /usr/bin/python3 ] && PATH=/usr/bin:$PATH

PT="$WORKLOADS/page_touch"
MMPID=''
cleanup() {
	[ -n "$MMPID" ] && kill -KILL "$MMPID" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# lost_warned FILE WORDS : the number of a "mmscope: warning: lost N: ...WORDS..." line, or 0
lost_warned() { sed -n "s/^mmscope: warning: lost \([0-9]*\): .*$2.*/\1/p" "$1" | head -1 | grep . || echo 0; }

# The workloads, built here with frame pointers (as the Makefile builds tools/workloads).
CC="gcc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -fno-ipa-icf"
cat >"$TMP/threads.c" <<'EOF'
/* T threads, each writing W fresh anonymous pages of its own, all at once. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
static long w, ps;
static pthread_barrier_t go;
static void *run(void *arg)
{
	char *p = mmap(NULL, w * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	if (p == MAP_FAILED)
		exit(1);
	madvise(p, w * ps, MADV_NOHUGEPAGE);
	pthread_barrier_wait(&go);
	for (long i = 0; i < w; i++)
		p[i * ps] = 1;
	return NULL;
}
int main(int argc, char **argv)
{
	int t = argc > 1 ? atoi(argv[1]) : 8;
	pthread_t th[256];

	w = argc > 2 ? atol(argv[2]) : 10000;
	ps = sysconf(_SC_PAGESIZE);
	if (t < 1 || t > 256)
		return 2;
	pthread_barrier_init(&go, NULL, (unsigned)t);
	for (int i = 0; i < t; i++)
		pthread_create(&th[i], NULL, run, NULL);
	for (int i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	printf("threads: threads=%d expected_write=%ld\n", t, t * w);
	return 0;
}
EOF
cat >"$TMP/clones.c" <<'EOF'
/* N short processes in a row (clone with CLONE_VM: a new pid each, no page-table copy),
 * each writing one fresh page: N processes that each take a fault. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
static char stack[65536] __attribute__((aligned(16)));
static int child(void *page)
{
	*(volatile char *)page = 1;
	return 0;
}
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000;

	for (int i = 0; i < n; i++) {
		char *pg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		pid_t p = clone(child, stack + sizeof(stack), CLONE_VM | SIGCHLD, pg);

		if (p < 0)
			return 1;
		waitpid(p, NULL, 0);
		munmap(pg, 4096);
	}
	printf("clones: processes=%d\n", n);
	return 0;
}
EOF
cat >"$TMP/stacks.c" <<'EOF'
/* 2^D leaf calls, each through its own call path (at every level one of two functions,
 * chosen by a bit of the index), each writing a fresh page: 2^D faults, 2^D distinct
 * user stacks. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
static char *mem;
static long next_page;
static volatile int sink;
static void __attribute__((noinline)) leaf(void)
{
	mem[next_page++ * 4096] = 1;
}
static void __attribute__((noinline)) level_b(int d, unsigned long bits);
static void __attribute__((noinline)) level_a(int d, unsigned long bits)
{
	if (!d)
		leaf();
	else if (bits & 1)
		level_a(d - 1, bits >> 1);
	else
		level_b(d - 1, bits >> 1);
	sink = 1;
}
static void __attribute__((noinline)) level_b(int d, unsigned long bits)
{
	if (!d)
		leaf();
	else if (bits & 1)
		level_a(d - 1, bits >> 1);
	else
		level_b(d - 1, bits >> 1);
	sink = 2;
}
int main(int argc, char **argv)
{
	int d = argc > 1 ? atoi(argv[1]) : 15;
	unsigned long n = 1ul << d;

	mem = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	madvise(mem, n * 4096, MADV_NOHUGEPAGE);
	for (unsigned long i = 0; i < n; i++)
		level_a(d, i);
	printf("stacks: depth=%d expected_write=%lu\n", d, n);
	return 0;
}
EOF
for w in threads clones stacks; do
	if ! $CC -pthread -o "$TMP/$w" "$TMP/$w.c" 2>"$TMP/cc.err"; then
		fail "overload: cannot build the $w workload ($(one_line "$TMP/cc.err"))"
		exit 0
	fi
done

# ---- many threads and processes faulting at once: no count lost, perf stat agrees ----
# 8 threads x 4000 pages, and 4 page_touch copies (-w 3000 -r 1000) in parallel: ~48000
# faults in a few seconds on 2 CPUs.
if ! command -v perf >/dev/null; then
	skip "overload: perf stat comparison (no perf)"
else
	"$MMSCOPE" faults --json -o "$TMP/ov.json" -- perf stat -e page-faults -x, -o "$TMP/ov.csv" -- \
		sh -c "\"$TMP/threads\" 8 4000 >/dev/null & for i in 1 2 3 4; do \"$PT\" -w 3000 -r 1000 >/dev/null & done; wait" \
		2>"$TMP/ov.err"
	rc=$?
	ok "overload: exit 0" "exit $rc: $(one_line "$TMP/ov.err")" [ $rc -eq 0 ]
	read -r tot perfrow lost ident < <(python3 - "$TMP/ov.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
f = d["faults"]
perf = [r for r in f["by_process"] if r["pid"] == d["target"]["pid"]]
print(f["user"] + f["kernel"], sum(r["user"] + r["kernel"] for r in perf), sum(d["lost"].values()),
      int(f["user"] + f["kernel"] == f["minor"] + f["major"] + f["incomplete"]))
PY
	)
	ppf=$(awk -F, '$3 == "page-faults" {print $1}' "$TMP/ov.csv" 2>/dev/null)
	ok "overload: nothing lost" "lost sum ${lost:-?}" [ "${lost:-1}" -eq 0 ]
	ok "overload: user + kernel == minor + major + incomplete" "identity ${ident:-?}" [ "${ident:-0}" -eq 1 ]
	# 2%: perf counts its command from exec on, mmscope from fork (the child's few faults
	# before exec are in mmscope's sh row, not in perf's count); measured 0.02% apart.
	if [ -n "$ppf" ] && [ "$ppf" -gt 45000 ] 2>/dev/null; then
		ok "overload: user + kernel (without perf's own row) vs perf stat page-faults within 2%" \
			"mmscope $((tot - perfrow)) (total $tot - perf's $perfrow), perf $ppf" pct_within $((tot - perfrow)) "$ppf" 2
	else
		fail "overload: perf stat gave no plausible count ('$ppf': $(one_line "$TMP/ov.csv"))"
	fi
fi

# ---- more processes than the per-process map holds (8192), under -- ----
"$MMSCOPE" faults --json --top 100000 -o "$TMP/cl.json" -- "$TMP/clones" 10000 >/dev/null 2>"$TMP/cl.err"
rc=$?
ok "10000 processes (--): exit 0" "exit $rc: $(one_line "$TMP/cl.err")" [ $rc -eq 0 ]
read -r tot rowsum oth lp lt w locsum ll < <(python3 - "$TMP/cl.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
f, rows = d["faults"], d["faults"]["by_process"]
oth = sum(r["user"] + r["kernel"] for r in rows if r["pid"] is None)
print(f["user"] + f["kernel"], sum(r["user"] + r["kernel"] for r in rows), oth,
      d["lost"]["processes"], d["lost"]["tracked_processes"], f["write"],
      sum(r["count"] for r in f["top_locations"] if r["symbol"] != "[other]"), d["lost"]["locations"])
PY
)
# The map holds 8192 processes; the rows of those gone leave it twice a second (the heaviest
# 8192 kept in userspace, the rest in [other]): a process finding it full still counts, in
# [other] (and in lost.processes, said on stderr).
ok "10000 processes (--): [other] holds at least the faults of processes the map had no room for" \
	"[other] ${oth:-?}, lost.processes ${lp:-?}" [ "${oth:-0}" -ge "${lp:-1}" ]
ok "10000 processes (--): stderr warns of the per-process counts with no row of their own, with the JSON's number" \
	"stderr: $(one_line "$TMP/cl.err")" [ "$(lost_warned "$TMP/cl.err" 'per-process')" = "${lp:-x}" ]
ok "10000 processes (--): every fault is in a row or in [other] (rows == user + kernel)" \
	"rows ${rowsum:-?} vs ${tot:-?}" [ "${rowsum:-0}" -eq "${tot:--1}" ]
ok "10000 processes (--): the aggregate holds all 10000 writes" "write ${w:-?}" [ "${w:-0}" -ge 10000 ]
# 10000 address spaces: their locations pass through the per-CPU slots to userspace's table.
ok "10000 processes (--): every fault is at a location or in lost.locations" \
	"locations ${locsum:-?} + lost ${ll:-?} vs ${tot:-?}" [ $((${locsum:-0} + ${ll:-0})) -eq "${tot:--1}" ]
ok "10000 processes (--): every child was followed (nothing lost from the tracked map)" "lost.tracked_processes ${lt:-?}" \
	[ "${lt:-1}" -eq 0 ]

# ---- the same, host-wide, text output: the lost section and the warning ----
"$MMSCOPE" faults --top 3 -d 60 >"$TMP/hw.txt" 2>"$TMP/hw.err" &
MMPID=$!
if attached $MMPID; then
	"$TMP/clones" 10000 >/dev/null
	kill -INT $MMPID
	wait $MMPID
	rc=$?
	MMPID=
	n=$(awk '$1 == "processes" && p {print $2} /^lost:/ {p = 1}' "$TMP/hw.txt")
	ok "10000 processes (host-wide): exit 0" "exit $rc: $(one_line "$TMP/hw.err")" [ $rc -eq 0 ]
	ok "10000 processes (host-wide): stderr warns, with the text's number (if any)" "stderr: $(one_line "$TMP/hw.err")" \
		[ "$(lost_warned "$TMP/hw.err" 'per-process')" = "${n:-0}" ]
	ok "10000 processes (host-wide): the table says how many rows it had (top 3 of N > 3)" \
		"$(grep -m1 '^by process' "$TMP/hw.txt")" \
		eval "[ \"\$(sed -n 's/^by process (top 3 of \([0-9]*\))$/\1/p' '$TMP/hw.txt')\" -gt 3 ]"
	ok "10000 processes (host-wide): the rows below the top 3 are in an [other] line" \
		"$(sed -n '/^by process/,/^$/p' "$TMP/hw.txt" | tr '\n' '|' | cut -c1-400)" \
		eval "sed -n '/^by process/,/^\$/p' '$TMP/hw.txt' | grep -q '^ *- \[other\] '"
else
	fail "10000 processes (host-wide): mmscope never attached ($(one_line "$TMP/hw.err"))"
fi

# ---- host-wide: the summary is one snapshot ----
# Every fault of the run is in a by_process row or in lost.processes, host-wide too, where
# faults go on while mmscope reads its maps at the end: rows + lost == user + kernel, exactly.
"$MMSCOPE" faults --json -o "$TMP/hw.json" -d 1.5 2>"$TMP/hwj.err" &
MMPID=$!
attached $MMPID && "$PT" -w 20000 --repeat 3 >/dev/null
wait $MMPID
rc=$?
MMPID=
read -r tot rowsum lp < <(python3 - "$TMP/hw.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
f = d["faults"]
print(f["user"] + f["kernel"], sum(r["user"] + r["kernel"] for r in f["by_process"]), d["lost"]["processes"])
PY
)
ok "host-wide summary: exit 0" "exit $rc: $(one_line "$TMP/hwj.err")" [ $rc -eq 0 ]
ok "host-wide summary: rows (with [other]) == user + kernel (one snapshot)" \
	"rows ${rowsum:-?} (lost.processes ${lp:-?}) vs total ${tot:-?}" [ "${rowsum:-0}" -eq "${tot:--1}" ]
# Exactly: mmscope stops its programs before it reads the maps, so the totals and the rows are
# one snapshot (B13: they were read a moment apart while the programs ran, up to 0.4% apart
# here; fixed in 3636ff0).

# ---- a storm of distinct stacks ----
# stacks 15: 32768 faults in its loop in a fraction of a second, each on its own user stack
# (level_a/level_b calls, ~700 bytes), plus start-up and exit (measured 60). All 16 levels show
# with the DWARF walk (--unwind dwarf); a frame-pointer walk (--unwind fp, perf's -g) shows 15:
# leaf() sets up no frame, so the walk skips its caller, and pairs of paths fold into one line.
# Each stack goes to userspace once, through the records ring (1 MB), into a table of 2^18
# stacks (user/core/stack_table.c; its cap is the unit test's). A 16384-entry BPF stack map lost
# half of them here, a 256 KB ring a few hundred a run. Every loop fault must be on its own
# symbolized stack, or counted lost (stack) and said; every fault in the output, or counted
# lost (folded).
"$MMSCOPE" faults --folded --unwind dwarf -o "$TMP/st.folded" -- "$TMP/stacks" 15 >/dev/null 2>"$TMP/stf.err"
rc=$?
sum=$(awk '$1 != "[other]" {s += $NF} END {print s + 0}' "$TMP/st.folded" 2>/dev/null)
other=$(awk '$1 == "[other]" {print $2}' "$TMP/st.folded" 2>/dev/null)
leafsum=$(grep -E ';main;(level_[ab];){16}leaf;' "$TMP/st.folded" | awk '{s += $NF} END {print s + 0}')
lf=$(lost_warned "$TMP/stf.err" 'folded')
ls=$(lost_warned "$TMP/stf.err" 'stack')
ok "32768 distinct stacks: --folded exits 0" "exit $rc: $(one_line "$TMP/stf.err")" [ $rc -eq 0 ]
ok "32768 distinct stacks: every loop fault on its whole stack (main, 16 levels, leaf), or lost (stack or folded) and said" \
	"whole $leafsum + lost stacks $ls + lost folded $lf; stderr: $(one_line "$TMP/stf.err")" \
	[ $((leafsum + ls + lf)) -ge 32768 ]
ok "32768 distinct stacks: folded sum + lost folded records == 32768 loop faults (+ <= 200)" \
	"folded $sum + lost $lf = $((sum + lf))" [ $((sum + lf)) -ge 32768 -a $((sum + lf)) -le $((32768 + 200)) ]
ok "32768 distinct stacks: the folded [other] line holds the lost folded records (when any)" \
	"[other] ${other:-none}, lost $lf" [ "${other:-0}" -eq "$lf" ]
