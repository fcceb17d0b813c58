#!/usr/bin/env bash
# tools/vm/boot.sh - boot a pinned Debian kernel + initramfs under QEMU (TCG) and report the result.
#
# What: fetches the kernel for TARGET (tools/vm/kernels.sh), boots it with
# INITRD (made by tools/vm/mkinitramfs.sh) under a hard timeout, copies the
# serial console to stdout and to a log file, and derives the exit status from
# the marker lines the initramfs /init prints.
#
# Why: the same bpf/user code must be exercised on real x86_64, ppc64le (both
# MMUs: POWER9 boots with the radix MMU, POWER8 with the hash MMU) and arm64
# kernels. KVM does not work on the build machines, so everything runs under
# TCG: -smp 2 (so cross-CPU TLB flushes happen), -m 1G, -nographic,
# -no-reboot, and panic=-1 so a kernel panic ends QEMU at once instead of
# waiting for the timeout.
#
# Usage: tools/vm/boot.sh TARGET INITRD [TIMEOUT]
#   TARGET:  x86_64 | power9 | power8 | arm64, optionally -SERIES (x86_64-5.10: kernels.sh)
#   TIMEOUT: seconds, default 300
# Exit: 0  guest printed MMSCOPE-VM-DONE and /test.sh exited 0 (MMSCOPE-VM-RC=0)
#       1  guest printed MMSCOPE-VM-DONE but /test.sh failed
#       2  no MMSCOPE-VM-DONE: timeout, kernel panic or QEMU failure
#       3  usage or setup error
# Env:  MMSCOPE_VM_CACHE (default /var/cache/mmscope-vm)
#       MMSCOPE_VM_LOG     log file (default $MMSCOPE_VM_CACHE/logs/<target>.log)
#       MMSCOPE_VM_APPEND  extra kernel command line arguments
#       MMSCOPE_VM_SMP, MMSCOPE_VM_MEM  override -smp 2 / -m 1G
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

usage() { echo "usage: $0 x86_64|power9|power8|arm64[-SERIES] INITRD [TIMEOUT]" >&2; exit 3; }
[ $# -ge 2 ] && [ $# -le 3 ] || usage
target=$1 initrd=$2 tmo=${3:-300}
[ -f "$initrd" ] || { echo "[boot.sh] ERROR: no such initrd: $initrd" >&2; exit 3; }
case $tmo in '' | *[!0-9]*) echo "[boot.sh] ERROR: TIMEOUT must be seconds" >&2; exit 3 ;; esac
smp=${MMSCOPE_VM_SMP:-2} mem=${MMSCOPE_VM_MEM:-1G} accel=tcg

# TARGET-SERIES (x86_64-5.10, arm64-6.12, power9-6.12-64k): the same machine, another kernel
# series (kernels.sh); the bare name boots the pinned 6.1.
series=6.1
case $target in
*-*) series=${target#*-} target=${target%%-*} ;;
esac
case $target in
x86_64) arch=x86_64 qemu=qemu-system-x86_64 console=ttyS0
	# One host thread for both vCPUs: with a thread each (MTTCG), Debian 13's 6.12.118
	# died 3 times in 7 boots with "Oops: int3" at a jump label being patched
	# (finish_task_switch(), __schedule(): the perf_sched_events key that perf_event_open()
	# turns on), a vCPU running the breakpoint byte after text_poke_bp() had replaced it;
	# none in 6 boots on one thread, as fast. 6.1 and 5.10 never showed it.
	accel=tcg,thread=single
	machine=(-cpu max) ;;
power9 | power8) arch=ppc64le qemu=qemu-system-ppc64 console=hvc0
	# TCG cannot provide the Spectre-mitigation caps that pseries asks for by
	# default; declare them off so QEMU does not print four warnings per boot.
	# shellcheck disable=SC2054 # -M takes a comma-separated option list
	machine=(-M pseries,cap-cfpc=broken,cap-sbbc=broken,cap-ibs=broken,cap-ccf-assist=off -cpu "$target") ;;
arm64) arch=arm64 qemu=qemu-system-aarch64 console=ttyAMA0
	machine=(-M virt -cpu max) ;;
*) usage ;;
esac
need_cmd "$qemu" timeout tee
kernel=$("$VM_DIR/kernels.sh" fetch "$arch" "$series") || { echo "[boot.sh] ERROR: kernels.sh fetch $arch $series failed" >&2; exit 3; }

logf=${MMSCOPE_VM_LOG:-$CACHE/logs/$1.log}
mkdir -p "$(dirname "$logf")"
cmd=("$qemu" "${machine[@]}" -accel "$accel" -smp "$smp" -m "$mem" -nographic -no-reboot
	-kernel "$kernel" -initrd "$initrd"
	-append "console=$console quiet panic=-1 ${MMSCOPE_VM_APPEND:-}")
log "booting $target: ${cmd[*]}"
log "timeout ${tmo}s, log $logf"

start=$(date +%s%3N)
set +e
# stdin from /dev/null: no terminal is put into raw mode and nothing is typed
# into the guest; -k: SIGKILL if QEMU ignores SIGTERM.
timeout -k 10 "$tmo" "${cmd[@]}" </dev/null 2>&1 | tee "$logf"
st=("${PIPESTATUS[@]}")
set -e
secs=$(awk -v a="$start" -v b="$(date +%s%3N)" 'BEGIN { printf "%.1f", (b - a) / 1000 }')

# Serial output has CRLF line ends.
if tr -d '\r' <"$logf" | grep -x 'MMSCOPE-VM-DONE' >/dev/null; then
	rc=$(tr -d '\r' <"$logf" | sed -n 's/^MMSCOPE-VM-RC=\([0-9]*\)$/\1/p' | tail -1)
	if [ "${rc:-1}" = 0 ]; then
		log "$1: PASS (guest finished in ${secs}s)"
		exit 0
	fi
	log "$1: FAIL: /test.sh exited ${rc:-?} (guest finished in ${secs}s; log $logf)"
	exit 1
fi
if [ "${st[0]}" = 124 ] || [ "${st[0]}" = 137 ]; then
	log "$1: FAIL: no MMSCOPE-VM-DONE within ${tmo}s (timed out; log $logf)"
else
	log "$1: FAIL: QEMU exited with status ${st[0]} after ${secs}s without MMSCOPE-VM-DONE (panic or boot failure? log $logf)"
fi
exit 2
