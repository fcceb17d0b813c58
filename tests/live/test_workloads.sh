#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The workloads themselves, against what their --help and tools/workloads/wl_common.h promise:
# --help exits 0; a bad option or value gets one line on stderr, "NAME: ... (see --help)",
# exit 2 and nothing on stdout; the summary line's counts follow the arithmetic its --help
# describes. Every other test trusts these numbers as its oracle, and the option parsing is
# one piece of code shared by all of them (wl_parse_options()). Needs no BPF; fault_block
# needs userfaultfd (root).
. "$(dirname "$0")/lib.sh"

ALL="cow_fork deep_stack deep_stack_dbgframe exec_loop fault_anatomy fault_block fork_exec
fork_touch mprotect_toggle page_touch pingpong tlb_switch"

# kv LINE KEY : the value of KEY= in a summary line
kv() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# usage_error WORKLOAD MESSAGE ARGS... : WORKLOAD ARGS... is rejected with exactly
# "NAME: MESSAGE (see --help)" (NAME: deep_stack for deep_stack_dbgframe)
usage_error() {
	local w=$1 msg=$2 rc
	shift 2
	timeout 20 "$WORKLOADS/$w" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	if [ $rc -eq 2 ] && [ ! -s "$TMP/out" ] &&
		[ "$(cat "$TMP/err")" = "${w%_dbgframe}: $msg (see --help)" ]; then
		return 0
	fi
	echo "    $w $*: exit $rc, stderr '$(one_line "$TMP/err")', stdout '$(one_line "$TMP/out")'"
	return 1
}

# summary WORKLOAD ARGS... : runs it, leaves its last stdout line in $line (1 if it failed)
summary() {
	local w=$1
	shift
	line=""
	timeout 60 "$WORKLOADS/$w" "$@" >"$TMP/sum.out" 2>"$TMP/sum.err" </dev/null || return 1
	line=$(tail -1 "$TMP/sum.out")
}

# ---- every workload: --help and the errors every option parser shares ----
for w in $ALL; do
	if [ ! -x "$WORKLOADS/$w" ]; then
		fail "workloads: $w is not built"
		continue
	fi
	timeout 20 "$WORKLOADS/$w" --help >"$TMP/help" 2>"$TMP/help.err"
	rc=$?
	ok "workloads: $w --help exits 0 with its usage" "exit $rc, $(one_line "$TMP/help")" \
		[ $rc -eq 0 -a ! -s "$TMP/help.err" ] && grep -q "^Usage: ${w%_dbgframe} " "$TMP/help"
	# exec_loop takes its count as an operand: its trailing word comes after one
	extra=() && [ "$w" = exec_loop ] && extra=(3)
	errs=0
	usage_error "$w" "unknown option '--bogus'" --bogus || errs=$((errs + 1))
	usage_error "$w" "unknown option '-Z'" -Z || errs=$((errs + 1))
	usage_error "$w" "unknown option '--help=1'" --help=1 || errs=$((errs + 1))
	usage_error "$w" "unexpected argument 'extra'" "${extra[@]}" extra || errs=$((errs + 1))
	case $w in fault_anatomy) opt=--dir ;; fault_block) opt=--hold-ms ;; *) opt=--pause-before-ms ;; esac
	usage_error "$w" "option '$opt' needs a value" "$opt" || errs=$((errs + 1))
	ok "workloads: $w rejects unknown options, operands and missing values" "$errs wrong" [ $errs -eq 0 ]
done

# ---- each kind of option value: u64 with a range, size, list, flag, string ----
errs=0
usage_error page_touch "option '-w' needs a value" -w || errs=$((errs + 1))
usage_error page_touch "invalid value 'abc' for --write: not a decimal number" -w abc || errs=$((errs + 1))
usage_error page_touch "invalid value '-1' for --write: not a decimal number" --write=-1 || errs=$((errs + 1))
usage_error page_touch "invalid value '5x' for --kernel: not a decimal number" -k5x || errs=$((errs + 1))
usage_error page_touch "invalid value '0' for --repeat: must be from 1 to 4294967295" --repeat 0 || errs=$((errs + 1))
usage_error page_touch "invalid value '1000001' for --exec: must be from 0 to 1000000" -x 1000001 || errs=$((errs + 1))
# A page count's limit: a quarter of a 64-bit address space, in pages (wl_max_pages()).
max_pages=$(((2 ** 62 - 1) / $(getconf PAGESIZE)))
usage_error page_touch "invalid value '99999999999999999999' for --read: must be from 0 to $max_pages" \
	-r 99999999999999999999 || errs=$((errs + 1))
usage_error page_touch "unknown option '-Z'" -Zw1 || errs=$((errs + 1))
usage_error mprotect_toggle "invalid size '4X' for --size: suffix must be K, M or G" --single -s 4X || errs=$((errs + 1))
usage_error mprotect_toggle "invalid size '0' for --size: must be from 1 to 4611686018427387903 bytes" --single -s 0 ||
	errs=$((errs + 1))
usage_error deep_stack "invalid value '27' for --depth: must be from 1 to 26" -d 3,27 || errs=$((errs + 1))
usage_error fault_block "unknown option '--exit=1'" --exit=1 || errs=$((errs + 1))
usage_error fork_exec "cannot execute '/nonexistent': No such file or directory" --exec /nonexistent || errs=$((errs + 1))
usage_error exec_loop "invalid value '0' for --execs: must be from 1 to 100000000" --execs 0 || errs=$((errs + 1))
usage_error exec_loop "the number of execs is given twice ('4')" -n 3 4 || errs=$((errs + 1))
ok "workloads: bad values of each kind get their one-line message" "$errs wrong" [ $errs -eq 0 ]

