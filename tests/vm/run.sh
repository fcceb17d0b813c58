#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tests/vm/run.sh - mmscope on Debian's own 6.1 kernels under QEMU: build, boot, check.
#
# What, per target (x86_64, power9 = ppc64le radix MMU, power8 = ppc64le hash MMU, arm64, and
# MACHINE-SERIES: the same machine with Debian 11's 5.10 or Debian 13's 6.12 kernel, e.g.
# x86_64-5.10, arm64-6.12, power9-6.12-64k: 64 KB pages):
#   1. set-up (once): tools/vm/deps.sh, the pinned kernel and busybox (tools/vm/kernels.sh
#      fetch);
#   2. build (once per architecture): make static workloads with OUT=build/vm/<arch> and
#      WORKLOAD_LDFLAGS=-static: a static mmscope and static workloads of their own, so that
#      this never races with, or overwrites, the native build in build/ or build/<arch>; the
#      ppc64le and arm64 builds link the guest's static libraries unpacked by
#      tools/vm/sysroot.sh (SYSROOT=), never packages installed for a foreign architecture;
#   3. an initramfs (tools/vm/mkinitramfs.sh): mmscope, the workloads, tests/vm/guest.sh as
#      /test.sh, /etc/vmtest.env naming the target, for ppc64le 6.1 the decompressed
#      btf/ppc64le/<release>.btf.xz as /btf/vmlinux.btf (Debian's ppc64el 6.1 kernel has no
#      BTF), and a wrong BTF as /btf/wrong.btf (guest.sh's wrong_btf block);
#   4. boot (tools/vm/boot.sh), at most two VMs at a time (two vCPUs each, TCG);
#   5. check the serial log on the host (tests/vm/check.py).
# Prints exactly one line per target on stdout, `PASS <target> (N checks, T s)` or
# `FAIL <target> <why>`; progress and the details of failed checks go to stderr. Exit status
# 0 if every target passed, 1 otherwise, 2 on bad usage.
#
# Files: build/vm/<arch>/ (build), build/vm/<target>/ (initramfs.cpio.gz, serial.log,
# boot.out, checks.txt with every check and its numbers). Downloads are cached by tools/vm in
# ${MMSCOPE_VM_CACHE:-/var/cache/mmscope-vm}.
#
# Usage: tests/vm/run.sh [TARGET...]      (default: all of ALL_TARGETS below)
# Env:   MMSCOPE_VM_CACHE, VMTEST_TIMEOUT (per boot, default 900 s), VMTEST_JOBS (parallel
#        boots, default 2), VMTEST_SKIP_SETUP=1 (no deps.sh/apt: for quick reruns),
#        VMTEST_SKIP_BUILD=1 (boot what build/vm/<arch>/ holds, e.g. a patched tree's build
#        made with OUT=$PWD/build/vm/<arch>), VMTEST_BUILD_ONLY=1 (set-up and build, no boot:
#        `PASS <target> (built)` per target; tests/setup/fresh_chroot.sh)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VMT="$ROOT/tests/vm"
TOOLS="$ROOT/tools/vm"
BUILD="$ROOT/build/vm"
ALL_TARGETS=(x86_64 power9 power8 arm64 x86_64-5.10 x86_64-6.12 arm64-6.12 power9-6.12-64k
	arm64-5.10 power9-6.12 power8-6.12-64k)
# arm64 under TCG: 210-350 s on a quiet host, over 600 s beside other VMs and test suites.
TIMEOUT=${VMTEST_TIMEOUT:-900}
JOBS=${VMTEST_JOBS:-2}

say() { printf '[vmtest] %s\n' "$*" >&2; }

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${ALL_TARGETS[@]}")
for t in "${targets[@]}"; do
	case " ${ALL_TARGETS[*]} " in
	*" $t "*) ;;
	*) echo "usage: $0 [TARGET...] (unknown target '$t'; the targets: ${ALL_TARGETS[*]})" >&2; exit 2 ;;
	esac
done

