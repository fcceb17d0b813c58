#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Privileges: without CAP_BPF / CAP_PERFMON (or CAP_SYS_ADMIN) the error names the missing
# capability, one line, whoever runs it: an unprivileged user with some of the capabilities,
# and root (uid 0) whose capabilities were taken away (a container, systemd's
# CapabilityBoundingSet=, capsh --drop). With CAP_BPF + CAP_PERFMON alone, it works.
# (test_bad_input.sh checks an unprivileged user without any capability.)
#
# And mmscope writes no file but the one the user named with -o (through its temporary
# sibling FILE.tmp.XXXXXX): every open for writing, create, rename, unlink, link, mkdir,
# truncate or mknod it makes, seen by strace, is checked.
#
# Oracles: the capability sets the kernel reports (/proc/PID/status under setpriv), strace.
. "$(dirname "$0")/lib.sh" || exit 1
: "${TMP:?lib.sh sets TMP}"
# The system's python3 (lib.sh's json_get): a pyenv shim first in PATH takes ~1 s a call here.
[ -x /usr/bin/python3 ] && PATH=/usr/bin:$PATH

PT="$WORKLOADS/page_touch"

# ---- missing capabilities: one line naming the missing one ----
# denied NAME MUST-MATCH SETPRIV-ARGS... : mmscope stat -d 1 under setpriv
denied() {
	local name=$1 re=$2 rc
	shift 2
	timeout 20 setpriv "$@" "$MMSCOPE" stat -d 1 >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	ok "privileges: $name: non-zero exit, no hang" "exit $rc" [ $rc -ne 0 -a $rc -ne 124 ]
	ok "privileges: $name: one line on stderr, starting 'mmscope:'" "$(one_line "$TMP/err")" \
		[ "$(wc -l <"$TMP/err")" -eq 1 -a "$(head -c 8 "$TMP/err")" = mmscope: ]
	ok "privileges: $name: names the missing capability ($re)" "'$(one_line "$TMP/err")'" grep -qE "$re" "$TMP/err"
}
if ! command -v setpriv >/dev/null; then
	skip "privileges: all (no setpriv)"
	exit 0
fi
NOBODY=(--reuid=65534 --regid=65534 --clear-groups)
if ! setpriv "${NOBODY[@]}" test -x "$MMSCOPE"; then
	skip "privileges: unprivileged users ($MMSCOPE is not executable by uid 65534)"
else
	denied "uid 65534 with CAP_BPF only" 'CAP_PERFMON' "${NOBODY[@]}" --inh-caps=-all,+bpf --ambient-caps=-all,+bpf
	denied "uid 65534 with CAP_PERFMON only" 'CAP_BPF' "${NOBODY[@]}" --inh-caps=-all,+perfmon --ambient-caps=-all,+perfmon
	# CAP_BPF + CAP_PERFMON are enough (docs/reliability.md): a command run, counted.
	timeout 30 setpriv "${NOBODY[@]}" --inh-caps=-all,+bpf,+perfmon --ambient-caps=-all,+bpf,+perfmon \
		"$MMSCOPE" stat --json -- "$PT" -w 1000 >"$TMP/cap.out" 2>"$TMP/cap.err" </dev/null
	rc=$?
	w=$(tail -1 "$TMP/cap.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["faults"]["write"])' 2>/dev/null)
	ok "privileges: uid 65534 with CAP_BPF + CAP_PERFMON: runs, exit 0, counts the command's 1000 writes" \
		"exit $rc, write '${w}': $(one_line "$TMP/cap.err")" [ $rc -eq 0 -a "${w:-0}" -ge 1000 ]
fi
# uid 0 without capabilities: the uid says nothing about what the kernel allows.
denied "uid 0 without any capability" 'CAP_(BPF|PERFMON|SYS_ADMIN)' --inh-caps=-all --bounding-set=-all
denied "uid 0 with CAP_BPF only" 'CAP_PERFMON' --inh-caps=-all,+bpf --bounding-set=-all,+bpf

# ---- no file written but -o FILE ----
if ! command -v strace >/dev/null; then
	skip "privileges: writes (no strace)"
	exit 0
fi
cat >"$TMP/writes.py" <<'PY'
import re, sys
# An strace -f log of one mmscope run; -o FILE (or '-'). Prints every write-side call of
# mmscope's own process (the first pid) on a path other than FILE or FILE.tmp.XXXXXX.
log, out = sys.argv[1], sys.argv[2]
lines = [l.rstrip("\n") for l in open(log)]
mm = lines[0].split()[0] if lines else None
ok = re.compile(re.escape(out) + r"(\.tmp\.[A-Za-z0-9]{6})?$") if out != "-" else None
bad = []
for l in lines:
    pid, rest = l.split(None, 1)  # strace pads short pids
    if pid != mm or "resumed>" in rest:
        continue
    m = re.match(r"(\w+)\((.*)", rest)
    if not m:
        continue
    call, args = m.groups()
    paths = re.findall(r'"([^"]*)"', args)
    if call in ("open", "openat", "openat2", "creat"):
        if call != "creat" and not re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND", args):
            continue
        paths = paths[:1]
    elif call not in ("rename", "renameat", "renameat2", "unlink", "unlinkat", "link", "linkat",
                      "symlink", "symlinkat", "mkdir", "mkdirat", "truncate", "mknod", "mknodat",
                      "chmod", "fchmodat", "chown", "fchownat", "lchown"):
        continue
    for p in paths:
        if not (ok and ok.match(p)):
            bad.append(rest[:150])
            break
print("; ".join(bad[:5]))
PY
TRACE=open,openat,openat2,creat,rename,renameat,renameat2,unlink,unlinkat,link,linkat,symlink,symlinkat,mkdir,mkdirat,truncate,mknod,mknodat,chmod,fchmodat,chown,fchownat,lchown
mkdir "$TMP/w"
# writes NAME OUTFILE|- MMSCOPE-ARGS...
writes() {
	local name=$1 out=$2 rc bad
	shift 2
	strace -f -qq -o "$TMP/w.strace" -e trace=$TRACE "$MMSCOPE" "$@" >"$TMP/w.stdout" 2>"$TMP/w.err" </dev/null
	rc=$?
	bad=$(python3 "$TMP/writes.py" "$TMP/w.strace" "$out" 2>&1)
	ok "writes: $name: writes only -o FILE and its temporary sibling (or nothing)" \
		"exit $rc; writes: $bad" [ -z "$bad" ]
}
writes "faults --json -o FILE -- page_touch" "$TMP/w/f.json" faults --json -o "$TMP/w/f.json" -- "$PT" -w 100
writes "faults --folded -o FILE -- page_touch" "$TMP/w/f.folded" faults --folded -o "$TMP/w/f.folded" -- "$PT" -w 100
writes "stat -- page_touch (stdout)" - stat -- "$PT" -w 100
writes "tlb -d 1 (host-wide, stdout)" - tlb -d 1
writes "switch -o FILE -d 0.5" "$TMP/w/s.txt" switch -o "$TMP/w/s.txt" -d 0.5
writes "probes (stdout)" - probes
writes "faults --json -o FILE -p (a failing run)" "$TMP/w/e.json" faults --json -o "$TMP/w/e.json" -p 999999
ok "writes: the directory holds exactly the files named with -o" "$(ls -A "$TMP/w" | tr '\n' ' ')" \
	[ "$(ls -A "$TMP/w" | tr '\n' ' ')" = "f.folded f.json s.txt " ]
