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
	linux-perf bpftrace			# independent oracles in the live tests
	cppcheck clang-tidy clang-format valgrind	# static checks (tools/static-checks.sh)
	chromium				# renders --svg flame graphs in tests/live/test_svg.sh
	prometheus				# serve's test: a real scraper, and promtool
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
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# tracefs is where tracepoints are found; mount it if the system did not.
if [ ! -d /sys/kernel/tracing/events ] && [ "$(id -u)" = 0 ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi
exit 0
