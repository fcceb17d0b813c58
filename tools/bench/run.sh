#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope benchmark: what watching costs, against no tracer, perf and bpftrace.
# See tools/bench/README.md for the method and how to read the output.
#
#   tools/bench/run.sh [--quick] [-n RUNS] [-w WORKLOADS] [-c CONFIGS] [--no-profile]
#                      [--no-startup] [--soak SECONDS] [--keep-bpf-stats] [--out DIR]
#                      (make bench: no options)
#
# Environment (each also a default for the option): RUNS, WORKLOADS, CONFIGS, OUT,
# PT_ARGS EL_ARGS FE_ARGS MP_ARGS TS_ARGS (each workload's arguments), PAUSE_MS (profile pass:
# the workload's --pause-before-ms, within which it is stopped until mmscope is attached),
# STARTUP_RUNS, SOAK_SECONDS, TIMEOUT (seconds per run), MMSCOPE, PERF, BPFTRACE, BPFTOOL.
#
# Exit status: 0 when it measured (targets missed or not: see the report), 1 when it could not.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tools/bench
BUILD=${BUILD:-$top/build}

usage() {
	sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//'
	cat <<'EOF'

  --quick           3 runs, smaller workloads, 3 start-up runs (about 5 minutes)
  -n, --runs N      interleaved timed runs of each (workload, configuration) (default 9)
  -w, --workloads L comma list of: page_touch exec_loop fork_exec mprotect_toggle tlb_switch
  -c, --configs L   comma list of: base mm_stat mm_faults mm_folded mm_folded_fp
                    mm_folded_s16 mm_folded_fp_s16 mm_tlb
                    perf_stat perf_record perf_dwarf bt_count bt_pair bt_stacks
                    (base is always run)
      --no-profile  skip the profile pass (BPF run time per program, RSS, map memory)
      --no-startup  skip the start-up measurement
      --soak SECONDS  host-wide soak with short processes coming and going, memory sampled
                    (tools/bench/soak.sh; default 1800, 0 with --quick; 0: none)
      --keep-bpf-stats  leave kernel.bpf_stats_enabled as found during the timed runs
                    (default: 0 while timing, since it adds two clock reads to every BPF
                    program run; the value found is restored at the end in every case)
      --out DIR     results directory (default build/bench)
      --judge-wall  decide timing targets on the wall-time minimum (default: CPU time)
EOF
}

die() {
	echo "bench: $*" >&2
	exit 1
}
say() { printf '%s\n' "$*" >&2; }

QUICK=0
PROFILE=1
STARTUP=1
KEEP_STATS=0
JUDGE=${JUDGE:-cpu}
RUNS=${RUNS:-}
WORKLOADS=${WORKLOADS:-page_touch,exec_loop,fork_exec,mprotect_toggle,tlb_switch}
CONFIGS=${CONFIGS:-base,mm_stat,mm_faults,mm_folded,mm_folded_fp,mm_folded_s16,mm_folded_fp_s16,mm_tlb,perf_stat,perf_record,perf_dwarf,bt_count,bt_pair,bt_stacks}
OUT=${OUT:-$BUILD/bench}
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	-n | --runs) RUNS=$2; shift ;;
	-w | --workloads) WORKLOADS=$2; shift ;;
	-c | --configs) CONFIGS=$2; shift ;;
	--no-profile) PROFILE=0 ;;
	--no-startup) STARTUP=0 ;;
	--soak) SOAK_SECONDS=$2; shift ;;
	--keep-bpf-stats) KEEP_STATS=1 ;;
	--judge-wall) JUDGE=wall ;;
	--out) OUT=$2; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 1 ;;
	esac
	shift
done

# ---- sizes: each loop ~0.3-0.6 s alone on the 2-CPU VM (a fault costs 5-50 us there, an exec
# 7-13 ms, a fork+exec round 18-27 ms); a tracer's start-up adds 0.5-3 s to each run ----
if [ "$QUICK" = 1 ]; then
	: "${RUNS:=3}" "${STARTUP_RUNS:=3}" "${PAUSE_MS:=500}" "${SOAK_SECONDS:=0}"
	: "${PT_ARGS:=-w 4000 -r 4000}" "${EL_ARGS:=25}" "${FE_ARGS:=-n 10}"
	: "${MP_ARGS:=--single -s 16M -i 5}" "${TS_ARGS:=-t 1500}"
