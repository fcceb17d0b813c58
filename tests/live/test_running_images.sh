#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Processes running before mmscope started (-p PID, host-wide): their code is named from a
# /proc/PID/maps snapshot taken when the kernel's mmap records begin (bpf/state.bpf.c
# seed_images_iter, user/core/session.c seed_images()), like the images exec'ed under -- COMMAND,
# instead of a build-ID read at each new location or stack: ~13 us with interrupts off, an
# irq_work each (833 irq_work interrupts on `faults -p` of a 50-round fork_exec before, 2 since).
# Oracles: the workloads' arithmetic, and the kernel's interrupt counts.
. "$(dirname "$0")/lib.sh"

PT="$WORKLOADS/page_touch"
FE="$WORKLOADS/fork_exec"
W=3000 R=1000 PAUSE_MS=4000
TPID='' MMPID=''
cleanup() {
	for p in $MMPID $TPID; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# in_pause PID : PID is still inside its --pause-before-ms sleep (clock_nanosleep 230,
# nanosleep 35, restart_syscall 219: x86_64 numbers)
in_pause() { case $(cut -d' ' -f1 "/proc/$1/syscall" 2>/dev/null) in 230 | 35 | 219) return 0 ;; esac; return 1; }

# traced NAME OUT MMSCOPE-ARGS... -- WORKLOAD-ARGS... : start the workload (it pauses), then
# mmscope with -v and the args (-p TARGET where an arg is TARGET); wait for mmscope to end
# (it ends with its -p target; host-wide runs are sent SIGINT once the workload is done).
# Sets rc (mmscope's), iw (the irq_work interrupts the workload took: irq_work_during) and
# paused (0: the workload left its pause before mmscope had attached: the run is no verdict).
traced() {
	local name=$1 out=$2 a margs=() wargs=() hostwide=1
	shift 2
	while [ "$1" != -- ]; do margs+=("$1"); shift; done
	shift
	wargs=("$@")
	irq_work_during "$TMP/$name.iw" "${wargs[@]}" --pause-before-ms $PAUSE_MS >"$TMP/$name.wl" 2>&1 &
	local runner=$!
	# The workload is perf's child, in the background shell that runs irq_work_during.
	wait_for 5 workload_of $runner >/dev/null
	TPID=$(workload_of $runner)
	wait_for 5 in_pause $TPID
	for a in "${!margs[@]}"; do
		[ "${margs[$a]}" = TARGET ] && { margs[$a]=$TPID; hostwide=0; }
	done
	"$MMSCOPE" "${margs[@]}" -v -o "$out" 2>"$TMP/$name.err" &
	MMPID=$!
	paused=0
	wait_attached "$TMP/$name.err" 30 && in_pause $TPID && paused=1
	while kill -0 $TPID 2>/dev/null; do sleep 0.05; done
	wait $runner
	TPID=
	[ $hostwide = 1 ] && kill -INT $MMPID
	wait_exit $MMPID 30 || { kill -KILL $MMPID; rc=124; }
	MMPID=
	iw=$(cat "$TMP/$name.iw")
}
# workload_of PID : the pid of the process perf started below the background shell PID
workload_of() {
	local p
	p=$(pgrep -P "$(pgrep -P "$1" | head -1)" 2>/dev/null | head -1)
	[ -n "$p" ] && echo "$p"
}

# no_verdict NAME : true (with a SKIP) when the run is no verdict (see traced)
no_verdict() {
	[ "$paused" = 1 ] && return 1
	skip "$1 (the workload left its ${PAUSE_MS} ms pause before mmscope attached)"
}

# irq_work_at_most MAX NAME : the workload's irq_work interrupts <= MAX where the fault-entry
# hooks read the build IDs (latency method pairing: interrupts off); else a skip.
irq_work_at_most() {
	if [ "$method" = pairing ] && [ -n "$iw" ]; then
		ok "$2 (irq_work interrupts <= $1)" "$iw" [ "$iw" -le "$1" ]
	else
		skip "$2: irq_work count (latency method '$method', or no irq_vectors tracepoint)"
	fi
}

# locations FILE : write read round fork unknown method, from a faults --json document
locations() {
	python3 - "$1" <<'PY'
import json, sys
f = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])["faults"]
rows = f["top_locations"]
def at(sym, dso):
    return sum(r["count"] for r in rows if r["symbol"] == sym and dso in r["dso"])
