#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Reliability: how a run ends. A traced command that crashes or is killed, a -p target killed
# under it, SIGINT/SIGTERM on the subcommands test_signals.sh does not cover (tlb, switch,
# faults --folded, a -- run with --json), and SIGPIPE (output piped into head). In every case:
# the documented exit status, the complete summary, and no BPF program, map or link left
# behind.
#
# Oracles: the exit status against the kernel's (128 + signal), the clock, a JSON parser, and
# the kernel's own lists of BPF objects (bpftool prog/map/link list) against the ids of the
# objects the mmscope process held (/proc/PID/fdinfo: prog_id, map_id, link_id), so that
# programs other tools load meanwhile do not matter.
. "$(dirname "$0")/lib.sh" || exit 1
: "${TMP:?lib.sh sets TMP}"
# The system's python3 (lib.sh's json_get): a pyenv shim first in PATH takes ~1 s a call here.
[ -x /usr/bin/python3 ] && PATH=/usr/bin:$PATH

PT="$WORKLOADS/page_touch"
MMPID='' TPID=''
cleanup() {
	for p in $MMPID $TPID; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT


# the_objects NAME OWNED : the check that every object the run held is gone
the_objects() {
	local left
	if [ -z "$2" ]; then
		fail "$1: no BPF object seen in mmscope's fds while it ran"
		return
	fi
	left=$(left_behind "$2")
	ok "$1: every program, map and link it held is gone ($(echo "$2" | wc -l) objects)" \
		"still loaded: $left" [ -z "$left" ]
}
json_complete() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if "lost" in d and "duration_s" in d else 1)' "$1" 2>/dev/null; }

# ---- the traced command crashes: exit 128 + signal, the summary, nothing left ----
# crash NAME SIGNAL NUMBER MMSCOPE-ARGS... : the command waits until mmscope's fds have been
# read (a fifo: on a busy host the attach may take longer than any sleep), faults 1000 pages,
# then kills itself with SIGNAL
crash() {
	local name=$1 sig=$2 num=$3 own
	shift 3
	rm -f "$TMP/crash.go"
	mkfifo "$TMP/crash.go"
	"$MMSCOPE" "$@" -- sh -c "read x <'$TMP/crash.go'; \"$PT\" -w 1000 >/dev/null; kill -$sig \$\$" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" &
	MMPID=$!
	attached $MMPID || true
	own=$(owned $MMPID)
	timeout 20 sh -c "echo go >'$TMP/crash.go'" # no reader if mmscope failed to start
	if ! wait_exit $MMPID 20; then
		fail "$name: mmscope still running 20 s after its command crashed"
		return
	fi
	MMPID=
	ok "$name: exit $((128 + num)) (128 + SIG$sig, the command's)" "exit $rc: $(one_line "$TMP/$name.err")" \
		[ $rc -eq $((128 + num)) ]
	the_objects "$name" "$own"
}
crash "command SIGSEGV" SEGV 11 faults
ok "command SIGSEGV: the text summary is complete (counts, by process, lost line)" \
	"$(head -c 300 "$TMP/command SIGSEGV.out" | tr '\n' '|')" \
	eval 'grep -q "^faults  *count" "$TMP/command SIGSEGV.out" && grep -q "^by process" "$TMP/command SIGSEGV.out" && grep -q "^lost" "$TMP/command SIGSEGV.out"'
ok "command SIGSEGV: the page_touch child's 1000 writes are counted" "$(grep -m1 -E '^  write' "$TMP/command SIGSEGV.out")" \
	[ "$(awk '$1 == "write" {print $2; exit}' "$TMP/command SIGSEGV.out")" -ge 1000 ]
crash "command SIGKILL, --json -o" KILL 9 stat --json -o "$TMP/kill.json"
ok "command SIGKILL, --json -o: the file is complete JSON with the command's pid" "$(head -c 200 "$TMP/kill.json")" \
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["target"]["type"] == "command" and d["target"]["pid"] > 0 and d["faults"]["write"] >= 1000 else 1)' "$TMP/kill.json"

# ---- a -p target killed with SIGKILL: the run ends with its summary, exit 0 ----
"$PT" -w 10 --pause-before-ms 30000 >/dev/null &
TPID=$!
"$MMSCOPE" faults --json -o "$TMP/p.json" -p $TPID 2>"$TMP/p.err" &
MMPID=$!
if attached $MMPID; then
	own=$(owned $MMPID)
	sleep 0.3
	t0=$(now_ms)
	kill -KILL $TPID
	wait $TPID 2>/dev/null
	TPID=
	if wait_exit $MMPID 10; then
		dt=$(($(now_ms) - t0))
		MMPID=
		ok "-p target SIGKILLed: mmscope exits 0" "exit $rc: $(one_line "$TMP/p.err")" [ $rc -eq 0 ]
		# 15 s: a pidfd wakes the run at once; without one it would never end.
		ok "-p target SIGKILLed: the run ends within 15 s of the target's death" "${dt} ms" [ $dt -lt 15000 ]
		ok "-p target SIGKILLed: the JSON summary is complete" "$(head -c 200 "$TMP/p.json")" json_complete "$TMP/p.json"
		the_objects "-p target SIGKILLed" "$own"
	else
		fail "-p target SIGKILLed: mmscope still running 10 s after its only target died"
	fi
else
	fail "-p target SIGKILLed: mmscope never attached ($(one_line "$TMP/p.err"))"
fi