else
	: "${RUNS:=9}" "${STARTUP_RUNS:=5}" "${PAUSE_MS:=500}" "${SOAK_SECONDS:=1800}"
	: "${PT_ARGS:=-w 8000 -r 8000}" "${EL_ARGS:=50}" "${FE_ARGS:=-n 20}"
	: "${MP_ARGS:=--single -s 32M -i 6}" "${TS_ARGS:=-t 3000}"
fi
: "${TIMEOUT:=300}"
case $RUNS in '' | *[!0-9]* | 0) die "runs must be a positive number" ;; esac
declare -A WL_ARGS=([page_touch]=$PT_ARGS [exec_loop]=$EL_ARGS [fork_exec]=$FE_ARGS
	[mprotect_toggle]=$MP_ARGS [tlb_switch]=$TS_ARGS)
IFS=, read -r -a wls <<<"$WORKLOADS"
IFS=, read -r -a cfgs <<<"$CONFIGS"
for w in "${wls[@]}"; do [ -n "${WL_ARGS[$w]+x}" ] || die "unknown workload: $w"; done
[[ ",$CONFIGS," == *,base,* ]] || cfgs=(base "${cfgs[@]}")
for c in "${cfgs[@]}"; do
	case $c in base | mm_stat | mm_faults | mm_folded | mm_folded_fp | mm_folded_s16 | \
		mm_folded_fp_s16 | mm_tlb | perf_stat | \
		perf_record | perf_dwarf | bt_count | bt_pair | bt_stacks) ;;
	*) die "unknown configuration: $c" ;;
	esac
done

# ---- prerequisites ----
[ "$(id -u)" = 0 ] || die "needs root (BPF, perf, sysctl)"
PERF=${PERF:-perf}
BPFTRACE=${BPFTRACE:-bpftrace}
BPFTOOL=${BPFTOOL:-bpftool}
if [ ! -x /usr/bin/time ]; then
	say "bench: installing Debian package 'time' (/usr/bin/time, for peak RSS)"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
		--no-install-recommends time >/dev/null || die "cannot install the 'time' package"
fi
# The system's python3 when there is one: a pyenv shim can take seconds to start under load.
PY=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)}
for t in "$PERF" "$BPFTRACE" "$BPFTOOL" "$PY" timeout shuf; do
	command -v "$t" >/dev/null || die "missing $t (make deps installs it)"
done
MM_SRC=${MMSCOPE:-$BUILD/mmscope}
[ -x "$MM_SRC" ] || die "no $MM_SRC (run make first)"
for w in "${wls[@]}"; do [ -x "$BUILD/workloads/$w" ] || die "no $BUILD/workloads/$w (run make)"; done

# Private copies of the binaries: the tree may be rebuilt while the benchmark runs.
TMP=$(mktemp -d /tmp/mmscope-bench.XXXXXX)
BIN=$TMP/bin
mkdir -p "$BIN"
cp "$MM_SRC" "$BIN/mmscope"
for w in "${wls[@]}"; do cp "$BUILD/workloads/$w" "$BIN/$w"; done
MM=$BIN/mmscope
FLOOR=$BUILD/bench-tools/floor FLOOR_OBJ=$BUILD/bench-tools/floor.bpf.o
if [ -x "$FLOOR" ]; then
	cp "$FLOOR" "$FLOOR_OBJ" "$BIN/" && FLOOR=$BIN/floor FLOOR_OBJ=$BIN/floor.bpf.o
fi

