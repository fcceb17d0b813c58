# SPDX-License-Identifier: GPL-2.0
# mmscope switch: classes checked against the workload's structure and perf's count.
source "$(dirname "$0")/lib.sh"

R=5000
# Two processes pinned to one CPU, ping-ponging over pipes: each round trip switches
# ping -> pong -> ping, two changes of address space.
"$MMSCOPE" switch --json -o "$TMP/p.json" -- "$WORKLOADS/pingpong" -r $R >/dev/null
total=$(json_get "$TMP/p.json" 'd["switch"]["total"]')
changes=$(json_get "$TMP/p.json" 'd["switch"]["mm_changes"]')
same=$(json_get "$TMP/p.json" 'd["switch"]["same_mm"]')
kern=$(json_get "$TMP/p.json" 'd["switch"]["kernel"]')
echo "# processes: total=$total mm_changes=$changes same_mm=$same kernel=$kern"
check "switch_identity" [ $((same + changes + kern)) -eq "$total" ]
# The per-process rows hold every counted switch once (a switch counts for one traced side),
# their per-CPU pending counts added at the end: exact, class by class.
rows=$(json_get "$TMP/p.json" '"%d %d %d %d" % tuple(sum(x[k] for x in d["switch"]["by_process"]) for k in ("total", "same_mm", "mm_changes", "kernel"))')
echo "# by_process sums: $rows"
check "switch_by_process_sum_exact" [ "$rows" = "$total $same $changes $kern" ]
check "switch_process_mm_changes" [ "$changes" -ge $((2 * R)) ]
# On x86 each mm change loads CR3 once: flushed + kept = changes, exactly.
fl=$(json_get "$TMP/p.json" 'd["switch"]["flushes"] + d["switch"]["no_flush"]')
check "switch_flush_per_change" [ "$fl" -eq "$changes" ]
# An exec loads the new address space on its CPU (activate_mm): the exec'ed task's next switch
# back in after idle is no change, and x86 loads no CR3 for it (it counted one change too many
# before the exec hook updated the CPU's last user mm). Four runs: each must be exact.
bad=
for i in 1 2 3 4; do
	"$MMSCOPE" switch --json -o "$TMP/e.json" -- sh -c 'exec sleep 0.2' >/dev/null 2>&1
	r=$(json_get "$TMP/e.json" '"%d=%d+%d" % (d["switch"]["mm_changes"], d["switch"]["flushes"], d["switch"]["no_flush"])')
	python3 -c "import sys; a, b = sys.argv[1].split('='); sys.exit(int(a) != eval(b))" "$r" || bad="$bad $r"
done
echo "# exec then sleep: mm_changes=flushes+no_flush mismatches:${bad:- none}"
check "switch_flush_per_change_after_exec" [ -z "$bad" ]
# perf counts the same process tree's context switches (its software event): the switches
# mmscope counts for the two processes are within 5% of it (both count every switch in or
# out of a traced task once).
perf stat -x, -o "$TMP/perf.out" -e context-switches -- "$WORKLOADS/pingpong" -r $R >/dev/null
pcs=$(awk -F, '/context-switches/ {print $1}' "$TMP/perf.out")
echo "# perf context-switches=$pcs"
check "switch_total_vs_perf" within "$total" "$pcs" 5

# Switches out of the traced tasks are what perf's context-switches counts (its software event
# counts at the switch out of a task). One run: mmscope traces perf stat, which counts its
# command. mmscope's count is perf's plus the switches out of perf stat itself (its process,
# waiting for the command: the by_process row of perf stat's pid) and of its child before the
# exec that perf starts counting at (a few, in the command's row): 0 <= out - perf <= perf
# stat's row + 5 (measured: 13, 14 and 24 over perf's 1124, 40049 and 10007; 7 with a row of 6
# on a quiet host, twice).
switch_vs_perf() {
	local name=$1 row out in perf
	shift
	"$MMSCOPE" switch --json -o "$TMP/sp.json" -- perf stat -x, -o "$TMP/sp.perf" \
		-e context-switches -- "$@" >/dev/null 2>&1
	perf=$(awk -F, '/context-switches/ {print $1}' "$TMP/sp.perf")
	read -r out in row < <(json_get "$TMP/sp.json" '"%d %d %d" % (d["switch"]["switches_out"], d["switch"]["switches_in"], sum(x["total"] for x in d["switch"]["by_process"] if x["pid"] == d["target"]["pid"]))')
	echo "# $name: switches_out=$out switches_in=$in perf=$perf perf stat's own row=$row"
	check "switch_out_vs_perf_$name" between "$((out - perf))" 0 "$((row + 5))"
	# A task's switches in and out alternate: each differs by at most one (running when the
	# run starts or ends), and these commands have fewer than 20 tasks.
	check "switch_in_vs_out_$name" absdiff_le "$in" "$out" 20
}
switch_vs_perf pingpong "$WORKLOADS/pingpong" -r $R
switch_vs_perf sched_pipe perf bench sched pipe -l 20000
if command -v stress-ng >/dev/null; then
	switch_vs_perf stress_fault stress-ng --fault 1 -t 2
