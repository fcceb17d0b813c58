#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# docs/output.md against what mmscope prints: every command with --json on a small workload
# (and with -i, -p, -t, -c, -C, --svg, --sample, which add keys), and a scrape of serve (with
# --labels comm and cgroup); every JSON key and every metric and label must be listed there
# (tests/live/docs_output.py says which key of which run is not).
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
doc=$top/docs/output.md
check=$top/tests/live/docs_output.py
W=$WORKLOADS

# run LABEL MMSCOPE-ARGS... : mmscope ARGS -o FILE, then the keys of FILE against the doc
n=0
run() {
	local label=$1 out
	shift
	n=$((n + 1))
	out=$TMP/run$n.json
	"$MMSCOPE" "$@" >"$TMP/run$n.stdout" 2>"$TMP/run$n.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "docs_output $label (mmscope exited $rc: $(one_line "$TMP/run$n.err"))"
		return
	fi
	[ -s "$out" ] || cp "$TMP/run$n.stdout" "$out"
	python3 "$check" "$doc" json "$label" "$out"
}
j() { echo "$TMP/run$((n + 1)).json"; }

run "stat --json -- page_touch" stat --json -o "$(j)" -- "$W/page_touch" -w 200 -r 100 -x 10 -k 10
run "stat --json -i -C 0 (whole host)" stat --json -i 0.1 -d 0.35 -C 0 -o "$(j)"
run "faults --json -- page_touch" faults --json -o "$(j)" -- "$W/page_touch" -w 200 -r 100 -x 10 -k 10
run "faults --json --svg -- cow_fork" faults --json --svg "$TMP/f.svg" -o "$(j)" -- "$W/cow_fork"
run "faults --json --svg --sample 4 -- page_touch" faults --json --svg "$TMP/fs.svg" --sample 4 -o "$(j)" -- "$W/page_touch" -w 2000
run "faults --json -i -- fault_anatomy" faults --json -i 0.05 -o "$(j)" -- "$W/fault_anatomy"
run "tlb --json --svg -- mprotect_toggle" tlb --json --svg "$TMP/t.svg" -o "$(j)" -- "$W/mprotect_toggle" -i 100
run "switch --json -- pingpong" switch --json -o "$(j)" -- "$W/pingpong" -r 200

sleep 30 &
sleeper=$!
run "faults --json -p PID -d" faults --json -p "$sleeper" -d 0.3 -o "$(j)"
run "switch --json -t TID -d" switch --json -t "$sleeper" -d 0.3 -o "$(j)"
kill "$sleeper" 2>/dev/null
wait "$sleeper" 2>/dev/null
cg2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
if [ -n "$cg2" ]; then
	run "tlb --json -c CGROUP -d" tlb --json -c "$cg2" -d 0.3 -o "$(j)"
else
	skip "docs_output tlb --json -c (no cgroup v2 hierarchy)"
fi

n=$((n + 1))
if "$MMSCOPE" probes --json >"$TMP/run$n.json" 2>"$TMP/run$n.err"; then
	python3 "$check" "$doc" json "probes --json" "$TMP/run$n.json"
else
	fail "docs_output probes --json (exit $?: $(one_line "$TMP/run$n.err"))"
fi

# serve: one scrape with each kind of --labels, while a workload runs.
for labels in comm cgroup; do
	err=$TMP/serve-$labels.err
	"$MMSCOPE" serve --listen 127.0.0.1:0 --labels "$labels" -d 20 2>"$err" &
	pid=$!
	if ! wait_for 15 grep -qs 'serving http://' "$err"; then
		fail "docs_output serve --labels $labels (no 'serving' line: $(one_line "$err"))"
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		continue
	fi
	url=$(grep -o 'http://[^ ]*/metrics' "$err" | head -1)
	"$W/page_touch" -w 100 >/dev/null
	if curl -sf -o "$TMP/metrics-$labels.txt" "$url"; then
		python3 "$check" "$doc" metrics "serve --labels $labels (/metrics)" "$TMP/metrics-$labels.txt"
	else
		fail "docs_output serve --labels $labels (curl $url failed)"
	fi
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
done
