#!/usr/bin/env bash
# tools/vm/sysroot.sh - the static libraries a guest architecture's mmscope links, unpacked.
#
# What: downloads (the guest architecture's own apt, lib.sh guest_apt) the -dev packages whose
# static libraries the static mmscope links (libbpf, libelf, libdw and the compressors libdw
# and libelf use), unpacks them with dpkg-deb -x into one directory and prints its path. The
# Makefile's SYSROOT= takes it: its headers first, its libraries on the link path.
#
# Why: installed into the host's dpkg, these packages are "Multi-Arch: same" and must have the
# exact version of their amd64 twins, which a mirror whose architectures are skewed (a
# security update published for amd64 first) cannot offer: the set-up then failed. Unpacked
# into a directory, any version of the guest's own works.
#
# The directory is keyed by the packages' versions ($CACHE/sysroot/<arch>/<hash>): a second run
# with the same index downloads nothing, and a new version makes a new directory.
#
# Usage: tools/vm/sysroot.sh ARCH       ARCH: ppc64le | arm64 (aliases as lib.sh set_arch)
# Env:   MMSCOPE_VM_CACHE (default /var/cache/mmscope-vm)
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

[ $# -eq 1 ] || die "usage: $0 ppc64le|arm64"
set_arch "$1"
need_cmd apt-get apt-cache dpkg-deb sha256sum

# What `make static` links (Makefile STATIC_LIBS: -lbpf -ldw -lelf -lz -lzstd -llzma -lbz2 -liberty).
PKGS=(libbpf-dev libelf-dev libdw-dev zlib1g-dev libzstd-dev liblzma-dev libbz2-dev libiberty-dev)

# candidates: "name version" of each package the lists offer, from one apt-cache (each one
# reads the lists anew: seconds apiece on a busy host).
candidates() {
	"${GAPT_CACHE[@]}" policy "${PKGS[@]}" 2>/dev/null |
		awk '/^[^ ]/ { sub(/:.*/, ""); p = $0 } /^  Candidate:/ && $2 != "(none)" { print p, $2 }'
}
guest_apt_update "$DEB_ARCH"
cands=$(candidates)
for p in "${PKGS[@]}"; do
	grep -E "^$p " <<<"$cands" >/dev/null && continue
	guest_apt_update "$DEB_ARCH" force
	cands=$(candidates)
	break
done
specs=()
for p in "${PKGS[@]}"; do
	v=$(awk -v p="$p" '$1 == p { print $2 }' <<<"$cands")
	[ -n "$v" ] || die "$p:$DEB_ARCH is not in the $DEB_ARCH lists ($CACHE/apt/$DEB_ARCH)"
	specs+=("$p=$v")
done
key=$(printf '%s\n' "${specs[@]}" | sha256sum | cut -c1-16)
dir="$CACHE/sysroot/$DEB_ARCH/$key"
if [ ! -f "$dir/.unpacked" ]; then
	rm -rf "$dir.tmp"
	mkdir -p "$dir.tmp"
	for s in "${specs[@]}"; do
		deb=$(apt_download "${s%%=*}:$DEB_ARCH" "${s#*=}" "$CACHE/debs")
		dpkg-deb -x "$deb" "$dir.tmp" || die "dpkg-deb -x $deb failed"
	done
	printf '%s\n' "${specs[@]}" >"$dir.tmp/.unpacked"
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
	log "$DEB_ARCH sysroot: $dir (${specs[*]})"
fi
for a in libbpf.a libelf.a libdw.a libz.a; do
	[ -f "$dir/usr/lib/$GNU_TRIPLET/$a" ] || die "$dir/usr/lib/$GNU_TRIPLET/$a missing"
done
printf '%s\n' "$dir"
