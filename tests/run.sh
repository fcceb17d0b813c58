#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The whole suite: unit tests (ASan/UBSan), live tests (root, this host), short fuzz runs,
# static checks (cppcheck, clang-tidy, valgrind on each subcommand, clang-format), the set-up
# of a fresh machine (a debootstrap chroot: tests/setup/fresh_chroot.sh), and the VM tests
# (Debian's own 5.10, 6.1 and 6.12 kernels of x86_64, ppc64le radix and hash, arm64 under QEMU).
# Every test prints "PASS name", "FAIL name" or "SKIP name (why)"; the last line counts them.
#   tests/run.sh [unit|live|fuzz|static|setup|vm]...   (default: all)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
OUT=${OUT:-build}
export MMSCOPE="$top/$OUT/mmscope" WORKLOADS="$top/$OUT/workloads"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(unit live fuzz static setup vm)

run_one() { # name, command...: a binary or script printing PASS/FAIL/SKIP lines
	local name=$1
	shift
	local out rc
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | tee -a "$log" | grep -E '^(PASS|FAIL|SKIP) ' || true
	if [ $rc -ne 0 ] && ! printf '%s\n' "$out" | grep -q '^FAIL '; then
		echo "FAIL $name (exit $rc)" | tee -a "$log"
		printf '%s\n' "$out" | tail -20 | sed 's/^/    /'
	elif printf '%s\n' "$out" | grep -q '^FAIL '; then
		printf '%s\n' "$out" | grep -vE '^(PASS|SKIP) ' | tail -40 | sed 's/^/    /'
	fi
}

for suite in "${suites[@]}"; do
	case $suite in
	unit)
		for t in "$OUT"/unit/test_*; do
			[ -x "$t" ] && run_one "$(basename "$t")" "$t"
		done
		;;
	live)
		if [ "$(id -u)" != 0 ]; then
			echo "SKIP live (not root: the live tests load BPF programs)" | tee -a "$log"
			continue
		fi
		for t in tests/live/test_*.sh; do
			[ -f "$t" ] && run_one "$(basename "$t")" bash "$t"
		done
		;;
	fuzz)
		run_one fuzz env FUZZ_SECONDS="${FUZZ_SECONDS:-10}" tests/fuzz/run.sh "$OUT/fuzz"
		;;
	static)
		# tools/static-checks.sh prints its own PASS/FAIL/SKIP per tool and file.
		run_one static-checks tools/static-checks.sh
		if clang-format --dry-run -Werror $(make -s --no-print-directory print-format-files) >"$log.fmt" 2>&1; then
			echo "PASS clang-format (kernel style, .clang-format)" | tee -a "$log"
		else
			echo "FAIL clang-format ($(grep -c 'error:' "$log.fmt") lines differ; run make format)" | tee -a "$log"
			grep 'error:' "$log.fmt" | head -10 | sed 's/^/    /'
		fi
		rm -f "$log.fmt"
		;;
	setup)
		if [ "$(id -u)" != 0 ]; then
			echo "SKIP setup (not root: it makes a chroot and installs packages in it)" | tee -a "$log"
			continue
		fi
		run_one fresh_chroot tests/setup/fresh_chroot.sh
		;;
	vm)
		if [ "$(id -u)" != 0 ]; then
			echo "SKIP vm (not root: the VM tests install packages)" | tee -a "$log"
			continue
		fi
		# One PASS/FAIL line per target; details in build/vm/<target>/checks.txt.
		run_one vmtest tests/vm/run.sh
		;;
	*)
		echo "unknown suite $suite" >&2
		exit 2
		;;
	esac
done
pass=$(grep -c '^PASS ' "$log")
fail=$(grep -c '^FAIL ' "$log")
skip=$(grep -c '^SKIP ' "$log")
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
