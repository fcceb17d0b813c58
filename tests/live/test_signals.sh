#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Ending a run with a signal: SIGINT/SIGTERM end it cleanly (exit 0, complete output, every
# BPF program unloaded), a traced command is ended with it and the summary still printed, a
# second signal ends it at once without leaving files behind.
#
# Oracles: the clock (how long the run lasted, how long the exit took), the kernel's list of
# loaded BPF programs (bpftool prog list) and mmscope's own fds (/proc/PID/fdinfo prog_id:
# the programs it holds), /proc for the traced command's pid, a JSON parser.
. "$(dirname "$0")/lib.sh"

MMPID=
cleanup() {
	[ -n "$MMPID" ] && kill -KILL "$MMPID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

prog_ids() { bpftool prog list 2>/dev/null | sed -n 's/^\([0-9]*\):.*/\1/p' | sort -n; }
# owned_progs PID : ids of the BPF programs PID holds an fd to
owned_progs() { cat /proc/"$1"/fdinfo/* 2>/dev/null | sed -n 's/^prog_id:[[:space:]]*//p' | sort -un; }

# signal_run NAME SIGNAL MMSCOPE-ARGS... : a host-wide run with -o, ended by SIGNAL 2 s after
# it attached
signal_run() {
	local name=$1 sig=$2 before owned left t0 t1 dt dur launched seen lo hi
	shift 2
	before=$(prog_ids)
	launched=$(now_ms)
	"$MMSCOPE" "$@" --json -o "$TMP/$name.json" -d 60 2>"$TMP/$name.err" &
	MMPID=$!
	if ! attached $MMPID; then
		fail "$name: mmscope never attached ($(head -c 300 "$TMP/$name.err" | tr '\n' ' '))"
		return
	fi
	seen=$(now_ms)
	owned=$(owned_progs $MMPID)
	sleep 2
	t0=$(now_ms)
	kill -"$sig" $MMPID
	if ! wait_exit $MMPID 20; then
		fail "$name: still running 20 s after SIG$sig"
		kill -KILL $MMPID
		wait $MMPID
		MMPID=
		return
	fi
	t1=$(now_ms)
	dt=$((t1 - t0))
	MMPID=
	ok "$name: exits 0 on SIG$sig" "exit $rc: $(head -c 300 "$TMP/$name.err" | tr '\n' ' ')" [ $rc -eq 0 ]
	# 20 s: far below the run's own end (-d 60); the exit is detaching and one last read of
	# the maps, ~0.1 s on a quiet host, seconds on a busy one.
	ok "$name: exits well before -d 60 would end it (within 20 s of SIG$sig)" "${dt} ms" [ $dt -lt 20000 ]
	dur=$(json_get "$TMP/$name.json" 'int(d["duration_s"] * 1000) if "faults" in d and "lost" in d else -1' 2>/dev/null)
	ok "$name: the output file is one complete JSON object" "$(head -c 200 "$TMP/$name.json")" [ "${dur:--1}" -ge 0 ]
	# The run's clock starts once the hooks are attached (and the running processes' images
	# read: up to 100 ms host-wide), around when this test saw them, and stops once the signal
	# is handled, before the exit this test saw: at least from the sight of the links to the
	# signal, less 1 s for that set-up on a busy host; at most mmscope's whole life. On the
	# test's own clock, so a busy host moves both bounds.
	lo=$((t0 - seen - 1000)) hi=$((t1 - launched))
	ok "$name: duration_s from attach to signal, on the test's clock" "duration_s*1000 = $dur, want $lo..$hi" \
		[ "${dur:-0}" -ge $lo -a "${dur:-0}" -le $hi ]
	left=$(comm -12 <(echo "$owned") <(prog_ids))
	ok "$name: the BPF programs it held are unloaded" "held: $(echo $owned); still loaded: $(echo $left)" \
		[ -n "$owned" -a -z "$left" ]
	# The brief's count check, robust to other tools loading programs meanwhile: every program
	# loaded now that was not before must belong to someone else (not to the ended mmscope).
	new=$(comm -13 <(echo "$before") <(prog_ids))
	ok "$name: bpftool prog list count back to its value before (or changed by others only)" \
		"before $(echo "$before" | grep -c .), now $(prog_ids | grep -c .), new ids: $(echo $new)" \
		[ -z "$(comm -12 <(echo "$new") <(echo "$owned"))" ]
}

signal_run "sigint stat" INT stat
signal_run "sigterm faults" TERM faults

# ---- a traced command: SIGINT to mmscope ends the command too and prints the summary ----
"$MMSCOPE" faults -- sleep 30 >"$TMP/sleep.out" 2>"$TMP/sleep.err" &
MMPID=$!
attached $MMPID || true
child=
for _ in $(seq 40); do
	child=$(pgrep -P $MMPID -x sleep)
	[ -n "$child" ] && break
	sleep 0.05
done
sleep 1
t0=$(now_ms)
kill -INT $MMPID
if wait_exit $MMPID 20; then
	dt=$(($(now_ms) - t0))
	MMPID=
	# mmscope ends the command with SIGTERM and exits with its status: 128 + 15. (In a
	# terminal, Ctrl-C also reaches the command itself, which then dies of SIGINT: 130.)
	ok "command: mmscope exits with the ended command's status (143 or 130)" "exit $rc" [ $rc -eq 143 -o $rc -eq 130 ]
	ok "command: exits well before its command would (within 20 s of SIGINT; sleep 30)" "${dt} ms" [ $dt -lt 20000 ]
	ok "command: the summary is printed" "stdout: $(head -c 200 "$TMP/sleep.out" | tr '\n' ' ')" \
		grep -q '^faults  *count' "$TMP/sleep.out"
	ok "command: the summary names the command and its pid" "$(grep -m1 'command:' "$TMP/sleep.out")" \
		grep -q "command: sleep 30 (pid ${child:-?})" "$TMP/sleep.out"
	ok "command: the sleep process is gone" "pid '${child}'" [ -n "$child" -a ! -e "/proc/${child:-0}" ]
else
	fail "command: mmscope still running 10 s after SIGINT"
fi

# ---- a second signal during the exit: immediate exit 130, and no file left behind ----
# The second SIGINT must land while mmscope is ending (after the first was handled, before it
# exits): 10 ms after the first does that most of the time here; a pair that arrives
# together is merged by the kernel into one signal (a normal exit 0), so up to 6 tries.
tries=0 landed=0
while [ $tries -lt 6 ] && [ $landed -eq 0 ]; do
	tries=$((tries + 1))
	rm -rf "$TMP/out2"
	mkdir "$TMP/out2"
	"$MMSCOPE" faults --json -o "$TMP/out2/f.json" -d 60 2>"$TMP/twice.err" &
	MMPID=$!
	if ! attached $MMPID; then
		fail "second SIGINT: mmscope never attached ($(head -c 300 "$TMP/twice.err" | tr '\n' ' '))"
		break
	fi
	sleep 0.5
	kill -INT $MMPID
	sleep 0.01
	kill -INT $MMPID 2>/dev/null
	if ! wait_exit $MMPID 10; then
		fail "second SIGINT: still running 10 s later"
		break
	fi
	MMPID=
	[ $rc -eq 130 ] && landed=1
	# Whatever the timing, an output file that exists must be complete.
	if [ -e "$TMP/out2/f.json" ] && ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/out2/f.json" 2>/dev/null; then
		fail "second SIGINT: -o FILE exists but is not complete JSON"
	fi
done
if [ $landed -eq 1 ]; then
	stray=$(find "$TMP/out2" -mindepth 1 ! -name f.json -printf '%f ')
	# -o promises an atomic write: FILE complete or absent, nothing else in its directory.
	ok "second SIGINT: exit 130 leaves no temporary file next to -o FILE (try $tries)" "left: $stray" [ -z "$stray" ]
else
	skip "second SIGINT (in $tries tries the second signal never arrived during the exit)"
fi