# Per-target results: FAIL reason set by any stage; checks/secs by check.py.
declare -A why=() arch_of=() kern_arch=() series_of=()
t_start=$(date +%s)
for t in "${targets[@]}"; do
	# TARGET-SERIES: the same machine with another kernel series (tools/vm/kernels.sh)
	series_of[$t]=6.1
	case $t in *-*) series_of[$t]=${t#*-} ;; esac
	case ${t%%-*} in
	x86_64) arch_of[$t]=x86 kern_arch[$t]=x86_64 ;;
	power9 | power8) arch_of[$t]=powerpc kern_arch[$t]=ppc64le ;;
	arm64) arch_of[$t]=arm64 kern_arch[$t]=arm64 ;;
	esac
done
fail_arch() { # ARCH REASON: mark every target of ARCH failed (first reason wins)
	local t
	for t in "${targets[@]}"; do
		[ "${arch_of[$t]}" = "$1" ] && [ -z "${why[$t]:-}" ] && why[$t]=$2
	done
	return 0
}
fail_all() { local t; for t in "${targets[@]}"; do [ -n "${why[$t]:-}" ] || why[$t]=$1; done; }

finish() {
	local t rc=0 line
	for t in "${targets[@]}"; do
		if [ -n "${why[$t]:-}" ]; then
			line="FAIL $t ${why[$t]}"
			rc=1
		else
			line=$(cat "$BUILD/$t/result" 2>/dev/null) || line="FAIL $t no result (internal error)"
			case $line in PASS*) ;; *) rc=1 ;; esac
		fi
		printf '%s\n' "$line"
	done
	say "total $(($(date +%s) - t_start)) s"
	exit $rc
}

# ---- 1. set-up ---------------------------------------------------------------------------
mkdir -p "$BUILD"
if [ "${VMTEST_SKIP_SETUP:-0}" != 1 ]; then
	say "set-up: tools/vm/deps.sh"
	if ! "$TOOLS/deps.sh" >"$BUILD/deps.log" 2>&1; then
		tail -5 "$BUILD/deps.log" >&2
		fail_all "set-up: tools/vm/deps.sh failed (build/vm/deps.log)"
		finish
	fi
fi
declare -A fetched=()
for t in "${targets[@]}"; do
	ka=${kern_arch[$t]} ks=${series_of[$t]}
	[ -n "${fetched[$ka-$ks]:-}" ] || [ "${VMTEST_BUILD_ONLY:-0}" = 1 ] && continue
	fetched[$ka-$ks]=1
	if ! "$TOOLS/kernels.sh" fetch "$ka" "$ks" >/dev/null 2>>"$BUILD/deps.log"; then
		for u in "${targets[@]}"; do
			[ "${kern_arch[$u]}-${series_of[$u]}" = "$ka-$ks" ] && why[$u]="set-up: kernels.sh fetch $ka $ks failed (build/vm/deps.log)"
		done
	fi
done

