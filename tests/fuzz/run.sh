#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run every libFuzzer target in DIR for FUZZ_SECONDS each, on its corpus in tests/fuzz/corpus/.
# New inputs go to a scratch copy, so the repository's corpus only changes by hand.
set -u
dir=${1:?usage: run.sh FUZZER_DIR}
secs=${FUZZ_SECONDS:-10}
top=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$dir"/fuzz_*; do
	[ -x "$f" ] || continue
	name=$(basename "$f")
	corpus="$top/tests/fuzz/corpus/${name#fuzz_}"
	work=$(mktemp -d)
	[ -d "$corpus" ] && cp -r "$corpus"/. "$work"/ 2>/dev/null
	if "$f" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 "$work" >"$work.log" 2>&1; then
		echo "PASS $name ($(grep -o 'Done [0-9]* runs' "$work.log" | tail -1), ${secs}s)"
	else
		echo "FAIL $name"
		grep -E 'ERROR|SUMMARY|crash-|leak' "$work.log" | head -20
		ls "$work"/../crash-* 2>/dev/null | head
	fi
	rm -rf "$work" "$work.log"
done
