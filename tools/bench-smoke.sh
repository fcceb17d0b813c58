#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Benchmark smoke test (informative only, never fails on noise): the time page_touch's fault
# loop takes on its own and under 'mmscope stat', N runs of each, interleaved so that drift in
# the machine's load hits both alike. Reports min and median of the workload's own loop_ns
# (CLOCK_MONOTONIC over the measured loop only, so mmscope's start-up and exit do not count)
# and the ratio of the minimums: the per-fault cost mmscope stat adds.
#
#   tools/bench-smoke.sh            (make bench-smoke)
#   N=9 ARGS="-w 100000 -r 100000 --repeat 3" MMSCOPE=build/mmscope tools/bench-smoke.sh
#
# Exits non-zero only when it cannot measure at all (a binary missing, a run failing).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-build}
MMSCOPE=${MMSCOPE:-$top/$OUT/mmscope}
WORKLOADS=${WORKLOADS:-$top/$OUT/workloads}
N=${N:-5}
# 120000 faults a run: ~2-4 s on the 2-CPU test VM, where a fault costs 15-30 us (100000-page
# counts took 16-25 s a run there: 4.5 minutes for the whole benchmark).
ARGS=${ARGS:--w 20000 -r 20000 --repeat 3}
PT="$WORKLOADS/page_touch"

die() {
	echo "bench-smoke: $*" >&2
	exit 1
}
[ -x "$PT" ] || die "no $PT (run make first)"
[ -x "$MMSCOPE" ] || die "no $MMSCOPE (run make first)"
[ "$(id -u)" = 0 ] || echo "bench-smoke: not root: 'mmscope stat' will likely refuse to run" >&2
case $N in '' | *[!0-9]* | 0) die "N must be a positive number" ;; esac

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# loop_ns of one run; the workload's summary line is the last line it prints on stdout
loop_ns() {
	local line
	line=$("$@" 2>>"$log" | grep '^page_touch: ' | tail -1)
	printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^loop_ns=//p'
}

echo "bench-smoke: page_touch $ARGS, $N runs each, interleaved ($(nproc) CPUs, $(uname -r))"
# One untimed run of each first: page cache, the BPF object's first load.
loop_ns "$PT" $ARGS >/dev/null
loop_ns "$MMSCOPE" stat -- "$PT" $ARGS >/dev/null
base=() traced=()
for i in $(seq "$N"); do
	b=$(loop_ns "$PT" $ARGS)
	t=$(loop_ns "$MMSCOPE" stat -- "$PT" $ARGS)
	[ -n "$b" ] || die "run $i without a tracer gave no loop_ns: $(tail -3 "$log")"
	[ -n "$t" ] || die "run $i under mmscope stat gave no loop_ns: $(tail -3 "$log")"
	base+=("$b")
	traced+=("$t")
	printf '  run %d: %12s ns alone   %12s ns under mmscope stat\n' "$i" "$b" "$t"
done

python3 - "${#base[@]}" "${base[@]}" "${traced[@]}" <<'PY'
import statistics, sys
n = int(sys.argv[1])
base = [int(v) for v in sys.argv[2:2 + n]]
traced = [int(v) for v in sys.argv[2 + n:2 + 2 * n]]
def ms(v): return "%10.2f ms" % (v / 1e6)
print("fault loop time (loop_ns)        min          median")
print("  page_touch alone          %s  %s" % (ms(min(base)), ms(statistics.median(base))))
print("  under mmscope stat        %s  %s" % (ms(min(traced)), ms(statistics.median(traced))))
ratio = min(traced) / min(base)
print("ratio of minimums (mmscope stat / alone): %.3f  (+%.1f%% per fault loop)"
      % (ratio, (ratio - 1) * 100))
print("informative only: no threshold is applied; min is the least noisy estimate on a busy host")
PY
