#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Reliability: the traced processes change under mmscope. They exec, fork, exit while others
# go on, leave a background child behind, exit their main thread first (pthread_exit), and
# their pid is reused by an unrelated process while the run goes on. Counts must stay with
# the right process, a reused pid must not be counted, and the run must end when the
# command (or the last -p target) ends.
#
# Oracles: the workloads' arithmetic (page_touch -w W takes W write faults in its loop; the
# start-up and exit add <= 150, measured 20-50; a sh before its exec adds ~20 more), the kernel's pid allocator
# (/proc/sys/kernel/ns_last_pid makes a new process get a chosen pid), /proc, the clock.
. "$(dirname "$0")/lib.sh" || exit 1
: "${TMP:?lib.sh sets TMP}"
reliability_setup

# rows FILE : "pid:comm:write" for each by_process row
rows() {
	python3 -c '
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])
print(" ".join("%d:%s:%d" % (r["pid"], r["comm"], r["write"]) for r in d["faults"]["by_process"]))' "$1" 2>/dev/null
}
# row_write ROWS PID : the write count of PID's row, or -1 if it has none
row_write() {
	local r
	for r in $1; do
		[ "${r%%:*}" = "$2" ] && { echo "${r##*:}"; return; }
	done
	echo -1
}

# at_pid PID CMD... : runs CMD as a new process with pid PID (not a child of anything traced):
# sets ns_last_pid to PID - 1 and forks; a child that got another pid (someone else forked
# first) exits at once and the fork is tried again, up to 200 times. Prints "REUSED PID"
# once CMD runs; exits with CMD's status, or 99 if the pid could not be had.
cat >"$TMP/at_pid.py" <<'PY'
import os, sys
want, cmd = int(sys.argv[1]), sys.argv[2:]
for _ in range(200):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(want - 1))
    pid = os.fork()
    if pid == 0:
        if os.getpid() != want:
            os._exit(98)
        os.execvp(cmd[0], cmd)
    if pid == want:
        print("REUSED", pid, flush=True)
        _, st = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(st))
    os.waitpid(pid, 0)
sys.exit(99)
PY

# ---- exec and fork: each process's faults in its own row, under its new name ----
# sh forks a page_touch -w 2000, then execs page_touch -w 3000 itself.
"$MMSCOPE" faults --json -o "$TMP/ef.json" -- sh -c "\"$PT\" -w 2000 >/dev/null; exec \"$PT\" -w 3000 >/dev/null" \
	2>"$TMP/ef.err"
rc=$?
ok "exec+fork: exit 0" "exit $rc: $(one_line "$TMP/ef.err")" [ $rc -eq 0 ]
tpid=$(json_get "$TMP/ef.json" 'd["target"]["pid"]' 2>/dev/null)
r=$(rows "$TMP/ef.json")
ok "exec+fork: two rows, the command's pid and one child" "rows '$r', command pid $tpid" \
	[ "$(echo $r | wc -w)" -eq 2 -a "$(row_write "$r" "${tpid:-0}")" -ge 0 ]
ok "exec+fork: the command's row is named page_touch (after exec) and has its 3000 writes (+ <= 300)" \
	"rows '$r'" eval 'echo " $r" | grep -q " ${tpid:-x}:page_touch:" && between "$(row_write "$r" "${tpid:-0}")" 3000 3300'
child=$(for x in $r; do [ "${x%%:*}" != "$tpid" ] && echo "${x%%:*}"; done)
ok "exec+fork: the forked child's row has its 2000 writes (+ <= 300), not the exec'ed image's" \
	"rows '$r'" between "$(row_write "$r" "${child:-0}")" 2000 2300

# ---- the command ends, its background child lives on: the run ends with the command ----
t0=$(now_ms)
"$MMSCOPE" stat --json -o "$TMP/bg.json" -- sh -c "sleep 30 </dev/null >/dev/null 2>&1 & echo \$! >\"$TMP/bg.pid\"" \
	2>"$TMP/bg.err"
rc=$?
dt=$(($(now_ms) - t0))
bg=$(cat "$TMP/bg.pid" 2>/dev/null)
PIDS="$PIDS $bg"
ok "command ends, child lives on: exit 0" "exit $rc: $(one_line "$TMP/bg.err")" [ $rc -eq 0 ]
# 20 s: mmscope's start-up (1-2 s on this VM, more on a busy host) and the command; the
# background sleep lasts 30.
ok "command ends, child lives on: the run ends with the command (< 20 s), not with its child" \
	"${dt} ms; child ${bg:-?} alive: $(kill -0 "${bg:-0}" 2>/dev/null && echo yes || echo no)" \
	eval '[ $dt -lt 20000 ] && kill -0 "${bg:-0}" 2>/dev/null'
