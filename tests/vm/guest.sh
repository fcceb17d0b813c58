#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tests/vm/guest.sh - runs inside the test VM as /test.sh (busybox ash; no python, no bash).
#
# What: runs mmscope's commands on the workloads, one block per command, on the serial console:
#
#   === BEGIN <name>
#   === CMD <command line>
#   === VMSTAT pgfault=<before> <after> pgmajfault=<before> <after>
#   === IRQWORK <before> <after>   (irq_work interrupts, where /proc/interrupts counts them)
#   === TIME <seconds>
#   <the command's stdout: the workload's "name: key=value ..." summary line and mmscope's JSON>
#   === STDERR <each stderr line>
#   === HIST <event> <each line of the tracefs hist file of a trigger set around the command>
#   === END <name> rc=<exit status>
#
# and leaves every judgement to tests/vm/check.py on the host. /proc/vmstat is read right
# before and after the command (the kernel's own fault counters, host-wide); where the kernel
# has a tracepoint for what is measured (tlb:tlb_flush on x86, powerpc:tlbie and
# powerpc:hash_fault on ppc64le, sched:sched_switch everywhere) a hist trigger keyed by
# common_pid.execname counts its events per process while the command runs, which lets the
# host pick out the workload's share (powerpc:hcall_entry by opcode too: a pseries guest on
# the hash MMU invalidates through hcalls, not tlbie). On arm64, which has no TLBI tracepoint, kprobe events on
# the functions that issue the broadcast TLBIs are counted the same way.
#
# Why the output is gathered first and printed after: the workload and mmscope both write to
# stdout, and a console line cut by kernel messages would break the JSON. Output goes to files
# and is printed once the command has finished; the console log level is lowered to 1 so
# that only emergencies can interleave (the kernel log of the run is printed at the end).
#
# Input: /etc/vmtest.env (VMTEST_TARGET=x86_64|power9|power8|arm64[-SERIES]), /btf/vmlinux.btf
# (ppc64le 6.1), /btf/wrong.btf (a BTF of no kernel here).
#
# shellcheck disable=SC2086 # $BTF, $counters, $OUT/$name: word splitting wanted, no spaces
# shellcheck disable=SC1091 # /etc/vmtest.env exists only in the guest (written by run.sh)
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
. /etc/vmtest.env
# x86_64-5.10 and the like: the machine of x86_64 with another kernel series
VMTEST_MACHINE=${VMTEST_TARGET%%-*}
T=/sys/kernel/tracing
OUT=/tmp/vmtest
mkdir -p $OUT

BTF=""
[ -f /btf/vmlinux.btf ] && BTF="--btf /btf/vmlinux.btf"

dmesg -n 1
# Nothing typed into the console may show up in the log (QEMU's stdin is /dev/null, but if
# that is not the null device, its bytes would be echoed into the middle of the output).
stty -F /dev/console -echo 2>/dev/null
dmesg_lines0=$(dmesg | wc -l)

