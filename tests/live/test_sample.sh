#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# --sample N: the stacks of 1 fault in N are taken, every table still counts every fault.
#
# Oracles: page_touch's arithmetic (W write, R read, K kernel-mode faults in its loop, its
# startup measured by a "-w 0 -r 0 -x 0" run: tests/live/test_page_touch.sh), and the
# statistics of the sampler (bpf/state.bpf.h stack_sampled()): after each fault taken, the
# next is drawn uniformly 1 to 2N - 1 faults on (mean N), per CPU. Of T faults, about T/N are
# taken: a renewal count, whose variance is about T * var / mean^3 = T (N - 1) / (3 N^2)
# (the draw's variance is N (N - 1) / 3), plus one first fault taken per CPU. The bounds
# below are that mean +- 5 standard deviations + the CPUs: a correct sampler fails them about
# once in 1.7 million runs; a sampler off by 10% (T/N of 52,000 is 5,200 +- 40) fails them.
. "$(dirname "$0")/lib.sh"

PT="$WORKLOADS/page_touch"
W=50000 R=2000 K=100 N=10
ncpus=$(nproc --all)

# sd5 T N : 5 standard deviations of N * (the stacks taken of T faults), the weighted count of
# T faults: 5 sqrt(T (N - 1) / 3), rounded up
sd5() { python3 -c "import math; print(math.ceil(5 * math.sqrt($1 * ($2 - 1) / 3)))"; }

# fields FILE : "user kernel read write exec every taken lostsum by_process_sum" of a faults JSON
fields() {
	python3 - "$1" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
d = json.loads(lines[-1])
f = d["faults"]
s = d.get("stack_sampling") or {"every": "none", "stacks_taken": "none"}
print(*(f[k] for k in ("user", "kernel", "read", "write", "exec")), s["every"], s["stacks_taken"],
      sum(d["lost"].values()), sum(p["user"] + p["kernel"] for p in f["by_process"]))
PY
}

# ---- exact counts, with --sample 10 ----
"$MMSCOPE" faults --json --svg "$TMP/base.svg" --sample $N -o "$TMP/base.json" -- \
	"$PT" -w 0 -r 0 -x 0 -k 0 >/dev/null 2>"$TMP/base.err"
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$TMP/base.json" ]; then
	fail "sample: baseline run (exit $rc: $(one_line "$TMP/base.err"))"
	exit 0
fi
read -r bu bk br bw bx _ _ _ _ < <(fields "$TMP/base.json")
"$MMSCOPE" faults --json --svg "$TMP/run.svg" --sample $N -o "$TMP/run.json" -- \
	"$PT" -w $W -r $R -k $K >"$TMP/run.out" 2>"$TMP/run.err"
rc=$?
ok "sample: faults --json --svg --sample $N exits 0" "exit $rc: $(one_line "$TMP/run.err")" [ $rc -eq 0 ]
[ -s "$TMP/run.json" ] || { fail "sample: no JSON written"; exit 0; }
read -r u k r w x every taken lost byproc < <(fields "$TMP/run.json")
TOL=10 # as in test_page_touch.sh: the baseline's own counts move by +-3 per class
ok "sample: write delta = W + K (exact counts)" "delta $((w - bw)), expected $((W + K)) +-$TOL" \
	absdiff_le $((w - bw)) $((W + K)) $TOL
ok "sample: read delta = R" "delta $((r - br)), expected $R +-$TOL" absdiff_le $((r - br)) $R $TOL
ok "sample: kernel delta = K" "delta $((k - bk)), expected $K +-$TOL" absdiff_le $((k - bk)) $K $TOL
ok "sample: by_process adds up to user + kernel" "rows $byproc, totals $((u + k))" [ "$byproc" -eq $((u + k)) ]
ok "sample: nothing lost" "lost sum $lost" [ "$lost" -eq 0 ]
ok "sample: JSON stack_sampling.every = $N" "every $every" [ "$every" = $N ]
t=$((u + k))
lo=$(((t - $(sd5 $t $N)) / N)) hi=$(((t + $(sd5 $t $N)) / N + ncpus))
ok "sample: stacks_taken ~ faults / $N" "taken $taken of $t faults, expected $lo..$hi" between "$taken" $lo $hi
ok "sample: the text of the SVG says it is sampled" "no 'stacks of 1 in $N' in the SVG" \
	grep -q "stacks of 1 in $N faults per CPU, $taken taken" "$TMP/run.svg"

# ---- the folded weights ----
"$MMSCOPE" faults --folded --sample $N -v -o "$TMP/folded" -- "$PT" -w $W -r $R -k $K \
	>/dev/null 2>"$TMP/folded.err"
rc=$?
ok "sample: faults --folded --sample $N exits 0" "exit $rc: $(one_line "$TMP/folded.err")" [ $rc -eq 0 ]
[ -s "$TMP/folded" ] || { fail "sample: no folded output"; exit 0; }
notmult=$(awk -v n=$N '$NF % n != 0' "$TMP/folded" | wc -l)
ok "sample: every folded count is a multiple of $N" "$notmult lines are not: $(awk -v n=$N '$NF % n != 0' "$TMP/folded" | head -2)" \
	[ "$notmult" -eq 0 ]