stats_orig=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
IDLE=
cleanup() {
	sysctl -q -w kernel.bpf_stats_enabled="$stats_orig" >/dev/null 2>&1
	[ -n "$IDLE" ] && kill "$IDLE" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "bench: interrupted" >&2; exit 130' INT TERM

rm -rf "$OUT"
RAW=$OUT/raw
mkdir -p "$RAW" "$OUT/profile" || die "cannot create $OUT"
SAMPLES=$OUT/samples.tsv
printf 'round\tworkload\tconfig\trc\tloop_ns\tcpu_ns\twall_ns\tevents\tlost\taux\n' >"$SAMPLES"

# ---- the peers' programs (bpftrace 0.17 syntax) ----
BT_COUNT='tracepoint:exceptions:page_fault_user { @[args->error_code] = count(); }'
# The same pairing as mmscope faults: fault entry, then the perf minor/major event that
# mm_account_fault() fires on the same thread; an entry left open is replaced by the next.
BT_PAIR='tracepoint:exceptions:page_fault_user { @start[tid] = nsecs; }
software:minor-faults:1 /@start[tid]/ { @minor_ns = hist(nsecs - @start[tid]); delete(@start[tid]); }
software:major-faults:1 /@start[tid]/ { @major_ns = hist(nsecs - @start[tid]); delete(@start[tid]); }
END { clear(@start); }'
BT_STACKS='tracepoint:exceptions:page_fault_user { @[kstack, ustack, comm] = count(); }'
PERF_EVENTS=page-faults,minor-faults,major-faults,tlb:tlb_flush

now_ns() { local t=$EPOCHREALTIME; echo "${t%.*}${t#*.}000"; }

# build_cmd CONFIG AUX CMD... -> RUN array
build_cmd() {
	local cfg=$1 aux=$2
	shift 2
	local cmdstr="$*"
	case $cfg in
	base) RUN=("$@") ;;
	mm_stat) RUN=("$MM" stat --json -o "$aux" -- "$@") ;;
	mm_faults) RUN=("$MM" faults --json -o "$aux" -- "$@") ;;
	mm_folded) RUN=("$MM" faults --folded -o "$aux" -- "$@") ;;
	mm_folded_fp) RUN=("$MM" faults --folded --unwind fp -o "$aux" -- "$@") ;;
	mm_folded_s16) RUN=("$MM" faults --folded --sample 16 -o "$aux" -- "$@") ;;
	mm_folded_fp_s16) RUN=("$MM" faults --folded --unwind fp --sample 16 -o "$aux" -- "$@") ;;
	mm_tlb) RUN=("$MM" tlb --json -o "$aux" -- "$@") ;;
	perf_stat) RUN=("$PERF" stat -e "$PERF_EVENTS" -o "$aux" -- "$@") ;;
	# -B: no build-id pass after the workload has exited (not part of the measured loop). While
	# an mmscope of another configuration's run reads mmap records with build IDs (user/core/mmap_log.c)
	# this kernel also marks perf's own mmap records as carrying one, and perf 6.1's build-id
	# pass then aborts ("assertion failed at util/build-id.c:1010"): up to 9 of 12 perf runs of a
	# bench, 0 of 10 with -B.
	perf_record) RUN=("$PERF" record -B -e page-faults -c 1 -g -o "$aux.data" -- "$@") ;;
	perf_dwarf) RUN=("$PERF" record -B -e page-faults -c 1 --call-graph dwarf -o "$aux.data" -- "$@") ;;
	bt_count) RUN=("$BPFTRACE" -o "$aux" -e "$BT_COUNT" -c "$cmdstr") ;;
	bt_pair) RUN=("$BPFTRACE" -o "$aux" -e "$BT_PAIR" -c "$cmdstr") ;;
	bt_stacks) RUN=("$BPFTRACE" -o "$aux" -e "$BT_STACKS" -c "$cmdstr") ;;
	esac
}

