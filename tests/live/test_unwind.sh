#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Whole user stacks of programs built without frame pointers (issue 24): mmscope faults
# --folded with --unwind dwarf (call-frame information walked in BPF) and with the default
# (auto: DWARF where the kernel can), against two independent oracles:
#  - deep_stack's own arithmetic (tools/workloads/deep_stack.c, built -fomit-frame-pointer
#    twice: CFI in .eh_frame, and in .debug_frame only): for each depth, its known chain
#    main;level_a;...;LEAF holds exactly the P writes, R reads and S signal-handler writes it
#    prints as "expect" lines, each stack starting at _start;
#  - perf record -e page-faults -c 1 --call-graph dwarf (perf copies the user stack at each
#    fault and unwinds it afterwards with libunwind) on Debian's own programs: python3.11,
#    gcc's cc1 and stress-ng. perf drops samples at this rate (20% to 96% of them here), so
#    shares are compared, not counts: the share of user-mode faults whose user stack reaches
#    the root, the median number of user frames, and whether perf's heaviest call chains are
#    in mmscope's output. Each tool traces only the command it starts (-- CMD), so a busy
#    host changes neither side. perf itself is checked first: its stacks of deep_stack are
#    the expected ones, and it reaches the root in >= 95% of each program's faults.
# Root frames, chain comparison and the folded formats: tests/live/stacks.py;
# perf script to folded: tests/live/perf_folded.py. Naming of unnamed frames (FILE+0xOFF) is
# test_names.sh's.
. "$(dirname "$0")/lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
stacks() { python3 "$HERE/stacks.py" "$@"; }
DS="$WORKLOADS/deep_stack"
DSF="$WORKLOADS/deep_stack_dbgframe"
# Three chains (3, 11 and 26 levels: 30 user frames from _start to the leaf, more through the
# signal frame), each with 1000 writes, 200 reads through a function pointer, 100 writes in
# a signal handler: 9 expected stacks, 3900 faults. The pause after the warm-up passes gives
# a tracer that builds its tables when it first sees a file time to have them: this checks
# the unwinding, the start-up window is the Debian programs' thresholds' matter.
DS_ARGS=(-d "3,11,26" -p 1000 -r 200 -s 100 --pause-before-ms 200)
# The same for perf: 270 faults, whose stack copies all fit in its buffer (perf -m 16M).
DS_PERF_ARGS=(-d "3,11,26" -p 30 -r 30 -s 30)
# perf's stack copy: deep_stack's deepest signal-handler stack spans about 17 KiB (its
# levels' frames, the signal frame's saved registers), which 16 KiB cut short. cc1 needs
# 8 KiB here (99.8% reach _start with 8, 16, 32 or 64 KiB).
PERF_STACK=32768

if "$MMSCOPE" faults --help 2>&1 | grep -q -- '--unwind'; then
	have_unwind=1
else
	have_unwind=0
	echo "# this mmscope has no --unwind option: its stacks are frame-pointer walks"
fi
have_perf=1
command -v perf >/dev/null || have_perf=0

# short CHAIN : main;level_a;...;level_k;LEAF as main;level_a..k;LEAF
short() { sed -E 's/level_a;(level_[b-z];)*level_([b-z])/level_a..\2/' <<<"$1"; }

# check_expect LABEL FOLDED FORMAT EXPECT_FILE : the per-stack numbers of stacks.py expect
# into the globals n_exp n_exact n_rooted n_missing (stacks without a fault) got_sum want_sum
# rooted_sum other total, each stack on a # line
check_expect() {
	local label=$1 got want rooted kind chain
	n_exp=0 n_exact=0 n_rooted=0 n_missing=0 got_sum=0 want_sum=0 rooted_sum=0 other=0 total=0
	while read -r got want rooted kind chain; do
		if [ "$got" = other ]; then
			other=$want total=$rooted
			continue
		fi
		n_exp=$((n_exp + 1))
		got_sum=$((got_sum + got)) want_sum=$((want_sum + want)) rooted_sum=$((rooted_sum + rooted))
		[ "$got" -eq "$want" ] && n_exact=$((n_exact + 1))
		[ "$got" -eq 0 ] && n_missing=$((n_missing + 1))
		[ "$rooted" -eq "$want" ] && n_rooted=$((n_rooted + 1))
		echo "# $label: $kind $(short "$chain"): $got of $want ($rooted from _start)"
	done < <(stacks expect "$2" "$3" "$4")
}

