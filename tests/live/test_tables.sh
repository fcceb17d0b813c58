#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Bounded tables whose rows add up (issue 26 item 2): a command that runs N short processes
# (more than --max-rows M holds), then a heavy page_touch -w W late.
#
# Checked: by_process's rows, [other] included, add up to the totals exactly, count field by
# count field; top_locations' likewise; the late page_touch has a row of its own holding its W
# writes (+ its start-up and exit faults, measured by a page_touch -w 0 run under mmscope: the
# baseline); the rows of the processes gone were taken out of the in-kernel table during the
# run (else the late process would have found it full); the totals agree with perf stat's
# page-faults on the same command (an independent count of another run: within 2%, the
# processes' start-up varies by a few faults each with ASLR); and with --folded, the folded
# lines (and any [other] line) add up to perf's count too.
. "$(dirname "$0")/lib.sh"

PT="$WORKLOADS/page_touch"
N=600 M=32 W=5000
CMD=(sh -c "i=0; while [ \$i -lt $N ]; do /bin/true; i=\$((i + 1)); done; sleep 1.2; $PT -w $W -r 0 -x 0 -k 0")

# ---- baseline: page_touch's own faults beyond its W writes ----
"$MMSCOPE" faults --json -o "$TMP/base.json" -- "$PT" -w 0 -r 0 -x 0 -k 0 >/dev/null 2>"$TMP/base.err"
bw=$(json_get "$TMP/base.json" '[r["write"] for r in d["faults"]["by_process"] if r["pid"] is not None][0]')
ok "tables: baseline run" "writes ${bw:-?}: $(one_line "$TMP/base.err")" [ -n "$bw" ]

# ---- the run: N short processes fill a table of M rows, then the heavy one ----
"$MMSCOPE" faults --json --max-rows $M -o "$TMP/run.json" -- "${CMD[@]}" >"$TMP/run.out" 2>"$TMP/run.err"
rc=$?
ok "tables: mmscope --max-rows $M exits 0" "exit $rc: $(one_line "$TMP/run.err")" [ $rc -eq 0 ]
[ -s "$TMP/run.json" ] || { fail "tables: no JSON"; exit 0; }
python3 - "$TMP/run.json" >"$TMP/sums.txt" <<'PY'
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])
f = d["faults"]
rows, locs = f["by_process"], f["top_locations"]
tot = f["user"] + f["kernel"]
for k in ("user", "kernel", "read", "write", "exec", "minor", "major"):
    print("by_process." + k, sum(r[k] for r in rows), f[k])
print("top_locations.count", sum(r["count"] for r in locs), tot)
other = [r for r in rows if r["pid"] is None]
print("other_last", int(bool(other) and rows[-1] is other[0] and rows[-1]["comm"] == "[other]"), 1)
pt = [r for r in rows if r["comm"] == "page_touch"]
print("pt_rows", len(pt), 1)
print("pt_write", pt[0]["write"] if pt else -1, "-")
print("total", tot, "-")
print("nrows", len(rows) - len(other), "-")
PY
while read -r what got want; do
	case $what in
	pt_write) ptw=$got ;;
	total) total=$got ;;
	nrows) nrows=$got ;;
	*) ok "tables: $what: rows (with [other]) = $want" "got $got, want $want" [ "$got" = "$want" ] ;;
	esac
done <"$TMP/sums.txt"
ok "tables: the late page_touch's row holds its W writes + the baseline's ($W + $bw)" \
	"write ${ptw:-?}" between "${ptw:--1}" $((W + bw - 5)) $((W + bw + 5))
# More rows than the table holds: those of processes gone were taken out during the run.
ok "tables: rows shown ($nrows) > --max-rows $M: the rows of processes gone left the table" \
	"rows $nrows" [ "${nrows:-0}" -gt $M ]

# ---- the totals against perf stat's page-faults on the same command ----
perf stat -x, -e page-faults -o "$TMP/perf.txt" -- "${CMD[@]}" >/dev/null 2>&1
pf=$(awk -F, '/page-faults/ {print $1}' "$TMP/perf.txt")
ok "tables: user + kernel within 2% of perf stat's page-faults (another run)" \
	"mmscope $total, perf ${pf:-?}" pct_within "${total:-0}" "${pf:-1}" 2

# ---- folded: the lines, [other] included, add up to the same count ----
"$MMSCOPE" faults --folded --max-rows $M -o "$TMP/run.folded" -- "${CMD[@]}" >/dev/null 2>"$TMP/f.err"
rc=$?
fs=$(awk '{s += $NF} END {print s + 0}' "$TMP/run.folded")
ok "tables: --folded exits 0" "exit $rc: $(one_line "$TMP/f.err")" [ $rc -eq 0 ]
ok "tables: folded lines' sum within 2% of perf stat's page-faults" "folded $fs, perf ${pf:-?}" \
	pct_within "${fs:-0}" "${pf:-1}" 2

# ---- bad input ----
"$MMSCOPE" faults --max-rows 0 -- true >"$TMP/bad.out" 2>"$TMP/bad.err"
rc=$?
ok "tables: --max-rows 0 refused: one line, exit 2" "exit $rc: $(one_line "$TMP/bad.err")" \
	eval "[ $rc -eq 2 ] && [ \$(wc -l <'$TMP/bad.err') -eq 1 ] && [ ! -s '$TMP/bad.out' ]"
"$MMSCOPE" tlb --max-rows 4 -- true >"$TMP/bad2.out" 2>"$TMP/bad2.err"
rc=$?
ok "tables: --max-rows refused by tlb (faults only): one line, exit 2" "exit $rc: $(one_line "$TMP/bad2.err")" \
	eval "[ $rc -eq 2 ] && [ \$(wc -l <'$TMP/bad2.err') -eq 1 ] && [ ! -s '$TMP/bad2.out' ]"
