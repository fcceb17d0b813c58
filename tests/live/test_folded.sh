#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope faults --folded: the flame-graph format, its totals, and symbolized stacks.
#
# Oracles: a --json run of the same page_touch command (totals and per-class counts), the
# workload's arithmetic (W, R, X, K faults in functions of known names), and the workload's
# source for those names (tools/workloads/page_touch.c: touch_write_pages, touch_read_pages,
# touch_kernel_pages, touch_exec_pages, all called from touch_all_pages, all noinline).
. "$(dirname "$0")/lib.sh"

PT="$WORKLOADS/page_touch"
W=2000 R=2000 X=200 K=100

# sum_where AWK-CONDITION : sum of the counts of the folded lines matching it
sum_where() { awk "$1 { s += \$NF } END { print s + 0 }" "$TMP/folded"; }

"$MMSCOPE" faults --folded -o "$TMP/folded" -- "$PT" -w $W -r $R -x $X -k $K >"$TMP/out" 2>"$TMP/err"
rc=$?
ok "folded: mmscope exits 0" "exit $rc: $(head -c 300 "$TMP/err" | tr '\n' ' ')" [ $rc -eq 0 ]
[ -s "$TMP/folded" ] || { fail "folded: no output"; exit 0; }
"$MMSCOPE" faults --json -o "$TMP/f.json" -- "$PT" -w $W -r $R -x $X -k $K >/dev/null 2>"$TMP/err2" ||
	{ fail "folded: the --json run failed ($(head -c 300 "$TMP/err2"))"; exit 0; }
read -r ju jk jr jw jx < <(json_get "$TMP/f.json" \
	'" ".join(str(d["faults"][k]) for k in ("user", "kernel", "read", "write", "exec"))')

nlines=$(wc -l <"$TMP/folded")
badfmt=$(grep -cvE '^.+ [0-9]+$' "$TMP/folded")
ok "folded: every line is 'STACK COUNT'" "$badfmt of $nlines lines do not match: $(grep -vE '^.+ [0-9]+$' "$TMP/folded" | head -2)" \
	[ "$badfmt" -eq 0 ]
ctrl=$(LC_ALL=C grep -c $'[\x01-\x1f\x7f]' "$TMP/folded")
ok "folded: no control characters" "$ctrl lines with control characters" [ "$ctrl" -eq 0 ]
# Each line's last frame is the event kind: a fault's ([write minor], [kernel write minor],
# [read incomplete], ...) or a TLB invalidation's ([tlb local_mm_shootdown], ...).
KIND_RE=';\[((kernel )?(read|write|exec|fault) (minor|major|incomplete)|tlb [a-z_]+)\] [0-9]+$'
badkind=$(grep -cvE "$KIND_RE" "$TMP/folded")
ok "folded: every stack ends in a [kind] frame" "$badkind lines: $(grep -vE "$KIND_RE" "$TMP/folded" | head -2)" \
	[ "$badkind" -eq 0 ]
dups=$(awk '{ $NF = ""; print }' "$TMP/folded" | sort | uniq -d | wc -l)
ok "folded: no stack printed twice" "$dups duplicated stacks" [ "$dups" -eq 0 ]

# Every fault entry is counted once in the folded output: at its completion, or when the
# thread's next entry replaces it (incomplete). So the sum is the --json run's user + kernel.
# Tolerance 1% (~44 of ~4360): two separate runs, whose startup faults differ by a few.
total=$(sum_where '!/;\[tlb [a-z_]+\] [0-9]+$/')
ok "folded: sum of counts = user + kernel of a --json run (1%)" "folded $total, json $((ju + jk))" \
	pct_within "$total" $((ju + jk)) 1
# Per class, against the --json run (same 1%, with 10 faults of slack for the small classes).
fw=$(sum_where '/\[(kernel )?write [a-z]+\] [0-9]+$/')
fr=$(sum_where '/\[(kernel )?read [a-z]+\] [0-9]+$/')
fx=$(sum_where '/\[(kernel )?exec [a-z]+\] [0-9]+$/')
fk=$(sum_where '/;\[kernel [a-z]+ [a-z]+\] [0-9]+$/')
ok "folded: [.. write ..] lines sum to the JSON write count" "folded $fw, json $jw" absdiff_le "$fw" "$jw" $((jw / 100 + 10))
ok "folded: [.. read ..] lines sum to the JSON read count" "folded $fr, json $jr" absdiff_le "$fr" "$jr" $((jr / 100 + 10))
ok "folded: [.. exec ..] lines sum to the JSON exec count" "folded $fx, json $jx" absdiff_le "$fx" "$jx" $((jx / 100 + 10))
ok "folded: [kernel ..] lines sum to the JSON kernel count" "folded $fk, json $jk" absdiff_le "$fk" "$jk" $((jk / 100 + 10))
ok "folded: [exec minor] lines exist, >= X" "exec minor total $(sum_where '/\[exec minor\] [0-9]+$/'), X=$X" \
	[ "$(sum_where '/\[exec minor\] [0-9]+$/')" -ge $X ]

