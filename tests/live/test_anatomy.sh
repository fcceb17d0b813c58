#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope faults on fault_anatomy: faults by the type of memory they hit (issue 27), against the
# workload's arithmetic, its getrusage() deltas (the kernel's own accounting of each phase) and
# perf stat's major-faults.
#
# fault_anatomy -a A -b B -f F -s S -c C writes A anonymous pages, B heap pages, reads F pages
# of a file twice (in the page cache: minor; after fsync + POSIX_FADV_DONTNEED: major, one per
# page mincore() shows evicted, file_evicted=), writes S memfd pages, and writes C pages in a
# forked child (copy-on-write). One fault per page: THP off, one-page file mappings with
# MADV_RANDOM (no fault-around, no read-ahead).
#
# The type of memory comes from handle_mm_fault()'s arguments (fentry/kprobe). Where this kernel
# hooks neither (this host: 'mmscope probes' shows fentry refused and no kprobes), by_type and
# results are null with the reason, the folded leaves carry no type, and what is checked is the
# rest: majors, the folded [read major] leaf, and that the n/a is said (by_type, by_file).
# Where they are hooked, every type's count and the workload's file's by_file row are checked
# too (as tests/vm/check.py does in the VMs).
#
# Noise, measured on this host (5 runs): the forked child's own faults (its stack and libc's
# data, copy-on-write after the fork, and its exit) are 17-18 beyond its C pages; the file's
# majors are exactly F (file_evicted) on ext4, and no major happens anywhere else (the binary
# is in the page cache).
. "$(dirname "$0")/lib.sh"

FA="$WORKLOADS/fault_anatomy"
A=300 B=100 F=64 S=150 C=120
DIR=/var/tmp

# fields FILE : "minor major bytype_json results_json unavailable_by_type" of a faults JSON
fields() {
	python3 - "$1" <<'PY'
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])
f = d["faults"]
print(f["minor"], f["major"], json.dumps(f.get("by_type", "MISSING")).replace(" ", ""),
      json.dumps(f.get("results", "MISSING")).replace(" ", ""),
      "yes" if "handle_mm_fault" in (d.get("unavailable") or {}).get("faults.by_type", "") else "no")
PY
}

# ---- the workload alone, under perf stat: the kernel's counts ----
perf stat -x, -e major-faults,minor-faults -o "$TMP/perf.txt" -- "$FA" -a $A -b $B -f $F -s $S -c $C -d $DIR >"$TMP/bare.out" 2>&1
line=$(tail -1 "$TMP/bare.out")
evicted=$(kv "$line" file_evicted)
pmaj=$(awk -F, '/major-faults/ {print $1}' "$TMP/perf.txt")
ok "anatomy: the workload's file pages were evicted (file_evicted = F, ext4 at $DIR)" "$line" [ "${evicted:-0}" -eq $F ]
ok "anatomy: rusage of the file's second pass = F majors" "$line" [ "$(kv "$line" rusage_file2_major)" -eq $F ]
ok "anatomy: rusage of the anon, heap, shmem phases = A, B, S" "$line" \
	[ "$(kv "$line" rusage_anon_minor)" -eq $A -a "$(kv "$line" rusage_heap_minor)" -eq $B -a "$(kv "$line" rusage_shmem_minor)" -eq $S ]
# The whole process: on a host short of memory a page of the program or its libraries may have
# left the page cache too (one extra, seen with VMs running beside).
ok "anatomy: perf stat's major-faults = F (+ <= 3 of the program's own pages)" "perf $pmaj, F $F" \
	between "${pmaj:--1}" $F $((F + 3))

