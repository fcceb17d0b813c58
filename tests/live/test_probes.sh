#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope probes: the attach method chosen for each event, and why the others are refused.
#
# Oracles for this host: the kernel's own interfaces, asked directly. BTF
# (/sys/kernel/btf/vmlinux) and the exceptions tracepoints (tracefs) make tp_btf possible;
# bpftrace's feature probe says whether fentry ("kfunc") programs load; a kernel without
# kprobes has no kprobe PMU (/sys/bus/event_source/devices/kprobe) and no kprobe_events file.
. "$(dirname "$0")/lib.sh"


timeout 60 "$MMSCOPE" probes --json >"$TMP/p.json" 2>"$TMP/err"
rc=$?
ok "probes --json: exit 0" "exit $rc: $(head -c 300 "$TMP/err" | tr '\n' ' ')" [ $rc -eq 0 ]
timeout 60 "$MMSCOPE" probes >"$TMP/p.txt" 2>"$TMP/err2"
rc=$?
ok "probes (text): exit 0" "exit $rc: $(head -c 300 "$TMP/err2" | tr '\n' ' ')" [ $rc -eq 0 ]

# One line per candidate: EVENT METHOD ATTACH STATUS REASON (reason "-" when null)
python3 - "$TMP/p.json" >"$TMP/cands" 2>"$TMP/perr" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for e in d["events"]:
    chosen = [c for c in e["candidates"] if c["status"] == "chosen"]
    # consistency: the event's method is its one chosen candidate's (null when none works)
    ok = (len(chosen) == 1 and e["method"] == chosen[0]["method"]) or (not chosen and e["method"] is None)
    print("EVENT", e["event"], e["method"] or "-", "consistent" if ok else "INCONSISTENT")
    for c in e["candidates"]:
        print("CAND", e["event"], c["method"], c["attach"], c["status"], c["reason"] or "-")
PY
[ -s "$TMP/cands" ] || { fail "probes --json: not the expected document ($(head -c 300 "$TMP/perr"))"; exit 0; }
cand() { awk -v e="$1" -v m="$2" '$1 == "CAND" && $2 == e && $3 == m' "$TMP/cands"; }
status() { cand "$1" "$2" | awk '{print $5}'; }
reason() { cand "$1" "$2" | cut -d' ' -f6-; }
evmethod() { awk -v e="$1" '$1 == "EVENT" && $2 == e {print $3}' "$TMP/cands"; }

bad=$(grep -c INCONSISTENT "$TMP/cands")
ok "probes: each event's method is its single chosen candidate" "$(grep INCONSISTENT "$TMP/cands" | head -3)" [ "$bad" -eq 0 ]

# ---- fault-entry: tp_btf on the exceptions tracepoints ----
if [ -r /sys/kernel/btf/vmlinux ] && [ -d /sys/kernel/tracing/events/exceptions/page_fault_user ]; then
	ok "probes: fault-entry chooses tp_btf (BTF and exceptions tracepoints present)" \
		"method '$(evmethod fault-entry)'" [ "$(evmethod fault-entry)" = tp_btf ]
	ok "probes: fault-entry tp_btf attaches to exceptions:page_fault_user+page_fault_kernel" \
		"$(cand fault-entry tp_btf)" [ "$(cand fault-entry tp_btf | awk '{print $4}')" = exceptions:page_fault_user+page_fault_kernel ]
else
	skip "probes: fault-entry tp_btf (no BTF or no exceptions tracepoints on this kernel)"
fi

# ---- fault-completion: fentry refused, kprobe refused, perf chosen ----
kfunc=$(bpftrace --info 2>&1 | awk -F': *' '$1 ~ /^ *kfunc$/ {print $2}')
if [ "$kfunc" = no ]; then
	ok "probes: fentry candidate refused (bpftrace: kfunc: no)" "$(cand fault-completion fentry)" \
		[ "$(status fault-completion fentry)" = refused ]
	ok "probes: the fentry reason says refused / EPERM" "reason '$(reason fault-completion fentry)'" \
		grep -qiE 'refused|EPERM|not permitted' <<<"$(reason fault-completion fentry)"
