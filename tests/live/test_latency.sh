#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The fault latency histograms: every completed fault is in them, minor and major apart.
#
# The command is a small python3 program that maps a file whose page cache was just dropped
# (posix_fadvise DONTNEED after fsync, on this file only) and reads one byte per page with
# MADV_RANDOM (no readahead): one major fault per page, next to python's own ~10000 minor
# faults. Oracles: perf stat's major-faults on the same command, the probes' verdict (no
# fentry, no kprobes: latency must come from pairing), and physics: reading a page from disk
# takes longer than mapping one that is in memory.
. "$(dirname "$0")/lib.sh"

PAGES=1024


command -v python3 >/dev/null || { skip "latency (no python3 for the major-fault command)"; exit 0; }
# The data file must be on a disk-backed file system: a tmpfs page is never read from disk.
DATAFILE=$(mktemp -p /var/tmp mmscope-latency.XXXXXX)
trap 'rm -rf "$TMP" "$DATAFILE"' EXIT
DATA=$DATAFILE
if [ "$(stat -f -c %T /var/tmp)" = tmpfs ]; then
	skip "latency: major faults (/var/tmp is tmpfs: no page is ever read from disk)"
	DATA=
fi
cat >"$TMP/major.py" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
m.madvise(mmap.MADV_RANDOM)
s = 0
for off in range(0, size, mmap.PAGESIZE):
    s += m[off]
print("major.py: pages=%d sum=%d" % (size // mmap.PAGESIZE, s))
EOF
[ -n "$DATA" ] && head -c $((PAGES * 4096)) /dev/urandom >"$DATA"

"$MMSCOPE" faults --json -o "$TMP/f.json" -- python3 "$TMP/major.py" "${DATA:-/etc/hostname}" >"$TMP/out" 2>"$TMP/err"
rc=$?
ok "latency: mmscope exits 0" "exit $rc: $(head -c 300 "$TMP/err" | tr '\n' ' ')" [ $rc -eq 0 ]
[ -s "$TMP/f.json" ] || { fail "latency: no JSON written"; exit 0; }

python3 - "$TMP/f.json" >"$TMP/vals" <<'PY'
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])
f = d["faults"]
def total(h): return sum(b["count"] for b in h)
def median(h):
    n, acc = total(h), 0
    for b in h:
        acc += b["count"]
        if 2 * acc >= n:
            return b["lo"]
    return 0
def shape_ok(h):
    # log2 buckets: lo a power of two (or 0), hi = 2*lo - 1, ascending, counts > 0
    prev = -1
    for b in h:
        lo, hi, c = b["lo"], b["hi"], b["count"]
        if lo <= prev or c <= 0 or not (lo == 0 and hi in (0, 1) or lo & (lo - 1) == 0 and hi == 2 * lo - 1):
            return 0
        prev = hi
    return 1
entry = [h["attach"] for h in d["hooks"] if h["event"] == "fault-entry" and h["chosen"]]
done = [h["method"] for h in d["hooks"] if h["event"] == "fault-completion" and h["chosen"]]
print("minor", f["minor"]); print("major", f["major"]); print("incomplete", f["incomplete"])
print("all", total(f["latency_ns"])); print("hminor", total(f["latency_ns_minor"]))
print("hmajor", total(f["latency_ns_major"]))
print("med_minor", median(f["latency_ns_minor"])); print("med_major", median(f["latency_ns_major"]))
print("shape", shape_ok(f["latency_ns"]) & shape_ok(f["latency_ns_minor"]) & shape_ok(f["latency_ns_major"]))
print("method", f["latency_method"] or "null")
# each histogram's sum (ns) lies between its buckets' lower and upper bounds, and all = minor + major
def sum_ok(k):
    h, sm = f[k], f[k + "_sum"]
    return sum(b["lo"] * b["count"] for b in h) <= sm <= sum(b["hi"] * b["count"] for b in h)
print("sums", int(all(sum_ok(k) for k in ("latency_ns", "latency_ns_minor", "latency_ns_major"))
                  and f["latency_ns_sum"] == f["latency_ns_minor_sum"] + f["latency_ns_major_sum"]))
print("entry", (entry or ["none"])[0]); print("done", (done or ["none"])[0])
PY
v() { sed -n "s/^$1 //p" "$TMP/vals"; }
minor=$(v minor) major=$(v major) all=$(v all) hminor=$(v hminor) hmajor=$(v hmajor)
method=$(v method) entry=$(v entry) completion=$(v "done")

# The probes' verdict on this host (test_probes.sh checks it): fentry refused, no kprobes, so
# completion comes from the perf minor/major events and latency from pairing entry and
# completion per thread.
ok "latency: latency_method is pairing" "latency_method '$method'" [ "${method%%:*}" = pairing ]
ok "latency: latency_method names the chosen fault-entry hook" "method '$method', entry hook '$entry'" \
	grep -qF -- "$entry" <<<"$method"
ok "latency: fault completion is the perf event" "chosen '$completion'" [ "$completion" = perf ]
# With pairing every completed fault gets exactly one latency sample, so the histogram holds
# them all; >= 99% is the requirement (samples beyond the last log2 slot would be dropped).
ok "latency: histogram holds >= 99% of minor + major" "histogram $all, minor+major $((minor + major))" \
	[ $((all * 100)) -ge $((99 * (minor + major))) -a "$all" -le $((minor + major)) ]
ok "latency: minor histogram sum == minor" "histogram $hminor, minor $minor" [ "$hminor" -eq "$minor" ]
ok "latency: major histogram sum == major" "histogram $hmajor, major $major" [ "$hmajor" -eq "$major" ]
ok "latency: buckets are ascending log2 ranges with counts" "$(head -c 300 "$TMP/vals")" [ "$(v shape)" = 1 ]
ok "latency: each *_sum within its buckets' bounds; all = minor + major" "$(head -c 300 "$TMP/vals")" \
	[ "$(v sums)" = 1 ]

if [ -n "$DATA" ]; then
	# perf stat on the same command (the page cache is dropped again by the script).
	# +-2% + 2: the PAGES major faults are deterministic with MADV_RANDOM; python's own
	# startup may take one or two more (a library page evicted meanwhile).
	if perf stat -x, -e major-faults -o "$TMP/perf.csv" -- python3 "$TMP/major.py" "$DATA" >/dev/null 2>"$TMP/perf.err"; then
		pmaj=$(awk -F, '$3 == "major-faults" {print $1}' "$TMP/perf.csv")
		ok "latency: major faults happened (>= $PAGES, the file's pages)" "major $major" [ "$major" -ge $PAGES ]
		ok "latency: major vs perf major-faults" "mmscope $major, perf $pmaj" absdiff_le "$major" "$pmaj" $((pmaj / 50 + 2))
	else
		fail "latency: perf stat failed ($(head -c 300 "$TMP/perf.err"))"
	fi
	# A major fault waits for a disk read (tens of microseconds at least, even on virtio),
	# a minor one maps a page already in memory (a few microseconds). Comparing medians of
	# the log2 buckets needs no absolute threshold.
	mmin=$(v med_minor) mmaj=$(v med_major)
	ok "latency: median major latency > median minor latency" "major bucket $mmaj ns, minor bucket $mmin ns" \
		[ "$mmaj" -gt "$mmin" ]
fi