# run_one ROUND WORKLOAD CONFIG: one timed run, one line of samples.tsv
run_one() {
	local round=$1 wl=$2 cfg=$3
	local aux=$RAW/$round.$wl.$cfg out=$TMP/out err
	local -a cmd
	read -r -a cmd <<<"$BIN/$wl ${WL_ARGS[$wl]}"
	err=$aux.stderr
	build_cmd "$cfg" "$aux" "${cmd[@]}"
	local t0 t1 rc line loop cpu events=- lost=-
	t0=$(now_ns)
	timeout "$TIMEOUT" "${RUN[@]}" >"$out" 2>"$err" </dev/null
	rc=$?
	t1=$(now_ns)
	line=$(grep -a "^$wl: " "$out" | tail -1)
	loop=$(sed -n 's/.* loop_ns=\([0-9]*\).*/\1/p' <<<"$line")
	cpu=$(sed -n 's/.* cpu_ns=\([0-9]*\).*/\1/p' <<<"$line")
	case $cfg in
	mm_folded | mm_folded_fp | mm_folded_s16 | mm_folded_fp_s16)
		# with --sample 16: the weights, 16 a stack taken (an estimate of the faults)
		events=$(awk '{ s += $NF } END { print s + 0 }' "$aux" 2>/dev/null)
		lost=$(sed -n 's/.*warning: lost \([0-9]*\).*/\1/p' "$err" | awk '{ s += $1 } END { print s + 0 }')
		[ "$round" = 1 ] || rm -f "$aux"
		;;
	perf_record | perf_dwarf)
		events=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$err" | tail -1)
		# LOST records (perf report --stats reads the whole file: first round only)
		[ "$round" = 1 ] && lost=$("$PERF" report -i "$aux.data" --stats 2>/dev/null |
			awk '/LOST/ && /events:/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { s += $i; break } } END { print s + 0 }')
		rm -f "$aux.data" "$aux.data.old"
		;;
	bt_stacks)
		events=$(awk '/\]: [0-9]+$/ { s += $NF } END { print s + 0 }' "$aux" 2>/dev/null)
		[ "$round" = 1 ] || rm -f "$aux"
		;;
	esac
	[ -s "$err" ] || rm -f "$err"
	[ -n "$loop" ] || { loop=-; cpu=-; }
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$wl" "$cfg" "$rc" "$loop" "$cpu" \
		"$((t1 - t0))" "${events:--}" "${lost:--}" "${aux#"$OUT"/}" >>"$SAMPLES"
	if [ "$rc" != 0 ] || [ "$loop" = - ]; then
		say "  ! $wl $cfg round $round: exit $rc, no summary line ($(tail -c 300 "$err" 2>/dev/null | tr '\n' ' '))"
		return
	fi
	printf '  %-16s %-12s %10.1f ms loop %10.1f ms cpu\n' "$wl" "$cfg" \
		"$(awk -v v="$loop" 'BEGIN { print v / 1e6 }')" "$(awk -v v="$cpu" 'BEGIN { print v / 1e6 }')" >&2
}

t_begin=$(now_ns)
if [ "$KEEP_STATS" = 0 ] && [ "$stats_orig" != 0 ]; then
	say "bench: kernel.bpf_stats_enabled was $stats_orig: 0 while timing (restored at the end)"
	sysctl -q -w kernel.bpf_stats_enabled=0
fi
stats_timed=$(sysctl -n kernel.bpf_stats_enabled)
say "bench: $(nproc) CPUs, kernel $(uname -r), $("$MM" --version 2>&1 | head -1)"
say "bench: ${#wls[@]} workloads x ${#cfgs[@]} configurations x $RUNS runs, interleaved; results in $OUT"
for w in "${wls[@]}"; do say "  $w ${WL_ARGS[$w]}"; done

# ---- warm-up: every configuration once on a small page_touch, every workload once ----
say "bench: warm-up (untimed)"
for c in "${cfgs[@]}"; do
	build_cmd "$c" "$TMP/warm" "$BIN/${wls[0]}" ${WL_ARGS[${wls[0]}]}
	timeout "$TIMEOUT" "${RUN[@]}" >/dev/null 2>&1 </dev/null
	rm -f "$TMP"/warm*
done
# workloads.tsv: each workload, its arguments and the summary line of its untimed run, whose
# arithmetic (page_touch's expected_faults) the report divides the per-fault costs by.
for w in "${wls[@]}"; do
	read -r -a cmd <<<"$BIN/$w ${WL_ARGS[$w]}"
	line=$(timeout "$TIMEOUT" "${cmd[@]}" 2>/dev/null </dev/null | grep -a "^$w: " | tail -1)
	printf '%s\t%s\t%s\n' "$w" "${WL_ARGS[$w]}" "$line" >>"$OUT/workloads.tsv"
done

# ---- timed runs: rounds; in each, every workload with every configuration, shuffled ----
for round in $(seq "$RUNS"); do
	say "bench: round $round/$RUNS"
	for w in "${wls[@]}"; do
		mapfile -t order < <(printf '%s\n' "${cfgs[@]}" |
			shuf --random-source=<(yes "$round$w" | head -c 4096))
		for c in "${order[@]}"; do run_one "$round" "$w" "$c"; done
	done
done

