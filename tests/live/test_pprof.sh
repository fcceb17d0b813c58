#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope faults/tlb --pprof: gzipped profile.proto, read by an independent decoder.
#
# Oracles: python3-protobuf with tests/live/profile.proto (pprof's public field numbers; not
# mmscope's encoder) through tests/live/pprof_read.py; the --json of the same run (totals, per
# class, per process, duration: the profile and the JSON come from one run, so they are equal
# exactly); the workload's arithmetic and function names (tools/workloads/page_touch.c, as in
# test_folded.sh); readelf -n for the build IDs of the files, perf buildid-list -k for the
# kernel's; and pprof itself (google/pprof, built here from Debian's
# golang-github-google-pprof-dev), whose reader validates the profile as it parses it.
. "$(dirname "$0")/lib.sh"

PT="$WORKLOADS/page_touch"
W=2000 R=2000 X=200 K=100

# python3 on PATH may be another build (pyenv) without Debian's python3-protobuf.
PY=
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import google.protobuf' 2>/dev/null; then
		PY=$p
		break
	fi
done
if [ -z "$PY" ] || ! command -v protoc >/dev/null; then
	skip "pprof: no reader (python3-protobuf and protoc: make deps)"
	exit 0
fi
READ="$PY $(dirname "$0")/pprof_read.py"
# fact FILE KEY... : the value (last word) of the reader's line "KEY...", or 0
fact() {
	local f=$1
	shift
	awk -v k="$*" 'index($0, k " ") == 1 && split(substr($0, length(k) + 2), w, " ") == 1 { v = w[1] } END { print v == "" ? 0 : v }' "$f"
}

# ---- faults ----
t0=$(date +%s%N)
"$MMSCOPE" faults --pprof "$TMP/f.pb.gz" --json -o "$TMP/f.json" -- "$PT" -w $W -r $R -x $X -k $K \
	>"$TMP/out" 2>"$TMP/err"
rc=$?
t1=$(date +%s%N)
ok "pprof: faults --pprof F --json exits 0" "exit $rc: $(one_line "$TMP/err")" [ $rc -eq 0 ]
[ -s "$TMP/f.pb.gz" ] || { fail "pprof: no profile written"; exit 0; }
left=$(find "$TMP" -name 'f.pb.gz.tmp.*' | wc -l)
ok "pprof: no temporary file left" "$left" [ "$left" -eq 0 ]
$READ "$TMP/f.pb.gz" >"$TMP/f.txt" 2>"$TMP/read.err"
ok "pprof: the profile decodes (gzip, protobuf) with python3-protobuf" "$(one_line "$TMP/read.err")" \
	[ -s "$TMP/f.txt" ]
errs=$(grep -c '^error' "$TMP/f.txt")
ok "pprof: ids, references and the string table follow profile.proto's rules" \
	"$(grep '^error' "$TMP/f.txt" | head -3 | tr '\n' '|')" [ "$errs" -eq 0 ]

types=$(grep '^sample_type' "$TMP/f.txt" | cut -d' ' -f2- | tr '\n' ',')
ok "pprof: sample types faults/count, then latency/nanoseconds" "$types" \
	[ "$types" = "faults count,latency nanoseconds," ]
ok "pprof: the default sample type is faults (pprof shows the last type without it)" "$(grep '^default' "$TMP/f.txt")" \
	[ "$(grep '^default_sample_type' "$TMP/f.txt")" = "default_sample_type faults" ]
ok "pprof: period type faults/count, period 1" "$(grep '^period' "$TMP/f.txt" | tr '\n' ' ')" \
	[ "$(grep '^period_type' "$TMP/f.txt")" = "period_type faults count" -a "$(fact "$TMP/f.txt" period)" -eq 1 ]

read -r ju jk jr jw jx jdur jlost jpid jptot < <(json_get "$TMP/f.json" \
	'" ".join(str(x) for x in [d["faults"][k] for k in ("user", "kernel", "read", "write", "exec")] + [round(d["duration_s"] * 1e9), d["lost"]["folded"]] + [[p["pid"], p["user"] + p["kernel"]] for p in d["faults"]["by_process"] if p["comm"] == "page_touch"][0])')
total=$(fact "$TMP/f.txt" total faults)
ok "pprof: the samples' faults = user + kernel of the --json (same run, exactly)" \
	"pprof $total, json $ju + $jk, lost $jlost" [ "$total" -eq $((ju + jk - jlost)) -a "$total" -gt 0 ]