# ---- baseline and measured run under mmscope ----
"$MMSCOPE" faults --json -o "$TMP/base.json" -- "$FA" -d $DIR >"$TMP/base.out" 2>"$TMP/base.err"
rc0=$?
"$MMSCOPE" faults --json -o "$TMP/run.json" -- "$FA" -a $A -b $B -f $F -s $S -c $C -d $DIR >"$TMP/run.out" 2>"$TMP/run.err"
rc=$?
ok "anatomy: mmscope exits 0 (baseline and run)" "rc $rc0 $rc: $(one_line "$TMP/run.err")" [ $rc0 -eq 0 -a $rc -eq 0 ]
[ -s "$TMP/run.json" ] && [ -s "$TMP/base.json" ] || { fail "anatomy: no JSON"; exit 0; }
line=$(tail -1 "$TMP/run.out")
read -r bmin bmaj btypes _ _ < <(fields "$TMP/base.json")
read -r min maj types results na < <(fields "$TMP/run.json")
ok "anatomy: mmscope's majors = the workload's file_evicted (and perf's), baseline 0" \
	"run $maj, baseline $bmaj, F $F" [ "$((maj - bmaj))" -eq "$(kv "$line" expected_file_major)" ]
# Every phase's faults, as the kernel accounted them, in mmscope's minor+major delta: the
# rusage sums (the child's fork-time faults are in rusage_cow_child), plus what the workload
# does between its phases (the file's page array and mincore() vector, the memfd's set-up, the
# parent's own copy-on-write faults after fork()): 15-19 more on this host (5 runs).
rs=0
for k in anon heap file1 file2 shmem cow_parent cow_child hugetlb; do
	rs=$((rs + $(kv "$line" rusage_${k}_minor) + $(kv "$line" rusage_${k}_major)))
done
d=$((min + maj - bmin - bmaj))
ok "anatomy: minor+major delta = the phases' rusage sum ($rs) + 0..30" "delta $d" between "$d" "$rs" $((rs + 30))

if [ "$types" = null ]; then
	ok "anatomy: by_type is null, its reason names handle_mm_fault (not hooked here)" \
		"by_type $types, reason $na" [ "$na" = yes ]
	ok "anatomy: results is null (no fexit/kretprobe here)" "results $results" [ "$results" = null ]
	"$MMSCOPE" faults -- "$FA" -a 10 -d $DIR >"$TMP/text.out" 2>&1
	ok "anatomy: the table says n/a for fault types" "$(grep -A1 'fault types' "$TMP/text.out" | tr '\n' '|')" \
		grep -q -A1 "fault types" "$TMP/text.out"
	ok "anatomy: ... with the reason" "$(grep -A1 'fault types' "$TMP/text.out" | tr '\n' '|')" \
		eval "grep -A1 'fault types' '$TMP/text.out' | grep -q 'n/a (the mapping'"
	python3 - "$TMP/run.json" >"$TMP/byfile.txt" <<'PY'
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])
print(json.dumps(d["faults"].get("by_file", "MISSING")),
      "yes" if "handle_mm_fault" in (d.get("unavailable") or {}).get("faults.by_file", "") else "no")
PY
	read -r byfile bfna <"$TMP/byfile.txt"
	ok "anatomy: by_file is null, its reason names handle_mm_fault (not hooked here)" \
		"by_file $byfile, reason $bfna" [ "$byfile" = null -a "$bfna" = yes ]
	ok "anatomy: the table says n/a for files faulted, with the reason" \
		"$(grep -A1 'files faulted' "$TMP/text.out" | tr '\n' '|')" \
		eval "grep -A1 'files faulted' '$TMP/text.out' | grep -q 'n/a (the mapping'"
else
	# by_type where handle_mm_fault() is hooked: each type's delta against the arithmetic.
	python3 - "$TMP/base.json" "$TMP/run.json" "$line" >"$TMP/types.txt" <<'PY'
import json, sys
def load(p):
    return json.loads([l for l in open(p) if l.strip()][-1])["faults"]["by_type"]
b, r = load(sys.argv[1]), load(sys.argv[2])
kv = dict(x.split("=", 1) for x in sys.argv[3].split()[1:])
def delta(t, k="faults"):
    return (r[t] or {}).get(k, 0) - (b[t] or {}).get(k, 0)
F = int(kv["expected_file_minor"]) + int(kv["expected_file_major"])
want = {"anon": int(kv["expected_anon"]), "heap": int(kv["expected_heap"]),
        "file": F, "shmem": int(kv["expected_shmem"])}
for t, w in want.items():
    print(t, delta(t), w)
