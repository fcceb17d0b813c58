#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope stat --json -- page_touch: fault counts against the workload's arithmetic and perf,
# and the hardware TLB-miss counters against what perf says the PMU can do.
#
# The fault counts come from the same hooks as 'mmscope faults' (see test_page_touch.sh for
# how they relate to perf's page-faults); here they must match page_touch's expected_*
# numbers over a -w 0 -r 0 -x 0 -k 0 baseline, and perf stat's counts on the same command.
. "$(dirname "$0")/lib.sh"

PT="$WORKLOADS/page_touch"
W=3000 R=1000 X=100 K=200


# fields FILE : counts, then whether faults has no histogram keys, then the TLB fields:
# "user kernel read write exec minor major incomplete lost nohist dtlb itlb dreason ireason"
fields() {
	python3 - "$1" <<'PY'
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])
f, t, u = d["faults"], d["tlb_misses"], d.get("unavailable", {})
nohist = int(not any(k.startswith("latency") or k == "by_process" for k in f))
def val(v): return "null" if v is None else str(v)
def why(k): return (u.get("tlb_misses." + k) or "-").replace(" ", "_")
print(*(f[k] for k in ("user", "kernel", "read", "write", "exec", "minor", "major", "incomplete")),
      sum(d["lost"].values()), nohist, val(t["dtlb_load_misses"]), val(t["itlb_load_misses"]),
      why("dtlb_load_misses"), why("itlb_load_misses"))
PY
}

"$MMSCOPE" stat --json -o "$TMP/base.json" -- "$PT" -w 0 -r 0 -x 0 -k 0 >/dev/null 2>"$TMP/err0" ||
	{ fail "stat: baseline run failed ($(head -c 300 "$TMP/err0" | tr '\n' ' '))"; exit 0; }
"$MMSCOPE" stat --json -o "$TMP/run.json" -- "$PT" -w $W -r $R -x $X -k $K >"$TMP/out" 2>"$TMP/err"
rc=$?
ok "stat: exit 0 (the command's status)" "exit $rc: $(head -c 300 "$TMP/err" | tr '\n' ' ')" [ $rc -eq 0 ]
[ -s "$TMP/run.json" ] || { fail "stat: no JSON written"; exit 0; }
line=$(tail -1 "$TMP/out")
ew=$(kv "$line" expected_write) er=$(kv "$line" expected_read)
ex=$(kv "$line" expected_exec) ek=$(kv "$line" expected_kernel)
read -r _ bk br bw bx _ _ _ _ _ _ _ _ _ < <(fields "$TMP/base.json")
read -r u k r w x mn mj inc lost nohist dtlb itlb dwhy iwhy < <(fields "$TMP/run.json")

ok "stat: nothing lost" "lost sum $lost" [ "$lost" -eq 0 ]
ok "stat: faults has counts only (no histograms, no tables)" "nohist=$nohist" [ "$nohist" = 1 ]
# Tolerance 10 faults per class, as in test_page_touch.sh: the baseline's startup faults move
# by +-3 per class between runs. The K kernel-mode faults are writes (clearing user pages).
ok "stat: write delta = expected_write + expected_kernel (+-10)" "delta $((w - bw)), expected $((ew + ek))" \
	absdiff_le $((w - bw)) $((ew + ek)) 10
ok "stat: read delta = expected_read (+-10)" "delta $((r - br)), expected $er" absdiff_le $((r - br)) "$er" 10
ok "stat: exec delta = expected_exec (+-10)" "delta $((x - bx)), expected $ex" absdiff_le $((x - bx)) "$ex" 10
ok "stat: kernel delta = expected_kernel (+-10)" "delta $((k - bk)), expected $ek" absdiff_le $((k - bk)) "$ek" 10
ok "stat: user + kernel == minor + major + incomplete" "$u + $k vs $mn + $mj + $inc" [ $((u + k)) -eq $((mn + mj + inc)) ]

perf stat -x, -e page-faults,minor-faults,major-faults -o "$TMP/perf.csv" -- "$PT" -w $W -r $R -x $X -k $K >/dev/null 2>&1
ppf=$(awk -F, '$3 == "page-faults" {print $1}' "$TMP/perf.csv")
pmin=$(awk -F, '$3 == "minor-faults" {print $1}' "$TMP/perf.csv")
pmaj=$(awk -F, '$3 == "major-faults" {print $1}' "$TMP/perf.csv")
# 2%: separate executions plus mmscope's 1-3 pre-exec faults, against ~4360 (see test_page_touch.sh).
ok "stat: user + kernel vs perf page-faults within 2%" "mmscope $((u + k)), perf '$ppf'" pct_within $((u + k)) "${ppf:-0}" 2
ok "stat: minor + major vs perf minor-faults + major-faults within 2%" "mmscope $((mn + mj)), perf '$pmin'+'$pmaj'" \
	pct_within $((mn + mj)) $((${pmin:-0} + ${pmaj:-0})) 2

# ---- hardware TLB misses: what perf says the PMU supports decides the expectation ----
perf stat -x, -e dTLB-load-misses,iTLB-load-misses -o "$TMP/pmu.csv" -- true >/dev/null 2>&1
for ev in dTLB-load-misses:dtlb:"$dtlb":"$dwhy" iTLB-load-misses:itlb:"$itlb":"$iwhy"; do
	IFS=: read -r pev name v why <<<"$ev"
	pval=$(awk -F, -v e="$pev" '$3 == e {print $1}' "$TMP/pmu.csv")
	case $pval in
	"<not supported>" | "<not counted>" | "")
		ok "stat: ${name}_load_misses is null (perf: $pev ${pval:-missing})" "value $v" [ "$v" = null ]
		ok "stat: unavailable gives a reason for ${name}_load_misses" "reason '${why//_/ }'" [ "$why" != - ]
		;;
	*)
		# The PMU counts it: mmscope must report a number (any count >= 0 of a real run).
		ok "stat: ${name}_load_misses is a number (perf counts $pev: $pval)" "value $v" \
			grep -qE '^[0-9]+$' <<<"$v"
		;;
	esac
done
