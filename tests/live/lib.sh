# SPDX-License-Identifier: GPL-2.0
# Helpers for live tests (sourced). Each test prints PASS/FAIL/SKIP lines via these.
# Environment (from tests/run.sh): MMSCOPE = the binary, WORKLOADS = the workloads directory.
set -u
: "${MMSCOPE:?}" "${WORKLOADS:?}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }
skip() { echo "SKIP $*"; }

# check NAME CONDITION-COMMAND... : PASS if the command succeeds, else FAIL with its output
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}

# json_get FILE PYTHON-EXPR : evaluates EXPR with d = the parsed JSON document (last one in
# the file when -i printed several), prints the result
json_get() {
	python3 - "$1" "$2" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
d = json.loads(lines[-1])
print(eval(sys.argv[2]))
PY
}

# within A B PERCENT : |A-B| <= PERCENT% of B
within() {
	python3 -c "import sys; a,b,p=float(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); sys.exit(0 if abs(a-b) <= p/100*max(abs(b),1) else 1)" "$1" "$2" "$3"
}

# kv LINE KEY : value of key=value in a workload's summary line
kv() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# bpf_prog_count : number of BPF programs loaded now (to check nothing is left behind)
bpf_prog_count() { bpftool prog list 2>/dev/null | grep -c '^[0-9]*:'; }

# wait_attached STDERR_FILE [SECONDS]: wait until an mmscope started with -v has attached its
# hooks (it prints "[N ms] attached"); 1 if it did not within SECONDS (default 30).
wait_attached() {
	local i
	for ((i = 0; i < ${2:-30} * 10; i++)); do
		grep -q '\] attached' "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