[ -n "$bg" ] && kill "$bg" 2>/dev/null

# ---- the main thread exits first (pthread_exit), another thread goes on faulting ----
# The process lives until its last thread exits (its pid is not free before); the
# remaining thread's 3000 writes are the process's.
cat >"$TMP/leader_exit.c" <<'EOF'
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
static long pages;
static void *worker(void *arg)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *p;

	(void)arg;
	usleep(200000); /* the main thread has called pthread_exit() by now */
	p = mmap(NULL, pages * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	madvise(p, pages * ps, MADV_NOHUGEPAGE);
	for (long i = 0; i < pages; i++)
		p[i * ps] = 1;
	return NULL;
}
int main(int argc, char **argv)
{
	pthread_t t;

	pages = argc > 1 ? atol(argv[1]) : 3000;
	pthread_create(&t, NULL, worker, NULL);
	pthread_exit(NULL);
}
EOF
if gcc -O2 -pthread -o "$TMP/leader_exit" "$TMP/leader_exit.c" 2>"$TMP/cc.err"; then
	"$MMSCOPE" faults --json -o "$TMP/le.json" -- "$TMP/leader_exit" 3000 2>"$TMP/le.err"
	rc=$?
	w=$(json_get "$TMP/le.json" 'd["faults"]["write"]' 2>/dev/null)
	ok "main thread exits first: exit 0" "exit $rc: $(one_line "$TMP/le.err")" [ $rc -eq 0 ]
	ok "main thread exits first: the other thread's 3000 writes are counted" "write ${w:-?}" [ "${w:-0}" -ge 3000 ]
else
	skip "main thread exits first (gcc: $(one_line "$TMP/cc.err"))"
fi

# ---- pid reuse: a -p target exits, an unrelated process gets its pid while the run goes on ----
# A and B wait on a FIFO each, then exec page_touch (A -w 50, B -w 1000), so the test says
# when each runs: A after mmscope attached; then a new process, not a child of either, takes
# A's pid and writes 20000 pages (none may be counted); then B, whose exit ends the run.
# go NAME : a FIFO to release a waiting process with
go() { echo go >"$TMP/$1"; }
mkfifo "$TMP/ga" "$TMP/gb" "$TMP/gz"
sh -c "read x <\"$TMP/ga\"; exec \"$PT\" -w 50 >/dev/null" &
A=$!
sh -c "read x <\"$TMP/gb\"; exec \"$PT\" -w 1000 >/dev/null" &
B=$!
PIDS="$PIDS $A $B"
"$MMSCOPE" faults --json --no-children -o "$TMP/reuse.json" -p $A,$B 2>"$TMP/reuse.err" &
MM=$!
PIDS="$PIDS $MM"
if attached $MM; then
	go ga
	wait $A
	python3 "$TMP/at_pid.py" $A "$PT" -w 20000 >"$TMP/at.out" 2>&1
	arc=$?
	mm_alive=$(kill -0 $MM 2>/dev/null && echo yes || echo no)
	go gb
	wait $MM
	rc=$?
	r=$(rows "$TMP/reuse.json")
	ok "-p pid reuse: mmscope exits 0 when the last target (B) exits" "exit $rc: $(one_line "$TMP/reuse.err")" [ $rc -eq 0 ]
	if [ $arc -eq 0 ] && grep -q "^REUSED $A" "$TMP/at.out" && [ $mm_alive = yes ]; then
		ok "-p pid reuse: the new process on A's pid is not counted (A's row <= 50 + 150 writes)" \
			"rows '$r' (pid:comm:write), A=$A B=$B" [ "$(row_write "$r" $A)" -le 200 ]
		ok "-p pid reuse: total writes are A's and B's only (< 20000)" "rows '$r'" \
			[ "$(json_get "$TMP/reuse.json" 'd["faults"]["write"]')" -lt 2000 ]
		ok "-p pid reuse: B's row has its 1000 writes (+ <= 150)" "rows '$r', B=$B" \
			between "$(row_write "$r" $B)" 1000 1150
	else
		skip "-p pid reuse (could not get pid $A for a new process while mmscope ran: $(one_line "$TMP/at.out"), exit $arc, mmscope alive: $mm_alive)"
	fi
