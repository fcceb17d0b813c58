# SPDX-License-Identifier: GPL-2.0
# Helpers for live tests (sourced). Each test prints PASS/FAIL/SKIP lines via these.
# Environment (from tests/run.sh): MMSCOPE = the binary, WORKLOADS = the workloads directory.
set -u
: "${MMSCOPE:?}" "${WORKLOADS:?}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }
skip() { echo "SKIP $*"; }

# ok NAME DETAIL COMMAND... : PASS NAME if the command succeeds, else FAIL with DETAIL
ok() {
	local name=$1 detail=$2
	shift 2
	if "$@"; then pass "$name"; else fail "$name ($detail)"; fi
}

# one_line FILE : the first 300 bytes of FILE on one line (for FAIL details)
one_line() { head -c 300 "$1" | tr '\n' '|'; }

# attached PID : wait (up to 20 s) until mmscope process PID has attached all its hooks: it
# holds BPF links (at least two) and their number has not changed for 0.3 s (mmscope attaches
# its hooks one after another within a few ms; a count taken between two attaches let a test
# start its workload before the counting hooks were in place). 1 if it exits or does not
# attach in time. For runs started without -v (those with -v use wait_attached).
attached() {
	local n prev=-1 same=0
	for _ in $(seq 400); do
		n=$(find /proc/"$1"/fd -lname "anon_inode:bpf_link" 2>/dev/null | wc -l)
		if [ "$n" -ge 2 ] && [ "$n" -eq "$prev" ]; then
			same=$((same + 1))
			[ $same -ge 6 ] && return 0
		else
			same=0
		fi
		prev=$n
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# absdiff_le A B N : |A - B| <= N (integers)
absdiff_le() { (($1 - $2 <= $3 && $2 - $1 <= $3)); }
# pct_within A B P : |A - B| <= P% of B (integers)
pct_within() { ((($1 - $2) * 100 <= $3 * $2 && ($2 - $1) * 100 <= $3 * $2)); }
# between X LO HI : LO <= X <= HI
between() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_exit PID SECONDS : wait for PID (a child of this shell) up to SECONDS; sets rc to its
# exit status; 1 on timeout (PID still running)
wait_exit() {
	for _ in $(seq $(($2 * 20))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$1" 2>/dev/null && return 1
	wait "$1"
	rc=$?
	return 0
}

# wait_for SECONDS COMMAND... : poll COMMAND every 0.1 s until it succeeds; 1 after SECONDS
wait_for() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		"${@:2}" && return 0
		sleep 0.1
	done
	return 1
}

# owned PID : "prog:ID", "map:ID", "link:ID" for every BPF object PID holds an fd to
owned() {
	local f
	for f in /proc/"$1"/fdinfo/*; do
		sed -n -e 's/^prog_id:[[:space:]]*/prog:/p' -e 's/^map_id:[[:space:]]*/map:/p' \
			-e 's/^link_id:[[:space:]]*/link:/p' "$f" 2>/dev/null
	done | sort -u
}

# loaded : the same for every BPF object loaded in the kernel now
loaded() {
	{
		bpftool prog list 2>/dev/null | sed -n 's/^\([0-9]*\):.*/prog:\1/p'
		bpftool map list 2>/dev/null | sed -n 's/^\([0-9]*\):.*/map:\1/p'
		bpftool link list 2>/dev/null | sed -n 's/^\([0-9]*\):.*/link:\1/p'
	} | sort -u
}

# left_behind OWNED : the objects of OWNED (owned's output) still in the kernel, on one line.
# Maps and programs are freed from a workqueue after their last reference goes: up to 3 s.
left_behind() {
	local left
	for _ in $(seq 30); do
		left=$(comm -12 <(echo "$1") <(loaded))
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	echo "$left" | tr '\n' ' '
}

# check NAME CONDITION-COMMAND... : PASS if the command succeeds, else FAIL with its output
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}