vmstat_get() { awk '$1 == "pgfault" { f = $2 } $1 == "pgmajfault" { m = $2 } END { print f, m }' /proc/vmstat; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
# irq_work interrupts, all CPUs (x86's IWI, arm64's IPI "IRQ work interrupts"; empty where
# the kernel counts none): a build-ID read from a hook with interrupts off unlocks the mmap lock
# through one, so they count the user stacks and locations that took that path.
irqwork_get() { awk '/IRQ work interrupts/ { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i; f = 1 } END { if (f) print n }' /proc/interrupts; }

# ---- tracefs event counters -----------------------------------------------------------
# A "counter" is EVENT:KEYS, e.g. powerpc/tlbie:common_pid.execname,local. hist_on sets the
# trigger, hist_dump prints the hist file and removes the trigger (removal needs the exact
# trigger text). Where the event does not exist, a line says so and nothing is counted.
# A kernel without hist triggers (CONFIG_HIST_TRIGGERS off: Debian 11's 5.10) gets the same
# counts from the trace buffer: the event is enabled around the command and its lines are
# counted per key by trace_hist, which prints them as a hist file would.
TRACED=""
hist_on() {
	for spec in "$@"; do
		ev=${spec%%:*} keys=${spec#*:}
		[ -e "$T/events/$ev/enable" ] || continue
		if [ -e "$T/events/$ev/trigger" ] &&
			echo "hist:keys=$keys:size=4096" >"$T/events/$ev/trigger" 2>/dev/null; then
			continue
		fi
		[ -n "$TRACED" ] || { echo 8192 >$T/buffer_size_kb; echo >$T/trace; }
		echo 1 >"$T/events/$ev/enable" && TRACED="$TRACED $ev" ||
			echo "=== HISTERR $ev could not set hist trigger nor enable the event"
	done
}
# trace_hist EVENT KEYS: the lines of EVENT in the trace buffer, counted by KEYS (common_pid.execname,
# a name=value field of the event's text, or reason: the "(N)" ending tlb_flush's) as a hist file.
trace_hist() {
	awk -v ev="${1#*/}" -v keys="$2" '
	index($0, " " ev ": ") {
		task = substr($0, 1, index($0, " [") - 1)
		sub(/^ +/, "", task)
		sub(/ +$/, "", task)
		match(task, /-[0-9]+$/)
		comm = substr(task, 1, RSTART - 1)
		pid = substr(task, RSTART + 1)
		k = ""
		nk = split(keys, ks, ",")
		for (j = 1; j <= nk; j++) {
			if (ks[j] == "common_pid.execname")
				v = sprintf("common_pid: %s [%8d]", comm, pid)
			else if (ks[j] == "reason" && match($0, /\([0-9]+\)$/))
				v = "reason: " substr($0, RSTART + 1, RLENGTH - 2)
			else if (match($0, ks[j] "=[^ ]*"))
				v = ks[j] ": " substr($0, RSTART + length(ks[j]) + 1, RLENGTH - length(ks[j]) - 1)
			else
				v = ks[j] ": ?"
			k = k (j > 1 ? ", " : "") v
		}
		if (!(k in cnt))
			n++
		cnt[k]++
		tot++
	}
	END {
		for (k in cnt)
			printf "{ %s } hitcount: %d\n", k, cnt[k]
		printf "Totals:\n    Hits: %d\n    Entries: %d\n    Dropped: 0\n", tot, n
	}' $T/trace
}
hist_dump() {
	for ev in $TRACED; do echo 0 >"$T/events/$ev/enable"; done
	for spec in "$@"; do
		ev=${spec%%:*} keys=${spec#*:}
		case " $TRACED " in
		*" $ev "*)
			echo "=== NOTE $ev: no hist triggers, counted from the trace buffer"
			trace_hist "$ev" "$keys" | sed "s|^|=== HIST $ev |"
			continue ;;
		esac
		if [ -e "$T/events/$ev/hist" ]; then
			sed "s|^|=== HIST $ev |" "$T/events/$ev/hist"
			echo "!hist:keys=$keys:size=4096" >"$T/events/$ev/trigger"
		else
			echo "=== HISTERR $ev no such event"
		fi
	done
	[ -z "$TRACED" ] || echo >$T/trace
	TRACED=""
}

# arm64: kprobe events on the functions that issue broadcast TLBIs (kernel-probes.md section 6),
# as the kernel's own count of how often they ran, per process.
KPROBES=""
if [ "$VMTEST_MACHINE" = arm64 ] && [ -e $T/kprobe_events ]; then
	for fn in tlb_finish_mmu tlb_flush_mmu change_protection ptep_clear_flush ptep_set_access_flags flush_tlb_mm; do
		if echo "p:vmtest/$fn $fn" >>$T/kprobe_events 2>/dev/null; then
			KPROBES="$KPROBES vmtest/$fn:common_pid.execname"
		else
			echo "=== NOTE kprobe event on $fn refused"
		fi
	done
fi

# run_block NAME "COUNTERS" CMD [ARGS...]
run_block() {
	name=$1 counters=$2
	shift 2
	echo "=== BEGIN $name"
	echo "=== CMD $*"
	hist_on $counters
	v0=$(vmstat_get)
	w0=$(irqwork_get)
	t0=$(uptime_s)
	timeout 240 "$@" >$OUT/$name.out 2>$OUT/$name.err </dev/null
	rc=$?
	t1=$(uptime_s)
	v1=$(vmstat_get)
	w1=$(irqwork_get)
	echo "=== VMSTAT pgfault=${v0% *} ${v1% *} pgmajfault=${v0#* } ${v1#* }"
	[ -n "$w0" ] && echo "=== IRQWORK $w0 $w1"
	echo "=== TIME $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
	cat $OUT/$name.out
	# stderr, at most 100 lines: a verifier log is long, and its end says what failed.
	n=$(wc -l <$OUT/$name.err)
	if [ "$n" -le 100 ]; then
		sed 's/^/=== STDERR /' $OUT/$name.err
	else
		head -30 $OUT/$name.err | sed 's/^/=== STDERR /'
		echo "=== STDERR [... $((n - 100)) lines cut ...]"
		tail -70 $OUT/$name.err | sed 's/^/=== STDERR /'
	fi
	hist_dump $counters
	echo "=== END $name rc=$rc"
}

case $VMTEST_MACHINE in
x86_64) TLBC="tlb/tlb_flush:common_pid.execname,reason" ;;
power9 | power8) TLBC="powerpc/tlbie:common_pid.execname,local powerpc/hash_fault:common_pid.execname powerpc/hcall_entry:common_pid.execname,opcode" ;;
arm64) TLBC=$KPROBES ;;
*) TLBC="" ;;
esac
SWC="sched/sched_switch:prev_comm,next_comm"

