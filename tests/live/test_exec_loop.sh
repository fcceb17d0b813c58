#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope faults -- exec_loop N: one process re-execs itself N times (same pid, N new mms).
#
# Oracles: the pid of the command as its parent (mmscope) sees it (pgrep -P while the first
# image pauses), the comm the kernel gives an image exec'ed through /proc/self/exe (shown with
# bash below), perf stat on the same command for the fault total, and the workload's own exit
# status.
. "$(dirname "$0")/lib.sh"

EL="$WORKLOADS/exec_loop"
N=300
MMPID=
cleanup() {
	[ -n "$MMPID" ] && kill "$MMPID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# pct_within A B P : |A - B| <= P% of B (integers; bash arithmetic, python starts slowly here)

# The kernel names a task after the basename of the path it exec'ed (bprm->filename), so an
# execl("/proc/self/exe", ...) image is called "exe" whatever argv[0] says. Independent check:
# a bash that execs itself through /proc/self/exe reads its own comm.
want_comm=$(bash -c 'exec -a somename /proc/self/exe -c "read -r c </proc/\$\$/comm; echo \"\$c\""')
ok "exec_loop: an image exec'ed via /proc/self/exe is named 'exe' (bash oracle)" "got '$want_comm'" \
	[ "$want_comm" = exe ]

# --pause-before-ms: the first image sleeps before its first exec, long enough for pgrep to see
# it as mmscope's child; the pause adds no faults to the count that matter here.
"$MMSCOPE" faults --json -o "$TMP/f.json" -- "$EL" $N --pause-before-ms 1500 >"$TMP/out" 2>"$TMP/err" &
MMPID=$!
child=
for _ in $(seq 50); do
	child=$(pgrep -P "$MMPID" | head -1)
	[ -n "$child" ] && break
	sleep 0.1
done
wait "$MMPID"
rc=$?
MMPID=
ok "exec_loop: mmscope exits with the command's status (0)" "exit $rc: $(head -c 300 "$TMP/err" | tr '\n' ' ')" [ $rc -eq 0 ]
[ -s "$TMP/f.json" ] || { fail "exec_loop: no JSON written"; exit 0; }
line=$(tail -1 "$TMP/out")
ok "exec_loop: the workload completed $N execs" "summary '$line'" [ "$(kv "$line" execs)" = $N ]

read -r tpid nrows rpid rcomm total minor major inc lost < <(python3 - "$TMP/f.json" <<'PY'
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])
f = d["faults"]
rows = f["by_process"]
r0 = rows[0] if rows else {"pid": -1, "comm": "-"}
print(d["target"]["pid"], len(rows), r0["pid"], r0["comm"] or "-", f["user"] + f["kernel"],
      f["minor"], f["major"], f["incomplete"], sum(d["lost"].values()))
PY
)
ok "exec_loop: target.pid is the command's pid (pgrep -P mmscope)" "target.pid $tpid, pgrep '$child'" \
	[ "$tpid" = "$child" ]
ok "exec_loop: by_process has one row, the target pid" "$nrows rows, first pid $rpid, target $tpid" \
	[ "$nrows" -eq 1 -a "$rpid" = "$tpid" ]
ok "exec_loop: its comm is the new image's ('$want_comm')" "comm '$rcomm'" [ "$rcomm" = "$want_comm" ]
ok "exec_loop: nothing lost" "lost sum $lost" [ "$lost" -eq 0 ]
ok "exec_loop: user + kernel == minor + major + incomplete" "$total vs $minor + $major + $inc" \
	[ "$total" -eq $((minor + major + inc)) ]
# Sanity of the per-exec cost: a new image faults in ld.so, libc, its stack and data; about 55
# faults per exec here. Below 10 would mean execs are missed, above 1000 a counting loop.
per=$((total / N))
ok "exec_loop: faults per exec plausible (10..1000)" "$total faults / $N execs = $per" [ $per -ge 10 -a $per -le 1000 ]

# perf stat on the same command (it follows the same pid across exec; counts from the first
# exec on). 2%: 5 paired runs measured within 0.3% of each other (fault-around depends on
# what is in the page cache), plus the 1-3 faults mmscope sees before the first exec.
if perf stat -x, -e page-faults -o "$TMP/perf.csv" -- "$EL" $N >/dev/null 2>"$TMP/perf.err"; then
	ppf=$(awk -F, '$3 == "page-faults" {print $1}' "$TMP/perf.csv")
	ok "exec_loop: user + kernel vs perf page-faults within 2%" "mmscope $total, perf $ppf" pct_within "$total" "$ppf" 2
else
	fail "exec_loop: perf stat failed ($(head -3 "$TMP/perf.err"))"
fi

# A failing command: mmscope's exit status is the command's. exec_loop exits 2 on a usage
# error (wl_usage_error), here after its chain has not even started.
"$EL" --execs 0 >/dev/null 2>&1
wrc=$?
"$MMSCOPE" faults --json -o "$TMP/g.json" -- "$EL" --execs 0 >/dev/null 2>"$TMP/err2"
mrc=$?
ok "exec_loop: a failing command's status is passed through" "workload alone $wrc, under mmscope $mrc" \
	[ $wrc -eq 2 -a $mrc -eq $wrc ]
# And one killed by a signal: 128 + signal number, as a shell reports it.
"$MMSCOPE" faults --json -o "$TMP/h.json" -- sh -c 'kill -KILL $$' >/dev/null 2>"$TMP/err3"
mrc=$?
ok "exec_loop: a command killed by SIGKILL gives 137" "exit $mrc: $(head -c 200 "$TMP/err3")" [ $mrc -eq 137 ]