# ---- symbols: the workload's own functions ----
if ! grep -qE 'touch_[a-z]+_pages|main' "$TMP/folded"; then
	why="user symbols not resolved: no line names a page_touch function"
	grep -q '\[unknown\]' "$TMP/folded" && why="$why (frames print as [unknown]: a binary without user/sym/sym.c?)"
	skip "folded: workload functions in the stacks ($why)"
else
	# The faulting instruction is in the named function for writes, reads and the kernel-mode
	# faults (the user stack of a kernel-mode fault ends at the read() call inside
	# touch_kernel_pages). Each class's pages share one stack, so one line holds nearly all of
	# them: at least 99% of the count (1% for the case of a stack id collision splitting it).
	n=$(sum_where '/;touch_write_pages;/ && /;\[write minor\] [0-9]+$/')
	ok "folded: touch_write_pages ... [write minor] holds the W write faults" "$n of $W" [ "$n" -ge $((W * 99 / 100)) -a "$n" -le $((W + 10)) ]
	n=$(sum_where '/;touch_read_pages;/ && /;\[read minor\] [0-9]+$/')
	ok "folded: touch_read_pages ... [read minor] holds the R read faults" "$n of $R" [ "$n" -ge $((R * 99 / 100)) -a "$n" -le $((R + 10)) ]
	n=$(sum_where '/;touch_kernel_pages;/ && /;\[kernel write minor\] [0-9]+$/')
	ok "folded: touch_kernel_pages ... [kernel write minor] holds the K kernel faults" "$n of $K" [ "$n" -ge $((K * 99 / 100)) -a "$n" -le $((K + 10)) ]
	# An exec fault is taken on the callee's first instruction, before any prologue: a plain
	# frame-pointer unwinder goes from the exec page to touch_exec_pages's caller; this kernel's
	# also shows touch_exec_pages. Either is right, so either name is accepted.
	# Unlike the other classes, each exec fault has a stack of its own (the leaf is a different
	# exec page each time): X = 200 distinct stacks in a stack map of 4096 hash buckets, where
	# bpf_get_stackid() refuses a stack whose bucket holds another (-EEXIST). Expected
	# collisions ~ X^2 / (2 * 4096) = 4.9; such a fault's line has no user frames, and mmscope
	# counts and announces it (a "lost" warning on stderr). So: named + announced-lost >= 99% of X,
	# and named >= 90% of X (20 collisions would be 7 sigma above that mean).
	# The warning's wording has varied ("N stacks lost", "lost N: stack not captured ..."): take
	# the number from the warning line that speaks of lost stacks.
	lost=$(grep -i 'warning:.*lost' "$TMP/err" | grep -i stack | grep -oE '[0-9]+' | head -1)
	n=$(sum_where '/;touch_(all|exec)_pages;/ && /;\[exec minor\] [0-9]+$/')
	ok "folded: exec faults under touch_all_pages/touch_exec_pages ... [exec minor] (+ stacks announced lost)" \
		"$n of $X named, ${lost:-0} stacks announced lost" \
		[ $((n + ${lost:-0})) -ge $((X * 99 / 100)) -a "$n" -ge $((X * 90 / 100)) -a "$n" -le $((X + 10)) ]
	# Root to leaf: comm first, then main, then touch_write_pages, then the kernel's fault entry.
	# (touch_all_pages does not show between main and touch_write_pages: gcc builds that leaf
	# function without a frame - no push %rbp, see objdump - so the frame-pointer walk goes from
	# its IP straight to the frame of main.)
	ok "folded: frames go root to leaf (page_touch;...main;...touch_write_pages;...exc_page_fault...)" \
		"$(grep ';touch_write_pages;' "$TMP/folded" | head -1 | cut -c1-200)" \
		grep -qE '^page_touch;(.*;)?main;(.*;)?touch_write_pages;(.*;)?[a-z_]*exc_page_fault;' "$TMP/folded"
fi

