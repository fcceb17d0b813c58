#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Following children: mmscope faults -- fork_touch, with and without --no-children.
#
# fork_touch: the parent writes P pages, forks C children, each child writes Q pages of its own.
# Oracles: bpftrace on sched:sched_process_fork for the children's pids, the workload's
# arithmetic (minus a -p 0 -q 0 baseline with the same C, which measures startup and the
# copy-on-write faults fork() causes), and perf stat with and without inheritance.
. "$(dirname "$0")/lib.sh"

FT="$WORKLOADS/fork_touch"
P=1000 C=4 Q=500
BTPID=
cleanup() {
	[ -n "$BTPID" ] && kill -INT "$BTPID" 2>/dev/null && wait "$BTPID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# pct_within A B P : |A - B| <= P% of B (integers; bash arithmetic, python starts slowly here)

# summary FILE : "tpid children user kernel write minor major incomplete lost rows" where rows
# is "pid:write,pid:write,..." in by_process order
summary() {
	python3 - "$1" <<'PY'
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])
f = d["faults"]
rows = ",".join("%d:%d" % (r["pid"], r["write"]) for r in f["by_process"]) or "-"
print(d["target"]["pid"], str(d["target"]["children"]).lower(),
      *(f[k] for k in ("user", "kernel", "write", "minor", "major", "incomplete")),
      sum(d["lost"].values()), rows)
PY
}
# perf_pf ARGS... : perf stat's page-faults for fork_touch with ARGS
perf_pf() {
	perf stat -x, -e page-faults -o "$TMP/perf.csv" "$@" >/dev/null 2>"$TMP/perf.err" &&
		awk -F, '$3 == "page-faults" {print $1}' "$TMP/perf.csv"
}

# ---- bpftrace records every fork by a fork_touch task (the oracle for the child pids) ----
cat >"$TMP/forks.bt" <<'EOF'
BEGIN { printf("READY\n"); }
tracepoint:sched:sched_process_fork /comm == "fork_touch"/ {
	printf("FORK %d %d\n", args->parent_pid, args->child_pid);
}
EOF
bpftrace -B line "$TMP/forks.bt" >"$TMP/forks.txt" 2>"$TMP/bt.err" &
BTPID=$!
for _ in $(seq 200); do grep -q READY "$TMP/forks.txt" 2>/dev/null && break; sleep 0.1; done
if ! grep -q READY "$TMP/forks.txt"; then
	skip "children: child pid oracle (bpftrace did not start: $(head -c 200 "$TMP/bt.err"))"
	kill "$BTPID" 2>/dev/null
	BTPID=
fi

# ---- with children (the default) ----
"$MMSCOPE" faults --json -o "$TMP/base.json" -- "$FT" -p 0 -c $C -q 0 >/dev/null 2>"$TMP/err0" ||
	{ fail "children: baseline run failed ($(head -c 300 "$TMP/err0"))"; exit 0; }
"$MMSCOPE" faults --json -o "$TMP/kids.json" -- "$FT" -p $P -c $C -q $Q >"$TMP/kids.out" 2>"$TMP/err1"
rc=$?
ok "children: mmscope exits 0" "exit $rc: $(head -c 300 "$TMP/err1" | tr '\n' ' ')" [ $rc -eq 0 ]
[ -s "$TMP/kids.json" ] || { fail "children: no JSON written"; exit 0; }
if [ -n "$BTPID" ]; then
	sleep 0.2 # bpftrace prints from a perf buffer: let it drain
	kill -INT "$BTPID"
	wait "$BTPID"
	BTPID=
fi
line=$(tail -1 "$TMP/kids.out")
read -r _ _ _ _ bw _ _ _ _ _ < <(summary "$TMP/base.json")
read -r tpid follow u k w mn mj inc lost rows < <(summary "$TMP/kids.json")
ok "children: target.children is true by default" "children=$follow" [ "$follow" = true ]
ok "children: nothing lost" "lost sum $lost" [ "$lost" -eq 0 ]

