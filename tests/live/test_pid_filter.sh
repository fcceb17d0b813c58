#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope faults -p PID: only that process is counted, while a much noisier neighbour runs.
#
# The target is a page_touch that pauses before its loop (stopped there while mmscope and perf
# attach), the neighbour a page_touch taking ~40000 faults per round for as long as the test
# runs. Oracles: the target's arithmetic (W writes, R reads after the pause) and perf stat -p
# on the same pid over the same window.
. "$(dirname "$0")/lib.sh"

PT="$WORKLOADS/page_touch"
W=3000 R=1000 PAUSE_MS=2000
TPID='' NPID='' MMPID='' PERFPID=''
cleanup() {
	for p in $MMPID $PERFPID $NPID $TPID; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# fds_like PID PATTERN : how many of PID's fds point at PATTERN (bpf_link, perf_event)
fds_like() { find "/proc/$1/fd" -lname "*$2*" 2>/dev/null | wc -l; }

"$PT" -w 20000 -r 20000 --repeat 100000 >/dev/null 2>&1 &
NPID=$!
# The target sleeps PAUSE_MS before its loop. As soon as it is in that sleep it is stopped
# (SIGSTOP), the tracers attach at whatever speed the host allows, then it is continued: its
# loop cannot start before both watch it, however slow the attach (no race on the pause).
"$PT" -w $W -r $R --pause-before-ms $PAUSE_MS >"$TMP/target.out" 2>&1 &
TPID=$!
TARGET=$TPID
if ! stop_in_pause $TPID; then
	# Not a verdict on mmscope: the target was not caught inside its pause.
	skip "pid filter (the target was not stopped inside its ${PAUSE_MS} ms pause: syscall '$(cut -d' ' -f1 /proc/$TPID/syscall 2>/dev/null)')"
	exit 0
fi
"$MMSCOPE" faults --json -o "$TMP/f.json" -p $TPID 2>"$TMP/err" &
MMPID=$!
perf stat -x, -e page-faults -o "$TMP/perf.csv" -p $TPID 2>"$TMP/perf.err" &
PERFPID=$!
# mmscope holds bpf_link fds once its hooks are attached, perf stat perf_event fds once its
# counters are open; 30 s at most.
attached=0
for _ in $(seq 600); do
	if [ "$(fds_like $MMPID bpf_link)" -ge 2 ] && [ "$(fds_like $PERFPID perf_event)" -ge 1 ]; then
		attached=1
		break
	fi
	sleep 0.05
done
kill -CONT $TPID
if [ $attached -eq 0 ]; then
	fail "pid filter: tracers not attached after 30 s ($(head -c 300 "$TMP/err" "$TMP/perf.err" | tr '\n' ' '))"
	exit 0
fi

# mmscope ends by itself when the target exits; 30 s is far beyond the 2 s pause + loop.
for _ in $(seq 300); do kill -0 $MMPID 2>/dev/null || break; sleep 0.1; done
if kill -0 $MMPID 2>/dev/null; then
	fail "pid filter: mmscope still running 30 s after its target exited"
	exit 0
fi
wait $MMPID
rc=$?
MMPID=
wait $PERFPID
PERFPID=
wait $TPID
TPID=
ok "pid filter: mmscope -p exits 0 when the target exits" "exit $rc: $(head -c 300 "$TMP/err" | tr '\n' ' ')" [ $rc -eq 0 ]
ok "pid filter: the neighbour was running all along" "pid $NPID" kill -0 $NPID
[ -s "$TMP/f.json" ] || { fail "pid filter: no JSON written"; exit 0; }
line=$(tail -1 "$TMP/target.out")
ew=$(kv "$line" expected_write) er=$(kv "$line" expected_read)

read -r ttype _ rpid u k r w x mn mj inc lost < <(python3 - "$TMP/f.json" <<'PY'
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])
f = d["faults"]
rows = f["by_process"]
print(d["target"]["type"], len(rows), ",".join(str(r["pid"]) for r in rows) or "-",
      *(f[k] for k in ("user", "kernel", "read", "write", "exec", "minor", "major", "incomplete")),
      sum(d["lost"].values()))
PY
)
ok "pid filter: target type is pid" "type $ttype" [ "$ttype" = pid ]
ok "pid filter: by_process holds only the target pid" "rows: $rpid, target $TARGET" [ "$rpid" = "$TARGET" ]
ok "pid filter: nothing lost" "lost sum $lost" [ "$lost" -eq 0 ]
# The target's arithmetic: after the pause it runs its loop (W writes, R reads), one printf and
# exit, which measured 8 more faults (stdio buffer, exit path). Bounds: [W, W+20] writes,
# [R, R+20] reads, at most 20 exec and 20 kernel-mode faults. The neighbour takes 20000 writes
# and 20000 reads per round, so any of its faults leaking in would overshoot by thousands.
ok "pid filter: target writes = expected_write (+ <= 20 exit faults)" "write $w, expected $ew" \
	[ "$w" -ge "$ew" -a "$w" -le $((ew + 20)) ]