# ---- deep_stack: the workload's arithmetic ----
# ds_run LABEL BINARY MMSCOPE-OPTIONS... : trace deep_stack, check its expected stacks
ds_run() {
	local label=$1 bin=$2 name rc
	shift 2
	name=$(echo "$label" | tr -c 'a-z0-9_\n' _)
	"$MMSCOPE" faults --folded "$@" -o "$TMP/$name.folded" -- "$bin" "${DS_ARGS[@]}" \
		>"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
	if [ $rc -ne 0 ] || ! grep -q '^expect ' "$TMP/$name.out"; then
		fail "$label: mmscope faults --folded $* -- $(basename "$bin") ran (exit $rc: $(one_line "$TMP/$name.err"))"
		return 1
	fi
	check_expect "$label" "$TMP/$name.folded" mmscope "$TMP/$name.out"
	read -r depth one < <(stacks summary "$TMP/$name.folded" mmscope . |
		tr ' ' '\n' | sed -n 's/^\(median_depth\|one_frame_pct\)=//p' | tr '\n' ' ')
	echo "# $label: median user frames of all its faults $depth, one frame only $one%"
	return 0
}

# ds_whole LABEL BINARY MMSCOPE-OPTIONS... : the DWARF checks: every expected stack exact
ds_whole() {
	local label=$1
	ds_run "$@" || return
	ok "$label: each of its $n_exp stacks main;level_a;...;leaf holds exactly its faults ($want_sum)" \
		"$n_exact of $n_exp exact: $got_sum of $want_sum faults on them" [ "$n_exp" -eq 9 -a "$n_exact" -eq "$n_exp" ]
	ok "$label: ... and every one of them starts at _start" \
		"$n_rooted of $n_exp stacks rooted" [ "$n_exp" -eq 9 -a "$n_rooted" -eq "$n_exp" ]
	ok "$label: no fault of touch_pages, read_pages or touch_in_handler on another stack" \
		"$other of $total elsewhere" [ "$total" -gt 0 -a "$other" -eq 0 ]
}

ds_whole "unwind dwarf: deep_stack (.eh_frame)" "$DS" --unwind dwarf
ds_whole "unwind dwarf: deep_stack_dbgframe (.debug_frame)" "$DSF" --unwind dwarf
ds_whole "unwind default: deep_stack (.eh_frame)" "$DS"
ds_whole "unwind default: deep_stack_dbgframe (.debug_frame)" "$DSF"

# Frame pointers: what the stacks were before. deep_stack keeps no frame chain, so a walk
# skips every level without a frame of its own and none of the 9 chains comes out whole.
if [ $have_unwind = 1 ]; then
	fp_opts=(--unwind fp) fp_label="unwind fp"
else
	fp_opts=() fp_label="unwind fp (the default of this mmscope)"
fi
if ds_run "$fp_label: deep_stack" "$DS" "${fp_opts[@]}"; then
	ok "$fp_label: deep_stack: frame-pointer stacks miss the chains (<= 1% of its faults on them)" \
		"$got_sum of $want_sum on the expected stacks" [ "$want_sum" -gt 0 -a $((got_sum * 100)) -le "$want_sum" ]
fi

# perf_fold OUT CMD... : perf's DWARF-unwound stacks of CMD's faults, folded, into OUT (CMD's
# stdout into OUT.cmd); 1 if perf recorded nothing.
#  --no-bpf-event: the BPF programs loaded on the host (other tests' mmscope) are none of
#    the workload's business.
#  -B -N: no build IDs; perf script finds the files by their paths, and nothing is copied
#    into the build-ID cache in ~/.debug that every perf user of the host shares.
#  perf_folded.py --clear-mmap-build-ids: while another mmscope runs on the host, this
#    kernel marks perf's own mmap records as holding build IDs, and perf script aborts on
#    them (perf_folded.py says more).
perf_fold() {
	local out=$1 n
	shift
	perf record --no-bpf-event -B -N -q -m 16M -e page-faults -c 1 \
		--call-graph dwarf,$PERF_STACK -o "$TMP/perf.data" -- "$@" >"$out.cmd" 2>"$out.err"
	n=$(python3 "$HERE/perf_folded.py" --clear-mmap-build-ids "$TMP/perf.data" 2>>"$out.err")
	case $n in '' | *[!0-9]*) n=0 ;; esac
	[ "$n" -gt 0 ] && echo "# perf: $n mmap records of $(basename "$out" .pfolded) marked as holding build IDs (cleared)"
	perf script --no-inline -F comm,tid,event,ip,sym,dso -i "$TMP/perf.data" 2>>"$out.err" |
		python3 "$HERE/perf_folded.py" >"$out"
	rm -f "$TMP/perf.data"
	[ -s "$out" ]
}