# ---- a stack-collecting tracer must not change what another tracer counts ----
# --folded walks the user stack of every fault it sees (bpf_get_stackid(BPF_F_USER_STACK));
# the walk reads user memory with page faults disabled and can fault itself (a kernel-mode
# read fault in __get_user_nocheck_8 that is never handled, only fixed up). mmscope skips the
# faults of its own walks, but every other tracer on the host sees them in the exceptions
# tracepoints. perf's page-faults never counts them (do_user_addr_fault() leaves before its
# perf_sw_event() when faults are disabled). Oracle: the workload's arithmetic and perf stat,
# while a host-wide 'mmscope faults --folded' runs next to a 'mmscope faults --json' run.
"$MMSCOPE" faults --folded -o "$TMP/host.folded" -d 60 2>/dev/null &
HOSTPID=$!
trap 'kill $HOSTPID 2>/dev/null; rm -rf "$TMP"' EXIT
if attached $HOSTPID; then
	"$MMSCOPE" faults --json -o "$TMP/g.json" -- "$PT" -w $W >/dev/null 2>"$TMP/err3"
	read -r gu gk ginc < <(json_get "$TMP/g.json" '" ".join(str(d["faults"][k]) for k in ("user", "kernel", "incomplete"))')
	perf stat -x, -e page-faults -o "$TMP/perf.csv" -- "$PT" -w $W >/dev/null 2>&1
	ppf=$(awk -F, '$3 == "page-faults" {print $1}' "$TMP/perf.csv")
	# Alone, this command takes 2-4 kernel-mode faults (exec's ELF loading) and none
	# incomplete; 10 leaves room for noise, against ~2000 injected ones when the bug is there.
	ok "folded: a concurrent host-wide --folded run adds no kernel faults to another run" \
		"kernel $gk, incomplete $ginc (alone: ~3 and 0)" [ "${gk:-99999}" -le 10 -a "${ginc:-99999}" -le 10 ]
	ok "folded: ... and that run's user + kernel still matches perf page-faults (2%)" \
		"mmscope $((gu + gk)), perf '$ppf'" pct_within $((gu + gk)) "${ppf:-0}" 2
else
	fail "folded: the host-wide --folded run never attached"
fi
kill -INT $HOSTPID 2>/dev/null
wait $HOSTPID 2>/dev/null

# ---- thousands of distinct stacks: the per-CPU slots hand their counts over, none lost ----
# Every exec of exec_loop is a new address space, so each of its ~60 faults an image is on a
# new stack: far more records than the 256 slots a CPU, which send their counts to userspace
# as others take them, plus what they hold at the end. Oracle: perf stat's page-faults of the
# same command (the workload and its images, from its exec: what perf itself and its child
# before the exec fault is under the comm "perf" and left out).
"$MMSCOPE" faults --folded -o "$TMP/el.folded" -- perf stat -x, -e page-faults -o "$TMP/el.csv" \
	-- "$WORKLOADS/exec_loop" 100 >/dev/null 2>"$TMP/el.err"
rc=$?
elsum=$(awk '!/^perf;/ { s += $NF } END { print s + 0 }' "$TMP/el.folded")
elpf=$(awk -F, '$3 == "page-faults" {print $1}' "$TMP/el.csv")
elrecs=$(grep -vc '^perf;' "$TMP/el.folded")
ok "folded: exec_loop 100: exit 0, nothing lost (stderr: the start line only)" \
	"exit $rc: $(one_line "$TMP/el.err")" \
	eval '[ $rc -eq 0 ] && ! grep -v "^Tracing " "$TMP/el.err" | grep -q .'
ok "folded: ... its $elrecs lines (thousands of records, new in each image) sum to perf's page-faults (1%)" \
	"mmscope $elsum, perf '$elpf'" pct_within "$elsum" "${elpf:-0}" 1

# ---- faults while execve() loads the new image: the caller's user stack is gone ----
# From the switch to the new address space until the image's layout is set, the saved user
# registers are the execve() caller's: its stack is no longer mapped. Such faults get the one
# user frame "[in execve]" (bpf/compat.bpf.h current_in_exec_load()), never a walk of unmapped
# memory or an [unknown]. Oracle for their number: the loader zeroes the tail of the page
# where each PT_LOAD segment's file data ends and its bss begins (memsz > filesz, the end not
# page aligned), a write to a page of a new address space: one fault a segment, for the
# binary and its interpreter, in each of the 101 images (the first exec and 100 re-execs).
bss_tails() {
	local type off vaddr paddr filesz memsz rest n=0
	while read -r type off vaddr paddr filesz memsz rest; do
		[ "$type" = LOAD ] || continue
		((memsz > filesz && (vaddr + filesz) % 4096)) && n=$((n + 1))
	done < <(readelf -lW "$1" 2>/dev/null)
	echo $n
}
interp=$(readelf -lW "$WORKLOADS/exec_loop" | sed -n 's/.*program interpreter: \(.*\)]/\1/p')
per_image=$(($(bss_tails "$WORKLOADS/exec_loop") + $(bss_tails "$interp")))
inexec=$(awk '!/^perf;/ && $0 ~ /^[^;]*;\[in execve\];/ { s += $NF } END { print s + 0 }' \
	"$TMP/el.folded")
stale=$(grep -v '^perf;' "$TMP/el.folded" | grep ';load_elf_binary;' |
	grep -vc '^[^;]*;\[in execve\];')
misplaced=$(grep '\[in execve\]' "$TMP/el.folded" | grep -vc 'sys_execve')
ok "folded: exec_loop 100: every fault in load_elf_binary has the user frame [in execve]" \
	"$stale lines with another user stack" [ "$stale" -eq 0 ]
ok "folded: ... [in execve] only under execve()" "$misplaced lines elsewhere" [ "$misplaced" -eq 0 ]
ok "folded: ... [in execve] faults >= the loader's bss-tail writes, 101 images x $per_image (readelf)" \
	"$inexec faults in execve" [ "$per_image" -ge 2 -a "$inexec" -ge $((101 * per_image)) ]
