#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mmscope serve against bad options and bad requests: refused addresses, a taken port, unknown
# paths and methods, oversized headers and URLs, hundreds of connections at once (idle ones
# and scrapes), a process whose comm holds quotes, backslashes, a newline and invalid UTF-8.
# The endpoint must answer each with an HTTP status (never a crash), keep serving afterwards,
# pass `promtool check metrics`, and still end cleanly on SIGTERM (exit 0, none of its BPF
# programs left).
#
# Oracles: HTTP status codes (curl), promtool (Debian's prometheus package), a Python client
# for the connection floods, bpftool and /proc/PID/fdinfo for the programs serve held.
. "$(dirname "$0")/lib.sh"

for tool in promtool curl; do
	if ! command -v $tool >/dev/null; then
		skip "serve_requests (no $tool: tools/deps.sh installs prometheus and curl)"
		exit 0
	fi
done

MM= HOSTILE=
cleanup() {
	[ -n "$MM" ] && kill -KILL "$MM" 2>/dev/null
	[ -n "$HOSTILE" ] && kill -KILL "$HOSTILE" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# code ARGS... : the HTTP status of a curl request (000: no answer)
code() { curl -s -o /dev/null --max-time 10 -w '%{http_code}' "$@"; }

# ---- options refused before anything is loaded: one line, exit 2 ----
bad_opt() {
	local name=$1
	shift
	"$MMSCOPE" serve "$@" >"$TMP/o.out" 2>"$TMP/o.err"
	local rc=$? lines
	lines=$(wc -l <"$TMP/o.err")
	ok "serve_bad_option: $name" "exit $rc, $lines lines: $(head -c 200 "$TMP/o.err")" \
		[ $rc -eq 2 -a "$lines" -eq 1 ]
}
bad_opt "non-loopback without --allow-remote" --listen 0.0.0.0:9890
bad_opt "IPv6 any without --allow-remote" --listen '[::]:9890'
bad_opt "not an address" --listen 'nowhere:80'
bad_opt "port out of range" --listen 127.0.0.1:65536
bad_opt "no port" --listen 127.0.0.1
bad_opt "unknown --labels" --labels pid
bad_opt "--max-series without --labels" --max-series 10
bad_opt "--max-series 0" --labels comm --max-series 0
bad_opt "-i (printing option)" -i 1
bad_opt "--json (printing option)" --json
"$MMSCOPE" stat --listen 127.0.0.1:1 >/dev/null 2>"$TMP/o.err"
ok "serve_bad_option: --listen on another subcommand" "exit $?" [ $? -eq 2 ]

# ---- the server ----
"$MMSCOPE" serve --listen 127.0.0.1:0 --labels comm --max-series 1000 -d 120 \
	>/dev/null 2>"$TMP/serve.err" &
MM=$!
if ! wait_for 30 grep -q 'serving http' "$TMP/serve.err"; then
	fail "serve_requests: serve did not start ($(head -c 300 "$TMP/serve.err" | tr '\n' ' '))"
	exit 0
fi
PORT=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$TMP/serve.err")
URL="http://127.0.0.1:$PORT"
MMOWN=$(owned $MM)

# A port already taken: one line naming the reason, exit 1, nothing loaded.
"$MMSCOPE" serve --listen "127.0.0.1:$PORT" -d 1 >/dev/null 2>"$TMP/taken.err"
rc=$?
grep -q 'in use' "$TMP/taken.err" && says=1 || says=0
ok "serve_port_taken: one clear line, exit 1" "exit $rc: $(head -c 200 "$TMP/taken.err")" \
	[ $rc -eq 1 -a "$(wc -l <"$TMP/taken.err")" -eq 1 -a $says = 1 ]

# A process with a hostile comm (quote, backslash, newline, invalid UTF-8) that faults.
python3 - >"$TMP/hostile.out" <<'PY' &
import ctypes, sys, time
libc = ctypes.CDLL(None)
libc.prctl(15, b'a"b\\c\nd\xff\xfe', 0, 0, 0)  # PR_SET_NAME
print("named", flush=True)
for _ in range(40):
    bytearray(4 << 20)  # fresh pages: faults under the new name
    time.sleep(0.1)
PY
HOSTILE=$!
wait_for 10 grep -q named "$TMP/hostile.out"
sleep 1.5 # a labels pass (once a second) has seen it fault
curl -s --max-time 10 -D "$TMP/h" "$URL/metrics" -o "$TMP/m.txt"
ok "serve_metrics: 200 with text format 0.0.4" "$(head -1 "$TMP/h")" \
	grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$TMP/h"
promtool check metrics <"$TMP/m.txt" >"$TMP/promtool.out" 2>&1
ok "serve_metrics: promtool check metrics passes" "$(head -c 300 "$TMP/promtool.out")" \
	[ $? -eq 0 ]
# The comm as escaped: \" \\ \n, and U+FFFD for each invalid byte.
esc=$(printf 'comm="a\\"b\\\\c\\nd\xef\xbf\xbd\xef\xbf\xbd"')
ok "serve_metrics: a hostile comm is escaped" "no series with $esc" \
	grep -qF "mmscope_comm_page_faults_total{$esc,mode=\"user\"}" "$TMP/m.txt"
kill $HOSTILE 2>/dev/null
wait $HOSTILE 2>/dev/null
HOSTILE=
for f in mmscope_page_faults_total mmscope_tlb_flushes_total mmscope_context_switches_total \
	mmscope_lost_events_total mmscope_fault_latency_seconds_bucket mmscope_tlb_flush_pages_bucket \
	mmscope_build_info mmscope_hook_info; do
	grep -q "^$f" "$TMP/m.txt" || missing="${missing:-} $f"
done
ok "serve_metrics: every family is there" "missing:${missing:-}" [ -z "${missing:-}" ]
# le values increasing, ending with +Inf, for every histogram series
python3 - "$TMP/m.txt" >"$TMP/le.out" <<'PY'
import re, sys
series = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\w+)_bucket\{(.*?)le="([^"]+)"\} (\d+)', line)
    if m:
        series.setdefault((m[1], m[2]), []).append((m[3], int(m[4])))