# ---- how far the DWARF walks got: one untimed run per workload ----
# --folded writes only the stacks (its walk summary goes to stderr as text, and only with -v);
# --svg with --json walks the same stacks with the same programs and puts the summary in the
# JSON's "unwind" object, which the report reads ("walks reaching the outermost frame").
if [[ " ${cfgs[*]} " == *" mm_folded "* ]]; then
	say "bench: DWARF walk summary (one mmscope faults --svg /dev/null --json run per workload)"
	mkdir -p "$OUT/unwind"
	for w in "${wls[@]}"; do
		read -r -a cmd <<<"$BIN/$w ${WL_ARGS[$w]}"
		timeout "$TIMEOUT" "$MM" faults --svg /dev/null --json -o "$OUT/unwind/$w.json" -- \
			"${cmd[@]}" >/dev/null 2>"$OUT/unwind/$w.stderr" </dev/null ||
			say "  ! $w: no walk summary ($(tail -c 300 "$OUT/unwind/$w.stderr" | tr '\n' ' '))"
		[ -s "$OUT/unwind/$w.stderr" ] || rm -f "$OUT/unwind/$w.stderr"
	done
fi

# ---- start-up: launch to the command's first instruction, and launch-to-exit ----
if [ "$STARTUP" = 1 ]; then
	st_cfgs=()
	for c in "${cfgs[@]}"; do
		case $c in base | mm_* | perf_stat | bt_count) st_cfgs+=("$c") ;; esac
	done
	say "bench: start-up (${st_cfgs[*]}: $STARTUP_RUNS runs each)"
	ST=$OUT/startup.tsv
	printf 'config\trun\tattach_ns\twall_ns\n' >"$ST"
	for i in $(seq "$STARTUP_RUNS"); do
		for c in "${st_cfgs[@]}"; do
			# attach: the command prints the time it started; minus the launch time
			build_cmd "$c" "$TMP/st" /bin/date +%s%N
			t0=$(now_ns)
			t1=$(timeout 120 "${RUN[@]}" 2>/dev/null </dev/null | grep -E '^[0-9]{18,}$' | tail -1)
			# wall: launch to exit of TRACER -- /bin/true
			build_cmd "$c" "$TMP/st" /bin/true
			t2=$(now_ns)
			timeout 120 "${RUN[@]}" >/dev/null 2>&1 </dev/null
			t3=$(now_ns)
			rm -f "$TMP"/st*
			printf '%s\t%s\t%s\t%s\n' "$c" "$i" "$([ -n "$t1" ] && echo $((t1 - t0)) || echo -)" \
				"$((t3 - t2))" >>"$ST"
		done
	done
fi

# ---- start-up attached to a busy process: launch to the start line ("Tracing ..." on stderr,
# printed once every hook is attached), each command and stack mode side by side; the first
# run of each again with -v for where the time went (its "[N ms] ..." phases) ----
if [ "$STARTUP" = 1 ]; then
	busy_modes=("faults" "faults --folded" "faults --folded --unwind dwarf"
		"faults --folded --unwind fp" "tlb" "tlb --folded" "switch" "stat")
	say "bench: start-up attached to a busy process (${#busy_modes[@]} modes: $STARTUP_RUNS runs each)"
	STB=$OUT/startup_busy.tsv
	printf 'mode\trun\tstart_line_ns\topened_ms\tloaded_ms\tattached_ms\n' >"$STB"
	sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
	SPIN=$!
	for i in $(seq "$STARTUP_RUNS"); do
		for m in "${busy_modes[@]}"; do
			# shellcheck disable=SC2086 # $m: the mode's words
			t0=$(now_ns)
			t1=$(timeout 120 "$MM" $m -p $SPIN -d 0.3 -o /dev/null 2>&1 >/dev/null </dev/null |
				{ IFS= read -r _ && now_ns; cat >/dev/null; })
			phases="-	-	-"
			if [ "$i" = 1 ]; then
				# shellcheck disable=SC2086
				phases=$(timeout 120 "$MM" $m -v -p $SPIN -d 0.3 -o /dev/null 2>&1 >/dev/null </dev/null |
					sed -n 's/^mmscope: \[\([0-9]*\) ms\] \(object opened\|programs loaded\|attached\)$/\1/p' |
					paste -sd '\t')
			fi
			printf '%s\t%s\t%s\t%s\n' "$m" "$i" "$([ -n "$t1" ] && echo $((t1 - t0)) || echo -)" \
				"$phases" >>"$STB"
		done
	done
	kill $SPIN
	wait $SPIN 2>/dev/null
fi

