#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope built with AddressSanitizer and UBSan (make asan: build/asan/mmscope) on one run of
# each subcommand, host-wide and on a command, and on the paths a run ends by: the command's
# exit, -d, SIGINT, a closed pipe. Any sanitizer report (memory error, leak, undefined
# behaviour) fails, and so does a count that differs from the workload's arithmetic (the
# sanitized build must do the same work, not merely survive).
. "$(dirname "$0")/lib.sh"

ASAN_MM=${ASAN_MMSCOPE:-$(dirname "$MMSCOPE")/asan/mmscope}
PT="$WORKLOADS/page_touch"
W=2000 R=1000
if [ ! -x "$ASAN_MM" ]; then
	fail "sanitizers: no $ASAN_MM (make asan)"
	exit 0
fi
# Leaks are errors; a report goes to stderr and exits 23 (not the command's status).
export ASAN_OPTIONS=detect_leaks=1:exitcode=23:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=24

# clean NAME RC WANT_RC ERRFILE : exit status as wanted and no sanitizer report
clean() {
	local name=$1 rc=$2 want=$3 err=$4
	if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$err"; then
		fail "sanitizers: $name: sanitizer report: $(grep -m1 -E 'ERROR:|runtime error:' "$err" | head -c 200)"
		return 1
	fi
	ok "sanitizers: $name: exit $want, no sanitizer report" "exit $rc: $(one_line "$err")" [ "$rc" -eq "$want" ]
}

# counts JSON : "write read" faults of touch_*: the user write and read counts
counts() {
	python3 -c 'import json,sys; d=json.loads([l for l in open(sys.argv[1]) if l.strip()][-1]); f=d["faults"]; print(f["write"], f["read"], f["user"] + f["kernel"] == f["minor"] + f["major"] + f["incomplete"])' "$1"
}

# ---- every subcommand on a command: counts as without the sanitizers ----
for cmd in stat faults tlb switch; do
	"$ASAN_MM" $cmd --json -o "$TMP/$cmd.json" -- "$PT" -w $W -r $R >"$TMP/$cmd.out" 2>"$TMP/$cmd.err"
	rc=$?
	clean "$cmd --json -- page_touch" $rc 0 "$TMP/$cmd.err" || continue
	[ "$cmd" = stat ] || [ "$cmd" = faults ] || continue
	line=$(tail -1 "$TMP/$cmd.out")
	ew=$(kv "$line" expected_write) er=$(kv "$line" expected_read)
	read -r w r eq < <(counts "$TMP/$cmd.json")
	# the workload's own pages, plus its start-up's few (test_page_touch.sh has the exact
	# baseline; here: at least the workload's, and within 200 of it)
	ok "sanitizers: $cmd: writes $w, reads $r for $ew + $er touched pages" "w=$w r=$r" \
		eval '[ "$w" -ge "$ew" ] && [ "$w" -le $((ew + 200)) ] && [ "$r" -ge "$er" ] && [ "$r" -le $((er + 200)) ]'
	ok "sanitizers: $cmd: user + kernel = minor + major + incomplete" "$line" [ "$eq" = True ]
done

# ---- stacks and symbols: --folded on a command ----
"$ASAN_MM" faults --folded -o "$TMP/f.folded" -- "$PT" -w $W -r 0 >/dev/null 2>"$TMP/f.err"
rc=$?
clean "faults --folded -- page_touch" $rc 0 "$TMP/f.err"
n=$(awk '/;touch_write_pages;/ && /\[write minor\]/ {s += $NF} END {print s + 0}' "$TMP/f.folded")
ok "sanitizers: --folded: $W writes under touch_write_pages" "got $n: $(one_line "$TMP/f.folded")" [ "$n" -eq $W ]

# ---- host-wide, ended by SIGINT; interval output; probes ----
"$ASAN_MM" faults -v -i 0.3 >"$TMP/h.out" 2>"$TMP/h.err" &
pid=$!
if wait_attached "$TMP/h.err" 60; then
	"$PT" -w 500 -r 0 >/dev/null
	sleep 0.5
	kill -INT $pid
	wait_exit $pid 30 || { kill -KILL $pid; rc=timeout; }
	clean "faults -i host-wide, SIGINT" "$rc" 0 "$TMP/h.err"
else
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
	fail "sanitizers: host-wide faults never attached ($(one_line "$TMP/h.err"))"
fi
"$ASAN_MM" probes --json >"$TMP/p.json" 2>"$TMP/p.err"
clean "probes --json" $? 0 "$TMP/p.err"
# a closed pipe: the run ends at its next write, quietly
"$ASAN_MM" stat -i 0.2 -d 5 2>"$TMP/pipe.err" | head -c 1 >/dev/null
clean "stat -i | head -c 1" "${PIPESTATUS[0]}" 0 "$TMP/pipe.err"
# bad input paths allocate and free too
"$ASAN_MM" faults --btf /nonexistent -- /bin/true >/dev/null 2>"$TMP/bad.err"
clean "bad --btf" $? 2 "$TMP/bad.err"
exit 0
