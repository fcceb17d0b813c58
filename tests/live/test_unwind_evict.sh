#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Eviction of unwind tables (issue 24): in a run whose --unwind-memory holds the tables of a
# few programs only, short-lived programs each mapping a file of their own, one after another,
# must all get a table, the earlier ones' tables evicted once their processes have exited; and
# a table is never evicted while a process maps its file.
#
# The programs are copies of Debian's python3.11 (64,575 rows: a table of ~265 KB), each
# a file of its own (device and inode: what the tables are keyed by; the copies share a build
# ID, which only lets --unwind-cache compile the table once). --unwind-memory 1 holds libc's,
# the loader's and the shell's tables and two of them (its row array: 222,822 rows), three at
# most by bytes, so without eviction the later ones are left out.
#  1. one after another: every copy gets its table (files_over_budget 0), at least N - 3 are
#     evicted, and the tables loaded add up to more than the budget; deep_stack, run last, has
#     its stacks whole (tests/live/test_unwind.sh's oracle: its own expected chains) in the
#     arrays the evictions left with holes;
#  2. all at once (each alive while the others load): nothing they map is evicted, and the
#     copies that do not fit are left out (files_over_budget > 0).
. "$(dirname "$0")/lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
DS="$WORKLOADS/deep_stack"
PY=/usr/bin/python3.11
N=6

if ! "$MMSCOPE" faults --help 2>&1 | grep -q -- '--unwind-memory'; then
	skip "unwind eviction: this mmscope has no --unwind-memory"
	exit 0
fi
if [ ! -x "$PY" ]; then
	skip "unwind eviction: no $PY"
	exit 0
fi
# The DWARF walk needs bpf_find_vma() and bpf_loop(): without them no table is loaded.
if ! "$MMSCOPE" probes 2>/dev/null | grep -q '^user stacks.*DWARF call-frame tables'; then
	skip "unwind eviction: this kernel cannot walk with DWARF tables ($("$MMSCOPE" probes 2>&1 | grep '^user stacks'))"
	exit 0
fi

for i in $(seq $N); do
	cp "$PY" "$TMP/py$i"
done
# PYTHONHOME: a copy outside /usr/bin would look for its library beside itself.
py_cmd() { echo "PYTHONHOME=/usr $TMP/py$1 -c 'import time; b = bytearray(8 << 20); time.sleep($2)'"; }
seq_cmd=""
for i in $(seq $N); do
	seq_cmd+="$(py_cmd "$i" 0.5); "
done
seq_cmd+="$DS -d 3,11,26 -p 1000 -r 200 -s 100 --pause-before-ms 500 >$TMP/ds.out"
OPTS=(--unwind dwarf --unwind-memory 1 --unwind-cache "$TMP/cache")

# ---- 1. one after another ----
"$MMSCOPE" faults --json --svg "$TMP/seq.svg" "${OPTS[@]}" -o "$TMP/seq.json" -- sh -c "$seq_cmd" \
	>/dev/null 2>"$TMP/seq.err"
rc=$?
if [ $rc -ne 0 ] || ! json_get "$TMP/seq.json" 'd["unwind"]["tables"]["files"]' >/dev/null 2>&1; then
	fail "unwind eviction: mmscope faults --json ran (exit $rc: $(one_line "$TMP/seq.err"))"
	exit 0
fi
read -r files over evicted bytes bytes_ev budget < <(json_get "$TMP/seq.json" \
	'" ".join(str(d["unwind"]["tables"][k]) for k in ("files", "files_over_budget", "files_evicted", "bytes", "bytes_evicted", "budget_bytes"))')
echo "# one after another: $files tables loaded, $over over budget, $evicted evicted ($bytes_ev bytes), $bytes bytes at the end of $budget"
ok "unwind eviction: $N programs one after another, each file's table loaded (files_over_budget 0)" \
	"files_over_budget $over" [ "$over" -eq 0 ]
ok "unwind eviction: ... the tables of those exited evicted (files_evicted >= $((N - 3)))" \
	"files_evicted $evicted" [ "$evicted" -ge $((N - 3)) ]
ok "unwind eviction: ... the tables loaded add up to more than the budget (bytes + bytes_evicted > budget_bytes)" \
	"$bytes + $bytes_ev of $budget" [ $((bytes + bytes_ev)) -gt "$budget" ]

# The same run, folded: deep_stack's stacks whole after the evictions.
"$MMSCOPE" faults --folded -v "${OPTS[@]}" -o "$TMP/seq.folded" -- sh -c "$seq_cmd" \
	>/dev/null 2>"$TMP/seqf.err"
rc=$?
if [ $rc -ne 0 ] || ! grep -q '^expect ' "$TMP/ds.out"; then
	fail "unwind eviction: mmscope faults --folded ran (exit $rc: $(one_line "$TMP/seqf.err"))"
	exit 0
fi
line=$(grep '^  tables:' "$TMP/seqf.err")
echo "# -v: $line"
ok "unwind eviction: -v says how many tables were evicted" "$(one_line "$TMP/seqf.err")" \
	grep -qE 'tables: .* [1-9][0-9]* evicted \([0-9.]+ MB\)' <<<"$line"
n_exp=0 n_exact=0 n_rooted=0
while read -r got want rooted kind chain; do
	[ "$got" = other ] && continue
	n_exp=$((n_exp + 1))
	[ "$got" -eq "$want" ] && n_exact=$((n_exact + 1))
	[ "$rooted" -eq "$want" ] && n_rooted=$((n_rooted + 1))
	echo "# deep_stack after $N others: $kind: $got of $want ($rooted from _start)"
done < <(python3 "$HERE/stacks.py" expect "$TMP/seq.folded" mmscope "$TMP/ds.out")
ok "unwind eviction: deep_stack, run after them, has each of its 9 stacks whole and rooted" \
	"$n_exact exact, $n_rooted rooted of $n_exp" [ "$n_exp" -eq 9 -a "$n_exact" -eq 9 -a "$n_rooted" -eq 9 ]

# ---- 2. all at once ----
par_cmd=""
for i in $(seq $N); do
	par_cmd+="$(py_cmd "$i" 3) & "
done
par_cmd+="wait"
"$MMSCOPE" faults --json --svg "$TMP/par.svg" "${OPTS[@]}" -o "$TMP/par.json" -- sh -c "$par_cmd" \
	>/dev/null 2>"$TMP/par.err"
rc=$?
if [ $rc -ne 0 ] || ! json_get "$TMP/par.json" 'd["unwind"]["tables"]["files"]' >/dev/null 2>&1; then
	fail "unwind eviction: mmscope faults --json ran (exit $rc: $(one_line "$TMP/par.err"))"
	exit 0
fi
read -r files over evicted < <(json_get "$TMP/par.json" \
	'" ".join(str(d["unwind"]["tables"][k]) for k in ("files", "files_over_budget", "files_evicted"))')
echo "# all at once: $files tables loaded, $over over budget, $evicted evicted"
ok "unwind eviction: $N programs alive together: no table evicted while its file is mapped" \
	"files_evicted $evicted" [ "$evicted" -eq 0 ]
ok "unwind eviction: ... and those that do not fit are left out (files_over_budget > 0)" \
	"files_over_budget $over" [ "$over" -gt 0 ]