# ---- the summaries' arithmetic ----
if summary page_touch -w 3 -r 2 -x 1 -k 1 --repeat 2; then
	got="$(kv "$line" expected_faults) $(kv "$line" expected_write) $(kv "$line" expected_read)"
	got="$got $(kv "$line" expected_exec) $(kv "$line" expected_kernel) $(kv "$line" repeat)"
	ok "workloads: page_touch -w 3 -r 2 -x 1 -k 1 --repeat 2: 14 = 6+4+2+2 faults" "$line" [ "$got" = "14 6 4 2 2 2" ]
else
	fail "workloads: page_touch failed ($(one_line "$TMP/sum.err"))"
fi
# Abbreviated long options and --opt=value are getopt_long()'s, and the tests use them.
if summary page_touch --wr=5 --rea 0; then
	ok "workloads: page_touch --wr=5 --rea 0: 5 write faults" "$line" [ "$(kv "$line" expected_write)" = 5 ]
else
	fail "workloads: page_touch --wr=5 failed ($(one_line "$TMP/sum.err"))"
fi
if summary cow_fork -n 5; then
	ok "workloads: cow_fork -n 5: 5 + 5 COW faults" "$line" \
		[ "$(kv "$line" expected_faults) $(kv "$line" cow_faults)" = "10 5" ]
else
	fail "workloads: cow_fork failed ($(one_line "$TMP/sum.err"))"
fi
if summary fork_touch -p 3 -c 2 -q 4; then
	ok "workloads: fork_touch -p 3 -c 2 -q 4: 3 + 2*4 faults" "$line" \
		[ "$(kv "$line" expected_faults) $(kv "$line" expected_child_faults)" = "11 8" ]
else
	fail "workloads: fork_touch failed ($(one_line "$TMP/sum.err"))"
fi
if summary deep_stack -d 2,2,3 -p 4 -r 1 -s 1; then
	ok "workloads: deep_stack -d 2,2,3 -p 4 -r 1 -s 1: 3*(4+1) writes, 3 reads, stacks merged" "$line" \
		[ "$(kv "$line" expected_write) $(kv "$line" expected_read) $(kv "$line" depths)" = "15 3 2,2,3" ] &&
		grep -qx 'expect write 8 main;level_a;level_b;touch_pages' "$TMP/sum.out" &&
		grep -qx 'expect write 1 main;level_a;level_b;level_c;signal_self;\*;on_signal;touch_in_handler' "$TMP/sum.out"
else
	fail "workloads: deep_stack failed ($(one_line "$TMP/sum.err"))"
fi
if summary exec_loop 3 --touch 2; then
	ok "workloads: exec_loop 3 --touch 2: 3*2 touch faults" "$line" \
		[ "$(kv "$line" execs) $(kv "$line" expected_touch_faults)" = "3 6" ]
else
	fail "workloads: exec_loop failed ($(one_line "$TMP/sum.err"))"
fi
if summary fault_anatomy -a 2 -c 3 -s 1 -d "$TMP"; then
	ok "workloads: fault_anatomy -a 2 -c 3 -s 1: anon 2+3, cow 3, shmem 1" "$line" \
		[ "$(kv "$line" expected_anon) $(kv "$line" expected_cow) $(kv "$line" expected_shmem)" = "5 3 1" ]
else
	fail "workloads: fault_anatomy failed ($(one_line "$TMP/sum.err"))"
fi
if summary mprotect_toggle --single -s 5k -i 2 --no-prefault; then
	ps=$(kv "$line" page_size)
	ok "workloads: mprotect_toggle --single -s 5k -i 2: 5K in whole pages, 4 calls" "$line" \
		[ "$(kv "$line" size) $(kv "$line" mprotect_calls) $(kv "$line" prefault)" = "$(((5120 + ps - 1) / ps * ps)) 4 0" ]
else
	fail "workloads: mprotect_toggle failed ($(one_line "$TMP/sum.err"))"
fi
if summary tlb_switch -c 2 -p 3 -t 4 --seed 0; then
	ok "workloads: tlb_switch -c 2 -p 3 -t 4: 24 page writes, 8 turns" "$line" \
		[ "$(kv "$line" page_writes) $(kv "$line" turn_switches) $(kv "$line" seed)" = "24 8 0" ]
else
	fail "workloads: tlb_switch failed ($(one_line "$TMP/sum.err"))"
fi
if summary pingpong -r 10 --threads; then
	ok "workloads: pingpong -r 10 --threads: at least 20 switches" "$line" \
		[ "$(kv "$line" mode) $(kv "$line" min_context_switches)" = "thread 20" ]
else
	fail "workloads: pingpong failed ($(one_line "$TMP/sum.err"))"
fi
if summary fork_exec -n 2 --exec /bin/true; then
	ok "workloads: fork_exec -n 2" "$line" [ "$(kv "$line" rounds) $(kv "$line" exec)" = "2 /bin/true" ]
else
	fail "workloads: fork_exec failed ($(one_line "$TMP/sum.err"))"
fi
if ! summary fault_block -t 2 --hold-ms 0 --exit; then
	skip "workloads: fault_block (no userfaultfd here: $(one_line "$TMP/sum.err"))"
else
	ok "workloads: fault_block -t 2 --exit: 2 held, none completed" "$line" \
		[ "$(kv "$line" expected_held) $(kv "$line" expected_completed)" = "2 0" ]
fi
