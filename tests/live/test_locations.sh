#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope faults: the top fault locations against page_touch's arithmetic. Each write fault of
# its loop is taken by one instruction of touch_write_pages, each read fault by one of
# touch_read_pages, each kernel-mode fault in the kernel's /dev/zero read; the exec faults land
# in its memfd (no symbols: named memfd:...+0xOFFSET in that DSO). Locations are counted per (process, address
# space, instruction) in the kernel and merged by symbol here, so the same code run by several
# processes (and re-exec'ed: a new address space) adds up.
. "$(dirname "$0")/lib.sh"

PT="$WORKLOADS/page_touch"
W=3000 R=1000 X=50 K=200

# loc FILE SYMBOL|* DSO-SUBSTRING : the summed count of the rows with that symbol and DSO
loc() {
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(r["count"] for r in d["faults"]["top_locations"]
          if sys.argv[2] in ("*", r["symbol"]) and sys.argv[3] in r["dso"]))
PY
}

"$MMSCOPE" faults --json --top 200 -o "$TMP/one.json" -- "$PT" -w $W -r $R -x $X -k $K >/dev/null 2>"$TMP/one.err"
rc=$?
ok "locations: exit 0" "exit $rc: $(one_line "$TMP/one.err")" [ $rc -eq 0 ]
ok "locations: touch_write_pages holds the $W write faults" "$(loc "$TMP/one.json" touch_write_pages page_touch)" \
	[ "$(loc "$TMP/one.json" touch_write_pages page_touch)" -eq $W ]
ok "locations: touch_read_pages holds the $R read faults" "$(loc "$TMP/one.json" touch_read_pages page_touch)" \
	[ "$(loc "$TMP/one.json" touch_read_pages page_touch)" -eq $R ]
# The memfd's code has no symbols: its rows are named by the file and the offset in it, a row
# per address (perf report's way), so --top 200 keeps them all.
ok "locations: the memfd's code holds the $X exec faults (no symbols: memfd:...+0xOFFSET)" "$(loc "$TMP/one.json" '*' memfd:)" \
	[ "$(loc "$TMP/one.json" '*' memfd:)" -eq $X ]
bad=$(json_get "$TMP/one.json" '[r["symbol"] for r in d["faults"]["top_locations"] if "memfd:" in r["dso"] and "+0x" not in r["symbol"]]')
ok "locations: the memfd's rows are named file+0xOFFSET" "not so: $bad" [ "$bad" = "[]" ]
# The kernel function that clears the pages depends on the kernel (read_zero on 6.18); a few
# kernel-mode faults of the start-up (exec, ld.so's system calls) come on top.
ok "locations: kernel rows hold the $K kernel-mode faults (+ <= 20 start-up)" "$(loc "$TMP/one.json" '*' '[kernel]')" \
	between "$(loc "$TMP/one.json" '*' '[kernel]')" $K $((K + 20))

# Three processes, one of them exec'ed twice (sh -c 'exec page_touch' after a fork): one row.
"$MMSCOPE" faults --json --top 50 -o "$TMP/three.json" -- sh -c \
	"'$PT' -w 1000 >/dev/null; '$PT' -w 1000 >/dev/null; exec '$PT' -w 1000 >/dev/null" >/dev/null 2>"$TMP/three.err"
rc=$?
ok "locations, 3 processes: exit 0" "exit $rc: $(one_line "$TMP/three.err")" [ $rc -eq 0 ]
ok "locations, 3 processes: one touch_write_pages row holds all 3000 writes" \
	"$(loc "$TMP/three.json" touch_write_pages page_touch)" [ "$(loc "$TMP/three.json" touch_write_pages page_touch)" -eq 3000 ]

# ---- the per-process table's name: the new image's after an exec ----
# sh takes a few faults as "sh", then execs page_touch (same pid): the row is page_touch's,
# and holds both images' faults (>= its 2000 writes).
"$MMSCOPE" faults --json -o "$TMP/exec.json" -- sh -c "exec '$PT' -w 2000 >/dev/null" >/dev/null 2>"$TMP/exec.err"
read -r comm writes < <(python3 -c "
import json, sys
rows = json.load(open(sys.argv[1]))['faults']['by_process']
print(rows[0]['comm'], rows[0]['write']) if len(rows) == 1 else print('rows', len(rows))" "$TMP/exec.json")
ok "by_process: one row for the exec'ed pid, named by the new image" "comm $comm, writes $writes" \
	[ "$comm" = page_touch ]
ok "by_process: that row holds the 2000 writes" "writes $writes" [ "${writes:-0}" -ge 2000 ]

# ---- thousands of short processes: rows by code, raw addresses settled while held ----
# N page_touch processes, each a new address space (ASLR: other addresses) and a new image of
# the mmap records: more locations in all than the location table holds (2^17), and more mmap
# records (~10 a process) than the log keeps (64k). Each process's W writes are taken by one
# instruction of touch_write_pages, the same (build ID, offset) in all: that row holds N * W;
# its X exec faults land in its memfd (no build ID: settled by its path), N * X in all.
# Per-process rows filled the table (given up into [other]), the records the log (the rest
# [unknown]).
N=8000 W=20 X=2
"$MMSCOPE" faults --json --top 100 -o "$TMP/many.json" -- sh -c \
	"i=0; while [ \$i -lt $N ]; do '$PT' -w $W -x $X >/dev/null; i=\$((i + 1)); done" >/dev/null 2>"$TMP/many.err"
rc=$?
ok "locations, $N processes: exit 0" "exit $rc: $(one_line "$TMP/many.err")" [ $rc -eq 0 ]
read -r tw memfd unknown other rows total < <(python3 - "$TMP/many.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["faults"]
locs = f["top_locations"]
def of(sym):
    return sum(r["count"] for r in locs if r["symbol"] == sym)
print(of("touch_write_pages"), sum(r["count"] for r in locs if "memfd:" in r["dso"]),
      of("[unknown]"), of("[other]"), sum(r["count"] for r in locs), f["user"] + f["kernel"])
PY
)
ok "locations, $N processes: touch_write_pages holds the $N x $W writes" "got ${tw:-?}" \
	[ "${tw:-0}" -eq $((N * W)) ]
ok "locations, $N processes: the memfd's rows hold the $N x $X exec faults" "got ${memfd:-?}" \
	[ "${memfd:-0}" -eq $((N * X)) ]
ok "locations, $N processes: [unknown] under 2% of $total" "[unknown] ${unknown:-?}" \
	[ $((${unknown:-1} * 50)) -lt "${total:-0}" ]
ok "locations, $N processes: [other] under 2% of $total (rows by code: the table is not full)" \
	"[other] ${other:-?}" [ $((${other:-1} * 50)) -lt "${total:-0}" ]
ok "locations, $N processes: the rows ([other] included) add up to user + kernel" \
	"rows ${rows:-?}, faults ${total:-?}" [ "${rows:--1}" = "${total:--2}" ]
ok "locations, $N processes: no mmap record lost" "$(one_line "$TMP/many.err")" \
	eval "! grep -q 'mmap records lost' '$TMP/many.err'"
