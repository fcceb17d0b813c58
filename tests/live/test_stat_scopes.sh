#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope stat counts minor/major faults with the kernel's own counters (perf counting events,
# no BPF program: hook method "perf-count") wherever the target is a scope such an event can
# have. Each scope is checked against page_touch's arithmetic and against the fault entries
# the BPF program counted in the same run (an independent hook: the exceptions tracepoints):
# every fault that entered completed, so entries == minor + major, incomplete 0.
# Filters a counting event cannot express fall back to the BPF program, with the reason.
. "$(dirname "$0")/lib.sh"

PT="$WORKLOADS/page_touch"

# fields FILE : "method user+kernel minor+major incomplete why" of a stat --json run
fields() {
	python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["faults"]
hooks = [h for h in d.get("hooks", []) if h.get("event") == "fault-completion"]
chosen = [h.get("method") for h in hooks if h.get("chosen")]
why = [h.get("reason") or "" for h in hooks if h.get("method") == "perf-count"]
print(chosen[0] if chosen else "-", f["user"] + f["kernel"], f["minor"] + f["major"],
      f["incomplete"], (why[0] if why else "-").replace(" ", "_") or "-")
PY
}

# held NAME COMMAND : start COMMAND in sh once $TMP/NAME.go is written; sets HELD (its pid)
held() {
	mkfifo "$TMP/$1.go"
	sh -c "read x <'$TMP/$1.go'; $2" &
	HELD=$!
}

# run_held NAME MMSCOPE_ARGS... : stat --json on the held target; go once attached; wait
run_held() {
	local name=$1
	shift
	"$MMSCOPE" stat --json -o "$TMP/$name.json" "$@" >/dev/null 2>"$TMP/$name.err" &
	local mm=$!
	if attached $mm; then
		echo go >"$TMP/$name.go"
	else
		fail "$name: mmscope never attached ($(one_line "$TMP/$name.err"))"
		kill $mm $HELD 2>/dev/null
	fi
	wait $mm
	RC=$?
	wait $HELD 2>/dev/null
}

# check NAME LO HI : counted by the kernel, minor+major in [LO, HI], entries == completions
check() {
	local name=$1 lo=$2 hi=$3 m e d inc why
	ok "$name: exit 0" "exit $RC: $(one_line "$TMP/$name.err")" [ "$RC" -eq 0 ]
	read -r m e d inc why < <(fields "$TMP/$name.json" 2>/dev/null) || { fail "$name: no JSON"; return; }
	ok "$name: fault-completion counted by the kernel (perf-count)" "method $m" [ "$m" = perf-count ]
	ok "$name: minor + major in [$lo, $hi] (page_touch's arithmetic)" "minor+major $d" between "$d" "$lo" "$hi"
	ok "$name: entries (tp_btf program) == completions (kernel counters), incomplete 0" \
		"entries $e, completions $d, incomplete $inc" [ "$e" -eq "$d" -a "$inc" -eq 0 ]
}

# ---- -- COMMAND with its children: sh runs page_touch twice (2 x 3000 writes) ----
"$MMSCOPE" stat --json -o "$TMP/cmd.json" -- sh -c "'$PT' -w 3000 >/dev/null; '$PT' -w 3000 >/dev/null" \
	>/dev/null 2>"$TMP/cmd.err"
RC=$?
# 6000 writes, each page_touch's start-up (~80 faults: loader, libc) and sh's (~100) on top.
check cmd 6000 6400

# ---- -- COMMAND --no-children: the children's 6000 faults are not the command's ----
"$MMSCOPE" stat --no-children --json -o "$TMP/nochild.json" -- sh -c "'$PT' -w 3000 >/dev/null; '$PT' -w 3000 >/dev/null" \
	>/dev/null 2>"$TMP/nochild.err"
RC=$?
check nochild 1 400

# ---- -p: a running sh and the page_touch it starts once mmscope is attached ----
held pid "'$PT' -w 4000 >/dev/null"
run_held pid -p $HELD
check pid 4000 4300

# ---- -p --no-children: the same, without the child ----
held pidnc "'$PT' -w 4000 >/dev/null"
run_held pidnc --no-children -p $HELD
check pidnc 0 300

# ---- -t: one thread (sh execs page_touch: the same task); -t runs until -d ----
held tid "exec '$PT' -w 5000 >/dev/null"
run_held tid -t $HELD -d 2
check tid 5000 5300