ok "sample: --folded -v says so on stderr" "$(one_line "$TMP/folded.err")" \
	grep -q "stacks: sampled, 1 event in $N" "$TMP/folded.err"
fw=$(awk '/;touch_write_pages;/ && /;\[write minor\] [0-9]+$/ { s += $NF } END { print s + 0 }' "$TMP/folded")
if [ "$fw" -eq 0 ] && ! grep -q 'touch_[a-z]*_pages' "$TMP/folded"; then
	skip "sample: weighted count under touch_write_pages (user symbols not resolved)"
else
	d=$(sd5 $W $N)
	ok "sample: weighted [write minor] under touch_write_pages ~ W" "$fw, expected $W +-$((d + N * ncpus))" \
		absdiff_le "$fw" $W $((d + N * ncpus))
	pct=$(python3 -c "print(f'{abs($fw - $W) * 100 / $W:.2f}')")
	echo "    (weighted touch_write_pages: $fw of $W, off by $pct%)"
fi
all=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/folded")
ok "sample: the folded weights add up to ~ all faults" "$all, expected $t +-$(($(sd5 $t $N) + N * ncpus))" \
	absdiff_le "$all" "$t" $(($(sd5 $t $N) + N * ncpus))

# ---- the same with frame pointers, and tlb ----
"$MMSCOPE" faults --folded --unwind fp --sample $N -o "$TMP/fp.folded" -- "$PT" -w $W >/dev/null 2>"$TMP/fp.err"
rc=$?
# Every [write minor] line: the loop's W and the startup's few dozen (2 TOL of slack).
fw=$(awk '/;\[write minor\] [0-9]+$/ { s += $NF } END { print s + 0 }' "$TMP/fp.folded")
ok "sample: --unwind fp --sample $N: weighted [write minor] ~ W" "exit $rc, $fw of $W: $(one_line "$TMP/fp.err")" \
	absdiff_le "$fw" $W $(($(sd5 $W $N) + N * ncpus + 2 * TOL * N))
"$MMSCOPE" tlb --json --pprof "$TMP/t.pb.gz" --sample 3 -o "$TMP/tlb.json" -- "$WORKLOADS/mprotect_toggle" -i 300 \
	>/dev/null 2>"$TMP/tlb.err"
rc=$?
ok "sample: tlb --sample 3 exits 0" "exit $rc: $(one_line "$TMP/tlb.err")" [ $rc -eq 0 ]
ev=$(json_get "$TMP/tlb.json" 'd["stack_sampling"]["every"]' 2>/dev/null)
ok "sample: tlb JSON stack_sampling.every = 3" "every '$ev'" [ "$ev" = 3 ]
# python3 on PATH may be another build (pyenv) without Debian's python3-protobuf.
PY=
for p in python3 /usr/bin/python3; do
	"$p" -c 'import google.protobuf' 2>/dev/null && PY=$p && break
done
if [ -n "$PY" ] && command -v protoc >/dev/null; then
	"$PY" "$(dirname "$0")/pprof_read.py" "$TMP/t.pb.gz" >"$TMP/t.facts" 2>&1
	ok "sample: the pprof profile has period 3" "$(grep -E '^(period|error)' "$TMP/t.facts" | tr '\n' ' ')" \
		grep -qx 'period 3' "$TMP/t.facts"
else
	skip "sample: the pprof period (no python3-protobuf or protoc)"
fi

# ---- without --sample (or with 1): no stack_sampling ----
"$MMSCOPE" faults --json --svg "$TMP/one.svg" --sample 1 -o "$TMP/one.json" -- "$PT" -w 100 >/dev/null 2>&1
has=$(json_get "$TMP/one.json" '"stack_sampling" in d')
ok "sample: --sample 1 takes every stack (no stack_sampling in JSON)" "stack_sampling present: $has" [ "$has" = False ]

# ---- bad values: one line, exit 2 ----
for bad in 0 -3 abc 1.5 1000001 ''; do
	"$MMSCOPE" faults --folded --sample "$bad" -- true >"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$?
	ok "sample: --sample '$bad' is refused (exit 2, one line)" "exit $rc, $(wc -l <"$TMP/bad.err") lines: $(one_line "$TMP/bad.err")" \
		[ $rc -eq 2 -a "$(wc -l <"$TMP/bad.err")" -eq 1 ]
done
"$MMSCOPE" faults --sample 4 -- true >/dev/null 2>"$TMP/bad.err"
rc=$?
ok "sample: --sample without --folded, --svg or --pprof is refused" "exit $rc: $(one_line "$TMP/bad.err")" \
	[ $rc -eq 2 ]
"$MMSCOPE" stat --sample 4 -- true >/dev/null 2>"$TMP/bad.err"
rc=$?
ok "sample: stat --sample is refused" "exit $rc: $(one_line "$TMP/bad.err")" [ $rc -eq 2 ]