# The oracle on deep_stack: perf's stacks of its faults are the ones it expects.
if [ $have_perf = 0 ]; then
	skip "perf oracle: deep_stack (no perf: tools/deps.sh installs linux-perf)"
elif ! perf_fold "$TMP/ds.pfolded" "$DS" "${DS_PERF_ARGS[@]}"; then
	fail "perf oracle: deep_stack: perf record recorded nothing ($(one_line "$TMP/ds.pfolded.err"))"
else
	check_expect "perf dwarf: deep_stack" "$TMP/ds.pfolded" perf "$TMP/ds.pfolded.cmd"
	ok "perf oracle: deep_stack: each of the 9 expected stacks has faults, and every fault perf kept at touch_pages, read_pages, touch_in_handler is on one, from _start" \
		"$((n_exp - n_missing)) of $n_exp stacks seen; $other of $total elsewhere; $rooted_sum of $got_sum from _start" \
		[ "$n_exp" -eq 9 -a "$n_missing" -eq 0 -a "$other" -eq 0 -a "$rooted_sum" -eq "$got_sum" ]
	# perf's libunwind reads .eh_frame only: not an oracle for the .debug_frame build.
	if perf_fold "$TMP/dsf.pfolded" "$DSF" "${DS_PERF_ARGS[@]}"; then
		check_expect "perf dwarf: deep_stack_dbgframe" "$TMP/dsf.pfolded" perf "$TMP/dsf.pfolded.cmd" >/dev/null
		echo "# perf dwarf: deep_stack_dbgframe: $((total - other)) of the $total faults perf kept at its leaves on the expected stacks (perf reads no .debug_frame)"
	fi
fi

# ---- Debian's programs: mmscope (the default, auto) against perf --call-graph dwarf ----
# get KEY : a value of the last stacks.py output line read into $words
get() { tr ' ' '\n' <<<"$words" | sed -n "s/^$1=//p"; }
# ge X Y : X >= Y (decimals)
ge() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$1" "$2"; }
# sound PCT ROOT_OK : perf reached the root in >= 95%, most often at a root frame
sound() { ge "$1" 95 && [ "$2" = 1 ]; }