else
	skip "probes: fentry refusal (bpftrace reports kfunc: '${kfunc:-unknown}' on this kernel)"
fi
if [ ! -e /sys/bus/event_source/devices/kprobe ] && [ ! -e /sys/kernel/tracing/kprobe_events ]; then
	ok "probes: kprobe candidate refused (no kprobe PMU, no kprobe_events)" "$(cand fault-completion kprobe)" \
		[ "$(status fault-completion kprobe)" = refused ]
	ok "probes: the kprobe reason says there are no kprobes" "reason '$(reason fault-completion kprobe)'" \
		grep -qiE 'no kprobe' <<<"$(reason fault-completion kprobe)"
	if [ "$kfunc" = no ]; then
		ok "probes: fault-completion chooses perf (fentry and kprobe impossible)" \
			"method '$(evmethod fault-completion)'" [ "$(evmethod fault-completion)" = perf ]
	fi
else
	skip "probes: kprobe refusal (this kernel has kprobes)"
fi
# Every refused candidate says why.
noreason=$(awk '$1 == "CAND" && $5 == "refused" && $6 == "-"' "$TMP/cands")
ok "probes: every refused candidate has a reason" "$noreason" [ -z "$noreason" ]

# ---- the text output lists the same candidates with the same status and reason ----
# The table's columns are padded but a long name overflows its column, and an attach point
# may contain blanks ("17 functions (...)"): each JSON candidate must appear in its event's
# block of rows as "METHOD  ATTACH  STATUS[: REASON]", and the block has one row per candidate.
python3 - "$TMP/p.json" "$TMP/p.txt" >"$TMP/textcmp" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().splitlines()
try:
    body = lines[next(i for i, l in enumerate(lines) if re.match(r"EVENT +METHOD", l)) + 1:]
except StopIteration:
    print("no table header in the text output"); sys.exit()
blocks, cur = {}, None
for l in body:
    if not l.strip() or l.lstrip().startswith("=>"):
        continue
    if not l.startswith(" "):
        cur = l.split()[0]
        blocks[cur] = []
    if cur is not None:
        blocks[cur].append(l)
for e in d["events"]:
    rows = blocks.get(e["event"])
    if rows is None:
        print("event %s missing" % e["event"]); continue
    if len(rows) != len(e["candidates"]):
        print("%s: %d rows for %d candidates" % (e["event"], len(rows), len(e["candidates"])))
    for c in e["candidates"]:
        pat = r"(^| )%s +%s +%s%s *$" % (re.escape(c["method"]), re.escape(c["attach"]), re.escape(c["status"]),
                                     (": " + re.escape(c["reason"])) if c["reason"] else "(:.*)?")
        if not any(re.search(pat, r) for r in rows):
            print("%s/%s: no row '%s  %s  %s: %s'" % (e["event"], c["method"], c["method"], c["attach"],
                                                   c["status"], c["reason"]))
PY
ok "probes: the text lists every JSON candidate with its status and reason, in its event's rows" \
	"$(head -5 "$TMP/textcmp" | tr '\n' '|')" [ ! -s "$TMP/textcmp" ]
# Not vacuous: the text table has as many candidate rows as the JSON has candidates.
nj=$(grep -c '^CAND' "$TMP/cands")
nt=$(awk '/^EVENT +METHOD/ { b = 1; next } b && NF && !/^ *=>/' "$TMP/p.txt" | wc -l)
ok "probes: text rows == JSON candidates" "text $nt, json $nj" [ "$nt" -eq "$nj" ]

# ---- what a tracing run actually uses matches the probes' choice ----
"$MMSCOPE" faults --json -o "$TMP/f.json" -- true >/dev/null 2>"$TMP/err3"
used=$(json_get "$TMP/f.json" '" ".join("%s=%s" % (h["event"], h["method"]) for h in d["hooks"] if h["chosen"])' 2>/dev/null)
want="fault-entry=$(evmethod fault-entry) fault-completion=$(evmethod fault-completion)"
ok "probes: mmscope faults attaches what probes chose" "faults hooks '$used', probes '$want'" \
	grep -qF "$want" <<<"$used"