else
	skip "switch_out_vs_perf_stress_fault: no stress-ng"
fi

# Attached to a running process (B18): a CR3 load seen before the switch hook had run on its
# CPU set that CPU's last user mm from current, still the previous task there, so the next
# idle -> target switch (its mm still loaded: no CR3 load) counted a change without one. With
# --sleep-us the CPU idles between ping and pong, and the switches between them are changes.
# Ten attaches while it runs: the binary before the fix was one short in 4 to 7 of 10. A rarer
# cause is still open (one short in about 1 of 50 attaches, docs/reliability.md B18): at most
# two of the ten may be one short, none by more.
"$WORKLOADS/pingpong" -r 100000000 --sleep-us 20 --cpu 0 >/dev/null 2>&1 &
sleeper=$!
sleep 0.3
short=0
bad=
for i in 1 2 3 4 5 6 7 8 9 10; do
	"$MMSCOPE" switch -p $sleeper -d 0.3 --json -o "$TMP/a.json" >/dev/null 2>&1
	r=$(json_get "$TMP/a.json" '"%d %d" % (d["switch"]["mm_changes"], d["switch"]["mm_changes"] - d["switch"]["flushes"] - d["switch"]["no_flush"])')
	set -- $r
	if [ "$1" -lt 10 ] || [ "$2" -lt 0 ] || [ "$2" -gt 1 ]; then
		bad="$bad changes=$1,short=$2"
	elif [ "$2" -eq 1 ]; then
		short=$((short + 1))
	fi
done
kill $sleeper 2>/dev/null
wait $sleeper 2>/dev/null
echo "# attached while running: 10 attaches, $short one short${bad:+, bad:$bad}"
check "switch_flush_per_change_attached_running" [ -z "$bad" -a "$short" -le 2 ]

# Two threads of one process: the switches stay within one address space.
"$MMSCOPE" switch --json -o "$TMP/t.json" -- "$WORKLOADS/pingpong" --threads -r $R >/dev/null
total=$(json_get "$TMP/t.json" 'd["switch"]["total"]')
changes=$(json_get "$TMP/t.json" 'd["switch"]["mm_changes"]')
same=$(json_get "$TMP/t.json" 'd["switch"]["same_mm"]')
echo "# threads: total=$total mm_changes=$changes same_mm=$same"
check "switch_threads_same_mm" [ "$same" -ge $((2 * R * 95 / 100)) ]
check "switch_threads_few_changes" [ "$changes" -le $((R / 20)) ]

# Filter: a noisy neighbour ping-pongs on the other CPU; only the target's switches count.
if [ "$(nproc)" -ge 2 ]; then
	"$WORKLOADS/pingpong" -r $((R * 4)) --cpu 1 >/dev/null &
	noisy=$!
	"$WORKLOADS/pingpong" -r $R --cpu 0 --pause-before-ms 200 >/dev/null &
	target=$!
	kill -STOP $target # until mmscope is attached, however slow its start-up
	"$MMSCOPE" switch -v --json -o "$TMP/f.json" -p $target 2>"$TMP/sw.err" &
	mm=$!
	wait_attached "$TMP/sw.err" || fail "switch_attach (mmscope did not attach)"
	kill -CONT $target
	wait $mm
	wait $target $noisy
	pids=$(json_get "$TMP/f.json" 'sorted(set(x["pid"] for x in d["switch"]["by_process"]))')
	# The target and its forked pong child (followed as a child), nothing else.
	child_ok=$(json_get "$TMP/f.json" "all(x['pid'] != $noisy for x in d['switch']['by_process'])")
	check "switch_filter_excludes_neighbour" [ "$child_ok" = True ]
	changes=$(json_get "$TMP/f.json" 'd["switch"]["mm_changes"]')
	check "switch_filter_counts_target" [ "$changes" -ge $((2 * R)) ] 
	check "switch_filter_not_neighbour" [ "$changes" -le $((3 * R)) ]
	echo "# filter: pids=$pids changes=$changes (neighbour $noisy)"
