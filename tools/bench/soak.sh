#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The soak of make bench: mmscope host-wide for SECONDS while short processes come and go, and
# what its memory does meanwhile.
#
#   tools/bench/soak.sh SECONDS OUTDIR     (MMSCOPE, BIN: the binary and the workloads directory)
#
# What runs: `mmscope faults --json --pprof` host-wide (the per-process, location and stack
# tables all filling) while fork_exec starts /bin/true 1000 times a round, round after round
# (tens of thousands of short processes, each a new pid and address space), and page_touch
# faults 20,000 pages every 10 s; in the last tenth of the run one page_touch of 100,000
# pages (the heavy late process, which must get its own row).
# What is written: OUTDIR/soak.tsv, one line every 10 s: seconds, mmscope's VmRSS (KB), the
# memlock of its BPF maps (KB, from /proc/PID/fdinfo: what the kernel charges for them), and
# the short processes started so far; OUTDIR/soak.json (mmscope's output), soak.late (the late
# process's summary line) and soak.stderr. tools/bench/report.py reads them.
# Exit status: 0 when mmscope ran to the end and wrote its JSON, 1 otherwise.
set -u
secs=${1:?usage: soak.sh SECONDS OUTDIR}
out=${2:?usage: soak.sh SECONDS OUTDIR}
MM=${MMSCOPE:?}
BIN=${BIN:?}
mkdir -p "$out"
rm -f "$out"/soak.*

# The memlock of every BPF map pid holds a descriptor of, in KB (a map shared by several of its
# descriptors counts once, by map_id).
map_kb() {
	awk '/^map_id:/ { id = $2 } /^memlock:/ { if (id != "" && !(id in seen)) { seen[id] = 1; t += $2 }; id = "" }
		END { printf "%d\n", t / 1024 }' "/proc/$1"/fdinfo/* 2>/dev/null
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

"$MM" faults --json -q -d "$secs" -o "$out/soak.json" --pprof "$out/soak.pb.gz" \
	2>"$out/soak.stderr" </dev/null &
mm=$!
echo "$mm" >"$out/soak.pid"
# load: short processes, round after round, counted in a file the sampler reads
(
	n=0
	while kill -0 "$mm" 2>/dev/null; do
		"$BIN/fork_exec" -n 1000 --exec /bin/true >/dev/null 2>&1 || break
		n=$((n + 1000))
		echo "$n" >"$out/soak.procs.tmp" && mv "$out/soak.procs.tmp" "$out/soak.procs"
	done
) &
spawner=$!
(
	while kill -0 "$mm" 2>/dev/null; do
		"$BIN/page_touch" -w 10000 -r 10000 >/dev/null 2>&1
		sleep 10
	done
) &
toucher=$!

printf 'seconds\trss_kb\tmap_kb\tprocesses\n' >"$out/soak.tsv"
# the last tenth of the run, and never after the last sample
late_at=$((secs - secs / 10))
[ $late_at -gt $((secs - 10)) ] && late_at=$((secs - 10))
late=""
for ((t = 10; t < secs; t += 10)); do
	sleep 10
	kill -0 "$mm" 2>/dev/null || break
	printf '%d\t%s\t%s\t%s\n' "$t" "$(rss_kb "$mm")" "$(map_kb "$mm")" \
		"$(cat "$out/soak.procs" 2>/dev/null || echo 0)" >>"$out/soak.tsv"
	if [ -z "$late" ] && [ "$t" -ge "$late_at" ]; then
		"$BIN/page_touch" -w 100000 >"$out/soak.late" 2>&1 &
		late=$!
	fi
done
[ -n "$late" ] && wait "$late"
wait "$mm"
rc=$?
kill "$spawner" "$toucher" 2>/dev/null
wait "$spawner" "$toucher" 2>/dev/null
[ "$rc" -eq 0 ] && [ -s "$out/soak.json" ]
