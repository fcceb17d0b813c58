#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install, from Debian's packages, every package mmscope's build and tests need: idempotent and
# quick when all is there (dpkg-query only), so `make run` and `make test` call it every time.
set -euo pipefail

pkgs=(
	make gcc clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev pkg-config
	libzstd-dev liblzma-dev libbz2-dev	# static links of libdw/libelf
	libclang-rt-14-dev			# libFuzzer and sanitizer runtimes for clang
	libmicrohttpd-dev			# mmscope serve's HTTP server
	libiberty-dev				# the C++ and Rust demangler (user/sym/demangle.c)
	linux-perf bpftrace			# independent oracles in the live tests
	g++					# the C++ program whose names tests/live/test_names.sh checks
	stress-ng				# the load the suite must hold under (make test-loaded)
	debootstrap				# the fresh-machine set-up test (tests/setup/fresh_chroot.sh)
	cppcheck clang-tidy clang-format valgrind	# static checks (tools/static-checks.sh)
	chromium				# renders --svg flame graphs in tests/live/test_svg.sh
	protobuf-compiler python3-protobuf	# read --pprof profiles in tests/live/test_pprof.sh
	golang-go golang-github-google-pprof-dev	# pprof itself, built by test_pprof.sh
	prometheus				# serve's test: a real scraper, and promtool
	man-db groff-base			# the man pages' check (tests/live/test_docs_man.sh)
	python3 procps util-linux coreutils git ca-certificates curl
)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages: ${missing[*]}; run as root (sudo make ...) to install them" >&2
		exit 1
	fi
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt=(apt-get -o DPkg::Lock::Timeout=600)
	# The mirror may be mid-sync: each step is tried again after 5, 10, 20 s; an update that
	# still fails leaves the lists there are, which may hold what is missing.
	try() {
		local i
		for i in 5 10 20 0; do
			"$@" && return 0
			[ $i -gt 0 ] || return 1
			echo "deps: '$*' failed; again in ${i}s" >&2
			sleep $i
		done
	}
	try "${apt[@]}" update -qq || echo "deps: apt-get update failed; installing from the lists there are" >&2
	try "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		{ echo "deps: could not install ${missing[*]}" >&2; exit 1; }
fi
# tracefs is where tracepoints are found; mount it if the system did not.
if [ ! -d /sys/kernel/tracing/events ] && [ "$(id -u)" = 0 ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi
exit 0