ok "pid filter: target reads = expected_read (+ <= 20 exit faults)" "read $r, expected $er" \
	[ "$r" -ge "$er" -a "$r" -le $((er + 20)) ]
ok "pid filter: no more than 20 exec and 20 kernel-mode faults" "exec $x, kernel $k" [ "$x" -le 20 -a "$k" -le 20 ]
ok "pid filter: user + kernel == minor + major + incomplete" "$u + $k vs $mn + $mj + $inc" \
	[ $((u + k)) -eq $((mn + mj + inc)) ]
# perf stat -p watched the same pid over the same window (both attached while the target was
# stopped in its pause, both end at its exit). 10 faults: attach timing cannot matter (the
# stopped, sleeping target faults nothing), so the only slack is for the last exit-path faults
# one tool may miss while it tears down (measured: equal).
ppf=$(awk -F, '$3 == "page-faults" {print $1}' "$TMP/perf.csv" 2>/dev/null)
if [ -n "$ppf" ] && [ "$ppf" -eq "$ppf" ] 2>/dev/null; then
	ok "pid filter: user + kernel vs perf stat -p page-faults (+-10)" "mmscope $((u + k)), perf $ppf" \
		[ $((u + k - ppf)) -le 10 -a $((ppf - u - k)) -le 10 ]
else
	fail "pid filter: perf stat -p gave no count ($(head -c 300 "$TMP/perf.err" "$TMP/perf.csv" | tr '\n' ' '))"
fi

# ---- -p PARENT: its descendants running when the run starts are traced too ----
# stress-ng --vm 1 runs its worker two generations down (stress-ng -> stress-ng-vm ->
# stress-ng-vm), all forked before mmscope starts. The worker is stopped while mmscope and
# perf stat -p WORKER attach and detach, so that both see exactly its faults of the same
# running window: its row must equal perf's page-faults. (Its /proc minflt also counts the
# kernel's get_user_pages() faults, which no fault event reports.) Before, -p of the parent
# showed no faults at all.
if command -v stress-ng >/dev/null; then
	stress-ng --vm 1 --vm-bytes 64M -t 60 >/dev/null 2>&1 &
	sng=$!
	worker=
	for _ in $(seq 100); do
		vm=$(pgrep -P $sng -x stress-ng-vm | head -1)
		[ -n "$vm" ] && worker=$(pgrep -P "$vm" -x stress-ng-vm | head -1)
		[ -n "$worker" ] && break
		sleep 0.1
	done
	if [ -z "$worker" ]; then
		fail "pid filter descendants: stress-ng started no worker"
	else
		for mode in children no_children; do
			kill -STOP "$worker"
			extra=()
			[ $mode = no_children ] && extra=(--no-children)
			"$MMSCOPE" faults "${extra[@]}" -p $sng -d 60 --json -o "$TMP/d.json" 2>"$TMP/d.err" &
			mm=$!
			wait_for 60 grep -q '^Tracing ' "$TMP/d.err"
			perf stat -x, -e page-faults -p "$worker" -o "$TMP/d.perf" &
			pf=$!
			# perf stat -p has no start line: its counting event open on the worker says it
			# is attached (1 s was not always enough on a loaded host: perf counted 0)
			wait_for 30 sh -c "ls -l /proc/$pf/fd 2>/dev/null | grep -q perf_event"
			sleep 0.5
			kill -CONT "$worker"
			sleep 1
			kill -STOP "$worker"
			kill -INT $pf $mm
			wait $pf $mm
			kill -CONT "$worker"
			perf_pf=$(awk -F, '$3 == "page-faults" {print $1}' "$TMP/d.perf")
			row=$(json_get "$TMP/d.json" "sum(x['user'] + x['kernel'] for x in d['faults']['by_process'] if x['pid'] == $worker)")
			total=$(json_get "$TMP/d.json" 'd["faults"]["user"] + d["faults"]["kernel"]')
			echo "# -p $sng ($mode): worker $worker row $row, total $total, perf stat -p worker $perf_pf"
			if [ $mode = children ]; then
				ok "pid filter: -p PARENT traces its running grandchild: row = perf stat -p page-faults" \
					"row $row, perf $perf_pf" [ "$row" -eq "${perf_pf:--1}" -a "$row" -gt 1000 ]
			else
				ok "pid filter: -p PARENT --no-children leaves the running grandchild out" \
					"row $row, total $total, perf $perf_pf" [ "$row" -eq 0 -a "$total" -lt 100 -a "${perf_pf:-0}" -gt 1000 ]
			fi
		done
	fi
	kill $sng 2>/dev/null
	wait $sng 2>/dev/null
else
	skip "pid filter descendants: no stress-ng"
fi