# ---- -c: a cgroup v2 directory and its descendants; page_touch runs in a child cgroup ----
CG2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
if [ -n "$CG2" ] && mkdir "$CG2/mmscope-test-$$" 2>/dev/null && mkdir "$CG2/mmscope-test-$$/sub" 2>/dev/null; then
	CG="$CG2/mmscope-test-$$"
	mkfifo "$TMP/cg.go"
	sh -c "echo \$\$ >'$CG/sub/cgroup.procs' && read x <'$TMP/cg.go' && exec '$PT' -w 4500 >/dev/null" &
	HELD=$!
	"$MMSCOPE" stat --json -o "$TMP/cg.json" -c "$CG" -d 2 >/dev/null 2>"$TMP/cg.err" &
	MM=$!
	if attached $MM; then echo go >"$TMP/cg.go"; else fail "cg: mmscope never attached ($(one_line "$TMP/cg.err"))"; fi
	wait $HELD
	wait $MM
	RC=$?
	check cg 4500 4800
	rmdir "$CG/sub" "$CG" 2>/dev/null
else
	skip "-c: no cgroup v2 hierarchy to make a test cgroup in"
fi

# ---- host-wide: counted per CPU; page_touch's 8000 writes are among the host's faults ----
"$MMSCOPE" stat --json -o "$TMP/host.json" -- "$PT" -w 8000 >/dev/null 2>"$TMP/host.err" # warm the page cache
# What else faults on this host, measured just before the run (/proc/vmstat pgfault over 1 s):
# the tolerance below grows with it.
pgfault() { awk '$1 == "pgfault" { print $2 }' /proc/vmstat; }
p0=$(pgfault)
sleep 1
bg_rate=$(($(pgfault) - p0))
mkfifo "$TMP/host.go"
sh -c "read x <'$TMP/host.go'; '$PT' -w 8000 >/dev/null" &
HELD=$!
t0=$(now_ms)
"$MMSCOPE" stat --json -o "$TMP/host.json" -d 1.5 >/dev/null 2>"$TMP/host.err" &
MM=$!
if attached $MM; then echo go >"$TMP/host.go"; else fail "host: mmscope never attached ($(one_line "$TMP/host.err"))"; fi
wait $HELD
wait $MM
RC=$?
wall_ms=$(($(now_ms) - t0))
read -r m e d inc _ < <(fields "$TMP/host.json")
ok "host: exit 0" "exit $RC: $(one_line "$TMP/host.err")" [ "$RC" -eq 0 ]
ok "host: fault-completion counted by the kernel (perf-count)" "method $m" [ "$m" = perf-count ]
ok "host: minor + major >= page_touch's 8000" "minor+major $d" [ "$d" -ge 8000 ]
# Host-wide, entries and completions differ by the faults in flight when the run starts and
# ends (1% on a quiet host), and by the faults other processes take while one of the two
# counters is attached and the other not: at most all of theirs outside the 1.5 s during which
# both count, at the rate measured before the run.
allowed=$((d / 100 + bg_rate * (wall_ms - 1500) / 1000))
echo "# host: entries $e, completions $d, allowed $allowed (others $bg_rate faults/s, run $wall_ms ms)"
ok "host: entries (tp_btf program) vs completions (kernel counters) within 1% + others' faults outside the traced 1.5 s" \
	"entries $e, completions $d, allowed $allowed: others $bg_rate/s, run $wall_ms ms" absdiff_le "$e" "$d" "$allowed"

# ---- filters a counting event cannot express: the BPF program counts, and says why ----
"$MMSCOPE" stat --json -o "$TMP/cpu.json" -C 0 -- "$PT" -w 100 >/dev/null 2>"$TMP/cpu.err"
read -r m _ _ _ why < <(fields "$TMP/cpu.json")
ok "-C with a command: the program counts (perf), not the kernel" "method $m" [ "$m" = perf ]
ok "-C with a command: the perf-count refusal says why" "reason '${why//_/ }'" grep -q -- "-C with a process" <<<"${why//_/ }"
"$MMSCOPE" stat --json -o "$TMP/two.json" -p $$ -t $$ -d 0.2 >/dev/null 2>"$TMP/two.err"
read -r m _ _ _ why < <(fields "$TMP/two.json")
ok "-p with -t: the program counts (perf)" "method $m" [ "$m" = perf ]
ok "-p with -t: the perf-count refusal says why" "reason '${why//_/ }'" grep -q "two target filters" <<<"${why//_/ }"
"$MMSCOPE" faults --json -o "$TMP/faults.json" -- "$PT" -w 100 >/dev/null 2>"$TMP/faults.err"
read -r m _ _ _ why < <(fields "$TMP/faults.json")
ok "faults (latency): never the kernel's counters" "method $m" [ "$m" != perf-count ]
ok "faults (latency): the perf-count refusal says why" "reason '${why//_/ }'" grep -q "counting runs only" <<<"${why//_/ }"
