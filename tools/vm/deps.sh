#!/usr/bin/env bash
# tools/vm/deps.sh - install what the mmscope VM harness needs (idempotent; root).
#
# What: QEMU for x86_64/ppc64/aarch64, cpio, pahole (dwarves), bpftool, xz, clang, the
# ppc64le and arm64 cross compilers with their C libraries, and the i686 and armhf ones with
# theirs, for the 32-bit workloads (gcc-multilib would remove the ppc64le and arm64 compilers).
# The cross C libraries are the arch-independent libc6-dev-*-cross packages: without them
# (--no-install-recommends leaves them out) `i686-linux-gnu-gcc -static` finds no
# bits/wordsize.h. Then the guests' packages: the static libraries a guest's mmscope links
# (tools/vm/sysroot.sh) and busybox-static, downloaded into the cache, never installed.
#
# Why: `make vmtest` must work on a fresh Debian bookworm amd64 machine; nothing is installed
# there by default. Only missing packages are installed, so this is cheap to call before
# every run. Nothing of another architecture enters the host's dpkg (lib.sh guest_apt):
# installed "Multi-Arch: same" packages must match the host's versions, which a mirror with
# skewed architectures cannot offer.
#
# Usage: tools/vm/deps.sh            (env: MMSCOPE_VM_CACHE, default /var/cache/mmscope-vm)
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages with apt-get)"
host_arch_ok

HOST_PKGS=(
	qemu-system-x86 qemu-system-ppc qemu-system-arm
	cpio dwarves bpftool xz-utils clang
	gcc-powerpc64le-linux-gnu gcc-aarch64-linux-gnu gcc-i686-linux-gnu gcc-arm-linux-gnueabihf
	libc6-dev-ppc64el-cross libc6-dev-arm64-cross libc6-dev-i386-cross libc6-dev-armhf-cross
	libbpf-dev libelf-dev libdw-dev zlib1g-dev libzstd-dev liblzma-dev libbz2-dev libiberty-dev
)
# 1. host packages (apt-get update once if one is missing; retried, the mirror may be mid-sync)
missing=()
for p in "${HOST_PKGS[@]}"; do pkg_installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing host packages: ${missing[*]}"
	retry 4 "apt-get update" "${APT_GET[@]}" update >&2 || warn "apt-get update failed; trying the install with the lists there are"
	retry 3 "apt-get install" env DEBIAN_FRONTEND=noninteractive "${APT_GET[@]}" install --no-install-recommends "${missing[@]}" >&2 ||
		die "could not install: ${missing[*]}"
else
	log "host packages: all present"
fi

# 2. the guests' static libraries and busybox-static: downloaded into the cache only
for a in ppc64le arm64; do
	"$VM_DIR/sysroot.sh" "$a" >/dev/null
done
for a in x86_64 ppc64le arm64; do
	"$VM_DIR/kernels.sh" busybox "$a" >/dev/null
done
log "done (cache: $CACHE)"