# ---- profile pass: BPF run time per program, peak RSS, map memory (mmscope with -p) ----
if [ "$PROFILE" = 1 ]; then
	say "bench: profile pass (kernel.bpf_stats_enabled=1 for its duration; was $stats_orig)"
	sysctl -q -w kernel.bpf_stats_enabled=1 || die "cannot enable BPF statistics"
	PT=$OUT/profile
	# The twin: the same mmscope command, at the same time, tracing an idle process. Every
	# event of the host runs its programs and is filtered out: its run_time_ns / run_cnt is
	# the cost of a filtered event, which the report takes out of the traced instance's
	# totals (run_cnt counts every event on the host, not only the target's).
	sleep 100000 </dev/null >/dev/null 2>&1 &
	IDLE=$!
	for w in "${wls[@]}"; do
		for c in "${cfgs[@]}"; do
			case $c in
			mm_stat) mode=(stat --json -o) ext=json ;;
			mm_faults) mode=(faults --json -o) ext=json ;;
			mm_folded) mode=(faults --folded -o) ext=folded ;;
			mm_folded_fp) mode=(faults --folded --unwind fp -o) ext=folded ;;
			mm_folded_s16) mode=(faults --folded --sample 16 -o) ext=folded ;;
			mm_folded_fp_s16) mode=(faults --folded --unwind fp --sample 16 -o) ext=folded ;;
			mm_tlb) mode=(tlb --json -o) ext=json ;;
			*) continue ;;
			esac
			rm -f "$TMP"/pidfile* "$TMP"/ready*
			# The workload stops itself before its exec, so that mmscope sees the exec as
			# under -- CMD in the timed runs (a STOP sent after starting it raced with the
			# exec: after it, the workload was a process running before mmscope, named from
			# /proc rather than from its exec's mmap records). It is continued once both
			# mmscope instances are attached: the traced one first, so that its programs run
			# first on each hook, as when mmscope runs alone (the first program after a fault
			# runs with the colder caches: tools/bench/README.md). The traced instance's
			# counters are taken from that moment: the twin's start-up is not in them; and
			# again when the workload sleeps in its pause, after its set-up: what ran before
			# is the set-up's (mprotect_toggle pre-faults its region).
			read -r -a cmd <<<"$BIN/$w --pause-before-ms $PAUSE_MS ${WL_ARGS[$w]}"
			sh -c 'kill -STOP $$ && exec "$@"' sh "${cmd[@]}" >"$PT/$w.$c.workload" 2>&1 </dev/null &
			wpid=$!
			for _ in $(seq 200); do
				[ "$(sed 's/.*) //' "/proc/$wpid/stat" 2>/dev/null | cut -c1)" = T ] && break
				sleep 0.01
			done
			"$PY" "$here/bpfprof.py" --pidfile "$TMP/pidfile" --child --bpftool "$BPFTOOL" \
				--ready "$TMP/ready" --cont "$wpid" --cont-after "$TMP/ready.twin" --pause-of "$wpid" \
				--out "$PT/$w.$c.bpf.json" &
			ppid=$!
			/usr/bin/time -v -o "$PT/$w.$c.time" "$MM" "${mode[@]}" "$PT/$w.$c.$ext" -p "$wpid" \
				>/dev/null 2>"$PT/$w.$c.stderr" </dev/null &
			tpid=$!
			echo "$tpid" >"$TMP/pidfile.tmp" && mv "$TMP/pidfile.tmp" "$TMP/pidfile"
			for _ in $(seq 1200); do [ -e "$TMP/ready" ] && break; sleep 0.05; done
			"$PY" "$here/bpfprof.py" --pidfile "$TMP/pidfile.twin" --bpftool "$BPFTOOL" \
				--ready "$TMP/ready.twin" --out "$PT/$w.$c.twin.bpf.json" &
			ppid2=$!
			"$MM" "${mode[@]}" "$TMP/twin.$ext" -p "$IDLE" >/dev/null 2>&1 </dev/null &
			twin=$!
			echo "$twin" >"$TMP/pidfile.tmp" && mv "$TMP/pidfile.tmp" "$TMP/pidfile.twin"
			wait "$wpid"
			wait "$tpid"
			kill -INT "$twin" 2>/dev/null
			wait "$twin"
			wait "$ppid"
			wait "$ppid2"
			rm -f "$TMP"/twin.*
			say "  $w $c: $(grep -a 'loop_ns' "$PT/$w.$c.workload" | sed 's/.*\(loop_ns=[0-9]*\).*/\1/'), peak RSS $(sed -n 's/.*Maximum resident set size (kbytes): //p' "$PT/$w.$c.time") KB"
		done
	done
	# The measurement floor: with kernel.bpf_stats_enabled=1 the kernel times every run itself
	# (two sched_clock() reads and a per-CPU statistics update around the program), 25-130 ns
	# a run on the benchmark VMs. Empty programs of the same types on mmscope's hooks
	# (tools/bench/floor.bpf.c), each alone on its hook as mmscope's program is (a second
	# program on a hook runs with warm caches and reads 30-50 ns less), run over each
	# workload, measure it per (workload, hook); the report takes it out of mmscope's
	# programs' times ("net"). Then the smallest counting program, alone, for scale.
	if [ -x "$FLOOR" ] && [ -f "$FLOOR_OBJ" ]; then
		for w in "${wls[@]}"; do
			for set in empty count; do
				case $set in
				empty) only=f_pf_user,f_pf_kernel,f_minor,f_tlb_flush,f_switch,f_fork,f_exec,f_exit ;;
				count) only=c_pf_user ;;
				esac
				f=$PT/floor.$set.$w
				rm -f "$TMP/pidfile"
				"$PY" "$here/bpfprof.py" --pidfile "$TMP/pidfile" --bpftool "$BPFTOOL" --out "$f.bpf.json" &
				ppid=$!
				sleep 0.3
				read -r -a cmd <<<"$BIN/$w ${WL_ARGS[$w]}"
				"$FLOOR" --only "$only" "$FLOOR_OBJ" -- "${cmd[@]}" >"$f.workload" 2>"$f.stderr" </dev/null &
				bpid=$!
				echo "$bpid" >"$TMP/pidfile.tmp" && mv "$TMP/pidfile.tmp" "$TMP/pidfile"
				wait "$bpid" || say "  floor: $(head -c 300 "$f.stderr")"
				wait "$ppid"
			done
			say "  floor (empty programs alone on the same hooks, $w): done"
		done
	else
		say "  floor: no $FLOOR (make bench-tools): per-program times judged without it"
	fi
	# the bpftrace peers' programs, on the first workload, for comparison
	for c in "${cfgs[@]}"; do
		case $c in bt_count | bt_pair | bt_stacks) ;; *) continue ;; esac
		w=${wls[0]}
		build_cmd "$c" "$PT/$w.$c.out" "$BIN/$w" ${WL_ARGS[$w]}
		rm -f "$TMP/pidfile"
		"$PY" "$here/bpfprof.py" --pidfile "$TMP/pidfile" --bpftool "$BPFTOOL" \
			--out "$PT/$w.$c.bpf.json" &
		ppid=$!
		sleep 0.3 # the watcher's start-up; bpftrace takes a second or more to attach anyway
		"${RUN[@]}" >"$PT/$w.$c.workload" 2>"$PT/$w.$c.stderr" </dev/null &
		bpid=$!
		echo "$bpid" >"$TMP/pidfile.tmp" && mv "$TMP/pidfile.tmp" "$TMP/pidfile"
		wait "$bpid"
		wait "$ppid"
		[ "$c" = bt_stacks ] && rm -f "$PT/$w.$c.out"
		say "  $w $c: done"
	done
	sysctl -q -w kernel.bpf_stats_enabled="$stats_orig"
