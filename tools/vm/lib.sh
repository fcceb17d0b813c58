# shellcheck shell=bash disable=SC2034 # the variables set here are used by the sourcing scripts
# tools/vm/lib.sh - helpers shared by the tools/vm/*.sh scripts (sourced, not run).
#
# Why: every VM script needs the same few things - a download cache outside the
# repo, one way to name the three architectures (the CLI, Debian and the kernel
# all spell them differently), an apt-get that waits for other apt users instead
# of failing on the dpkg lock, and readable error messages.

VM_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$VM_DIR/../.." && pwd)"
CACHE="${MMSCOPE_VM_CACHE:-/var/cache/mmscope-vm}"

# apt-get: wait up to 15 min for the dpkg lock (other helpers may be installing),
# never prompt, and don't drop to the _apt user for downloads into root-owned
# cache dirs (that only produces a harmless but noisy warning).
APT_GET=(apt-get -o DPkg::Lock::Timeout=900 -o APT::Sandbox::User=root -y -q)

# Note: with pipefail, never end a pipeline in `grep -q`: grep exits at the
# first match and the writer dies of SIGPIPE, failing the pipeline at random.
# Use `grep ... >/dev/null` instead.

log()  { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
warn() { printf '[%s] WARNING: %s\n' "$(basename "$0")" "$*" >&2; }
die()  { printf '[%s] ERROR: %s\n' "$(basename "$0")" "$*" >&2; exit 1; }

need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			die "'$c' not found; run tools/vm/deps.sh first (as root)"
	done
}

# Normalise an architecture name. Sets:
#   DEB_ARCH    Debian architecture (amd64 | ppc64el | arm64)
#   KFLAVOUR    Debian kernel flavour (amd64 | powerpc64le | arm64)
#   GNU_TRIPLET cross toolchain prefix (x86_64-linux-gnu | powerpc64le-linux-gnu | aarch64-linux-gnu)
#   CANON_ARCH  name used in this tree (x86_64 | ppc64le | arm64)
#   HDR_DIR     vmlinux-headers/<dir> and __TARGET_ARCH_<x> name (x86 | powerpc | arm64)
set_arch() {
	case "${1:-}" in
	x86_64 | amd64 | x86)
		DEB_ARCH=amd64 KFLAVOUR=amd64 GNU_TRIPLET=x86_64-linux-gnu CANON_ARCH=x86_64 HDR_DIR=x86 ;;
	ppc64le | ppc64el | powerpc | powerpc64le | power8 | power9)
		DEB_ARCH=ppc64el KFLAVOUR=powerpc64le GNU_TRIPLET=powerpc64le-linux-gnu CANON_ARCH=ppc64le HDR_DIR=powerpc ;;
	arm64 | aarch64)
		DEB_ARCH=arm64 KFLAVOUR=arm64 GNU_TRIPLET=aarch64-linux-gnu CANON_ARCH=arm64 HDR_DIR=arm64 ;;
	*)
		die "unknown architecture '${1:-}' (want x86_64, ppc64le or arm64)" ;;
	esac
}

# dpkg-query: is PKG (may carry :arch) installed?
pkg_installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = installed ]
}

host_arch_ok() {
	[ "$(dpkg --print-architecture)" = amd64 ] ||
		die "these scripts expect an amd64 Debian host (found $(dpkg --print-architecture))"
}

# ---- guest packages: an apt of its own per Debian architecture -------------------------------
# The guests' kernels, busybox and static libraries are Debian packages of amd64, ppc64el and
# arm64. They are only downloaded and unpacked, never installed: each architecture has its own
# apt lists and cache under $CACHE/apt/<arch>, read from this host's sources, and an empty
# dpkg status. So nothing foreign enters the host's dpkg, no foreign version has to match the
# host's (Multi-Arch: same packages must, and a mirror whose architectures are skewed broke
# that), and a broken index of one architecture stops only what needs it.

