#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A BTF that does not describe the running kernel is refused (one line on stderr naming the
# first fact that differs, exit 1, nothing on stdout), never used for wrong numbers; one that
# does is accepted and, where the kernel has its own BTF, replaced by it (-v says so).
# The wrong BTFs: Debian 6.1's ppc64le kernel's (btf/ppc64le, another kernel and architecture),
# and this kernel's own with one field inserted (tests/live/btf_shift.py): before
# task_struct.comm (the fields after it move) and before mm_struct's arg_start (the same for
# mm_struct: a layout that differs in one place only).
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)

if [ ! -r /sys/kernel/btf/vmlinux ]; then
	skip "btf check (this kernel has no /sys/kernel/btf/vmlinux to make the BTFs from)"
	exit 0
fi
cp /sys/kernel/btf/vmlinux "$TMP/own.btf"
xz -dc "$top"/btf/ppc64le/6.1.0-57-powerpc64le.btf.xz >"$TMP/ppc64le.btf"
python3 "$top/tests/live/btf_shift.py" "$TMP/own.btf" "$TMP/task.btf" task_struct comm 8 ||
	fail "btf check: btf_shift.py task_struct comm"
python3 "$top/tests/live/btf_shift.py" "$TMP/own.btf" "$TMP/mm.btf" "" arg_start 8 ||
	fail "btf check: btf_shift.py mm_struct arg_start"

# refused NAME FILE MUST-MENTION ARGS...: mmscope ARGS... with --btf FILE must refuse it
refused() {
	local name=$1 file=$2 word=$3 rc
	shift 3
	timeout 60 "$MMSCOPE" "$@" --btf "$file" -- "$WORKLOADS/page_touch" -w 10 -r 0 -x 0 \
		>"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	ok "btf check: $name: exit 1" "exit $rc: $(one_line "$TMP/err")" [ $rc -eq 1 ]
	ok "btf check: $name: one line on stderr, 'does not describe the running kernel'" \
		"$(one_line "$TMP/err")" [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
		grep -q "^mmscope: --btf $file does not describe the running kernel $(uname -r): " "$TMP/err"
	ok "btf check: $name: names '$word'" "$(one_line "$TMP/err")" grep -qF -- "$word" "$TMP/err"
	# The workload never ran: refused before the command starts.
	ok "btf check: $name: nothing on stdout" "$(head -c 200 "$TMP/out")" [ ! -s "$TMP/out" ]
}

for cmd in faults stat; do
	refused "$cmd, Debian 6.1 ppc64le's BTF" "$TMP/ppc64le.btf" "read through it is" $cmd
done
refused "faults, task_struct with a field before comm" "$TMP/task.btf" "read through it is" faults
refused "faults, mm_struct with a field before arg_start" "$TMP/mm.btf" "mm_struct." faults
refused "tlb, mm_struct with a field before arg_start" "$TMP/mm.btf" "mm_struct." tlb

# probes says the same, and refuses too.
"$MMSCOPE" probes --json --btf "$TMP/mm.btf" >"$TMP/out" 2>"$TMP/err"
rc=$?
ok "btf check: probes refuses the mm_struct BTF" "exit $rc: $(one_line "$TMP/err")" \
	[ $rc -eq 1 ] && grep -q "does not describe the running kernel" "$TMP/err"

# This kernel's own BTF, as a file: accepted; the kernel's own is used (-v says so, probes
# names it), after every fact was found to agree: 9 about the task, its comm and 10 of its
# mm's bounds (20; powerpc also reads the user registers' system call number).
"$MMSCOPE" faults -v --json --btf "$TMP/own.btf" -- "$WORKLOADS/page_touch" -w 100 -r 0 -x 0 \
	>"$TMP/out" 2>"$TMP/err"
rc=$?
ok "btf check: own BTF as a file: accepted (exit 0)" "exit $rc: $(grep -v '^libbpf' "$TMP/err" | tail -3 | tr '\n' '|')" [ $rc -eq 0 ]
ok "btf check: own BTF as a file: -v says it agrees on 20 facts" "$(grep -m1 'agrees' "$TMP/err")" \
	grep -q "^mmscope: --btf $TMP/own.btf agrees with the running kernel $(uname -r) (20 facts" "$TMP/err"
ok "btf check: own BTF as a file: -v says the kernel's own is used instead" \
	"$(grep -v '^libbpf' "$TMP/err" | head -3 | tr '\n' '|')" \
	grep -q "the kernel's own BTF, /sys/kernel/btf/vmlinux, is used instead" "$TMP/err"
# Its numbers are right: page_touch's 100 write faults at least (the workload's arithmetic).
w=$(grep '^{' "$TMP/out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["faults"]["write"])' 2>/dev/null)
ok "btf check: own BTF as a file: >= 100 write faults counted" "write=$w" [ "${w:-0}" -ge 100 ]
"$MMSCOPE" probes --json --btf "$TMP/own.btf" >"$TMP/out" 2>"$TMP/err"
got=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["btf"], d["btf_checked_facts"])' "$TMP/out" 2>&1)
ok "btf check: probes --btf own: BTF /sys/kernel/btf/vmlinux, 20 facts checked" "$got" \
	[ "$got" = "/sys/kernel/btf/vmlinux 20" ]
got=$("$MMSCOPE" probes --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["btf_checked_facts"])' 2>&1)
ok "btf check: probes without --btf: nothing checked (null)" "$got" [ "$got" = None ]
