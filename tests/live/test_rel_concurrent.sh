#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Reliability: mmscope runs at the same time do not disturb each other. Two `faults --json --`
# runs with different workloads and a host-wide `stat` run overlap; each counts only its own
# target, and the one that ends first does not take the other's hooks with it.
#
# Oracles: the workloads' arithmetic. A writes 3000 pages, sleeps 1.5 s (B ends meanwhile),
# writes 3000 more: 6000 writes and next to no reads. B reads 4000 pages 3 times: 12000
# reads and next to no writes. Start-up and exit add <= 150 of each (measured 20-50). The
# host-wide run sees both.
. "$(dirname "$0")/lib.sh" || exit 1
: "${TMP:?lib.sh sets TMP}"
reliability_setup

# counts FILE : "write read rows" where rows is the by_process pids, comma-separated
counts() {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = d["faults"]
print(f["write"], f["read"], ",".join(str(r["pid"]) for r in f.get("by_process", [])) or "-", d["target"].get("pid", 0))' "$1" 2>/dev/null
}

# The host-wide run first, so it sees both from their start.
"$MMSCOPE" stat --json -o "$TMP/h.json" -d 60 2>"$TMP/h.err" &
H=$!
PIDS="$PIDS $H"
attached $H || fail "concurrent: the host-wide run never attached ($(one_line "$TMP/h.err"))"
# Each command waits 1 s after mmscope released it (--pause-before-ms), so that both are
# attached before either faults; A's second half waits until B's run has ended (a fifo: on a
# busy host B's may end later than any sleep of A's).
mkfifo "$TMP/a.go"
"$MMSCOPE" faults --json -o "$TMP/a.json" -- sh -c \
	"\"$PT\" -w 3000 --pause-before-ms 1000 >/dev/null; read x <'$TMP/a.go'; exec \"$PT\" -w 3000 >/dev/null" 2>"$TMP/a.err" &
A=$!
"$MMSCOPE" faults --json -o "$TMP/b.json" -- "$PT" -r 4000 --repeat 3 --pause-before-ms 1000 >/dev/null 2>"$TMP/b.err" &
B=$!
PIDS="$PIDS $A $B"
wait $B
rcb=$?
b_end_a_alive=$(kill -0 $A 2>/dev/null && echo yes || echo no)
timeout 30 sh -c "echo go >'$TMP/a.go'" # no reader if A's command never ran
wait $A
rca=$?
kill -INT $H
wait $H
rch=$?
PIDS=
ok "concurrent: run A exits 0" "exit $rca: $(one_line "$TMP/a.err")" [ $rca -eq 0 ]
ok "concurrent: run B exits 0" "exit $rcb: $(one_line "$TMP/b.err")" [ $rcb -eq 0 ]
ok "concurrent: the host-wide run exits 0 on SIGINT" "exit $rch: $(one_line "$TMP/h.err")" [ $rch -eq 0 ]
ok "concurrent: B ended while A still ran (the overlap this test needs)" "A alive at B's end: $b_end_a_alive" \
	[ $b_end_a_alive = yes ]
read -r aw ar arows apid < <(counts "$TMP/a.json")
read -r bw br brows bpid < <(counts "$TMP/b.json")
read -r hw hr _ _ < <(counts "$TMP/h.json")
# A's second page_touch runs after B's run ended and detached: B's exit must not have
# taken A's hooks along.
ok "concurrent: A counts its 6000 writes (+ <= 150), including those after B ended" "A write ${aw:-?}" \
	between "${aw:-0}" 6000 6150
ok "concurrent: A counts none of B's 12000 reads (<= 150)" "A read ${ar:-?}" [ "${ar:-99999}" -le 150 ]
ok "concurrent: B counts its 12000 reads (+ <= 150)" "B read ${br:-?}" between "${br:-0}" 12000 12150
ok "concurrent: B counts none of A's 6000 writes (<= 150)" "B write ${bw:-?}" [ "${bw:-99999}" -le 150 ]
ok "concurrent: B's rows are B's command only" "rows $brows, command pid $bpid" [ "$brows" = "$bpid" ]
ok "concurrent: A's rows are A's command and nothing of B's" "rows $arows, B's pid $bpid" \
	eval '[ -n "$arows" ] && ! echo ",$arows," | grep -q ",$bpid,"'
ok "concurrent: the host-wide run saw both (writes >= A's, reads >= B's)" \
	"host write ${hw:-?} read ${hr:-?}; A write $aw, B read $br" [ "${hw:-0}" -ge "${aw:-1}" -a "${hr:-0}" -ge "${br:-1}" ]