lat=$(fact "$TMP/f.txt" total latency)
ok "pprof: latency adds up to more than 0 ns (faults completed)" "$lat" [ "$lat" -gt 0 ]
# Per class: the label values are the folded leaves without brackets ("kernel write minor").
cls() { awk -v re="$1" '$1 == "label" && $2 == "fault_class" && $3 ~ re { s += $4 } END { print s + 0 }' "$TMP/f.txt"; }
ok "pprof: fault_class *write* labels = the JSON's write" "$(cls '(^|_)write_'), $jw" [ "$(cls '(^|_)write_')" -eq "$jw" ]
ok "pprof: fault_class *read* labels = the JSON's read" "$(cls '(^|_)read_'), $jr" [ "$(cls '(^|_)read_')" -eq "$jr" ]
ok "pprof: fault_class *exec* labels = the JSON's exec" "$(cls '(^|_)exec_'), $jx" [ "$(cls '(^|_)exec_')" -eq "$jx" ]
ok "pprof: fault_class kernel_* labels = the JSON's kernel" "$(cls '^kernel_'), $jk" [ "$(cls '^kernel_')" -eq "$jk" ]
ok "pprof: the pid label of page_touch = its by_process row" "pid $jpid: $(fact "$TMP/f.txt" label pid "$jpid"), json $jptot" \
	[ "$(fact "$TMP/f.txt" label pid "$jpid")" -eq "$jptot" ]
ok "pprof: comm label page_touch holds its W+R+X+K faults" "$(fact "$TMP/f.txt" label comm page_touch)" \
	[ "$(fact "$TMP/f.txt" label comm page_touch)" -ge $((W + R + X + K)) ]
dur=$(fact "$TMP/f.txt" duration_nanos)
ok "pprof: duration_nanos = the JSON's duration_s" "pprof $dur, json $jdur" absdiff_le "$dur" "$jdur" 1
tn=$(fact "$TMP/f.txt" time_nanos)
ok "pprof: time_nanos is within the run" "$t0 <= $tn <= $t1" [ "$tn" -ge "$t0" -a "$tn" -le "$t1" ]

# The workload's functions, as in test_folded.sh: each class's pages share one stack.
fn() { fact "$TMP/f.txt" function "$1"; }
ok "pprof: touch_write_pages holds the W write faults" "$(fn touch_write_pages) of $W" \
	between "$(fn touch_write_pages)" $((W * 99 / 100)) $((W + 10))
ok "pprof: touch_read_pages holds the R read faults" "$(fn touch_read_pages) of $R" \
	between "$(fn touch_read_pages)" $((R * 99 / 100)) $((R + 10))
ok "pprof: touch_kernel_pages holds the K kernel faults" "$(fn touch_kernel_pages) of $K" \
	between "$(fn touch_kernel_pages)" $((K * 99 / 100)) $((K + 10))
ok "pprof: touch_all_pages holds W+R+K at least" "$(fn touch_all_pages)" \
	[ "$(fn touch_all_pages)" -ge $(((W + R + K) * 99 / 100)) ]

# Mappings: the workload's and every other file's build ID as readelf -n reads it; the kernel's
# as perf reads it.
pt_id=$(readelf -n "$PT" | awk '/Build ID:/ { print $3; exit }')
map_id=$(awk -v f="$PT" '$1 == "mapping" && $2 == f { print $3 }' "$TMP/f.txt")
ok "pprof: page_touch's mapping has readelf's build ID" "pprof '$map_id', readelf '$pt_id'" \
	[ -n "$pt_id" -a "$map_id" = "$pt_id" ]
