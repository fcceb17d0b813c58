#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope serve scraped by a real Prometheus (Debian's), every second, on loopback.
#
# Run 1: serve -- page_touch -w W -r R -x X -k K. page_touch takes exactly W+R+X user-mode and
# K kernel-mode faults in its loop; its start-up and exit add a constant, measured by a
# baseline run of the same binary with no loop faults under `mmscope stat` (same hooks, same
# forked-child start). Tolerance: 10 faults on each difference, as in test_page_touch.sh (the
# baseline moves by +-3 per class from run to run).
# Run 2: serve --labels comm -- mprotect_toggle -i I: each of its 2*I mprotect calls sends one
# shootdown IPI and flushes locally; within 5% of the workload's own count, as in test_tlb.sh.
#
# In both runs the targets end, serve detaches its hooks and keeps serving the final counts
# (mmscope_tracing 0). Once Prometheus has stored a scrape saying so, the values it stored
# must equal what the endpoint serves, exactly. Then SIGTERM: exit 0 (the command's status),
# and every BPF program serve held is unloaded.
. "$(dirname "$0")/lib.sh"

for tool in prometheus promtool curl; do
	if ! command -v $tool >/dev/null; then
		skip "serve_prometheus (no $tool: tools/deps.sh installs prometheus and curl)"
		exit 0
	fi
done
if [ "$(nproc)" -lt 2 ]; then
	skip "serve_prometheus (mprotect_toggle needs 2 CPUs)"
	exit 0
fi

PROM= MM=
cleanup() {
	[ -n "$MM" ] && kill -KILL "$MM" 2>/dev/null
	[ -n "$PROM" ] && kill -KILL "$PROM" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# free_port : a TCP port on 127.0.0.1 nobody listens on now
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# promq EXPR : the value of an instant query's single result, or "none"
promq() {
	curl -s --max-time 5 "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
		python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)["data"]["result"]
    print(r[0]["value"][1] if len(r) == 1 else "none")
except Exception:
    print("none")'
}
# served NAME LABELS : the value the endpoint serves now for NAME{LABELS} (exact label set)
served() {
	curl -s --max-time 5 "http://127.0.0.1:$SPORT/metrics" | awk -v k="$1{$2}" '$1 == k { print $2 }'
}
# wait_for SECONDS COMMAND... : poll COMMAND every 0.2 s until it succeeds
serving() { grep -q 'serving http' "$TMP/serve.err"; }
# Final, and from this serve: the previous run's last scrape (its mmscope_tracing 0) is still
# the newest sample until Prometheus's next scrape finds this serve; the start time tells.
prom_says_final() {
	[ "$(promq 'mmscope_tracing{job="mmscope"}')" = 0 ] &&
		python3 -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) < 0.01 else 1)' \
			"$(promq 'mmscope_start_time_seconds{job="mmscope"}')" \
			"$(curl -s --max-time 5 "http://127.0.0.1:$SPORT/metrics" | awk '$1 == "mmscope_start_time_seconds" {print $2}')" \
			2>/dev/null
}
prom_up() { [ "$(promq 'up{job="mmscope"}')" = 1 ]; }

SPORT=$(free_port)
PPORT=$(free_port)
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: mmscope
    static_configs:
      - targets: ['127.0.0.1:$SPORT']
EOF
promtool check config "$TMP/prometheus.yml" >/dev/null 2>&1 || fail "serve_prometheus: promtool rejects the scrape config"
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
	--web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$TMP/prom.log" 2>&1 &
PROM=$!
ready() { curl -sf --max-time 2 "http://127.0.0.1:$PPORT/-/ready" >/dev/null; }
if ! wait_for 30 ready; then
	fail "serve_prometheus: Prometheus not ready in 30 s ($(tail -3 "$TMP/prom.log" | tr '\n' ' '))"
	exit 0
fi

# serve_run NAME ARGS... : start serve on SPORT, wait for the targets' end and for Prometheus to
# have stored it; sets MM (serve's pid) and MMOWN (the BPF objects it holds)
serve_run() {
	local name=$1
	shift
	: >"$TMP/serve.err"
	"$MMSCOPE" serve --listen "127.0.0.1:$SPORT" "$@" >"$TMP/wl.out" 2>"$TMP/serve.err" &
	MM=$!
	if ! wait_for 30 serving; then
		fail "$name: serve did not start ($(head -c 300 "$TMP/serve.err" | tr '\n' ' '))"
		serve_kill
		return 1
	fi
	MMOWN=$(owned $MM)
	# the command ends, the hooks are detached, a scrape after that is stored
	if ! wait_for 60 prom_says_final; then
		fail "$name: Prometheus never stored mmscope_tracing 0 (up=$(promq 'up{job="mmscope"}'))"
		serve_kill
		return 1
	fi
}

# serve_kill : after a failed run, serve must not outlive it (it holds the port the next run
# listens on, and the EXIT trap would wait for it)
serve_kill() {
	kill -KILL $MM 2>/dev/null
	wait $MM 2>/dev/null
	MM=
}

# serve_stop NAME : SIGTERM; exit 0 within 10 s, no BPF program of serve's left
serve_stop() {
	local name=$1 rc=none left=
	kill -TERM $MM
	wait_exit $MM 10 # sets rc when serve has ended
	MM=
	ok "$name: SIGTERM ends serve with the command's status 0" "exit $rc" [ "$rc" = 0 ]
	left=$(left_behind "$MMOWN")
	ok "$name: no BPF object left behind" "still loaded: $left" eval '[ -n "$MMOWN" ] && [ -z "$left" ]'
}

