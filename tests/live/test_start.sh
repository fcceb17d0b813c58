#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The start line: "Tracing WHAT of TARGET... Hit Ctrl-C to end." once on stderr, after the
# hooks are attached (oracle: the BPF links mmscope holds, in /proc/PID/fd, when it appears),
# in every output mode; -q leaves it out.
source "$(dirname "$0")/lib.sh"

sleep 1000 </dev/null >/dev/null 2>&1 &
target=$!
# Right after the fork the child is still the shell: its comm is sleep once it has exec'd.
wait_for 10 grep -qx sleep /proc/$target/comm
tcomm=sleep

# started NAME WANT ARGS... : run mmscope ARGS -d 60 until its start line, check it, stop it
started() {
	local name=$1 want=$2 mm links n line rc
	shift 2
	# A file per run: the shell truncates it in the child, after fork, so a shared one could
	# still show the previous run's line when wait_for first looks.
	local err="$TMP/s.$name.err"
	"$MMSCOPE" "$@" -d 60 >/dev/null 2>"$err" </dev/null &
	mm=$!
	if ! wait_for 60 grep -q '^Tracing ' "$err"; then
		fail "start_line_$name (no start line: $(one_line "$err"))"
		kill -INT $mm 2>/dev/null
		wait $mm
		return
	fi
	links=$(find /proc/$mm/fd -lname "anon_inode:bpf_link" 2>/dev/null | wc -l)
	kill -INT $mm
	wait $mm
	rc=$?
	n=$(grep -c '^Tracing ' "$err")
	line=$(grep '^Tracing ' "$err")
	echo "# $name: '$line' ($links BPF links held when it appeared)"
	ok "start_line_$name: once, after attach, exit 0" "$n lines, $links links, exit $rc: $(one_line "$err")" \
		[ "$n" -eq 1 -a "$links" -ge 2 -a $rc -eq 0 ]
	want=${want//\$mm/$mm}
	ok "start_line_$name: says what and whom" "'$line'" [ "$line" = "$want" ]
}

pdesc="of PID $target ($tcomm) and its descendants for 60 s... Hit Ctrl-C to end."
started faults_text "Tracing page faults $pdesc" faults -p $target
started faults_json "Tracing page faults $pdesc" faults --json -p $target
started faults_folded "Tracing page faults $pdesc" faults --folded -p $target
started faults_output "Tracing page faults $pdesc" faults -p $target -o "$TMP/o.txt"
started tlb_json "Tracing TLB invalidations $pdesc" tlb --json -p $target
started switch "Tracing context switches $pdesc" switch -p $target
started stat_json "Tracing page faults, TLB invalidations and context switches $pdesc" stat --json -p $target
started no_children "Tracing page faults of PID $target ($tcomm) for 60 s... Hit Ctrl-C to end." \
	faults -p $target --no-children
started tid "Tracing page faults of TID $target ($tcomm) for 60 s... Hit Ctrl-C to end." faults -t $target
started host_cpu "Tracing context switches host-wide but mmscope itself (PID \$mm) on CPUs 0 for 60 s... Hit Ctrl-C to end." switch -C 0

# A command: the line names it and the pid the JSON gives it.
"$MMSCOPE" faults --json -o "$TMP/c.json" -- "$WORKLOADS/page_touch" -w 10 >/dev/null 2>"$TMP/c.err"
cpid=$(json_get "$TMP/c.json" 'd["target"]["pid"]')
line=$(grep '^Tracing ' "$TMP/c.err")
ok "start_line_command" "'$line'" [ "$line" = "Tracing page faults of command $WORKLOADS/page_touch (PID $cpid) and its descendants until it exits... Hit Ctrl-C to end." ]

# -q: nothing on stderr at all, in each mode.
for mode in "" --json --folded; do
	"$MMSCOPE" faults -q $mode -p $target -d 0.3 >/dev/null 2>"$TMP/q.err"
	ok "start_line_quiet${mode:+_${mode#--}}: -q leaves stderr empty" "$(one_line "$TMP/q.err")" [ ! -s "$TMP/q.err" ]
done
kill $target
wait $target 2>/dev/null || true
