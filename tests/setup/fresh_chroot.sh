#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The README's set-up on a machine that has nothing installed: a `debootstrap
# --variant=minbase bookworm` chroot with make, gcc and git (what the README assumes), /proc,
# /sys and /dev bind-mounted, this tree copied in (its tracked and untracked, not ignored,
# files). In it, as root:
#   1. `make run`: tools/deps.sh installs what is missing, builds, and runs mmscope stat on the
#      exec loop (BPF works in a chroot); its 1000 execs are checked in the output;
#   2. the VM harness's set-up (tools/vm/deps.sh) and the build of every VM target
#      (tests/vm/run.sh with VMTEST_BUILD_ONLY=1): static mmscope and workloads for x86_64,
#      ppc64le and arm64, and the 32-bit workloads (i386, armhf) — what failed on a new
#      machine when the cross compilers came without their C libraries.
# The base system is debootstrapped once and kept as a tarball in $MMSCOPE_FRESH_CACHE
# (default /var/cache/mmscope-fresh); each run unpacks it anew. Packages come from the mirrors
# this host's apt uses. Prints PASS/FAIL lines; exit 1 if any failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${MMSCOPE_FRESH_CACHE:-/var/cache/mmscope-fresh}
base="$cache/bookworm-minbase.tar.gz"
root="$top/build/fresh-root"
log="$top/build/fresh-chroot.log"

say() { printf '[fresh] %s\n' "$*" >&2; }
die() { echo "FAIL fresh chroot: $*"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "SKIP fresh chroot (not root)"; exit 0; }
command -v debootstrap >/dev/null || die "debootstrap not installed (tools/deps.sh installs it)"

# The Debian mirrors this host's apt uses: "URI SUITE COMPONENT" of each Packages index.
sources=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT) $(IDENTIFIER)' 2>/dev/null |
	awk '$4 == "Packages" { print $1, $2, $3 }' | sort -u)
mirror=$(awk '$2 == "bookworm" { print $1; exit }' <<<"$sources")
[ -n "$mirror" ] || die "this host's apt has no bookworm source to debootstrap from"

unmount_all() {
	local m
	for m in dev sys proc; do
		mountpoint -q "$root/$m" 2>/dev/null && umount -R "$root/$m"
	done
	return 0
}
# remove_root: the chroot's files, never while anything is still mounted below it (rm -rf
# would go on into the host's /proc, /sys and /dev).
remove_root() {
	unmount_all
	if grep -qF " $root/" /proc/self/mounts; then
		echo "FAIL fresh chroot: mounts left under $root; not removing it"
		return 1
	fi
	rm -rf "$root"
}
trap remove_root EXIT
# Killed (a suite stopped by hand, CI's timeout): unmount before going, or the host's /proc,
# /sys and /dev stay bound below build/.
trap 'exit 143' TERM
trap 'exit 130' INT

mkdir -p "$cache" "$top/build"
if [ ! -s "$base" ]; then
	say "debootstrap --variant=minbase bookworm from $mirror (once; cached in $base)"
	remove_root || exit 1
	for i in 1 2 3; do
		debootstrap --variant=minbase bookworm "$root" "$mirror" >"$log" 2>&1 && break
		[ $i -lt 3 ] || die "debootstrap failed 3 times ($(tail -1 "$log"))"
		sleep $((i * 10))
	done
	tar -C "$root" -czf "$base.tmp" . && mv "$base.tmp" "$base" || die "could not write $base"
fi
remove_root || exit 1
mkdir -p "$root"
tar -C "$root" -xzf "$base" || die "could not unpack $base"

# The chroot's apt: this host's sources and its Acquire settings (a snapshot mirror's
# Check-Valid-Until, a proxy), nothing else of the host. No daemon starts in a chroot.
awk '{ print "deb", $1, $2, $3 }' <<<"$sources" >"$root/etc/apt/sources.list"
apt-config dump | grep '^Acquire::' >"$root/etc/apt/apt.conf.d/99host-acquire" || true
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
for m in proc sys dev; do
	mount --rbind "/$m" "$root/$m" && mount --make-rslave "$root/$m" || die "cannot bind-mount /$m"
done
mkdir -p "$root/src/mmscope"
(cd "$top" && git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
	tar -C "$root/src/mmscope" -xf - || die "could not copy the tree"

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 bash -c "$1"; }

# What the README says a fresh machine has, then its first command.
say "apt-get install make gcc git"
in_root 'for i in 1 2 3 4; do apt-get update -qq && apt-get install -y -qq --no-install-recommends make gcc git && exit 0; sleep $((i * 5)); done; exit 1' \
	>>"$log" 2>&1 || die "could not install make gcc git in the chroot ($log)"
s0=$(date +%s)
say "make run (installs the build dependencies)"
in_root 'cd /src/mmscope && make run' >"$top/build/fresh-make-run.out" 2>>"$log"
rc=$?
execs=$(sed -n 's/.*exec_loop 1000 (pid [0-9]*).*/1000/p' "$top/build/fresh-make-run.out" | head -1)
if [ $rc -eq 0 ] && [ "$execs" = 1000 ] && grep -q 'mm changes' "$top/build/fresh-make-run.out"; then
	echo "PASS fresh chroot: make run installs, builds and traces the 1000-exec loop ($(($(date +%s) - s0)) s)"
else
	echo "FAIL fresh chroot: make run (exit $rc; build/fresh-make-run.out, $log)"
	tail -5 "$top/build/fresh-make-run.out" "$log" | sed 's/^/    /'
fi

s0=$(date +%s)
say "tools/vm/deps.sh and the VM targets' builds"
in_root 'cd /src/mmscope && VMTEST_BUILD_ONLY=1 tests/vm/run.sh' >"$top/build/fresh-vm-build.out" 2>>"$log"
rc=$?
sed "s/\$/ [fresh chroot, $(($(date +%s) - s0)) s]/" "$top/build/fresh-vm-build.out" | sed 's/^PASS /PASS fresh chroot: VM build /; s/^FAIL /FAIL fresh chroot: VM build /'
[ -s "$top/build/fresh-vm-build.out" ] || echo "FAIL fresh chroot: VM build printed nothing (exit $rc; $log)"
if [ $rc -ne 0 ]; then
	cat "$root/src/mmscope/build/vm/deps.log" "$root"/src/mmscope/build/vm/build-*.log 2>/dev/null | grep -E 'error|ERROR|E:' | head -10 | sed 's/^/    /'
fi
