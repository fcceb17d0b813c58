#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Bad input: each mistake gets one line on stderr starting with "mmscope:" that names the
# offending word, a non-zero exit, no output on stdout, and no hang (timeout 20 s: 124 means
# it hung). Help and version requests exit 0.
. "$(dirname "$0")/lib.sh"


# bad NAME MUST-MENTION ARGS... : runs mmscope ARGS..., checks the error contract
bad() {
	local name=$1 word=$2 rc lines first
	shift 2
	timeout 20 "$MMSCOPE" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	lines=$(wc -l <"$TMP/err")
	first=$(head -1 "$TMP/err")
	if [ $rc -eq 124 ]; then
		fail "bad input: $name (hung: still running after 20 s)"
		return
	fi
	ok "bad input: $name: non-zero exit" "exit $rc" [ $rc -ne 0 ]
	ok "bad input: $name: one line on stderr, starting 'mmscope:'" \
		"$lines lines: $(head -c 300 "$TMP/err" | tr '\n' '|')" [ "$lines" -eq 1 -a "${first#mmscope:}" != "$first" ]
	ok "bad input: $name: the message names '$word'" "'$first'" grep -qF -- "$word" "$TMP/err"
	ok "bad input: $name: nothing on stdout" "$(head -c 100 "$TMP/out")" [ ! -s "$TMP/out" ]
}

bad "unknown subcommand" bogus bogus
bad "unknown flag" --bogus faults --bogus
bad "-p of a nonexistent pid" 999999 faults -p 999999
bad "-p abc" abc faults -p abc
bad "-- /nonexistent/cmd" /nonexistent/cmd faults -- /nonexistent/cmd
bad "-d -1" -1 faults -d -1
bad "-d 0" 0 faults -d 0
bad "-i 5 -d 1" -i faults -i 5 -d 1
bad "--btf /nonexistent" /nonexistent faults --btf /nonexistent -d 1
[ -e /nonexistent-dir ] && skip "bad input: -o /nonexistent-dir/x.json (/nonexistent-dir exists)" ||
	bad "-o /nonexistent-dir/x.json" /nonexistent-dir faults -o /nonexistent-dir/x.json -d 1
ok "bad input: -o /nonexistent-dir/x.json created nothing" "$(ls -d /nonexistent-dir 2>&1)" [ ! -e /nonexistent-dir ]
# An error found after -o was opened must not leave the file (or its temporary) behind.
mkdir "$TMP/o"
bad "-o FILE with -p 999999" 999999 faults --json -o "$TMP/o/x.json" -p 999999
ok "bad input: -o FILE with a failing run leaves the directory empty" "left: $(ls -A "$TMP/o" | tr '\n' ' ')" \
	[ -z "$(ls -A "$TMP/o")" ]
bad "stat --folded" --folded stat --folded -d 1
bad "--json --folded" --folded faults --json --folded -d 1
bad "-c /tmp (not a cgroup)" /tmp faults -c /tmp -d 1
bad "-t 1 --no-children" --no-children faults -t 1 --no-children -d 1
bad "--method bogus" bogus faults --method bogus -d 1
bad "-C 9999" 9999 faults -C 9999 -d 1

# ---- without privileges: must say which capability is missing ----
if ! command -v setpriv >/dev/null; then
	skip "bad input: unprivileged run (no setpriv)"
elif ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$MMSCOPE"; then
	skip "bad input: unprivileged run ($MMSCOPE is not executable by uid 65534)"
else
	timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups "$MMSCOPE" stat -d 1 >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	ok "bad input: unprivileged: non-zero exit, no hang" "exit $rc" [ $rc -ne 0 -a $rc -ne 124 ]
	ok "bad input: unprivileged: one line on stderr, starting 'mmscope:'" \
		"$(head -c 300 "$TMP/err" | tr '\n' '|')" [ "$(wc -l <"$TMP/err")" -eq 1 -a "$(head -c 8 "$TMP/err")" = mmscope: ]
	ok "bad input: unprivileged: names the missing capability" "'$(head -1 "$TMP/err")'" \
		grep -qE 'CAP_(BPF|PERFMON|SYS_ADMIN)' "$TMP/err"
fi

# ---- help and version: exit 0, on stdout ----
for args in "--version" "-V"; do
	timeout 20 "$MMSCOPE" $args >"$TMP/out" 2>"$TMP/err"
	rc=$?
	ok "mmscope $args: exit 0, 'mmscope VERSION' on stdout" "exit $rc, stdout '$(head -c 100 "$TMP/out")'" \
		[ $rc -eq 0 -a "$(wc -l <"$TMP/out")" -eq 1 -a "$(cut -d' ' -f1 "$TMP/out")" = mmscope ]
done
help_ok() { [ "$1" -eq 0 ] && [ ! -s "$TMP/err" ] && grep -q "^Usage: mmscope $2" "$TMP/out"; }
for cmd in faults stat probes; do
	timeout 20 "$MMSCOPE" $cmd --help >"$TMP/out" 2>"$TMP/err"
	rc=$?
	ok "mmscope $cmd --help: exit 0, usage on stdout, nothing on stderr" "exit $rc, $(head -c 100 "$TMP/out")" \
		help_ok $rc $cmd
done