bad = []
for k, b in series.items():
    les = [float(x) for x, _ in b]
    counts = [c for _, c in b]
    if b[-1][0] != "+Inf" or les != sorted(set(les)) or counts != sorted(counts):
        bad.append(k)
print(len(series), "bad:", bad)
sys.exit(1 if bad or not series else 0)
PY
ok "serve_metrics: le increasing, ending +Inf, cumulative counts" "$(cat "$TMP/le.out")" [ $? -eq 0 ]
# every histogram series has _sum and _count; _count = the +Inf bucket; the sum lies between
# what its finite buckets' lower and upper bounds allow (observations above the last finite le
# only raise it)
python3 - "$TMP/m.txt" >"$TMP/sum.out" <<'PY'
import re, sys
b, sums, counts = {}, {}, {}
for line in open(sys.argv[1]):
    m = re.match(r'(\w+)_(bucket|sum|count)(?:\{(.*?)\})? (\S+)$', line)
    if not m or not m[1].startswith(("mmscope_fault_latency", "mmscope_tlb_flush_pages")):
        continue
    labels = re.sub(r',?le="[^"]*"', "", m[3] or "")
    key = (m[1], labels)
    if m[2] == "bucket":
        le = re.search(r'le="([^"]+)"', m[3])[1]
        b.setdefault(key, []).append((float(le), int(m[4])))
    elif m[2] == "sum":
        sums[key] = float(m[4])
    else:
        counts[key] = int(m[4])
bad = []
for key, bk in b.items():
    lo = hi = 0.0
    prev_le, prev_c = None, 0
    for le, c in bk[:-1]:
        n = c - prev_c
        # log2 slots: this bucket holds values in (prev_le, le]
        lo += n * (prev_le if prev_le is not None else 0)
        hi += n * le
        prev_le, prev_c = le, c
    inf_n = bk[-1][1] - prev_c
    lo += inf_n * (prev_le or 0)
    s, n = sums.get(key), counts.get(key)
    if s is None or n != bk[-1][1] or s < lo * 0.999999 or (inf_n == 0 and s > hi * 1.000001):
        bad.append((key, s, n, lo, hi))
print(len(b), "series; bad:", bad)
sys.exit(1 if bad or not b else 0)
PY
ok "serve_metrics: histograms have _sum and _count, consistent with their buckets" \
	"$(head -c 400 "$TMP/sum.out")" [ $? -eq 0 ]

