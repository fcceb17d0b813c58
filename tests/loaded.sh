#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The whole suite on a busy host: `stress-ng --cpu NCPU --vm 1` runs alongside tests/run.sh,
# RUNS times in a row (default 3), and each run must pass. The live tests' oracles compare what
# belongs to their own workload (its pids, its counts), or derive their tolerance from what
# else the host measurably did; this is how that is shown. Not part of `make test` (it takes
# RUNS times as long): `make test-loaded [RUNS=N] [SUITES="live vm"]`.
#   tests/loaded.sh [RUNS] [SUITE...]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-3}
shift
command -v stress-ng >/dev/null || { echo "loaded: stress-ng not installed (tools/deps.sh)" >&2; exit 2; }
stress-ng --cpu "$(nproc)" --vm 1 --timeout 0 >/dev/null 2>&1 &
load=$!
trap 'kill $load 2>/dev/null; wait $load 2>/dev/null' EXIT
sleep 1
kill -0 $load 2>/dev/null || { echo "loaded: stress-ng did not start" >&2; exit 2; }
failed=0
for ((i = 1; i <= runs; i++)); do
	s0=$(date +%s)
	"$top/tests/run.sh" "$@" >"$top/build/loaded-run-$i.log" 2>&1
	rc=$?
	summary=$(tail -1 "$top/build/loaded-run-$i.log")
	echo "loaded run $i of $runs: $summary ($(($(date +%s) - s0)) s, stress-ng --cpu $(nproc) --vm 1 alongside; build/loaded-run-$i.log)"
	grep '^FAIL' "$top/build/loaded-run-$i.log" | sed 's/^/    /'
	[ $rc -eq 0 ] || failed=$((failed + 1))
done
echo "loaded: $((runs - failed)) of $runs runs passed"
[ $failed -eq 0 ]