pids=$(echo "$rows" | tr ',' '\n' | cut -d: -f1 | sort -n | tr '\n' ' ')
if grep -q READY "$TMP/forks.txt" 2>/dev/null; then
	kids=$(awk -v p="$tpid" '$1 == "FORK" && $2 == p {print $3}' "$TMP/forks.txt" | sort -n | tr '\n' ' ')
	nk=$(echo $kids | wc -w)
	ok "children: bpftrace saw the target fork $C children" "children of $tpid: '$kids'" [ "$nk" -eq $C ]
	want=$(printf '%s\n' "$tpid" $kids | sort -n | tr '\n' ' ')
	ok "children: by_process pids == target pid + its children (bpftrace)" "by_process '$pids', want '$want'" \
		[ "$pids" = "$want" ]
else
	nrows=$(echo $pids | wc -w)
	ok "children: by_process has the parent and $C children" "pids '$pids'" [ "$nrows" -eq $((C + 1)) ]
fi
# Each child writes Q pages, plus its own exit path and the copy-on-write faults on the
# stack and libc data it shares with the parent: measured 8 more writes per child.
bad=$(echo "$rows" | tr ',' '\n' | awk -F: -v p="$tpid" -v q=$Q '$1 != p && ($2 < q || $2 > q + 20)')
ok "children: each child row has Q writes (+ <= 20 fork/exit faults)" "rows $rows (pid:write), Q=$Q" [ -z "$bad" ]
# Tolerance on the whole tree: 1% of P + C*Q (30 faults). The baseline with the same C takes
# the fork-related copy-on-write faults too; runs differ by a few faults (who writes a shared
# page first, fault-around in libc), measured +-5.
ew=$(kv "$line" expected_faults)
ok "children: write delta = P + C*Q (expected_faults) +-1%" "delta $((w - bw)), expected $ew" \
	pct_within $((w - bw)) "$ew" 1
ok "children: user + kernel == minor + major + incomplete" "$u + $k vs $mn + $mj + $inc" \
	[ $((u + k)) -eq $((mn + mj + inc)) ]
# perf stat follows children by default (inherit). 2%: separate executions (+-5 faults) and
# mmscope's 1-3 pre-exec faults, against ~3150.
ppf=$(perf_pf -- "$FT" -p $P -c $C -q $Q)
ok "children: user + kernel vs perf stat (inherit) within 2%" "mmscope $((u + k)), perf '$ppf'" \
	pct_within $((u + k)) "${ppf:-0}" 2

# ---- --no-children: only the parent ----
"$MMSCOPE" faults --json --no-children -o "$TMP/base1.json" -- "$FT" -p 0 -c $C -q 0 >/dev/null 2>"$TMP/err2" ||
	{ fail "children: --no-children baseline run failed ($(head -c 300 "$TMP/err2"))"; exit 0; }
"$MMSCOPE" faults --json --no-children -o "$TMP/one.json" -- "$FT" -p $P -c $C -q $Q >"$TMP/one.out" 2>"$TMP/err3"
rc=$?
ok "children: --no-children: mmscope exits 0" "exit $rc: $(head -c 300 "$TMP/err3" | tr '\n' ' ')" [ $rc -eq 0 ]
line=$(tail -1 "$TMP/one.out")
read -r _ _ _ _ bw _ _ _ _ _ < <(summary "$TMP/base1.json")
read -r tpid follow u k w mn mj inc lost rows < <(summary "$TMP/one.json")
ok "children: --no-children: target.children is false" "children=$follow" [ "$follow" = false ]
ok "children: --no-children: by_process holds only the parent" "rows '$rows', target $tpid" \
	[ "${rows%%:*}" = "$tpid" -a "${rows#*,}" = "$rows" ]
# The parent alone: P writes over its baseline; 10 faults of slack, as in test_page_touch.sh
# (startup faults move by +-3 between runs). The children's C*Q = 2000 would be far outside.
epf=$(kv "$line" expected_parent_faults)
ok "children: --no-children: write delta = P (expected_parent_faults) +-10" "delta $((w - bw)), expected $epf" \
	absdiff_le $((w - bw)) "$epf" 10
ppf=$(perf_pf --no-inherit -- "$FT" -p $P -c $C -q $Q)
# 2%, as above, against ~1080.
ok "children: --no-children: user + kernel vs perf stat --no-inherit within 2%" "mmscope $((u + k)), perf '$ppf'" \
	pct_within $((u + k)) "${ppf:-0}" 2