else
	fail "-p pid reuse: mmscope never attached ($(one_line "$TMP/reuse.err"))"
	go ga
	go gb
	wait $MM
fi

# ---- pid reuse: a -p target that had already exited when mmscope attached ----
# Z has exited but is not reaped yet (a zombie: /proc/Z exists, so -p Z is accepted), so its
# exit event came before mmscope's hooks. Once Z is reaped, a new process gets its pid and
# writes 20000 pages: it is not Z and must not be counted.
cat >"$TMP/zombie.py" <<'PY'
import os, sys
p = os.fork()
if p == 0:
    os._exit(0)
print(p, flush=True)
open(sys.argv[1]).readline()  # reap when told
os.waitpid(p, 0)
PY
python3 "$TMP/zombie.py" "$TMP/gz" >"$TMP/z.pid" &
ZP=$!
sh -c "read x <\"$TMP/gb\"; exec \"$PT\" -w 1000 >/dev/null" &
B=$!
PIDS="$PIDS $ZP $B"
Z=
for _ in $(seq 100); do
	Z=$(cat "$TMP/z.pid" 2>/dev/null)
	[ -n "$Z" ] && [ "$(awk '{print $3}' /proc/"$Z"/stat 2>/dev/null)" = Z ] && break
	sleep 0.05
done
"$MMSCOPE" faults --json --no-children -o "$TMP/zombie.json" -p "$Z,$B" 2>"$TMP/zombie.err" &
MM=$!
PIDS="$PIDS $MM"
if [ -n "$Z" ] && attached $MM; then
	go gz
	wait $ZP
	python3 "$TMP/at_pid.py" "$Z" "$PT" -w 20000 >"$TMP/atz.out" 2>&1
	arc=$?
	mm_alive=$(kill -0 $MM 2>/dev/null && echo yes || echo no)
	go gb
	wait $MM
	rc=$?
	r=$(rows "$TMP/zombie.json")
	ok "-p exited target: exit 0" "exit $rc: $(one_line "$TMP/zombie.err")" [ $rc -eq 0 ]
	if [ $arc -eq 0 ] && grep -q "^REUSED $Z" "$TMP/atz.out" && [ $mm_alive = yes ]; then
		ok "-p exited target: a new process on its pid is not counted (no row, or <= 200 writes)" \
			"rows '$r' (pid:comm:write), Z=$Z B=$B" [ "$(row_write "$r" "$Z")" -le 200 ]
	else
		skip "-p exited target (could not get pid $Z while mmscope ran: $(one_line "$TMP/atz.out"), exit $arc, mmscope alive: $mm_alive)"
	fi
else
	fail "-p exited target: no zombie ('$Z') or mmscope never attached ($(one_line "$TMP/zombie.err"))"
	go gz
	go gb
	wait $MM
fi

# ---- pid reuse under --, children followed: a followed child exits, an unrelated process
# gets its pid ----
"$MMSCOPE" faults --json -o "$TMP/reuse2.json" -- sh -c "\"$PT\" -w 50 >/dev/null & echo \$! >\"$TMP/kid\"; wait; sleep 2.5" \
	2>"$TMP/reuse2.err" &
MM=$!
PIDS="$PIDS $MM"
kid=
for _ in $(seq 200); do
	kid=$(cat "$TMP/kid" 2>/dev/null)
	[ -n "$kid" ] && [ ! -e /proc/"$kid" ] && break
	sleep 0.05
done
if [ -n "$kid" ] && [ ! -e /proc/"$kid" ]; then
	python3 "$TMP/at_pid.py" "$kid" "$PT" -w 20000 >"$TMP/at2.out" 2>&1
	arc=$?
	mm_alive=$(kill -0 $MM 2>/dev/null && echo yes || echo no)
	wait $MM
	rc=$?
	r=$(rows "$TMP/reuse2.json")
	ok "-- pid reuse: exit 0" "exit $rc: $(one_line "$TMP/reuse2.err")" [ $rc -eq 0 ]
	if [ $arc -eq 0 ] && grep -q "^REUSED $kid" "$TMP/at2.out" && [ $mm_alive = yes ]; then
		ok "-- pid reuse: the new process on the exited child's pid is not counted (row <= 50 + 150 writes)" \
			"rows '$r' (pid:comm:write), child $kid" [ "$(row_write "$r" "$kid")" -le 200 ]
		ok "-- pid reuse: total writes < 20000" "rows '$r'" \
			[ "$(json_get "$TMP/reuse2.json" 'd["faults"]["write"]')" -lt 2000 ]
	else
		skip "-- pid reuse (could not get pid $kid while mmscope ran: $(one_line "$TMP/at2.out"), exit $arc, mmscope alive: $mm_alive)"
	fi