# ---- the locations of exec'ed images ----
# Each of 50 images writes 10 fresh pages in touch_anon_pages: the location table holds all 500
# of those faults there (the workload's arithmetic), and no fault of the run is at a location
# in an unknown file. Where no handle_mm_fault() hook reads the build IDs (this host: pairing),
# the images' locations are resolved from the kernel's perf mmap records instead of a
# build-ID read at each new location's fault: the irq_work interrupts such a read raises with
# interrupts off (2675 on this run before) are gone, and so is the exec record's ring-buffer
# wakeup (16-21 on this run before, 2-4 since). A count, not a timing: the cost
# itself is in `make bench`.
# irq_work_at_most MAX LABEL WHAT: the irq_work interrupts the run took (irq_work_during: its
# own, not the host's) are <= MAX, where the fault-entry hooks read the build IDs ($method
# pairing: interrupts off); else a skip.
irq_work_at_most() {
	local n
	n=$(cat "$TMP/iw")
	if [ "$method" = pairing ] && [ -n "$n" ]; then
		ok "$2 (irq_work interrupts <= $1 for $3)" "$n for $3" [ "$n" -le "$1" ]
	else
		skip "$2: irq_work count (latency method '$method', or no irq_vectors tracepoint)"
	fi
}
irq_work_during "$TMP/iw" "$MMSCOPE" faults --json --top 200 -o "$TMP/l.json" -- "$EL" 50 --touch 10 >"$TMP/l.out" 2>"$TMP/l.err"
rc=$?
ok "exec_loop locations: exit 0" "exit $rc: $(one_line "$TMP/l.err")" [ $rc -eq 0 ]
want=$(kv "$(tail -1 "$TMP/l.out")" expected_touch_faults)
read -r touch unknown method < <(python3 - "$TMP/l.json" <<'PY'
import json, sys
f = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])["faults"]
rows = f["top_locations"]
print(sum(r["count"] for r in rows if r["symbol"] == "touch_anon_pages" and r["dso"].endswith("/exec_loop")),
      sum(r["count"] for r in rows if r["dso"] == "[unknown]"),
      "pairing" if (f["latency_method"] or "").startswith("pairing") else "calls")
PY
)
ok "exec_loop locations: touch_anon_pages holds the $want touch faults" "${touch:-?}" [ "${touch:-0}" = "$want" ]
ok "exec_loop locations: no fault at a location in an unknown file" "${unknown:-?}" [ "${unknown:-1}" = 0 ]
irq_work_at_most 10 "exec_loop locations: no build-ID read or wakeup per exec" "50 execs"
# The same images' stacks: touch_anon_pages's stack holds the 500 touch faults (the images'
# frames also come from the mmap records: raw addresses, no build-ID read per new stack).
"$MMSCOPE" faults --folded -o "$TMP/l.folded" -- "$EL" 50 --touch 10 >/dev/null 2>"$TMP/lf.err"
rc=$?
n=$(awk '/;main;touch_anon_pages;/ {s += $NF} END {print s + 0}' "$TMP/l.folded" 2>/dev/null)
ok "exec_loop stacks: exit 0" "exit $rc: $(one_line "$TMP/lf.err")" [ $rc -eq 0 ]
ok "exec_loop stacks: main;touch_anon_pages holds the $want touch faults" "${n:-?}" [ "${n:-0}" = "$want" ]

# ---- forked children: their address space is a copy of their parent's image ----
# fork_exec -n 20: each child faults (copy-on-write) in its parent's code and libraries before
# its exec. Those locations are the parent image's, known from its mmap records up to the
# fork (bpf/state.bpf.c fork_image(), user/core/mmap_log.c): no build-ID read per new location of
# each child (285 irq_work interrupts on this run before, ~15 a child). Oracles: the kernel's
# interrupt counts, and the workload's code: each round's fork returns into fork_exec_round()
# and __fork() of libc in both processes, whose first writes to the stack copy it.
FE="$WORKLOADS/fork_exec"
irq_work_during "$TMP/iw" "$MMSCOPE" faults --json --top 200 -o "$TMP/fe.json" -- "$FE" -n 20 >"$TMP/fe.out" 2>"$TMP/fe.err"
rc=$?
ok "fork_exec locations: exit 0" "exit $rc: $(one_line "$TMP/fe.err")" [ $rc -eq 0 ]
read -r round forks unknown method < <(python3 - "$TMP/fe.json" <<'PY'
import json, sys
f = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])["faults"]
rows = f["top_locations"]
print(sum(r["count"] for r in rows if r["symbol"] == "fork_exec_round" and r["dso"].endswith("/fork_exec")),
      sum(r["count"] for r in rows if r["symbol"] == "__fork" and "/libc" in r["dso"]),
      sum(r["count"] for r in rows if r["dso"] == "[unknown]"),
      "pairing" if (f["latency_method"] or "").startswith("pairing") else "calls")
PY
)
ok "fork_exec locations: fork_exec_round (fork_exec) and __fork (libc) hold >= 20 faults each" \
	"fork_exec_round ${round:-?}, __fork ${forks:-?}" [ "${round:-0}" -ge 20 -a "${forks:-0}" -ge 20 ]
ok "fork_exec locations: no fault at a location in an unknown file" "${unknown:-?}" [ "${unknown:-1}" = 0 ]
irq_work_at_most 10 "fork_exec locations: no build-ID read per child" "20 rounds"
