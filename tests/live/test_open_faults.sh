#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Faults entered and not completed: held by userfaultfd (tools/workloads/fault_block), three
# threads one fault each. The oracle is the workload's own arithmetic: three faults held,
# each for as long as it says.
#  - resolved after 300 ms: three completed faults of at least 268 ms (the log2 slot
#    [2^28, 2^29) ns), none incomplete;
#  - still held when -d ends the run: three incomplete, in the class table as user reads
#    (counted as the hooks detach, before mmscope ends the command: the threads' task storage,
#    where the open faults are, goes with them);
#  - the process exits while they are held: three incomplete, counted at the threads' exits.
. "$(dirname "$0")/lib.sh"

HELD=3
if ! "$WORKLOADS/fault_block" -t 1 --hold-ms 0 >"$TMP/probe.out" 2>&1; then
	skip "open faults: no userfaultfd here ($(one_line "$TMP/probe.out"))"
	exit 0
fi

# incomplete FILE / slow FILE / incomplete_reads FILE : from mmscope faults --json
incomplete() { json_get "$1" 'd["faults"]["incomplete"]'; }
slow() { json_get "$1" 'sum(b["count"] for b in d["faults"]["latency_ns"] if b["lo"] >= 1 << 28)'; }
incomplete_reads() {
	json_get "$1" 'sum(r["faults"] for r in d["faults"]["by_fault_class"] if r["completion"] == "incomplete" and r["access"] == "read" and r["mode"] == "user")'
}
balance() {
	json_get "$1" 'd["faults"]["user"] + d["faults"]["kernel"] - d["faults"]["minor"] - d["faults"]["major"] - d["faults"]["incomplete"]'
}

"$MMSCOPE" faults --json -o "$TMP/done.json" -- "$WORKLOADS/fault_block" -t $HELD --hold-ms 300 >"$TMP/done.out"
ok "open faults, resolved: exit 0" "rc $?" [ $? -eq 0 ]
n=$(slow "$TMP/done.json")
ok "open faults, resolved: $HELD faults of >= 268 ms" "$n" [ "$n" = $HELD ]
n=$(incomplete "$TMP/done.json")
ok "open faults, resolved: none incomplete" "$n" [ "$n" = 0 ]

# -d ends the run at 2 s; the faults are held for 60 s (mmscope then ends the command).
"$MMSCOPE" faults --json -o "$TMP/end.json" -d 2 -- "$WORKLOADS/fault_block" -t $HELD --hold-ms 60000 >"$TMP/end.out"
n=$(incomplete "$TMP/end.json")
ok "open faults at the end: $HELD incomplete" "$n" [ "$n" = $HELD ]
n=$(incomplete_reads "$TMP/end.json")
ok "open faults at the end: $HELD incomplete user reads in the class table" "$n" [ "$n" = $HELD ]
n=$(slow "$TMP/end.json")
ok "open faults at the end: none in the latency histogram" "$n" [ "$n" = 0 ]
n=$(balance "$TMP/end.json")
ok "open faults at the end: user + kernel = minor + major + incomplete" "off by $n" [ "$n" = 0 ]

"$MMSCOPE" faults --json -o "$TMP/exit.json" -- "$WORKLOADS/fault_block" -t $HELD --hold-ms 200 --exit >"$TMP/exit.out"
ok "open faults, process exits: exit 0" "rc $?" [ $? -eq 0 ]
n=$(incomplete "$TMP/exit.json")
ok "open faults, process exits: $HELD incomplete" "$n" [ "$n" = $HELD ]
n=$(incomplete_reads "$TMP/exit.json")
ok "open faults, process exits: $HELD incomplete user reads in the class table" "$n" [ "$n" = $HELD ]

# ---- mmscope tlb: open faults in a per-CPU slot, moved to the thread's own entry at its switch ----
# tlb attaches the switch hook, so a running thread's open fault is in its CPU's slot and only
# a thread that sleeps in its fault (each held one here) has it moved out to its own entry
# (bpf/faults.bpf.h open_fault_switch_out()), where its completion, maybe on another CPU, or its
# exit, or the end of the run finds it. Its class table counts every fault once, by completion:
# the held faults complete as user-read minors, or stay incomplete. Had one been left in the
# slot, its completion would find none open (unpaired) and the fault would count incomplete.
tlb_classes() {
	json_get "$1" '"%d %d" % (sum(r["faults"] for r in d["tlb"]["by_fault_class"] if r["completion"] == "incomplete"), sum(r["faults"] for r in d["tlb"]["by_fault_class"] if r["completion"] == "minor" and r["access"] == "read" and r["mode"] == "user"))'
}
"$MMSCOPE" tlb --json -o "$TMP/tlb_done.json" -- "$WORKLOADS/fault_block" -t $HELD --hold-ms 300 >/dev/null
read -r inc reads < <(tlb_classes "$TMP/tlb_done.json")
ok "tlb open faults, resolved: none incomplete, >= $HELD user-read minors" "incomplete ${inc:-?}, user-read minors ${reads:-?}" \
	[ "${inc:-1}" = 0 -a "${reads:-0}" -ge $HELD ]
"$MMSCOPE" tlb --json -o "$TMP/tlb_end.json" -d 2 -- "$WORKLOADS/fault_block" -t $HELD --hold-ms 60000 >/dev/null
read -r inc _ < <(tlb_classes "$TMP/tlb_end.json")
ok "tlb open faults at the end: $HELD incomplete" "${inc:-?}" [ "${inc:-0}" = $HELD ]
"$MMSCOPE" tlb --json -o "$TMP/tlb_exit.json" -- "$WORKLOADS/fault_block" -t $HELD --hold-ms 200 --exit >/dev/null
read -r inc _ < <(tlb_classes "$TMP/tlb_exit.json")
ok "tlb open faults, process exits: $HELD incomplete" "${inc:-?}" [ "${inc:-0}" = $HELD ]
# The loop's faults, in the slot of the CPU the loop runs on: page_touch's arithmetic (W writes,
# R reads) by class, over a -w 0 -r 0 baseline under the same tracer that measures its start-up
# and exit (about 20 of each, moving by a few between runs: tolerance 10, as in test_stat.sh).
W=3000 R=1000
tlb_user_rw() {
	json_get "$1" '"%d %d" % tuple(sum(x["faults"] for x in d["tlb"]["by_fault_class"] if x["mode"] == "user" and x["access"] == a) for a in ("write", "read"))'
}
"$MMSCOPE" tlb --json -o "$TMP/tlb_base.json" -- "$WORKLOADS/page_touch" -w 0 -r 0 >/dev/null
read -r w0 r0 < <(tlb_user_rw "$TMP/tlb_base.json")
"$MMSCOPE" tlb --json -o "$TMP/tlb_pt.json" -- "$WORKLOADS/page_touch" -w $W -r $R >/dev/null
read -r w r < <(tlb_user_rw "$TMP/tlb_pt.json")
dw=$((${w:-0} - ${w0:-0})) dr=$((${r:-0} - ${r0:-0}))
ok "tlb fault classes over the baseline: user writes = $W (+- 10), user reads = $R (+- 10)" \
	"writes ${w:-?} - ${w0:-?} = $dw, reads ${r:-?} - ${r0:-?} = $dr" \
	[ -n "$w0" -a -n "$w" -a $dw -ge $((W - 10)) -a $dw -le $((W + 10)) -a $dr -ge $((R - 10)) -a $dr -le $((R + 10)) ]