print(at("touch_write_pages", "/page_touch"), at("touch_read_pages", "/page_touch"),
      at("fork_exec_round", "/fork_exec"), at("__fork", "/libc"),
      sum(r["count"] for r in rows if r["dso"] == "[unknown]"),
      "pairing" if (f["latency_method"] or "").startswith("pairing") else "calls")
PY
}

# ---- -p on a page_touch paused before its loop ----
traced p "$TMP/p.json" faults --json --top 50 -p TARGET -- "$PT" -w $W -r $R
if ! no_verdict "running images: faults -p"; then
	ok "running images: faults -p exits 0" "exit $rc: $(grep -v '^libbpf' "$TMP/p.err" | head -c 300)" [ $rc -eq 0 ]
	ok "running images: the target's image seeded from /proc" "$(grep 'running processes' "$TMP/p.err")" \
		grep -q 'running processes: 1 images' "$TMP/p.err"
	read -r w r _ _ unknown method < <(locations "$TMP/p.json")
	ok "running images: touch_write_pages (page_touch) holds the $W write faults" "${w:-?}" [ "${w:-0}" = $W ]
	ok "running images: touch_read_pages (page_touch) holds the $R read faults" "${r:-?}" [ "${r:-0}" = $R ]
	ok "running images: no fault at a location in an unknown file" "${unknown:-?}" [ "${unknown:-1}" = 0 ]
	irq_work_at_most 10 "running images: no build-ID read per location"
fi

# ---- -p on a fork_exec paused before its loop: its children's copy-on-write faults ----
# Each child faults in its parent's code before its exec: a fork of the seeded image, named by
# the parent's snapshot (bpf/state.bpf.c fork_image()); each round's fork returns into
# fork_exec_round() and libc's __fork() in both processes, whose first writes copy the stack.
traced fe "$TMP/fe.json" faults --json --top 200 -p TARGET -- "$FE" -n 20
if ! no_verdict "running images: faults -p fork_exec"; then
	ok "running images: faults -p fork_exec exits 0" "exit $rc: $(grep -v '^libbpf' "$TMP/fe.err" | head -c 300)" [ $rc -eq 0 ]
	read -r _ _ round forks unknown method < <(locations "$TMP/fe.json")
	ok "running images: fork_exec_round (fork_exec) and __fork (libc) hold >= 20 faults each" \
		"fork_exec_round ${round:-?}, __fork ${forks:-?}" [ "${round:-0}" -ge 20 -a "${forks:-0}" -ge 20 ]
	ok "running images: no child's fault at a location in an unknown file" "${unknown:-?}" [ "${unknown:-1}" = 0 ]
	irq_work_at_most 10 "running images: no build-ID read per child"
fi

# ---- stacks: faults --folded -p ----
traced f "$TMP/p.folded" faults --folded -p TARGET -- "$PT" -w $W
if ! no_verdict "running images: faults --folded -p"; then
	n=$(awk '/;main;.*touch_write_pages;/ {s += $NF} END {print s + 0}' "$TMP/p.folded" 2>/dev/null)
	ok "running images: faults --folded -p exits 0" "exit $rc: $(grep -v '^libbpf' "$TMP/f.err" | head -c 300)" [ $rc -eq 0 ]
	ok "running images: main;..;touch_write_pages holds the $W write faults" "${n:-?}" [ "${n:-0}" = $W ]
fi

# ---- host-wide: every running process is seeded ----
traced h "$TMP/h.json" faults --json --top 200 -- "$PT" -w $W -r $R
if ! no_verdict "running images: host-wide faults"; then
	ok "running images: host-wide faults exits 0" "exit $rc: $(grep -v '^libbpf' "$TMP/h.err" | head -c 300)" [ $rc -eq 0 ]
	seeded=$(sed -n 's/.*running processes: \([0-9]*\) images.*/\1/p' "$TMP/h.err")
	ok "running images: host-wide, the running processes seeded (>= 2: the workload and init)" \
		"$(grep 'running processes' "$TMP/h.err")" [ "${seeded:-0}" -ge 2 ]
	read -r w r _ _ _ method < <(locations "$TMP/h.json")
	ok "running images: host-wide, touch_write_pages (page_touch) holds the $W write faults" "${w:-?}" [ "${w:-0}" = $W ]
	ok "running images: host-wide, touch_read_pages (page_touch) holds the $R read faults" "${r:-?}" [ "${r:-0}" = $R ]
fi
exit 0
