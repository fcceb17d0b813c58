#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# --bpf-stats: what mmscope's own BPF programs cost in the run (issue 29 item 3), from the
# kernel's run-time statistics, checked against what the programs must have run for:
#  - the fault-entry and fault-completion programs hang on host-wide hooks (the exceptions
#    tracepoints; perf's page-fault events on every CPU): each ran at least once for every
#    fault of the command (its JSON counts) and at most once for every fault the host took
#    while mmscope ran (/proc/vmstat pgfault around the run, with 2% and 200 of slack for
#    faults that enter and are never accounted: spurious and retried ones);
#  - the sums and ns_per_run are the rows' arithmetic;
#  - without --bpf-stats and with kernel.bpf_stats_enabled = 0 the section is null with the
#    reason, and the sysctl is as it was after a run with --bpf-stats.
. "$(dirname "$0")/lib.sh"

SYSCTL=/proc/sys/kernel/bpf_stats_enabled
[ -w "$SYSCTL" ] || {
	skip "bpf_stats: $SYSCTL not writable"
	exit 0
}
stats_orig=$(cat "$SYSCTL")
trap 'echo "$stats_orig" > "$SYSCTL"; rm -rf "$TMP"' EXIT
echo 0 >"$SYSCTL"

N=20000
pg() { awk '$1 == "pgfault" {print $2}' /proc/vmstat; }
p0=$(pg)
"$MMSCOPE" faults --bpf-stats --json -o "$TMP/on.json" -- "$WORKLOADS/page_touch" -w $N -r 0 -x 0 \
	>"$TMP/on.out" 2>"$TMP/on.err"
rc=$?
p1=$(pg)
check "bpf_stats: faults --bpf-stats exits 0" test $rc -eq 0
read -r verdict detail < <(python3 - "$TMP/on.json" $((p1 - p0)) <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
host = int(sys.argv[2])
f, b = d["faults"], d.get("bpf_programs")
bad = []
if not isinstance(b, dict):
    print("FAIL", f"bpf_programs={b!r} unavailable={d.get('unavailable')!r}")
    sys.exit()
progs = {p["name"]: p for p in b["programs"]}
if b["statistics"] != "--bpf-stats":
    bad.append(f"statistics={b['statistics']!r}")
if sum(p["runs"] for p in progs.values()) != b["runs"] or \
   sum(p["run_time_ns"] for p in progs.values()) != b["run_time_ns"]:
    bad.append("the rows do not add up to runs/run_time_ns")
for p in progs.values():
    if p["runs"] <= 0 or p["run_time_ns"] <= 0 or \
       abs(p["ns_per_run"] - p["run_time_ns"] / p["runs"]) > 0.01 * p["ns_per_run"] + 1:
        bad.append(f"row {p}")
# Every fault program hangs on a host-wide hook (a tracepoint, or a perf event on each CPU):
# it runs for the command's faults and at most for every fault the host took meanwhile.
def runs_of(*names):
    return sum(progs[n]["runs"] for n in names if n in progs)
entry = runs_of("pf_user_btf", "pf_user_tp", "pf_perf", "pf_kernel_btf", "pf_kernel_tp")
done = runs_of("pf_done_minor", "pf_done_major")
for what, runs, want in (("fault entry", entry, f["user"] + f["kernel"]),
                         ("fault completion", done, f["minor"] + f["major"])):
    if not (want <= runs <= host * 1.02 + 200):
        bad.append(f"{what} ran {runs} times: want {want} (the command's)..{host} (vmstat "
                   f"pgfault) of {sorted(progs)}")
runs = entry
want = f["user"] + f["kernel"]
print("FAIL" if bad else "PASS", "; ".join(bad) or
      f"entry {runs} runs (command {want}, host {host}), completion {f['minor']}+{f['major']}, "
      f"{b['run_time_ns'] / max(b['runs'], 1):.0f} ns a run")
PY
)
if [ "$verdict" = PASS ]; then pass "bpf_stats: runs = the faults they served ($detail)"; else
	fail "bpf_stats: runs = the faults they served ($detail)"; fi
check "bpf_stats: kernel.bpf_stats_enabled as it was after --bpf-stats" test "$(cat "$SYSCTL")" = 0

# Statistics off, no --bpf-stats: null and the reason.
"$MMSCOPE" faults --json -o "$TMP/off.json" -- "$WORKLOADS/page_touch" -w 100 -r 0 -x 0 >/dev/null 2>&1
got=$(json_get "$TMP/off.json" 'repr(d.get("bpf_programs", "MISSING")) + " | " + (d.get("unavailable") or {}).get("bpf_programs", "")')
case "$got" in
"None | "*"--bpf-stats"*) pass "bpf_stats: off: null, the reason names --bpf-stats" ;;
*) fail "bpf_stats: off: null, the reason names --bpf-stats (got $got)" ;;
esac

# The sysctl on: read without --bpf-stats, and said so.
echo 1 >"$SYSCTL"
"$MMSCOPE" stat --json -o "$TMP/sysctl.json" -- "$WORKLOADS/page_touch" -w 100 -r 0 -x 0 >/dev/null 2>&1
got=$(json_get "$TMP/sysctl.json" '(d.get("bpf_programs") or {}).get("statistics")')
check "bpf_stats: kernel.bpf_stats_enabled = 1 is used without --bpf-stats ($got)" \
	test "$got" = kernel.bpf_stats_enabled
echo 0 >"$SYSCTL"

# Text: the section with -v or --bpf-stats; its "all" row the sum of the program rows.
"$MMSCOPE" faults --bpf-stats -- "$WORKLOADS/page_touch" -w 1000 -r 0 -x 0 >"$TMP/text" 2>&1
sum_ok=$(awk '/^mmscope.s BPF programs/ {on = 1; next} on && NF == 4 && $1 != "all" {r += $2}
	on && $1 == "all" {print (r == $2 && r > 0) ? "yes" : "no " r " vs " $2; exit}' "$TMP/text")
check "bpf_stats: text table, its all row the sum of the programs' ($sum_ok)" test "$sum_ok" = yes

# Bad use: one line, non-zero, no program left behind.
before=$(bpf_prog_count)
"$MMSCOPE" serve --bpf-stats -d 1 >"$TMP/serve.out" 2>"$TMP/serve.err"
rc=$?
check "bpf_stats: serve --bpf-stats refused with one line ($(one_line "$TMP/serve.err"))" \
	test $rc -ne 0 -a "$(wc -l <"$TMP/serve.err")" -eq 1
check "bpf_stats: no BPF program left behind" test "$(bpf_prog_count)" -le "$before"