echo "=== BEGIN info"
echo "=== CMD info"
echo "target=$VMTEST_TARGET"
echo "uname=$(uname -r) $(uname -m)"
echo "nproc=$(nproc)"
echo "mmu=$(awk -F': ' '/^MMU/ { print $2; exit }' /proc/cpuinfo)"
echo "cpu=$(awk -F': ' '/^(cpu|model name|CPU part)[[:space:]]*:/ { print $2; exit }' /proc/cpuinfo)"
echo "bpf_jit_enable=$(cat /proc/sys/net/core/bpf_jit_enable 2>&1)"
echo "kernel_btf=$([ -e /sys/kernel/btf/vmlinux ] && echo yes || echo no)"
echo "btf_arg=$BTF"
echo "mmscope=$(mmscope --version 2>&1)"
echo "=== END info rc=0"

run_block probes "" mmscope probes --json $BTF
# page_touch: the baseline (same binary, no loop faults) first, then the measured run; the
# same two commands again without mmscope, for the kernel's pgfault deltas alone.
run_block faults_base "" mmscope faults --json $BTF -- page_touch -w 0 -r 0 -x 0
run_block faults "$TLBC" mmscope faults --json $BTF -- page_touch -w 500 -r 500 -x 50
run_block bare_touch_base "" page_touch -w 0 -r 0 -x 0
run_block bare_touch "" page_touch -w 500 -r 500 -x 50
run_block stat "$TLBC $SWC" mmscope stat --json $BTF -- exec_loop 50
run_block bare_exec "" exec_loop 50
run_block tlb "$TLBC" mmscope tlb --json $BTF -- mprotect_toggle -i 200
run_block switch "$SWC $TLBC" mmscope switch --json $BTF -- pingpong -r 500
run_block cow_base "" mmscope faults --json $BTF -- cow_fork -n 0
run_block cow "$TLBC" mmscope faults --json $BTF -- cow_fork -n 200
# Fault types (issue 27): fault_anatomy's phases, each a known count on one type of memory;
# its file is in the initramfs root (tmpfs or ramfs: the summary line says which type, and
# that nothing could be evicted for major faults).
run_block anatomy_base "" mmscope faults --json $BTF -- fault_anatomy -d /tmp
run_block anatomy "" mmscope faults --json $BTF -- fault_anatomy -a 200 -b 100 -f 64 -s 100 -c 100 -d /tmp
# The same command as folded stacks: the type is in each leaf frame.
run_block anatomy_folded "" mmscope faults --folded $BTF -- fault_anatomy -a 200 -b 100 -f 64 -s 100 -c 100 -d /tmp
# The same page_touch command as folded stacks: the user-stack capture of each kernel (the
# frame-pointer walk and its cache on x86_64 and arm64, the kernel's own walk on powerpc).
run_block folded "" mmscope faults --folded $BTF -- page_touch -w 500 -r 500 -x 50
# x86_64 and arm64: the same loop in a 32-bit program (make workloads32; i386, armhf), whose
# frames are not a 64-bit thread's.
if [ -x /bin/page_touch32 ]; then
	run_block folded32 "" mmscope faults --folded $BTF -- page_touch32 -w 500 -r 500
fi
# x86_64 and arm64: page_touch linked against libc.so.6, whose frames are named from that
# file's build ID: a short run (the file may be mapped by no live process when the stacks are
# named; before 5.12 the mmap records name the file to read its build ID from).
if [ -x /bin/page_touch_dyn ]; then
	run_block folded_dyn "" mmscope faults --folded $BTF -- page_touch_dyn -w 20 -r 20 -x 0
fi
# Whole stacks of a program built without frame pointers (deep_stack, -fomit-frame-pointer):
# the DWARF walk on x86_64 and arm64, the kernel's back-chain walk on powerpc. It prints the
# stacks it expects ("expect KIND COUNT main;level_a;...;leaf").
run_block unwind "" mmscope faults --folded $BTF -- deep_stack -d 3,11,26 -p 200 -r 50 -s 20

# A BTF of no kernel here (/btf/wrong.btf, made by run.sh): refused before the command runs,
# with one line naming what differs (user/core/btfcheck.c), exit 1.
if [ -f /btf/wrong.btf ]; then
	run_block wrong_btf "" mmscope faults --json --btf /btf/wrong.btf -- page_touch -w 10 -r 0 -x 0
fi

echo "=== BEGIN dmesg"
echo "=== CMD dmesg (lines logged during the tests)"
dmesg | tail -n +$((dmesg_lines0 + 1)) | head -200
echo "=== END dmesg rc=0"
exit 0