om=application/openmetrics-text
curl -s --max-time 10 -H "Accept: $om;version=1.0.0,text/plain;version=0.0.4;q=0.5" \
	-D "$TMP/h" "$URL/metrics" -o "$TMP/om.txt"
ok "serve_openmetrics: asked for, served with its content type" "$(grep -i content-type "$TMP/h")" \
	grep -qi "^content-type: $om; version=1.0.0; charset=utf-8" "$TMP/h"
grep -q '^# TYPE mmscope_page_faults counter$' "$TMP/om.txt" &&
	grep -q '^mmscope_page_faults_total{mode="user"} [0-9]*$' "$TMP/om.txt" && named=1 || named=0
ok "serve_openmetrics: ends with # EOF, counters named _total, families without it" \
	"last line: $(tail -1 "$TMP/om.txt"), names right: $named" \
	[ "$(tail -1 "$TMP/om.txt")" = "# EOF" -a $named = 1 ]
curl -s --max-time 10 -H "Accept: $om;q=0,text/plain" -D "$TMP/h" "$URL/metrics" -o /dev/null
ok "serve_openmetrics: q=0 refuses it" "$(grep -i content-type "$TMP/h")" \
	grep -qi '^content-type: text/plain; version=0.0.4' "$TMP/h"

# ---- bad requests ----
c=$(code "$URL/nope")
ok "serve_bad_request: unknown path is 404" "got $c" [ "$c" = 404 ]
c=$(code -X POST -d x=1 "$URL/metrics")
ok "serve_bad_request: POST is 405" "got $c" [ "$c" = 405 ]
c=$(code -H "X-Big: $(head -c 100000 /dev/zero | tr '\0' a)" "$URL/metrics")
ok "serve_bad_request: 100 kB header is 431 or 400" "got $c" [ "$c" = 431 -o "$c" = 400 ]
c=$(code "$URL/metrics?$(head -c 60000 /dev/zero | tr '\0' a)")
ok "serve_bad_request: 60 kB URL is 414, 431 or 400" "got $c" \
	[ "$c" = 414 -o "$c" = 431 -o "$c" = 400 ]
printf 'GARBAGE\r\n\r\n\0\1\2 HTTP/9\r\n\r\n' >"$TMP/garbage"
python3 - "$PORT" "$TMP/garbage" <<'PY' || true
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(open(sys.argv[2], "rb").read())
try:
    s.recv(4096)
except OSError:
    pass
PY

# ---- 200 connections at once: idle ones that never finish their request, then 200 scrapes ----
python3 - "$PORT" >"$TMP/flood.out" 2>&1 <<'PY'
import socket, sys, threading, time
port = int(sys.argv[1])
idle = []
for _ in range(200):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never ends the request
        idle.append(s)
    except OSError:
        pass
def scrape_status():
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    return s.recv(64).split(b" ")[1].decode()
try:
    during = scrape_status()  # 200 idle connections are open: below the limit, answered
except (OSError, IndexError):
    during = "error"
for s in idle:
    s.close()
codes = {}
lock = threading.Lock()
def scrape():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head = s.recv(64).split(b" ")[1].decode()
        while s.recv(65536):
            pass
        s.close()
    except (OSError, IndexError):
        head = "error"
    with lock:
        codes[head] = codes.get(head, 0) + 1