# debian LABEL COMM_RE ENTRY_FILE CMD... : the comparisons for the user-mode faults of the
# processes whose comm matches COMM_RE (stress-ng and its worker stress-ng-fault, ...);
# ENTRY_FILE is the program, whose _start may have no symbol (stacks.py)
debian() {
	local label=$1 comm=$2 entry=$3 rc mr pr md pd
	shift 3
	"$MMSCOPE" faults --folded -o "$TMP/$label.folded" -- "$@" >/dev/null 2>"$TMP/$label.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "unwind default: $label: mmscope faults --folded -- $* ran (exit $rc: $(one_line "$TMP/$label.err"))"
		return
	fi
	if [ $have_perf = 0 ]; then
		words=$(stacks summary "$TMP/$label.folded" mmscope "$comm" "$entry")
		echo "# $label: mmscope: $words"
		ok "unwind default: $label: mmscope's user stacks reach the root in >= 95% of its user-mode faults" \
			"$(get rooted_pct)%, median $(get median_depth) frames" ge "$(get rooted_pct)" 95
		skip "unwind default: $label: the comparisons with perf (no perf: tools/deps.sh installs linux-perf)"
		return
	fi
	if ! perf_fold "$TMP/$label.pfolded" "$@"; then
		fail "perf oracle: $label: perf record recorded nothing ($(one_line "$TMP/$label.pfolded.err"))"
		return
	fi
	words=$(stacks compare "$TMP/$label.folded" "$TMP/$label.pfolded" "$comm" "$entry")
	mr=$(get mm_rooted_pct) pr=$(get perf_rooted_pct) md=$(get mm_median_depth) pd=$(get perf_median_depth)
	echo "# $label: user-mode faults: mmscope $(get mm_faults), perf $(get perf_faults) (perf keeps a share)"
	echo "# $label: reach the root: mmscope $mr%, perf $pr%; median user frames: mmscope $md, perf $pd"
	echo "# $label: one user frame: mmscope $(get mm_one_frame_pct)%, perf $(get perf_one_frame_pct)%; a bare [unknown] frame: mmscope $(get mm_unknown_pct)%, perf $(get perf_unknown_pct)%"
	echo "# $label: most common root frame: mmscope $(get mm_top_root), perf $(get perf_top_root); perf's top chains in mmscope's: $(get top) of $(get top_n)"
	ok "perf oracle: $label: perf's user stacks reach the root in >= 95% of user-mode faults, most often at a root frame" \
		"$pr%, most common root frame $(get perf_top_root)" sound "$pr" "$(get perf_top_root_ok)"
	ok "unwind default: $label: mmscope's user stacks reach the root in >= 95% of user-mode faults" \
		"$mr% (perf $pr%); most common root frame $(get mm_top_root)" ge "$mr" 95
	ok "unwind default: $label: median user frames within 2 of perf's" "mmscope $md, perf $pd" absdiff_le "$md" "$pd" 2
	ok "unwind default: $label: >= 8 of perf's 10 heaviest whole user call chains appear in mmscope's" \
		"$(get top) of $(get top_n); first missing: $(get top_missing | cut -c1-300)" \
		[ "$(get top_n)" -eq 10 -a "$(get top)" -ge 8 ]
}

# python3 on PATH may be another build (pyenv): Debian's is /usr/bin/python3.11. 300 bytearrays
# of 1 MiB: memset through Python's frames (13 deep).
if [ -x /usr/bin/python3.11 ]; then
	debian python3.11 '^python3' /usr/bin/python3.11 \
		/usr/bin/python3.11 -c 'x=[bytearray(1<<20) for _ in range(300)]'
else
	skip "python3.11: Debian's python (/usr/bin/python3.11 is missing)"
fi

# cc1 -O2 on a generated 4,000-line C file (what gcc -O2 -c runs): stacks about 20 deep. cc1
# is started directly, not through the gcc driver: in most runs of `gcc -O2 -c` here,
# perf 6.1 stopped cc1's stacks at their first frame in libc (0.3% reached _start, median 2 to
# 14 frames), as if its unwinder kept the libc of the driver, which forked and exec()ed cc1;
# every run of cc1 started by perf itself reached _start in 99.7% or more.
cc1=$(gcc -print-prog-name=cc1 2>/dev/null)
if [ -x "$cc1" ]; then
	python3 - >"$TMP/gen.c" <<'EOF'
print("struct node { struct node *next; long key; double w[4]; };")
print("static inline long mix(long a, long b) { return (a * 31) ^ (b >> 3); }")
for i in range(285):
    call = "f%d(p, k + j, v, m > 1 ? m / 2 : 0)" % (i - 1) if i else "k + j"
    print("""long f%d(struct node *p, long k, const int *v, int m)
{
	long acc = %d;
	for (int j = 0; j < m; j++) {
		switch ((v[j] + j) %% 5) {
		case 0: acc = mix(acc, v[j] * %d); break;
		case 1: acc += p ? p->key * j : j; break;
		case 2: if (p && p->next) p = p->next; break;
		case 3: acc ^= (long)(p ? p->w[j & 3] * %d.5 : k); break;
		default: acc -= %s;
		}
	}
	return acc + k;
}""" % (i, i, i % 7 + 1, i, call))
EOF
	debian cc1 '^cc1$' "$cc1" "$cc1" -quiet -O2 "$TMP/gen.c" -o "$TMP/gen.s"
else
	skip "cc1: gcc's cc1 not found (gcc -print-prog-name=cc1)"
fi

# stress-ng's fault stressor (its binary has no symbol for _start: stacks.py finds the root
# by the ELF entry point)
if command -v stress-ng >/dev/null; then
	debian stress-ng '^stress-ng' "$(command -v stress-ng)" stress-ng --fault 1 --fault-ops 20000
else
	skip "stress-ng: not installed (tools/deps.sh installs it)"
fi