# ---- 2. build ----------------------------------------------------------------------------
built=()
for t in "${targets[@]}"; do
	a=${arch_of[$t]}
	case " ${built[*]:-} " in *" $a "*) continue ;; esac
	built+=("$a")
	case $a in
	x86) cc="" sysroot="" ;;
	powerpc) cc=powerpc64le-linux-gnu- sysroot=ppc64le ;;
	arm64) cc=aarch64-linux-gnu- sysroot=arm64 ;;
	esac
	if [ -n "$sysroot" ] && [ "${VMTEST_SKIP_BUILD:-0}" != 1 ]; then
		if ! sysroot=$("$TOOLS/sysroot.sh" "$sysroot" 2>>"$BUILD/deps.log"); then
			fail_arch "$a" "set-up: tools/vm/sysroot.sh for $a failed (build/vm/deps.log)"
			continue
		fi
	fi
	out="build/vm/$a"
	if [ "${VMTEST_SKIP_BUILD:-0}" = 1 ]; then
		say "build $a: skipped (VMTEST_SKIP_BUILD=1), using what is in $out"
		continue
	fi
	# x86 and arm64: page_touch as a 32-bit program too (guest.sh's folded32 block).
	case $a in x86 | arm64) extra=workloads32 ;; *) extra="" ;; esac
	say "build $a: make static workloads${extra:+ $extra} ARCH=$a OUT=$out WORKLOAD_LDFLAGS=-static${sysroot:+ SYSROOT=$sysroot}"
	b0=$(date +%s)
	if ! make -C "$ROOT" -j2 --no-print-directory static workloads ${extra:+"$extra"} ARCH="$a" CROSS_COMPILE="$cc" \
		OUT="$out" WORKLOAD_LDFLAGS=-static SYSROOT="$sysroot" >"$BUILD/build-$a.log" 2>&1; then
		grep -E 'error|Error|cannot find' "$BUILD/build-$a.log" | head -8 >&2
		fail_arch "$a" "build failed: $(grep -m1 -E 'error:|cannot find|Error [0-9]' "$BUILD/build-$a.log" | cut -c1-160) (build/vm/build-$a.log)"
		continue
	fi
	# A dynamic binary would not run in the busybox initramfs.
	for f in "$ROOT/$out/mmscope-static" "$ROOT/$out"/workloads/*; do
		if readelf -lW "$f" 2>/dev/null | grep -q 'Requesting program interpreter'; then
			fail_arch "$a" "build: $(basename "$f") is not statically linked"
		fi
	done
	# x86 and arm64: page_touch linked against the C library too (guest.sh's folded_dyn block:
	# the frames of a shared library whose file only the exited workload mapped), with the
	# cross toolchain's own libc.so.6 and loader copied into the initramfs.
	if [ -n "$extra" ] && ! make -C "$ROOT" --no-print-directory "build/vm/$a-dyn/workloads/page_touch" ARCH="$a" \
		CROSS_COMPILE="$cc" OUT="build/vm/$a-dyn" >>"$BUILD/build-$a.log" 2>&1; then
		fail_arch "$a" "build of the dynamic page_touch failed (build/vm/build-$a.log)"
	fi
	say "build $a: done in $(($(date +%s) - b0)) s"
done

if [ "${VMTEST_BUILD_ONLY:-0}" = 1 ]; then
	rc=0
	for t in "${targets[@]}"; do
		if [ -n "${why[$t]:-}" ]; then echo "FAIL $t ${why[$t]}" && rc=1; else echo "PASS $t (built)"; fi
	done
	exit $rc
fi

# ---- 3. initramfs ------------------------------------------------------------------------
for t in "${targets[@]}"; do
	[ -z "${why[$t]:-}" ] || continue
	a=${arch_of[$t]} d="$BUILD/$t"
	mkdir -p "$d"
	rm -f "$d/result" "$d/serial.log" "$d/checks.txt"
	printf 'VMTEST_TARGET=%s\n' "$t" >"$d/vmtest.env"
	files=("$ROOT/build/vm/$a/mmscope-static:/bin/mmscope" "$VMT/guest.sh:/test.sh" "$d/vmtest.env:/etc/vmtest.env")
	for w in "$ROOT/build/vm/$a"/workloads/*; do files+=("$w:/bin/$(basename "$w")"); done
	case $a in
	x86) files+=("$ROOT/build/vm/x86-dyn/workloads/page_touch:/bin/page_touch_dyn"
		/lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2
		/lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6) ;;
	arm64) files+=("$ROOT/build/vm/arm64-dyn/workloads/page_touch:/bin/page_touch_dyn"
		/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1:/lib/ld-linux-aarch64.so.1
		/usr/aarch64-linux-gnu/lib/libc.so.6:/lib/aarch64-linux-gnu/libc.so.6) ;;
	esac
	if [ "$a" = powerpc ] && [ "${series_of[$t]}" = 6.1 ]; then
		rel=$("$TOOLS/kernels.sh" release ppc64le 2>/dev/null)
		btf="$ROOT/btf/ppc64le/$rel.btf.xz"
		if [ ! -f "$btf" ]; then
			why[$t]="no $btf for kernel $rel (tools/vm/gen-ppc64le-btf.sh)"
			continue
		fi
		xz -dc "$btf" >"$BUILD/ppc64le.btf" || { why[$t]="could not decompress $btf"; continue; }
		files+=("$BUILD/ppc64le.btf:/btf/vmlinux.btf")
	fi
	# A BTF that describes no kernel the guests run (Debian 6.1 ppc64le's with a field
	# inserted in mm_struct: tests/live/btf_shift.py): mmscope must refuse it everywhere.
	if [ ! -s "$BUILD/wrong.btf" ]; then
		if ! xz -dc "$ROOT"/btf/ppc64le/6.1.0-57-powerpc64le.btf.xz >"$BUILD/wrong.btf.tmp" ||
			! python3 "$ROOT/tests/live/btf_shift.py" "$BUILD/wrong.btf.tmp" "$BUILD/wrong.btf" "" arg_start 8; then
			why[$t]="could not make build/vm/wrong.btf"
			continue
		fi
		rm -f "$BUILD/wrong.btf.tmp"
	fi
	# A ppc64le kernel of another series gets the 6.1 kernel's own BTF, unchanged: what a
	# user passing the wrong kernel's BTF gives it (issue 30: wrong numbers, before the check).
	if [ "$a" = powerpc ] && [ "${series_of[$t]}" != 6.1 ]; then
		xz -dc "$ROOT"/btf/ppc64le/6.1.0-57-powerpc64le.btf.xz >"$BUILD/ppc64le-6.1.btf" ||
			{ why[$t]="could not decompress the 6.1 ppc64le BTF"; continue; }
		files+=("$BUILD/ppc64le-6.1.btf:/btf/wrong.btf")
	else
		files+=("$BUILD/wrong.btf:/btf/wrong.btf")
	fi
	if ! "$TOOLS/mkinitramfs.sh" "${kern_arch[$t]}" "$d/initramfs.cpio.gz" "${files[@]}" 2>"$d/mkinitramfs.log"; then
		why[$t]="mkinitramfs.sh failed ($(tail -1 "$d/mkinitramfs.log"))"
	fi
done

# ---- 4. boot, at most $JOBS at a time; 5. check each as soon as it is done ---------------
check_target() { # TARGET BOOT_RC SECONDS
	local t=$1 d="$BUILD/$1"
	python3 "$VMT/check.py" --target "$t" --log "$d/serial.log" --boot-rc "$2" --seconds "$3" \
		--details "$d/checks.txt" >"$d/result" 2>"$d/check.err" ||
		true
	[ -s "$d/result" ] || echo "FAIL $t check.py crashed: $(tail -1 "$d/check.err")" >"$d/result"
	say "$(cat "$d/result")"
	if ! grep -q '^PASS' "$d/result"; then
		grep '^FAIL' "$d/checks.txt" 2>/dev/null | head -30 | sed "s/^/[vmtest]   $t: /" >&2
	fi
}
boot_one() { # TARGET: runs in a subshell; writes $d/boot.rc and $d/boot.secs
	local t=$1 d="$BUILD/$1" s0 rc
	s0=$(date +%s%3N)
	MMSCOPE_VM_LOG="$d/serial.log" "$TOOLS/boot.sh" "$t" "$d/initramfs.cpio.gz" "$TIMEOUT" >"$d/boot.out" 2>&1
	rc=$?
	echo "$rc" >"$d/boot.rc"
	awk -v a="$s0" -v b="$(date +%s%3N)" 'BEGIN { printf "%.1f\n", (b - a) / 1000 }' >"$d/boot.secs"
}

queue=()
for t in "${targets[@]}"; do [ -z "${why[$t]:-}" ] && queue+=("$t"); done
# Longest first (ppc64le boots and runs slowest under TCG), so the pairs finish together.
ordered=()
for t in power9-6.12-64k power9-6.12 power8-6.12-64k power9 power8 arm64-6.12 arm64-5.10 arm64 x86_64-5.10 x86_64-6.12 x86_64; do
	case " ${queue[*]:-} " in *" $t "*) ordered+=("$t") ;; esac
done
declare -A pid_of=()
running=0
next=0
while [ $next -lt ${#ordered[@]} ] || [ $running -gt 0 ]; do
	while [ $running -lt "$JOBS" ] && [ $next -lt ${#ordered[@]} ]; do
		t=${ordered[$next]}
		next=$((next + 1))
		say "boot $t (timeout ${TIMEOUT}s)"
		rm -f "$BUILD/$t/boot.rc"
		boot_one "$t" &
		pid_of[$!]=$t
		running=$((running + 1))
	done
	done_pid=""
	wait -n -p done_pid "${!pid_of[@]}" || true
	[ -n "$done_pid" ] || continue
	t=${pid_of[$done_pid]}
	unset "pid_of[$done_pid]"
	running=$((running - 1))
	check_target "$t" "$(cat "$BUILD/$t/boot.rc" 2>/dev/null || echo 2)" "$(cat "$BUILD/$t/boot.secs" 2>/dev/null || echo 0)"
done

finish