bad=0 files=0
while read -r _ file id _; do
	[ -f "$file" ] || continue
	files=$((files + 1))
	want=$(readelf -n "$file" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
	[ "$id" = "${want:--}" ] || { bad=$((bad + 1)); echo "# $file: pprof $id, readelf ${want:-none}"; }
done < <(grep '^mapping /' "$TMP/f.txt")
ok "pprof: every file's mapping has readelf's build ID ($files files)" "$bad differ" [ "$bad" -eq 0 -a "$files" -ge 2 ]
kid=$(perf buildid-list -k 2>/dev/null)
kmap=$(awk '$1 == "mapping" && $2 == "[kernel.kallsyms]" { print $3 }' "$TMP/f.txt")
if [ -n "$kid" ]; then
	ok "pprof: [kernel.kallsyms] has the kernel's build ID (perf buildid-list -k)" "pprof '$kmap', perf '$kid'" \
		[ "$kmap" = "$kid" ]
else
	skip "pprof: the kernel's build ID (perf buildid-list -k gives none)"
fi
ok "pprof: kernel frames are locations of [kernel.kallsyms]" "$(fact "$TMP/f.txt" kernel_locations)" \
	[ "$(fact "$TMP/f.txt" kernel_locations)" -gt 0 ]

# --weight latency: the same profile, latency shown first.
"$MMSCOPE" faults --pprof "$TMP/l.pb.gz" --weight latency -- "$PT" -w 100 >/dev/null 2>"$TMP/err"
rc=$?
$READ "$TMP/l.pb.gz" >"$TMP/l.txt" 2>/dev/null
ok "pprof: --weight latency makes latency the default sample type" "exit $rc: $(grep '^default' "$TMP/l.txt")" \
	[ $rc -eq 0 -a "$(grep '^default_sample_type' "$TMP/l.txt")" = "default_sample_type latency" ]

# ---- pprof itself: its reader and reports ----
same_nonempty() { [ -s "$1" ] && cmp -s "$1" "$2"; }
# total_of FILE SAMPLE-TYPE [PPROF-OPTIONS...] : "of N total" of pprof -top
total_of() {
	local f=$1 t=$2
	shift 2
	"$TMP/pprof" -top -nodecount=1 -symbolize=none -sample_index="$t" "$@" "$f" 2>/dev/null |
		sed -n 's/.*% of \([0-9]*\) total$/\1/p'
}
PPROF_SRC=/usr/share/gocode/src/github.com/google/pprof
if command -v go >/dev/null && [ -d "$PPROF_SRC" ] &&
	GOPATH=/usr/share/gocode GO111MODULE=off GOCACHE="$TMP/gocache" GOFLAGS='' \
		go build -o "$TMP/pprof" github.com/google/pprof >"$TMP/go.err" 2>&1; then
	"$TMP/pprof" -raw -symbolize=none "$TMP/f.pb.gz" >"$TMP/raw" 2>"$TMP/raw.err"
	rc=$?
	ok "pprof: google/pprof reads the profile" "exit $rc: $(one_line "$TMP/raw.err")" [ $rc -eq 0 ]
	n=$(total_of "$TMP/f.pb.gz" faults)
	ok "pprof: google/pprof's total = user + kernel of the --json" "pprof '$n', json $((ju + jk))" \
		[ "${n:-0}" -eq $((ju + jk - jlost)) ]
	# pprof -tags: "KEY: Total N" then "COUNT.0 (PCT%): VALUE" lines, as the reader's labels.
	"$TMP/pprof" -tags -symbolize=none -sample_index=faults "$TMP/f.pb.gz" 2>/dev/null |
		awk '/^ *[a-z_]+: Total / { k = $1; sub(/:$/, "", k); next }
			match($0, /\): /) { n = $1; sub(/\.0$/, "", n); v = substr($0, RSTART + 3); gsub(/ /, "_", v)
				print "label", k, v, n }' | sort >"$TMP/tags"
	grep '^label ' "$TMP/f.txt" | sort >"$TMP/labels"
	ok "pprof: google/pprof -tags = the reader's labels (comm, fault_class, pid)" \
		"$(diff "$TMP/labels" "$TMP/tags" | head -4 | tr '\n' '|')" \
		same_nonempty "$TMP/labels" "$TMP/tags"
	n=$("$TMP/pprof" -top -cum -symbolize=none -sample_index=faults -show='^touch_read_pages$' "$TMP/f.pb.gz" 2>/dev/null |
		awk '$NF == "touch_read_pages" { print $4 }')
	ok "pprof: google/pprof's cum of touch_read_pages = the reader's" "pprof '$n', reader $(fn touch_read_pages)" \
		[ "${n:-x}" = "$(fn touch_read_pages)" ]
	file=$("$TMP/pprof" -top -symbolize=none "$TMP/f.pb.gz" 2>/dev/null | sed -n 's/^File: //p')
	ok "pprof: google/pprof names page_touch the main binary" "File: $file" [ "$file" = page_touch ]
else
	skip "pprof: google/pprof (go and golang-github-google-pprof-dev: make deps) $(one_line "$TMP/go.err" 2>/dev/null)"
fi

# ---- tlb: the issuing side's invalidations (local + broadcast) ----
"$MMSCOPE" tlb --pprof "$TMP/t.pb.gz" --json -o "$TMP/t.json" -- "$WORKLOADS/mprotect_toggle" \
	>/dev/null 2>"$TMP/err"