fi

# ---- the soak: host-wide, memory sampled while short processes come and go ----
rm -f "$OUT"/soak.*
if [ "${SOAK_SECONDS:-0}" -gt 0 ]; then
	say "bench: soak, host-wide for $SOAK_SECONDS s (tools/bench/soak.sh)"
	for w in fork_exec page_touch; do [ -x "$BIN/$w" ] || cp "$BUILD/workloads/$w" "$BIN/$w"; done
	MMSCOPE=$MM BIN=$BIN "$here/soak.sh" "$SOAK_SECONDS" "$OUT" ||
		say "  soak: mmscope did not finish (see $OUT/soak.stderr)"
fi

t_end=$(now_ns)
"$PY" "$here/report.py" --out "$OUT" --runs "$RUNS" --judge "$JUDGE" --seconds "$(((t_end - t_begin) / 1000000000))" \
	--meta "kernel=$(uname -r)" --meta "cpus=$(nproc)" --meta "mmscope=$("$MM" --version 2>&1 | head -1)" \
	--meta "quick=$QUICK" --meta "pause_ms=$PAUSE_MS" --meta "bpf_stats_enabled_found=$stats_orig" \
	--meta "bpf_stats_enabled_timed=$stats_timed" | tee "$OUT/report.txt"
exit "${PIPESTATUS[0]}"