# guest_apt ARCH: set GAPT_GET and GAPT_CACHE, apt-get and apt-cache for Debian architecture ARCH.
# With GUEST_SUITE set (a Debian release other than the host's: bullseye, trixie), that
# release's own sources (main, -updates, -security on $MMSCOPE_VM_MIRROR, deb.debian.org by
# default) and lists ($CACHE/apt/<arch>-<suite>) instead of the host's; the host's
# debian-archive-keyring has the keys of bullseye and trixie.
guest_apt() {
	local d="$CACHE/apt/$1${GUEST_SUITE:+-$GUEST_SUITE}" m=${MMSCOPE_VM_MIRROR:-http://deb.debian.org}
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	[ -f "$d/status" ] || : >"$d/status"
	local o=(-o "APT::Architecture=$1" -o "APT::Architectures::=$1" -o "Dir::State::Lists=$d/lists"
		-o "Dir::Cache=$d/cache" -o "Dir::State::status=$d/status" -o APT::Sandbox::User=root)
	if [ -n "${GUEST_SUITE:-}" ]; then
		printf 'deb %s/debian %s main\ndeb %s/debian %s-updates main\ndeb %s/debian-security %s-security main\n' \
			"$m" "$GUEST_SUITE" "$m" "$GUEST_SUITE" "$m" "$GUEST_SUITE" >"$d/sources.list"
		mkdir -p "$d/sources.list.d"
		o+=(-o "Dir::Etc::sourcelist=$d/sources.list" -o "Dir::Etc::sourceparts=$d/sources.list.d")
	fi
	GAPT_GET=(apt-get "${o[@]}" -y -q)
	GAPT_CACHE=(apt-cache "${o[@]}")
	GAPT_LISTS="$d/lists"
}

# retry TRIES WHAT COMMAND...: run COMMAND until it succeeds, waiting 5, 10, 20... s between
# tries (a mirror mid-sync answers again a minute later); 1 when every try failed, or at once
# when COMMAND exits with GONE (what no retry can change: a file the mirror does not have).
GONE=44
retry() {
	local tries=$1 what=$2 i wait=5 rc
	shift 2
	for ((i = 1; i <= tries; i++)); do
		"$@" && return 0
		rc=$?
		[ "$rc" != "$GONE" ] || { warn "$what: not on the mirror (404), not retried"; return 1; }
		[ "$i" -lt "$tries" ] || break
		warn "$what failed (try $i of $tries); again in ${wait}s"
		sleep "$wait"
		wait=$((wait * 2))
	done
	return 1
}

# guest_apt_update ARCH [force]: refresh ARCH's lists when they are missing, older than a day,
# or forced (a package was not found). A failed update is tolerated while lists from an
# earlier one are there (a partial index may still hold what is needed: the callers check).
guest_apt_update() {
	guest_apt "$1"
	local stamp="$GAPT_LISTS/.updated"
	if [ "${2:-}" != force ] && [ -f "$stamp" ] && [ -z "$(find "$stamp" -mmin +1440)" ]; then
		return 0
	fi
	log "apt-get update ($1 lists, $GAPT_LISTS)"
	if retry 4 "apt-get update for $1" "${GAPT_GET[@]}" update >&2; then
		touch "$stamp"
	elif compgen -G "$GAPT_LISTS/*_Packages*" >/dev/null; then
		warn "apt-get update for $1 failed; going on with the lists it has"
	else
		die "apt-get update for $1 failed and no lists are cached"
	fi
}

# apt_get_download NAME=VERSION: one try (stderr shown); GONE when the mirror answered 404
# (the index lists the file but the pool no longer has it: Debian's security archive keeps
# only the newest build of some architectures).
apt_get_download() {
	local err rc=0
	err=$(mktemp)
	"${GAPT_GET[@]}" download "$1" 2>"$err" || rc=$?
	cat "$err" >&2
	if [ "$rc" != 0 ] && grep -E '404 +Not Found' "$err" >/dev/null; then
		rc=$GONE
	fi
	rm -f "$err"
	return "$rc"
}

# apt_download PKG[:ARCH] VERSION DESTDIR -> prints the .deb path on stdout.
# Idempotent: a .deb already in DESTDIR for that name/version/arch is reused,
# so a pinned package keeps working from the cache after the archive drops it.
apt_download() {
	local spec=$1 ver=$2 dest=$3 name arch f
	name=${spec%%:*}
	arch=amd64
	[ "$spec" != "$name" ] && arch=${spec#*:}
	mkdir -p "$dest"
	# Debian file names encode an epoch "1:" as "1%3a".
	f="$dest/${name}_${ver//:/%3a}_${arch}.deb"
	if [ ! -s "$f" ]; then
		guest_apt_update "$arch"
		log "downloading $name:$arch=$ver into $dest"
		(cd "$dest" && retry 3 "apt-get download $name:$arch=$ver" apt_get_download "$name=$ver" >&2) ||
			die "apt-get download $name:$arch=$ver failed"
		[ -s "$f" ] || die "apt-get download did not produce $f"
	fi
	printf '%s\n' "$f"
}

# apt_candidate PKG[:ARCH] -> candidate version per ARCH's lists ('' if none).
apt_candidate() {
	local name=${1%%:*} arch=amd64
	[ "$1" != "$name" ] && arch=${1#*:}
	guest_apt_update "$arch"
	"${GAPT_CACHE[@]}" policy "$name" 2>/dev/null | awk '/Candidate:/ && !n++ { if ($2 != "(none)") print $2 }'
}

# kernel_info ARCH: fetch the kernel for ARCH and import KERNEL_PKG, KERNEL_VERSION,
# KERNEL_RELEASE, KERNEL_PINNED, KERNEL_DIR, KERNEL_IMAGE, BUSYBOX (see kernels.sh).
kernel_info() {
	local out
	out=$("$VM_DIR/kernels.sh" info "$1") || die "kernels.sh info $1 failed"
	eval "$out"
}

# dbg_vmlinux: needs set_arch + kernel_info. Downloads linux-image-<release>-dbg
# for the same version (large: 700-800 MB), extracts only the unstripped
# usr/lib/debug/boot/vmlinux-<release> into the cache and prints its path.
# The .deb is deleted afterwards (the extracted vmlinux is what is cached) unless
# MMSCOPE_VM_KEEP_DBG_DEB=1.
dbg_vmlinux() {
	local pkg="linux-image-$KERNEL_RELEASE-dbg" dir deb member
	dir="$CACHE/dbg/$DEB_ARCH/${pkg}_$KERNEL_VERSION"
	member="usr/lib/debug/boot/vmlinux-$KERNEL_RELEASE"
	if [ ! -s "$dir/vmlinux" ]; then
		deb=$(apt_download "$pkg:$DEB_ARCH" "$KERNEL_VERSION" "$CACHE/debs")
		log "extracting $member from $(basename "$deb")"
		rm -rf "$dir.tmp"
		mkdir -p "$dir.tmp"
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir.tmp" --wildcards "./$member" ||
			die "could not extract $member from $deb"
		mv "$dir.tmp/$member" "$dir.tmp/vmlinux"
		rm -rf "$dir.tmp/usr"
		rm -rf "$dir"
		mv "$dir.tmp" "$dir"
		[ "${MMSCOPE_VM_KEEP_DBG_DEB:-0}" = 1 ] || rm -f "$deb"
	fi
	printf '%s\n' "$dir/vmlinux"
}
