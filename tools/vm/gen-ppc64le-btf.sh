#!/usr/bin/env bash
# tools/vm/gen-ppc64le-btf.sh - make BTF for Debian's ppc64le kernel (it ships none).
#
# What: downloads linux-image-<release>-dbg:ppc64el for the kernel pinned in
# tools/vm/kernels.sh (~720 MB; only usr/lib/debug/boot/vmlinux-* is extracted
# and kept in the cache), encodes its DWARF as BTF with
#   pahole --btf_encode_detached=OUT.btf -j1 VMLINUX
# and writes btf/ppc64le/<release>.btf.xz (release as in `uname -r`, e.g.
# 6.1.0-57-powerpc64le) into the repo. Then it runs gen-vmlinux-h.sh ppc64le
# to regenerate vmlinux-headers/powerpc/vmlinux.h from that BTF.
#
# Why: Debian's ppc64el kernels are built without CONFIG_DEBUG_INFO_BTF, so
# there is no /sys/kernel/btf/vmlinux in the guest. CO-RE programs load on them
# with libbpf's btf_custom_path pointing at this file (shipped in the initramfs),
# and our BPF code compiles against a vmlinux.h made from the same types.
# -j1 is used (not -j2): single-threaded encoding takes a few seconds longer but
# gives the same bytes on every run, so the checked-in file is reproducible.
#
# Usage: tools/vm/gen-ppc64le-btf.sh
# Env:   MMSCOPE_VM_CACHE (default /var/cache/mmscope-vm), MMSCOPE_VM_KEEP_DBG_DEB=1
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

[ $# -eq 0 ] || die "usage: $0 (no arguments)"
need_cmd pahole xz dpkg-deb tar
set_arch ppc64le
MMSCOPE_VM_NO_BTF_WARN=1 kernel_info ppc64le
[ "$KERNEL_PINNED" = yes ] ||
	warn "generating BTF for the fallback kernel $KERNEL_PKG=$KERNEL_VERSION, not the pinned one"

vmlinux=$(dbg_vmlinux)
out_dir="$REPO_ROOT/btf/ppc64le"
out="$out_dir/$KERNEL_RELEASE.btf.xz"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

log "pahole: encoding BTF from $vmlinux"
start=$(date +%s)
pahole --btf_encode_detached="$tmp/vmlinux.btf" -j1 "$vmlinux" >&2 ||
	die "pahole failed on $vmlinux"
[ -s "$tmp/vmlinux.btf" ] || die "pahole produced no BTF"
log "pahole took $(($(date +%s) - start)) s; BTF is $(stat -c %s "$tmp/vmlinux.btf") bytes"

# Sanity: the types mmscope reads must be there.
bpftool btf dump file "$tmp/vmlinux.btf" format raw >"$tmp/raw.txt" ||
	die "bpftool cannot read the generated BTF"
for t in "STRUCT 'task_struct'" "STRUCT 'mm_struct'" "STRUCT 'pt_regs'" "STRUCT 'vm_area_struct'"; do
	grep -qF "$t" "$tmp/raw.txt" || die "generated BTF lacks $t"
done

mkdir -p "$out_dir"
xz -9e -T1 -c "$tmp/vmlinux.btf" >"$tmp/out.btf.xz"
if [ -f "$out" ] && cmp -s "$tmp/out.btf.xz" "$out"; then
	log "$out unchanged"
else
	mv "$tmp/out.btf.xz" "$out"
	log "wrote $out ($(stat -c %s "$out") bytes; from $KERNEL_PKG $KERNEL_VERSION)"
fi

"$VM_DIR/gen-vmlinux-h.sh" ppc64le
printf '%s\n' "$out"