# ---- SIGINT / SIGTERM on the other subcommands: exit 0, complete output, nothing left ----
# stop NAME SIGNAL OUTFILE MMSCOPE-ARGS... : a host-wide run, ended by SIGNAL 0.5 s after it
# attached; sets rc, own
stop() {
	local name=$1 sig=$2 out=$3 t0 dt
	shift 3
	"$MMSCOPE" "$@" -d 60 >"$out" 2>"$TMP/$name.err" &
	MMPID=$!
	if ! attached $MMPID; then
		fail "$name: mmscope never attached ($(one_line "$TMP/$name.err"))"
		return 1
	fi
	own=$(owned $MMPID)
	sleep 0.5
	t0=$(now_ms)
	kill -"$sig" $MMPID
	# 20 s: far below the run's own end (-d 60), far above what writing the summary takes on
	# a busy host (5.6 s seen for a host-wide --folded run under stress-ng; ~0.2 s quiet).
	if ! wait_exit $MMPID 20; then
		fail "$name: still running 20 s after SIG$sig"
		return 1
	fi
	dt=$(($(now_ms) - t0))
	MMPID=
	ok "$name: exit 0 on SIG$sig, well before -d 60 ends the run" "exit $rc after ${dt} ms: $(one_line "$TMP/$name.err")" \
		[ $rc -eq 0 ]
	the_objects "$name" "$own"
}
if stop "tlb SIGINT" INT "$TMP/tlb.json" tlb --json; then
	ok "tlb SIGINT: stdout is one complete JSON object" "$(head -c 200 "$TMP/tlb.json")" json_complete "$TMP/tlb.json"
fi
if stop "switch SIGTERM" TERM "$TMP/switch.txt" switch; then
	ok "switch SIGTERM: the text summary ends with the lost line" "$(tail -3 "$TMP/switch.txt" | tr '\n' '|')" \
		grep -q '^lost' "$TMP/switch.txt"
fi
if stop "faults --folded SIGINT" INT "$TMP/f.folded" faults --folded; then
	# Every line: frames, a [kind] leaf frame, a count; or the [other] line of the events whose
	# stack was not kept (on a loaded host a few are). A cut file would end mid-line.
	bad=$(grep -cvE '^([^ ].*;\[[a-z ]+\]|\[other\]) [0-9]+$' "$TMP/f.folded")
	ok "faults --folded SIGINT: complete folded output (every line 'frames;[kind] COUNT')" \
		"$bad bad lines of $(wc -l <"$TMP/f.folded"); last: $(tail -c 200 "$TMP/f.folded")" \
		[ -s "$TMP/f.folded" -a "$bad" -eq 0 ]
fi
# SIGTERM to a -- run with --json -o: the command is ended, its status is the exit status,
# the file is complete.
"$MMSCOPE" stat --json -o "$TMP/term.json" -- sleep 30 >/dev/null 2>"$TMP/term.err" &
MMPID=$!
if attached $MMPID; then
	own=$(owned $MMPID)
	sleep 0.5
	kill -TERM $MMPID
	if wait_exit $MMPID 10; then
		MMPID=
		ok "-- run SIGTERM: exit 143 (the command ended by SIGTERM)" "exit $rc: $(one_line "$TMP/term.err")" [ $rc -eq 143 ]
		ok "-- run SIGTERM: the -o file is complete JSON" "$(head -c 200 "$TMP/term.json" 2>&1)" json_complete "$TMP/term.json"
		the_objects "-- run SIGTERM" "$own"
	else
		fail "-- run SIGTERM: still running 10 s later"
	fi
else
	fail "-- run SIGTERM: mmscope never attached ($(one_line "$TMP/term.err"))"
fi

# ---- SIGPIPE: the reader goes away; mmscope ends quietly, soon ----
# With -i, mmscope writes every 0.2 s; once head has exited, the next write fails (EPIPE,
# SIGPIPE is ignored) and the run must end there, not at -d 60 (or never, without -d).
# pipe_run NAME MMSCOPE-ARGS... : mmscope ... | head -c 1; sets rc, dt (ms until mmscope
# exited)
pipe_run() {
	local name=$1
	shift
	t0=$(now_ms)
	"$MMSCOPE" "$@" 2>"$TMP/$name.err" | head -c 1 >/dev/null
	rc=${PIPESTATUS[0]}
	dt=$(($(now_ms) - t0))
}
for args in "stat -i 0.2 -d 60" "faults --json -i 0.2 -d 60"; do
	# shellcheck disable=SC2086 # word splitting wanted
	pipe_run "pipe $args" $args
	# 20 s: start-up (~1-2 s on this VM, more on a busy host) + one interval + the exit;
	# -d 60 is the bound.
	ok "SIGPIPE: mmscope $args | head -c 1: the run ends within 20 s (not at -d 60)" "${dt} ms, exit $rc" [ $dt -lt 20000 ]
	ok "SIGPIPE: mmscope $args | head -c 1: exit 0, no error on stderr" "exit $rc: $(one_line "$TMP/pipe $args.err")" \
		eval '[ $rc -eq 0 ] && ! grep -vE "^(Tracing|mmscope: warning: )" "$TMP/pipe $args.err" | grep -q .'
done
# The final summary into a closed pipe: quiet too (no "Broken pipe", no error exit).
t0=$(now_ms)
"$MMSCOPE" faults -- "$PT" -w 2000 2>"$TMP/pipe3.err" | head -c 1 >/dev/null
rc=${PIPESTATUS[0]}
ok "SIGPIPE: mmscope faults -- page_touch | head -c 1: exit 0 (the command's), nothing but warnings on stderr" \
	"exit $rc: $(one_line "$TMP/pipe3.err")" \
	eval '[ $rc -eq 0 ] && ! grep -vE "^(Tracing |mmscope: warning: )" "$TMP/pipe3.err" | grep -q .'
