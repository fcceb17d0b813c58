#!/usr/bin/env bash
# tools/vm/deps.sh - install what the mmscope VM harness needs (idempotent; root).
#
# What: QEMU for x86_64/ppc64/aarch64, cpio, pahole (dwarves), bpftool, xz, clang,
# the ppc64le and arm64 cross compilers (and the i686 and armhf ones, for 32-bit
# workloads: gcc-multilib would remove the other two), and the ppc64el/arm64 multiarch -dev
# libraries (libbpf, libelf, zlib, zstd) so that static test binaries linked
# against libbpf can be built for each guest. Also pre-fetches busybox-static
# for every guest arch into the cache (apt-get download; never installed, since
# an arm64/ppc64el busybox cannot replace the host's).
#
# Why: `make vmtest` must work on a fresh Debian bookworm amd64 machine; nothing
# is installed there by default. Only missing packages are installed, so this is
# cheap to call before every run.
#
# Safety: the multiarch -dev packages are "Multi-Arch: same" and must have the
# same version as their amd64 twins. The foreign install runs with --no-remove
# (apt aborts instead of removing anything), and afterwards we verify that the
# amd64 libbpf-dev, libelf-dev, libdw-dev and zlib1g-dev are still installed.
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
	libbpf-dev libelf-dev libdw-dev zlib1g-dev libzstd-dev
)
# amd64 dev packages that must survive the multiarch installs.
KEEP_PKGS=(libbpf-dev:amd64 libelf-dev:amd64 libdw-dev:amd64 zlib1g-dev:amd64)
FOREIGN_ARCHES=(ppc64el arm64)
# Static links of libbpf.a need libelf.a and libz.a. Debian bookworm's elfutils
# (0.188) is built without zstd, so libelf.a does not reference ZSTD_* and
# -lzstd is not needed; libzstd-dev is installed anyway (cheap) and the check
# below warns if a future libelf.a starts needing it.
FOREIGN_DEV=(libbpf-dev libelf-dev zlib1g-dev libzstd-dev)

updated=0
apt_update() {
	log "apt-get update"
	"${APT_GET[@]}" update >&2 || die "apt-get update failed"
	updated=1
}

# 1. foreign architectures
for a in "${FOREIGN_ARCHES[@]}"; do
	if ! dpkg --print-foreign-architectures | grep -x "$a" >/dev/null; then
		log "dpkg --add-architecture $a"
		dpkg --add-architecture "$a"
		updated=-1 # lists must be refreshed
	fi
done
# Refresh lists if an arch was just added or the lists do not know it yet.
if [ "$updated" = -1 ] || [ -z "$(apt_candidate libbpf-dev:ppc64el)" ] ||
	[ -z "$(apt_candidate libbpf-dev:arm64)" ]; then
	apt_update
fi

# 2. host packages
missing=()
for p in "${HOST_PKGS[@]}"; do pkg_installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing host packages: ${missing[*]}"
	if ! DEBIAN_FRONTEND=noninteractive "${APT_GET[@]}" install --no-install-recommends "${missing[@]}" >&2; then
		[ "$updated" = 1 ] || { apt_update; DEBIAN_FRONTEND=noninteractive "${APT_GET[@]}" install --no-install-recommends "${missing[@]}" >&2; } ||
			die "could not install: ${missing[*]}"
	fi
else
	log "host packages: all present"
fi

# 3. multiarch -dev libraries
missing=()
for a in "${FOREIGN_ARCHES[@]}"; do
	for p in "${FOREIGN_DEV[@]}"; do pkg_installed "$p:$a" || missing+=("$p:$a"); done
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing multiarch dev libraries: ${missing[*]}"
	# --no-remove: abort rather than remove (e.g.) the amd64 libelf-dev if the
	# foreign version cannot be co-installed with it.
	DEBIAN_FRONTEND=noninteractive "${APT_GET[@]}" install --no-install-recommends --no-remove "${missing[@]}" >&2 ||
		die "could not install ${missing[*]} without removing packages (amd64/foreign version skew? try 'apt-get update && apt-get upgrade' first)"
else
	log "multiarch dev libraries: all present"
fi

# 4. verify the amd64 dev packages are still there
for p in "${KEEP_PKGS[@]}"; do
	pkg_installed "$p" || die "$p is no longer installed (multiarch install removed it?)"
done
log "amd64 dev packages still installed: $(dpkg-query -W -f='${Package}:${Architecture}=${Version} ' "${KEEP_PKGS[@]}")"

# 5. does libelf.a need libzstd for static links on each arch?
for a in amd64 "${FOREIGN_ARCHES[@]}"; do
	set_arch "$a"
	libelf_a="/usr/lib/$GNU_TRIPLET/libelf.a"
	[ -f "$libelf_a" ] || die "$libelf_a missing"
	nm_tool="nm"
	[ "$a" = amd64 ] || nm_tool=$GNU_TRIPLET-nm
	need_cmd "$nm_tool"
	if "$nm_tool" -A "$libelf_a" | grep ' U ZSTD_' >/dev/null; then
		warn "$libelf_a references ZSTD_*: static links on $a need -lzstd"
	else
		log "$libelf_a has no zstd references: '-lbpf -lelf -lz' suffices for static links on $a"
	fi
done

# 6. busybox-static for each guest arch: download only (into the cache)
"$VM_DIR/kernels.sh" busybox x86_64 >/dev/null
"$VM_DIR/kernels.sh" busybox ppc64le >/dev/null
"$VM_DIR/kernels.sh" busybox arm64 >/dev/null
log "done (cache: $CACHE)"
