#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Bad input beyond tests/live/test_bad_input.sh (which it does not repeat): conflicting
# options, unusable --btf files (a directory, a device, a FIFO, empty, random, truncated), -c
# paths that are not cgroup v2 directories, -o paths that cannot take the output, commands
# that cannot run, words before '--', arguments with newlines, a subcommand none of whose
# events can be observed (--method fentry here). The contract, as in test_bad_input.sh: one
# line on stderr starting "mmscope:" that names the offending word, a non-zero exit, nothing
# on stdout, no hang (timeout 8 s, 3 s for the FIFO: 124 means it hung).
. "$(dirname "$0")/lib.sh" || exit 1
: "${TMP:?lib.sh sets TMP}"


# bad NAME MUST-MENTION ARGS... : runs mmscope ARGS..., checks the error contract
bad() {
	local name=$1 word=$2 rc lines first
	shift 2
	timeout "${BAD_TIMEOUT:-8}" "$MMSCOPE" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	lines=$(wc -l <"$TMP/err")
	first=$(head -1 "$TMP/err")
	if [ $rc -eq 124 ]; then
		fail "bad input: $name (hung: still running after ${BAD_TIMEOUT:-8} s)"
		return
	fi
	ok "bad input: $name: non-zero exit" "exit $rc" [ $rc -ne 0 ]
	ok "bad input: $name: one line on stderr, starting 'mmscope:'" \
		"$lines lines: $(head -c 300 "$TMP/err" | tr '\n' '|')" [ "$lines" -eq 1 -a "${first#mmscope:}" != "$first" ]
	ok "bad input: $name: the message names '$word'" "'$(head -c 300 "$TMP/err" | tr '\n' '|')'" \
		grep -qF -- "$word" "$TMP/err"
	ok "bad input: $name: nothing on stdout" "$(head -c 100 "$TMP/out")" [ ! -s "$TMP/out" ]
}

# ---- conflicting options ----
bad "--folded with -i" --folded faults --folded -i 1 -d 2
bad "--no-children without -p or --" --no-children faults --no-children -d 1
bad "switch --folded (no stacks)" --folded switch --folded -d 1
bad "probes -p (not a tracing command)" -p probes -p 1
bad "tlb -i longer than -d" -i tlb -i 3 -d 1

# ---- --btf files that are no BTF ----
mkdir "$TMP/btfdir"
: >"$TMP/empty.btf"
head -c 8192 /dev/urandom >"$TMP/random.btf"
# The real header and a cut body: the type section runs past the end of the file.
head -c 4096 /sys/kernel/btf/vmlinux >"$TMP/cut.btf" 2>/dev/null || cp "$TMP/random.btf" "$TMP/cut.btf"
mknod "$TMP/nulldev" c 1 3
mkfifo "$TMP/fifo.btf"
bad "--btf a directory" "$TMP/btfdir" faults --btf "$TMP/btfdir" -d 1
bad "--btf an empty file" "$TMP/empty.btf" faults --btf "$TMP/empty.btf" -d 1
bad "--btf random bytes" "$TMP/random.btf" faults --btf "$TMP/random.btf" -d 1
bad "--btf a truncated BTF file" "$TMP/cut.btf" faults --btf "$TMP/cut.btf" -d 1
bad "--btf a character device (null)" "$TMP/nulldev" stat --btf "$TMP/nulldev" -d 1
# Nobody writes to this FIFO: opening it for reading blocks until someone does.
BAD_TIMEOUT=3 bad "--btf a FIFO (must not block)" "$TMP/fifo.btf" faults --btf "$TMP/fifo.btf" -d 1

# ---- -c paths that are not cgroup v2 directories ----
bad "-c /proc (a directory, not a cgroup)" /proc faults -c /proc -d 1
bad "-c a regular file" /etc/hostname faults -c /etc/hostname -d 1
v1=$(awk '$3 == "cgroup" {print $2; exit}' /proc/mounts)
if [ -n "$v1" ]; then
	bad "-c a cgroup v1 directory ($v1)" "$v1" faults -c "$v1" -d 1
else
	skip "bad input: -c a cgroup v1 directory (none mounted)"
fi

# ---- -o paths that cannot take the output ----
mkdir "$TMP/odir"
bad "-o a directory" "$TMP/odir" faults -o "$TMP/odir" -d 1
bad "--json -o in a missing directory" "$TMP/missing" stat --json -o "$TMP/missing/x.json" -d 1
ok "bad input: --json -o in a missing directory: created nothing" "$(ls -d "$TMP/missing" 2>&1)" [ ! -e "$TMP/missing" ]
# A device: the output goes to the device itself (for /dev/full: ENOSPC, an error exit), and
# the device node stays what it is. The atomic temporary-file-and-rename of -o is for regular
# files only: renaming over a device node would replace /dev/null or /dev/full (or a tty)
# with a regular file. This test uses a node of its own, never the system's.
mknod "$TMP/full" c 1 7
timeout 20 "$MMSCOPE" stat -o "$TMP/full" -d 1 >"$TMP/out" 2>"$TMP/err" </dev/null
rc=$?
ok "bad input: -o a full device (ENOSPC): the device node is still a character device" \
	"now: $(stat -c '%F' "$TMP/full" 2>&1)" [ -c "$TMP/full" ]
ok "bad input: -o a full device (ENOSPC): non-zero exit, one 'mmscope:' line naming it" \
	"exit $rc: $(head -c 300 "$TMP/err" | tr '\n' '|')" \
	eval '[ $rc -ne 0 ] && [ "$(grep -c "^mmscope: .*$TMP/full" "$TMP/err")" -eq 1 ]'
ok "bad input: -o a full device: no temporary file left next to it" "$(ls -A "$TMP" | grep '^full' | tr '\n' ' ')" \
	[ "$(ls -A "$TMP" | grep -c '^full')" -eq 1 ]

# ---- commands that cannot run ----
echo 'not a program' >"$TMP/noexec"
chmod 644 "$TMP/noexec"
bad "-- a file without x permission" "$TMP/noexec" faults -- "$TMP/noexec"
bad "-- a directory" "$TMP/odir" stat -- "$TMP/odir"
bad "-- an empty command name" "cannot execute" faults -- ""

# ---- words where they do not belong ----
# A word before '--' is not part of the command: "faults /bin/true -- x" is an error, not a
# run of "/bin/true -- x".
bad "a word before '--'" /bin/true faults /bin/true -- /bin/echo x
pids=$$
for _ in $(seq 64); do pids="$pids,$$"; done
bad "-p with 65 pids" 64 faults -p "$pids" -d 1
# An argument with a newline: still one line on stderr (the message must not break lines).
bad "-p with a newline in its value" "-p" faults -p "$(printf '1\n2')" -d 1

# ---- a subcommand none of whose events can be observed ----
# --method fentry: this kernel has no fentry/fexit trampolines (checked: if a faults run with
# it works, there is nothing to test here).
if timeout 20 "$MMSCOPE" faults --method fentry -d 0.1 >/dev/null 2>&1; then
	skip "bad input: --method fentry (fentry works on this kernel)"
else
	for cmd in faults stat tlb switch; do
		bad "$cmd --method fentry (no event observable)" "$cmd" $cmd --method fentry -d 1
	done
fi
