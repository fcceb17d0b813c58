#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope probes: the attach method chosen for each event, and why the others are refused.
#
# Oracles for this host: the kernel's own interfaces, asked directly. BTF
# (/sys/kernel/btf/vmlinux) and the exceptions tracepoints (tracefs) make tp_btf possible;
# bpftrace's feature probe says whether fentry ("kfunc") programs load; a kernel without
# kprobes has no kprobe PMU (/sys/bus/event_source/devices/kprobe) and no kprobe_events file.
. "$(dirname "$0")/lib.sh"

ok() {
	local name=$1 detail=$2
	shift 2
	if "$@"; then pass "$name"; else fail "$name ($detail)"; fi
}

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

# ---- the text output lists the same candidates with the same status ----
# Rows: "EVENT METHOD ATTACH STATUS[: reason]", or without EVENT for the event's next
# candidates (the line starts with blanks).
awk '
	/^EVENT +METHOD/ { body = 1; next }
	!body || NF < 3 || /^ +=>/ { next }
	/^[^ ]/ { ev = $1; m = $2; a = $3; s = $4 }
	/^ /    { m = $1; a = $2; s = $3 }
	{ sub(/:$/, "", s); print "CAND", ev, m, a, s }
' "$TMP/p.txt" | sort >"$TMP/text_cands"
cut -d' ' -f1-5 <(grep '^CAND' "$TMP/cands") | sort >"$TMP/json_cands"
ok "probes: text and JSON list the same candidates and statuses" \
	"$(diff "$TMP/json_cands" "$TMP/text_cands" | head -6 | tr '\n' '|')" cmp -s "$TMP/json_cands" "$TMP/text_cands"
# And the text carries the same reasons.
missing=
while read -r _ ev m a s r; do
	[ "$r" = - ] && continue
	grep -qF -- "$r" "$TMP/p.txt" || missing="$missing $ev/$m"
done < <(grep '^CAND' "$TMP/cands")
ok "probes: text shows every JSON reason" "missing for:$missing" [ -z "$missing" ]

# ---- what a tracing run actually uses matches the probes' choice ----
"$MMSCOPE" faults --json -o "$TMP/f.json" -- true >/dev/null 2>"$TMP/err3"
used=$(json_get "$TMP/f.json" '" ".join("%s=%s" % (h["event"], h["method"]) for h in d["hooks"] if h["chosen"])' 2>/dev/null)
want="fault-entry=$(evmethod fault-entry) fault-completion=$(evmethod fault-completion)"
ok "probes: mmscope faults attaches what probes chose" "faults hooks '$used', probes '$want'" \
	grep -qF "$want" <<<"$used"