rc=$?
ok "pprof: tlb --pprof F --json exits 0" "exit $rc: $(one_line "$TMP/err")" [ $rc -eq 0 ]
$READ "$TMP/t.pb.gz" >"$TMP/t.txt" 2>"$TMP/read.err"
ok "pprof: tlb: the profile decodes and follows the rules" "$(grep '^error' "$TMP/t.txt" | head -2 | tr '\n' '|')$(one_line "$TMP/read.err")" \
	[ -s "$TMP/t.txt" -a "$(grep -c '^error' "$TMP/t.txt")" -eq 0 ]
types=$(grep '^sample_type' "$TMP/t.txt" | cut -d' ' -f2- | tr '\n' ',')
ok "pprof: tlb: one sample type, invalidations/count" "$types" [ "$types" = "invalidations count," ]
read -r jl jb < <(json_get "$TMP/t.json" '"%s %s" % (d["tlb"]["local"], d["tlb"]["broadcast"])')
tt=$(fact "$TMP/t.txt" total invalidations)
ok "pprof: tlb: the samples' invalidations = local + broadcast of the --json" "pprof $tt, json $jl + $jb" \
	[ "$tt" -eq $((jl + jb)) -a "$tt" -gt 0 ]
bad=0
while read -r _ _ reason n; do
	want=$(json_get "$TMP/t.json" "d['tlb'].get('$reason')")
	[ "$n" = "$want" ] || { bad=$((bad + 1)); echo "# invalidation $reason: pprof $n, json $want"; }
done < <(grep '^label invalidation ' "$TMP/t.txt")
ok "pprof: tlb: each invalidation label = the JSON's count of that reason" "$bad differ" \
	[ "$bad" -eq 0 -a "$(grep -c '^label invalidation ' "$TMP/t.txt")" -gt 0 ]
if [ -x "$TMP/pprof" ]; then
	n=$(total_of "$TMP/t.pb.gz" invalidations)
	ok "pprof: tlb: google/pprof's total = local + broadcast" "pprof '$n', json $((jl + jb))" \
		[ "${n:-0}" -eq $((jl + jb)) ]
fi

# ---- Ctrl-C: the run ends and the profile is whole ----
"$MMSCOPE" faults --pprof "$TMP/s.pb.gz" -- sleep 60 >/dev/null 2>"$TMP/err" &
pid=$!
if attached "$pid"; then
	kill -INT "$pid"
	wait_exit "$pid" 30 || { kill -KILL "$pid"; rc=timeout; }
	$READ "$TMP/s.pb.gz" >"$TMP/s.txt" 2>"$TMP/read.err"
	ok "pprof: after Ctrl-C the profile is written whole" "exit $rc, $(one_line "$TMP/read.err")" \
		[ -s "$TMP/s.txt" -a "$(grep -c '^error' "$TMP/s.txt")" -eq 0 ]
else
	kill -KILL "$pid" 2>/dev/null
	fail "pprof: the Ctrl-C run did not attach ($(one_line "$TMP/err"))"
fi

# ---- bad input: one line, non-zero, before tracing, nothing written ----
bad_run() { # NAME EXPECTED-RE ARGS...
	local name=$1 re=$2
	shift 2
	"$MMSCOPE" "$@" >"$TMP/bo" 2>"$TMP/be"
	local rc=$? lines
	lines=$(wc -l <"$TMP/be")
	ok "pprof: $name: one-line error, non-zero exit" "exit $rc, $lines lines: $(one_line "$TMP/be")" \
		one_line_error $rc "$lines" "$re"
}
one_line_error() { [ "$1" -ne 0 ] && [ "$2" -eq 1 ] && grep -qE "$3" "$TMP/be"; }
bad_run "a directory that does not exist" '^mmscope: .*--pprof' faults --pprof "$TMP/no/such/dir/p.pb.gz" -- true
bad_run "a directory" 'is a directory' faults --pprof "$TMP" -- true
bad_run "an empty name" 'expected a file name' faults --pprof "" -- true
bad_run "stat has no stacks" 'collects no stacks' stat --pprof "$TMP/x.pb.gz" -- true
bad_run "the same file as -o" 'same file' faults --pprof "$TMP/same" -o "$TMP/same" -- true
bad_run "the same file as --svg" 'same file' faults --pprof "$TMP/same" --svg "$TMP/same" -- true
written=$(find "$TMP" -maxdepth 1 \( -name 'x.pb*' -o -name 'same*' \) | tr '\n' ' ')
ok "pprof: the bad runs wrote nothing" "$written" [ -z "$written" ]