else
	fail "-- pid reuse: the traced command's child never ran ($(one_line "$TMP/reuse2.err"))"
	wait $MM
fi

# ---- -p: the target's own code is symbolized (its maps are read while it is alive) ----
# The run ends when the target exits, so mmscope must read the target's maps while it
# lives, as it does for a -- command.
# The target is held (stopped in its pause) until mmscope has attached, however long that
# takes on a busy host.
"$PT" -w 500 --pause-before-ms 1500 >/dev/null &
P=$!
PIDS="$PIDS $P"
if stop_in_pause $P; then
	"$MMSCOPE" faults --folded -p $P >"$TMP/p.folded" 2>"$TMP/p.err" &
	MM=$!
	attached $MM || true
	kill -CONT $P
	wait $MM
	rc=$?
	ok "-p --folded: exit 0" "exit $rc: $(one_line "$TMP/p.err")" [ $rc -eq 0 ]
	ok "-p --folded: the target's 500 writes are under main;...;touch_write_pages" \
		"$(grep 'write minor' "$TMP/p.folded" | awk '{print $NF, $0}' | sort -n | tail -1 | cut -d' ' -f2- | cut -c1-200)" \
		eval "awk '/;touch_write_pages;/ && /\\[write minor\\]/ {s += \$NF} END {exit !(s >= 500)}' \"$TMP/p.folded\""
else
	skip "-p --folded (the target was not caught inside its pause)"
fi

# ---- a thread killed by its own fault: the open fault never completes ----
# A read of address 8 enters the fault handler and ends in SIGSEGV, with no completion: the
# thread's exit closes its open entry as incomplete (so that a long run's per-thread map holds
# live threads only), and the summary still adds up.
"$MMSCOPE" faults --json -o "$TMP/segv.json" -- python3 -c 'import ctypes; ctypes.string_at(8)' \
	>/dev/null 2>"$TMP/segv.err"
rc=$?
ok "fault kills its thread: the command's status 139" "exit $rc: $(one_line "$TMP/segv.err")" [ $rc -eq 139 ]
read -r inc sums < <(json_get "$TMP/segv.json" \
	'"%d %d" % (d["faults"]["incomplete"], d["faults"]["user"] + d["faults"]["kernel"] == d["faults"]["minor"] + d["faults"]["major"] + d["faults"]["incomplete"])')
ok "fault kills its thread: incomplete >= 1; user + kernel = minor + major + incomplete" \
	"incomplete $inc, sums agree: $sums" eval '[ "$inc" -ge 1 ] && [ "$sums" = 1 ]'

# ---- -t: the run ends when its thread does ----
# A python thread (not the process's leader) prints its TID, lives 1 s and ends; the process
# lives on 8 s more. mmscope -t TID (no -d) must end with the thread, exit 0 and write its
# summary; a second run on the same TID after the thread is gone refuses it.
mkfifo "$TMP/tidfifo"
python3 -c '
import threading, time
def work():
    print(threading.get_native_id(), flush=True)
    time.sleep(1)
t = threading.Thread(target=work); t.start(); t.join(); time.sleep(8)' >"$TMP/tidfifo" &
PY=$!
PIDS="$PIDS $PY"
read -r TID <"$TMP/tidfifo"
t0=$(now_ms)
timeout 6 "$MMSCOPE" stat --json -o "$TMP/tid.json" -t "$TID" 2>"$TMP/tid.err"
rc=$?
took=$(($(now_ms) - t0))
ok "-t thread exits: the run ends with it, exit 0 (not at the process's end)" \
	"exit $rc after $took ms: $(one_line "$TMP/tid.err")" eval '[ $rc -eq 0 ] && [ $took -lt 5000 ]'
ok "-t thread exits: the summary is written" "$(head -c 200 "$TMP/tid.json")" \
	eval "python3 -c 'import json,sys; json.load(open(sys.argv[1]))[\"faults\"]' '$TMP/tid.json'"
"$MMSCOPE" stat -t "$TID" -d 1 >/dev/null 2>"$TMP/tid2.err"
rc=$?
ok "-t on a thread that has exited: a clear error, exit non-zero" "exit $rc: $(one_line "$TMP/tid2.err")" \
	eval '[ $rc -ne 0 ] && grep -q "no such thread\|no thread with TID" "$TMP/tid2.err"'
kill $PY 2>/dev/null