threads = [threading.Thread(target=scrape) for _ in range(200)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("idle", len(idle), "during", during, "scrapes", codes)
PY
c=$(code "$URL/metrics")
ok "serve_many_connections: still serving after 200 idle and 200 concurrent" \
	"after: $c; $(cat "$TMP/flood.out")" [ "$c" = 200 ]
ok "serve_many_connections: a scrape during 200 idle connections is answered" \
	"$(cat "$TMP/flood.out")" grep -q "idle 200 during 200 " "$TMP/flood.out"
ok "serve_many_connections: 200 concurrent scrapes all answered 200" "$(cat "$TMP/flood.out")" \
	grep -qF "scrapes {'200': 200}" "$TMP/flood.out"

# Counters never go down from scrape to scrape, processes coming and going in between.
curl -s --max-time 10 "$URL/metrics" -o "$TMP/a.txt"
for _ in 1 2 3; do "$WORKLOADS/page_touch" -w 100 -r 0 -x 0 >/dev/null; done
sleep 1.2
curl -s --max-time 10 "$URL/metrics" -o "$TMP/b.txt"
python3 - "$TMP/a.txt" "$TMP/b.txt" >"$TMP/mono.out" <<'PY'
import sys
def counters(path):
    d = {}
    for line in open(path):
        if line.startswith("#"):
            continue
        k, v = line.rsplit(" ", 1)
        if "_total" in k or "_bucket" in k or "_count" in k:
            d[k] = float(v)
    return d
a, b = counters(sys.argv[1]), counters(sys.argv[2])
down = [k for k in a if k in b and b[k] < a[k]]
gone = [k for k in a if k not in b]
grew = b.get('mmscope_comm_page_faults_total{comm="page_touch",mode="user"}', 0) - \
       a.get('mmscope_comm_page_faults_total{comm="page_touch",mode="user"}', 0)
print(len(a), "counters; down:", down[:5], "gone:", gone[:5], "page_touch grew by", grew)
sys.exit(1 if down or gone or grew < 300 else 0)
PY
ok "serve_monotonic: no counter went down or disappeared, exited processes kept" \
	"$(cat "$TMP/mono.out")" [ $? -eq 0 ]

# ---- --max-series reached, and --labels cgroup (each a short serve of its own) ----
# short_serve OUT ARGS... : serve ARGS on a free port; OUT gets the page once the targets ended
short_serve() {
	local out=$1 pid port i
	shift
	"$MMSCOPE" serve --listen 127.0.0.1:0 "$@" >/dev/null 2>"$out.err" &
	pid=$!
	wait_for 30 grep -q 'serving http' "$out.err"
	port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$out.err")
	for ((i = 0; i < 100; i++)); do
		curl -s --max-time 5 "http://127.0.0.1:$port/metrics" -o "$out"
		grep -q '^mmscope_tracing 0' "$out" && break
		sleep 0.1
	done
	kill -TERM $pid
	wait $pid
}
PT="$WORKLOADS/page_touch"
short_serve "$TMP/cap.txt" --labels comm --max-series 1 -- sh -c "/bin/true; $PT -w 10 -r 0 -x 0"
grep -q '^mmscope_label_values_capped{label="comm"} 1$' "$TMP/cap.txt" &&
	grep -q '^mmscope_comm_page_faults_total{comm="__other__",mode="user"} [1-9]' "$TMP/cap.txt" &&
	[ "$(grep -c 'max-series 1 reached' "$TMP/cap.txt.err")" = 1 ] && capped=1 || capped=0
ok "serve_max_series: one value kept, the rest under __other__, said once on stderr" \
	"$(grep -E '^mmscope_(label|comm_page_faults_total)' "$TMP/cap.txt" | tr '\n' ' ')" [ $capped = 1 ]
promtool check metrics <"$TMP/cap.txt" >/dev/null 2>&1
ok "serve_max_series: promtool check metrics passes" "see $TMP/cap.txt" [ $? -eq 0 ]
# The shell lives 1.5 s, long enough for a labels pass to read its cgroup: this test's own.
mycg=$(sed -n 's/^0:://p' /proc/self/cgroup)
short_serve "$TMP/cg.txt" --labels cgroup -- sh -c "$PT -w 10 -r 0 -x 0; sleep 1.5"
ok "serve_labels_cgroup: the command's cgroup is a label value" \
	"want cgroup=\"$mycg\": $(grep '^mmscope_cgroup_page_faults_total' "$TMP/cg.txt" | tr '\n' ' ')" \
	grep -qF "mmscope_cgroup_page_faults_total{cgroup=\"$mycg\",mode=\"user\"}" "$TMP/cg.txt"

# ---- SIGTERM: exit 0, nothing left ----
kill -TERM $MM
rc=none
wait_exit $MM 10 # sets rc when serve has ended
MM=
ok "serve_sigterm: exit 0 within 10 s" "exit $rc" [ "$rc" = 0 ]
left=$(left_behind "$MMOWN")
ok "serve_sigterm: no BPF object left behind" "held: $(echo $MMOWN), still loaded: $left" \
	eval '[ -n "$MMOWN" ] && [ -z "$left" ]'