else
	skip "switch_filter (needs 2 CPUs)"
fi

# -c: a cgroup and its descendants. pingpong runs in a child cgroup, sleeping between sends so
# that its CPU idles: every idle -> pingpong switch has an untraced task switched out, and
# counts only if the task switched in passes the cgroup test. Two runs at once, -c PARENT and
# -c PARENT/sub, see the same switches. perf stat of the command (its software event) counts
# the switches out of its tasks; mmscope counts, once, every switch with a traced task on either
# side: those, and the 2 a round trip into a task from idle at the end of its sleep (round trip:
# A out to idle, idle to A, A to B, B out to idle, idle to B, B to A). Before the fix the switched-in task was tested for PARENT itself only:
# 8013 switches under -c PARENT, 12022 under -c PARENT/sub.
CG2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
if [ -n "$CG2" ] && mkdir "$CG2/mmscope-sw-$$" 2>/dev/null && mkdir "$CG2/mmscope-sw-$$/sub" 2>/dev/null; then
	CG="$CG2/mmscope-sw-$$"
	mkfifo "$TMP/cg.go"
	perf stat -x, -o "$TMP/cg.perf" -e context-switches -- sh -c \
		"echo \$\$ >'$CG/sub/cgroup.procs' && read x <'$TMP/cg.go' && exec '$WORKLOADS/pingpong' -r 2000 --sleep-us 50" >/dev/null &
	held=$!
	# Both runs must start with the shell already asleep on the fifo: a shell still starting
	# (moved into sub, opening the fifo) switches while one run has attached and the other has
	# not (CI, busy host: parent 12049, child 12046).
	for i in $(seq 250); do
		sh_pid=$(head -n1 "$CG/sub/cgroup.procs")
		[ -n "$sh_pid" ] && case $(cut -d' ' -f1 "/proc/$sh_pid/syscall" 2>/dev/null) in 257 | 0) break ;; esac
		sleep 0.02
	done
	"$MMSCOPE" switch -v --json -o "$TMP/cgp.json" -c "$CG" 2>"$TMP/cgp.err" &
	mp=$!
	"$MMSCOPE" switch -v --json -o "$TMP/cgs.json" -c "$CG/sub" 2>"$TMP/cgs.err" &
	ms=$!
	if wait_attached "$TMP/cgp.err" && wait_attached "$TMP/cgs.err"; then
		echo go >"$TMP/cg.go"
		wait $held
		kill -INT $mp $ms
		wait $mp $ms
		tp=$(json_get "$TMP/cgp.json" 'd["switch"]["total"]')
		ts=$(json_get "$TMP/cgs.json" 'd["switch"]["total"]')
		pcs=$(awk -F, '/context-switches/ {print $1}' "$TMP/cg.perf")
		echo "# -c: parent $tp, child cgroup $ts, perf $pcs"
		check "switch_cgroup_descendants_same_as_child" [ "$tp" = "$ts" ]
		check "switch_cgroup_vs_perf_plus_wakeups_from_idle" within "$tp" $((pcs + 2 * 2000)) 2
	else
		fail "switch_cgroup (mmscope did not attach: $(one_line "$TMP/cgp.err"))"
		kill $mp $ms $held 2>/dev/null
		echo go >"$TMP/cg.go" &
		wait
	fi
	rmdir "$CG/sub" "$CG" 2>/dev/null
else
	skip "switch_cgroup: no cgroup v2 hierarchy to make a test cgroup in"
fi

# stat shows the tlb and switch sections too.
"$MMSCOPE" stat --json -o "$TMP/s.json" -- "$WORKLOADS/pingpong" -r 1000 >/dev/null
ok=$(json_get "$TMP/s.json" '"switch" in d and "tlb" in d and "faults" in d and d["switch"]["mm_changes"] >= 2000')
check "stat_has_tlb_and_switch" [ "$ok" = True ]