print("file_major", delta("file", "major"), kv["expected_file_major"])
if r.get("cow") is not None:
    print("cow", delta("cow"), kv["expected_cow"])
PY
	while read -r t got want; do
		if [ "$t" = cow ]; then
			ok "anatomy: by_type.cow delta = C (+ the fork's own, <= 40)" "got $got, want $want" between "$got" "$want" $((want + 40))
		else
			ok "anatomy: by_type.$t delta = the workload's arithmetic +-15" "got $got, want $want" absdiff_le "$got" "$want" 15
		fi
	done <"$TMP/types.txt"
	# by_file: the workload's file (fstat's device:inode) holds both passes' faults, its
	# majors the pages evicted, all in fault_anatomy's process; the memfd its S pages; the
	# rows and [other] add up to files_total.
	python3 - "$TMP/run.json" "$line" >"$TMP/files.txt" <<'PY'
import json, sys
f = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])["faults"]
kv = dict(x.split("=", 1) for x in sys.argv[2].split()[1:])
rows, tot = f["by_file"], f["files_total"]
mine = [r for r in rows if r["device"] == kv["file_dev"] and r["inode"] == int(kv["file_ino"])] or [{}]
p = (mine[0].get("processes") or [{}])[0]
memfd = [r for r in rows if r["name"] == "memfd:fault_anatomy"] or [{}]
print("file_faults", mine[0].get("faults"), int(kv["expected_file_minor"]) + int(kv["expected_file_major"]))
print("file_major", mine[0].get("major"), kv["expected_file_major"])
print("file_proc_faults", p.get("faults") if p.get("comm") == "fault_anatomy" else None, mine[0].get("faults"))
print("memfd", memfd[0].get("faults"), kv["expected_shmem"])
for k in ("faults", "minor", "major", "incomplete"):
    print("sum_" + k, sum(r[k] for r in rows), tot[k])
print("path_deleted", int((mine[0].get("path") or "").endswith(" (deleted)")), 1)
PY
	while read -r what got want; do
		ok "anatomy: by_file $what = $want (the workload's arithmetic, files_total)" "got $got, want $want" [ "$got" = "$want" ]
	done <"$TMP/files.txt"
fi

# ---- folded: the file's majors under read_file_pages, as [read major] (plus the type where
# handle_mm_fault() is hooked: [read major file]) ----
"$MMSCOPE" faults --folded -- "$FA" -f $F -d $DIR >"$TMP/f.folded" 2>"$TMP/f.err"
n=$(awk '/;read_file_pages;/ && /\[read major( file)?\] [0-9]+$/ { s += $NF } END { print s + 0 }' "$TMP/f.folded")
ok "anatomy: folded: read_file_pages ... [read major] holds the F majors" "$n of $F: $(grep major "$TMP/f.folded" | head -2 | cut -c1-200)" [ "$n" -eq $F ]

# ---- --major: the stacks of major faults only: exactly the file's second pass ----
"$MMSCOPE" faults --folded --major -- "$FA" -a 100 -f $F -d $DIR >"$TMP/m.folded" 2>"$TMP/m.err"
tot=$(awk '/ [0-9]+$/ && /;/ { s += $NF } END { print s + 0 }' "$TMP/m.folded")
n=$(awk '/;read_file_pages;/ && /\[read major( file)?\] [0-9]+$/ { s += $NF } END { print s + 0 }' "$TMP/m.folded")
ok "anatomy: --major: every stack is a major fault's, F of them, all under read_file_pages" \
	"total $tot, read_file_pages $n, F $F: $(grep -v major "$TMP/m.folded" | head -2 | cut -c1-160)" \
	[ "$tot" -eq $F -a "$n" -eq $F ]
# --type where types cannot be told: refused before the command runs, with the reason.
"$MMSCOPE" faults --folded --type anon -- true >"$TMP/t.out" 2>"$TMP/t.err"
rc=$?
if [ "$types" = null ]; then
	ok "anatomy: --type refused here (no handle_mm_fault() hook), exit 1, reason said" "rc $rc: $(one_line "$TMP/t.err")" \
		eval "[ $rc -eq 1 ] && grep -q handle_mm_fault '$TMP/t.err'"
fi