# ---- run 1: faults against page_touch's arithmetic ----
PT="$WORKLOADS/page_touch"
W=2000 R=2000 X=200 K=100
"$MMSCOPE" stat --json -o "$TMP/base.json" -- "$PT" -w 0 -r 0 -x 0 -k 0 >/dev/null 2>"$TMP/base.err"
read -r bu bk < <(json_get "$TMP/base.json" '"%d %d" % (d["faults"]["user"], d["faults"]["kernel"])')
if [ -z "${bk:-}" ]; then
	fail "serve_faults: baseline run failed ($(head -c 300 "$TMP/base.err" | tr '\n' ' '))"
	exit 0
fi
if serve_run serve_faults -- "$PT" -w $W -r $R -x $X -k $K; then
	line=$(tail -1 "$TMP/wl.out")
	ew=$(kv "$line" expected_write) er=$(kv "$line" expected_read)
	ex=$(kv "$line" expected_exec) ek=$(kv "$line" expected_kernel)
	pu=$(promq 'mmscope_page_faults_total{job="mmscope",mode="user"}')
	pk=$(promq 'mmscope_page_faults_total{job="mmscope",mode="kernel"}')
	su=$(served mmscope_page_faults_total 'mode="user"')
	sk=$(served mmscope_page_faults_total 'mode="kernel"')
	pw=$(promq 'mmscope_page_faults_access_total{job="mmscope",access="write"}')
	sw=$(served mmscope_page_faults_access_total 'access="write"')
	plost=$(promq 'sum(mmscope_lost_events_total{job="mmscope"})')
	ok "serve_faults: Prometheus stored what the endpoint serves (user, kernel, write)" \
		"prometheus $pu $pk $pw, endpoint $su $sk $sw" \
		[ -n "$su" -a "$pu" = "$su" -a "$pk" = "$sk" -a "$pw" = "$sw" ]
	if [ -n "$ew" ] && [[ $pu =~ ^[0-9]+$ && $pk =~ ^[0-9]+$ ]]; then
		du=$((pu - bu)) dk=$((pk - bk)) eu=$((ew + er + ex))
		ok "serve_faults: user faults = page_touch's W+R+X (+-10)" \
			"prometheus $pu - baseline $bu = $du, expected $eu" absdiff_le $du $eu 10
		ok "serve_faults: kernel faults = page_touch's K (+-10)" \
			"prometheus $pk - baseline $bk = $dk, expected $ek" absdiff_le $dk "$ek" 10
	else
		fail "serve_faults: no values (workload line '$line', prometheus '$pu' '$pk')"
	fi
	ok "serve_faults: nothing lost" "lost $plost" [ "$plost" = 0 ]
	serve_stop serve_faults
fi

# ---- run 2: TLB shootdowns against mprotect_toggle, with --labels comm ----
# Each mprotect sends an IPI only while the reader thread is on CPU 1. Prometheus (a Go
# program with a thread per CPU), serve and this script take CPU 1 from it now and then: 1514
# to 1845 IPIs for 2000 calls in 3 of 7 runs here, with this binary and the one before alike.
# So the workload runs SCHED_FIFO (chrt execs it: its pid and name stay the workload's), and
# nothing else takes its CPUs for the few milliseconds of its loop.
I=1000
if serve_run serve_tlb --labels comm -- chrt -f 1 "$WORKLOADS/mprotect_toggle" -i $I; then
	calls=$(kv "$(cat "$TMP/wl.out")" mprotect_calls)
	q='mmscope_tlb_flushes_total{job="mmscope",reason="%s"}'
	# shellcheck disable=SC2059
	psend=$(promq "$(printf "$q" remote_ipi_send)")
	# shellcheck disable=SC2059
	plocal=$(promq "$(printf "$q" local_mm_shootdown)")
	ssend=$(served mmscope_tlb_flushes_total 'reason="remote_ipi_send"')
	pcomm=$(promq 'mmscope_comm_tlb_flushes_total{job="mmscope",comm="mprotect_toggle",reason="remote_ipi_send"}')
	scomm=$(served mmscope_comm_tlb_flushes_total 'comm="mprotect_toggle",reason="remote_ipi_send"')
	pbcast=$(promq 'mmscope_tlb_invalidations_total{job="mmscope",kind="broadcast"}')
	ok "serve_tlb: Prometheus stored what the endpoint serves" \
		"prometheus $psend $pcomm, endpoint $ssend $scomm" \
		[ -n "$ssend" -a "$psend" = "$ssend" -a "$pcomm" = "$scomm" ]
	if [ -n "$calls" ] && [[ $psend =~ ^[0-9]+$ && $pcomm =~ ^[0-9]+$ ]]; then
		ok "serve_tlb: shootdown IPIs sent = mprotect calls (5%)" "$psend vs $calls" \
			within "$psend" "$calls" 5
		ok "serve_tlb: local flushes = mprotect calls (5%)" "$plocal vs $calls" \
			within "$plocal" "$calls" 5
		ok "serve_tlb: by comm: mprotect_toggle's sends = mprotect calls (5%)" \
			"$pcomm vs $calls" within "$pcomm" "$calls" 5
		ok "serve_tlb: broadcast invalidations = shootdown IPIs sent" "$pbcast vs $psend" \
			[ "$pbcast" = "$psend" ]
	else
		fail "serve_tlb: no values (calls '$calls', prometheus '$psend' '$pcomm')"
	fi
	serve_stop serve_tlb
fi