# json_get FILE PYTHON-EXPR : evaluates EXPR with d = the parsed JSON document (last one in
# the file when -i printed several), prints the result
json_get() {
	python3 - "$1" "$2" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
d = json.loads(lines[-1])
print(eval(sys.argv[2]))
PY
}

# within A B PERCENT : |A-B| <= PERCENT% of B
within() {
	python3 -c "import sys; a,b,p=float(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); sys.exit(0 if abs(a-b) <= p/100*max(abs(b),1) else 1)" "$1" "$2" "$3"
}

# kv LINE KEY : value of key=value in a workload's summary line
kv() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# bpf_prog_count : number of BPF programs loaded now (to check nothing is left behind)
bpf_prog_count() { bpftool prog list 2>/dev/null | grep -c '^[0-9]*:'; }

# wait_attached STDERR_FILE [SECONDS]: wait until an mmscope started with -v has attached its
# hooks (it prints "[N ms] attached"); 1 if it did not within SECONDS (default 30).
wait_attached() {
	local i
	for ((i = 0; i < ${2:-30} * 10; i++)); do
		grep -q '\] attached' "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# irq_work_during OUT COMMAND... : run COMMAND under perf stat, counting the irq_work
# interrupts taken while it or a descendant was the running task, into the file OUT (empty
# where the irq_vectors tracepoints are missing). irq_vectors:irq_work_entry fires in the
# interrupted task's context, and the self-IPI that a BPF build-ID read in a fault hook raises
# to drop the mmap lock lands in the faulting task: unlike /proc/interrupts, what else runs on
# a busy host is not counted. Returns COMMAND's status.
irq_work_during() {
	local out=$1 rc
	shift
	if [ ! -d /sys/kernel/tracing/events/irq_vectors/irq_work_entry ]; then
		: >"$out"
		"$@"
		return
	fi
	perf stat -x, -e irq_vectors:irq_work_entry -o "$out.perf" -- "$@"
	rc=$?
	awk -F, '/irq_work_entry/ { print $1 }' "$out.perf" >"$out"
	return $rc
}

# stop_in_pause PID : stop PID (SIGSTOP) while it sleeps in its --pause-before-ms, so that a
# tracer started next can attach at whatever speed a busy host allows before PID's loop runs;
# SIGCONT resumes the same sleep. 1 (PID left running) when it was not caught inside the pause:
# the caller's run is then no verdict. Syscall numbers are x86_64's: clock_nanosleep 230,
# nanosleep 35; stopped there a sleep may show as restart_syscall 219.
stop_in_pause() {
	local i
	in_sleep() { case $(cut -d' ' -f1 "/proc/$1/syscall" 2>/dev/null) in 230 | 35) return 0 ;; esac; return 1; }
	stopped() { [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" = T ]; }
	for i in $(seq 250); do in_sleep "$1" && break; sleep 0.02; done
	kill -STOP "$1" 2>/dev/null || return 1
	for i in $(seq 50); do stopped "$1" && break; sleep 0.02; done
	if in_sleep "$1" || [ "$(cut -d' ' -f1 "/proc/$1/syscall" 2>/dev/null)" = 219 ]; then
		return 0
	fi
	kill -CONT "$1"
	return 1
}

# reliability_setup : the start the reliability tests share. The system's python3 goes first in
# PATH (json_get and the tests' own python3 -c: a pyenv shim first in PATH takes ~1 s a call);
# PT is the page_touch workload; every pid the test adds to PIDS is killed and reaped on exit,
# before TMP is removed.
reliability_setup() {
	if [ -x /usr/bin/python3 ]; then PATH=/usr/bin:$PATH; fi
	# shellcheck disable=SC2034 # PT is for the test that calls this
	PT="$WORKLOADS/page_touch"
	PIDS=''
	trap kill_pids_and_clean EXIT
}
kill_pids_and_clean() {
	local p
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
