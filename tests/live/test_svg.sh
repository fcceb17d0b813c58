#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# --svg FILE: flame graphs as self-contained SVG documents, and --weight latency.
#
# Oracles: an XML parser (python3's xml.etree), the --folded lines of the same run (the SVG and
# the folded lines come from one read of the stacks, so the totals are equal), the workload's
# source for the names of its functions (tools/workloads/page_touch.c: touch_write_pages,
# touch_read_pages, touch_kernel_pages), the --json latency histogram of the same run (the
# folded latencies are the same pairing, so their sum lies within the histogram's bucket
# bounds), and Debian's chromium rendering the document to a PNG that must not be blank.
. "$(dirname "$0")/lib.sh"

PT="$WORKLOADS/page_touch"
W=2000 R=2000 X=200 K=100


# svg_check FILE: well-formed XML whose root is an SVG element, with no script, no external
# reference (href, url(), @import) and no foreign elements.
svg_check() {
	python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as E
SVG = "{http://www.w3.org/2000/svg}"
root = E.parse(sys.argv[1]).getroot()
assert root.tag == SVG + "svg", root.tag
allowed = {"svg", "title", "desc", "style", "rect", "text", "g"}
for el in root.iter():
    assert el.tag.startswith(SVG) and el.tag[len(SVG):] in allowed, el.tag
    for k, v in el.attrib.items():
        assert "href" not in k and "url(" not in v, (k, v)
style = "".join(e.text or "" for e in root.iter(SVG + "style"))
assert "@import" not in style and "url(" not in style
PY
}

# svg_frames FILE: one line per frame, "COUNT<TAB>NAME" (name and count from the hover title).
svg_frames() {
	python3 - "$1" <<'PY'
import re, sys, xml.etree.ElementTree as E
SVG = "{http://www.w3.org/2000/svg}"
for g in E.parse(sys.argv[1]).getroot().iter(SVG + "g"):
    name, rest = g.find(SVG + "title").text.split("\n", 1)
    m = re.search(r"(?:in )?(\d+) (?:faults|invalidations)", rest)
    print("%s\t%s\t%s" % (m.group(1), name, rest))
PY
}

# ---- a run with the table, --folded into a file and --svg ----
"$MMSCOPE" faults --folded -o "$TMP/f.folded" --svg "$TMP/f.svg" -- "$PT" -w $W -r $R -x $X -k $K \
	>"$TMP/out" 2>"$TMP/err"
rc=$?
ok "svg: faults --folded -o F --svg S exits 0" "exit $rc: $(one_line "$TMP/err")" [ $rc -eq 0 ]
[ -s "$TMP/f.svg" ] || { fail "svg: no SVG written"; exit 0; }
ok "svg: the document is well-formed SVG, self-contained (no script, no external reference)" \
	"$(svg_check "$TMP/f.svg" 2>&1 | tail -1)" svg_check "$TMP/f.svg"
ok "svg: no temporary file left next to it" "$(ls "$TMP")" \
	[ -z "$(find "$TMP" -name '*.tmp.*')" ]
svg_frames "$TMP/f.svg" >"$TMP/frames"
all=$(awk -F'\t' '$2 == "all" { print $1 }' "$TMP/frames")
fsum=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/f.folded")
ok "svg: the root frame 'all' counts what the folded lines of the same run add up to" \
	"all '$all', folded $fsum" [ "${all:-0}" -eq "$fsum" -a "$fsum" -gt 0 ]
for fn in touch_write_pages touch_read_pages touch_kernel_pages; do
	n=$(awk -F'\t' -v f=$fn '$2 == f { s += $1 } END { print s + 0 }' "$TMP/frames")
	case $fn in
	touch_write_pages) want=$W ;;
	touch_read_pages) want=$R ;;
	*) want=$K ;;
	esac
	# 99%: as in test_folded.sh, one stack holds nearly all of a class's faults.
	ok "svg: the workload's frame $fn is drawn, with ~$want faults in its title" \
		"$n in the titles of $fn frames" [ "$n" -ge $((want * 99 / 100)) -a "$n" -le $((want + 10)) ]
done
ok "svg: the process frame (page_touch) and the fault-kind leaves are there" \
	"$(cut -f2 "$TMP/frames" | sort -u | head -20 | tr '\n' ' ')" \
	grep -qP '\tpage_touch\t' "$TMP/frames"
ok "svg: ... leaves [write minor] and [read minor]" "no such frame" \
	grep -qP '\t\[(write|read) minor\]\t' "$TMP/frames"
ok "svg: the title lines say what, where and how (command, kernel, hooks, totals)" \
	"$(grep -o '<text x="600"[^<]*<title>[^<]*' "$TMP/f.svg" | head -4 | tr '\n' ' ')" \
	grep -q "command: $PT -w $W.*kernel $(uname -r) $(uname -m)" "$TMP/f.svg"
ok "svg: ... the hooks used and the total" "no 'hooks: fault-entry' or '$fsum faults on'" \
	grep -q "hooks: fault-entry " "$TMP/f.svg" && grep -q ">$fsum faults on " "$TMP/f.svg"

# ---- rendered by a browser ----
CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ]; then
	skip "svg: rendered by chromium (chromium not installed: tools/deps.sh installs it)"
else
	prof=$(mktemp -d)
	h=$(grep -o 'height="[0-9]*"' "$TMP/f.svg" | head -1 | tr -dc 0-9)
	timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$prof" \
		--screenshot="$TMP/f.png" --window-size=1200,"$h" "file://$TMP/f.svg" \
		>"$TMP/chromium.log" 2>&1
	rc=$?
	rm -rf "$prof"
	ok "svg: chromium renders it to a PNG" "exit $rc: $(tail -c 300 "$TMP/chromium.log")" [ -s "$TMP/f.png" ]
	# Decode the PNG (8-bit RGB or RGBA, non-interlaced: what chromium writes) with zlib:
	# distinct colours and the share of pixels that are not the background.
	read -r w h colours painted < <(python3 - "$TMP/f.png" <<'PY'
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, hdr = 8, b"", None
while pos < len(d):
    n, t = struct.unpack(">I4s", d[pos:pos + 8])
    body = d[pos + 8:pos + 8 + n]
    if t == b"IHDR":
        hdr = struct.unpack(">IIBBBBB", body)
    elif t == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = hdr
assert depth == 8 and ctype in (2, 6) and interlace == 0, hdr
bpp = 3 if ctype == 2 else 4
raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line)); prev = line
px = [r[i:i + 3] for r in rows for i in range(0, stride, bpp)]
bg = max(set(px[:w]), key=px[:w].count)  # the top row is background
print(w, h, len(set(px)), sum(p != bg for p in px) * 100 // len(px))
PY
)
	ok "svg: the PNG is a picture: >= 20 colours, >= 10% of pixels painted" \
		"${w:-?}x${h:-?} px, ${colours:-?} colours, ${painted:-?}% painted" \
		[ "${colours:-0}" -ge 20 -a "${painted:-0}" -ge 10 ]
fi

# ---- --weight latency ----
"$MMSCOPE" faults --json -o "$TMP/l.json" --svg "$TMP/l.svg" --weight latency -- "$PT" -w $W -r $R \
	>/dev/null 2>"$TMP/lerr"
rc=$?
ok "svg: faults --json --svg S --weight latency exits 0" "exit $rc: $(one_line "$TMP/lerr")" [ $rc -eq 0 ]
ok "svg: the --json document written next to the SVG is complete" "$(one_line "$TMP/l.json")" \
	[ "$(json_get "$TMP/l.json" 'd["faults"]["user"] >= 4000' 2>/dev/null)" = True ]
ok "svg: latency graph well-formed, titled 'width = latency'" "$(svg_check "$TMP/l.svg" 2>&1 | tail -1)" \
	bash -c "$(declare -f svg_check); svg_check '$TMP/l.svg' && grep -q 'width = latency' '$TMP/l.svg'"
method=$(json_get "$TMP/l.json" 'd["faults"].get("latency_method") or ""' 2>/dev/null)
# The root's title: "<N> <unit> latency in <count> faults (100.00%)".
read -r lat_ns < <(python3 - "$TMP/l.svg" <<'PY'
import re, sys, xml.etree.ElementTree as E
SVG = "{http://www.w3.org/2000/svg}"
for g in E.parse(sys.argv[1]).getroot().iter(SVG + "g"):
    t = g.find(SVG + "title").text
    if t.startswith("all\n"):
        v, u = re.search(r"\n([0-9.]+) (ns|\u00b5s|ms|s) latency in", t).groups()
        print(int(float(v) * {"ns": 1, "\u00b5s": 1e3, "ms": 1e6, "s": 1e9}[u]))
PY
)
case $method in
pairing*)
	# Sum of the histogram: each fault between its bucket's bounds.
	read -r lo hi < <(json_get "$TMP/l.json" \
		'"%d %d" % (sum(b["lo"] * b["count"] for b in d["faults"]["latency_ns"]), sum(b["hi"] * b["count"] for b in d["faults"]["latency_ns"]))')
	ok "svg: latency weights sum within the --json histogram's bounds (same pairing, same run)" \
		"svg $lat_ns ns, histogram [$lo, $hi]" \
		[ "${lat_ns:-0}" -ge $((lo * 99 / 100)) -a "${lat_ns:-0}" -le $((hi * 101 / 100)) -a "${lat_ns:-0}" -gt 0 ]
	;;
*)
	skip "svg: latency weights against the histogram (latency method '$method' times each handle_mm_fault call, not entry to completion)"
	;;
esac
"$MMSCOPE" faults --folded --weight latency -o "$TMP/l.folded" -- "$PT" -w $W >/dev/null 2>&1
bad=$(awk '$NF !~ /^[1-9][0-9]*$/' "$TMP/l.folded" | wc -l)
ok "svg: --folded --weight latency: every line weighs > 0 ns, none incomplete" \
	"$bad bad lines: $(awk '$NF !~ /^[1-9][0-9]*$/' "$TMP/l.folded" | head -2)" \
	[ -s "$TMP/l.folded" -a "$bad" -eq 0 ] && ! grep -q 'incomplete\]' "$TMP/l.folded"

# ---- refusals: one line, nothing left behind ----
"$MMSCOPE" stat --svg "$TMP/s.svg" -d 1 >/dev/null 2>"$TMP/e1"
rc=$?
ok "svg: stat --svg is refused with one line, exit 2" "exit $rc, $(one_line "$TMP/e1")" \
	[ $rc -eq 2 -a "$(wc -l <"$TMP/e1")" -eq 1 -a ! -e "$TMP/s.svg" ]
# Parse-time refusals: one line, exit 2, no file.
while IFS= read -r args; do
	eval "set -- $args"
	(cd "$TMP" && "$MMSCOPE" "$@" >"$TMP/r.out" 2>"$TMP/r.err")
	rc=$?
	ok "svg: refused: mmscope $args" "exit $rc, $(one_line "$TMP/r.err"), files: $(ls "$TMP" | grep -c '^r\.svg')" \
		[ $rc -eq 2 -a "$(wc -l <"$TMP/r.err")" -eq 1 -a ! -s "$TMP/r.out" ] && grep -q '^mmscope: ' "$TMP/r.err" &&
		[ -z "$(find "$TMP" -name 'r.svg*')" ]
done <<'EOF2'
switch --svg r.svg -d 1
probes --svg r.svg
tlb --svg r.svg --weight latency -d 1
faults --weight latency -d 1
faults --weight foo --svg r.svg -d 1
faults --svg '' -d 1
faults --svg r.svg -o r.svg -d 1
EOF2
"$MMSCOPE" faults --svg "$TMP/m.svg" --weight latency --method tracepoint -- "$PT" -w 10 \
	>"$TMP/m.out" 2>"$TMP/e2"
rc=$?
ok "svg: --weight latency without a completion hook is refused before the command runs" \
	"exit $rc, $(one_line "$TMP/e2"), stdout $(one_line "$TMP/m.out")" \
	[ $rc -ne 0 ] && grep -q -- '--weight latency: no fault-completion hook' "$TMP/e2" &&
	! grep -q page_size "$TMP/m.out"
ok "svg: ... and leaves neither the SVG nor its temporary file" "$(ls "$TMP" | grep m.svg)" \
	[ -z "$(find "$TMP" -name 'm.svg*')" ]
"$MMSCOPE" faults --svg "$TMP/no/such/dir/x.svg" -- "$PT" -w 10 >"$TMP/d.out" 2>"$TMP/e3"
rc=$?
ok "svg: an SVG path that cannot be created fails at once, before the command" \
	"exit $rc, $(one_line "$TMP/e3")" [ $rc -ne 0 ] && grep -q -- '--svg .*no/such/dir' "$TMP/e3" &&
	! grep -q page_size "$TMP/d.out"

# ---- hostile names: the comm of the traced command ----
HOSTILE='<a&"b>'\''x;'
cp "$PT" "$TMP/$HOSTILE"
"$MMSCOPE" faults --svg "$TMP/h.svg" -- "$TMP/$HOSTILE" -w 100 >/dev/null 2>"$TMP/herr"
rc=$?
ok "svg: a command named $HOSTILE: exit 0, a well-formed document" \
	"exit $rc $(one_line "$TMP/herr"); $(svg_check "$TMP/h.svg" 2>&1 | tail -1)" \
	svg_check "$TMP/h.svg"
ok "svg: ... its process frame shows the name escaped as in --folded ($HOSTILE -> <a&\"b>'x\\x3b)" \
	"$(svg_frames "$TMP/h.svg" 2>&1 | cut -f2 | sort -u | head | tr '\n' ' ')" \
	bash -c "$(declare -f svg_frames); svg_frames '$TMP/h.svg' | cut -f2 | grep -qxF \"<a&\\\"b>'x\\\\x3b\""

# ---- tlb --svg: invalidation kinds as leaves ----
"$MMSCOPE" tlb --svg "$TMP/t.svg" -- "$WORKLOADS/mprotect_toggle" -i 200 >/dev/null 2>"$TMP/terr"
rc=$?
ok "svg: tlb --svg exits 0 with a well-formed document" "exit $rc $(one_line "$TMP/terr")" svg_check "$TMP/t.svg"
ok "svg: ... whose leaves are [tlb ...] kinds under the workload's main" \
	"$(svg_frames "$TMP/t.svg" 2>&1 | cut -f2 | grep -c '^\[tlb') [tlb] frames" \
	bash -c "$(declare -f svg_frames); f=\$(svg_frames '$TMP/t.svg' | cut -f2); grep -q '^\[tlb ' <<<\"\$f\" && grep -qx main <<<\"\$f\""

# ---- interrupted: a second Ctrl-C exits at once; the SVG is then absent, never half-written ----
"$MMSCOPE" faults -v --svg "$TMP/i.svg" -d 60 >/dev/null 2>"$TMP/ierr" &
ipid=$!
if wait_attached "$TMP/ierr" 60; then
	kill -INT $ipid
	sleep 0.1 # not at once: a second SIGINT still pending would merge with the first
	kill -INT $ipid
	wait $ipid
	rc=$?
	if [ $rc -eq 130 ] && [ -e "$TMP/i.svg" ]; then
		# The second one came while the SVG was being committed: held until it was whole.
		ok "svg: two Ctrl-C during the commit: exit 130, a complete SVG, no temporary file" \
			"$(ls "$TMP" | grep i.svg)" \
			[ -z "$(find "$TMP" -name 'i.svg.tmp*')" ] && svg_check "$TMP/i.svg"
	elif [ $rc -eq 130 ]; then
		ok "svg: two Ctrl-C: exit 130, no SVG and no temporary file" "$(ls "$TMP" | grep i.svg)" \
			[ -z "$(find "$TMP" -name 'i.svg*')" ]
	else
		ok "svg: two Ctrl-C, the first already finished: a complete SVG, no temporary file" \
			"exit $rc" [ $rc -eq 0 -a -z "$(find "$TMP" -name 'i.svg.tmp*')" ] && svg_check "$TMP/i.svg"
	fi
else
	kill $ipid 2>/dev/null
	wait $ipid 2>/dev/null
	fail "svg: the interrupted run never attached ($(one_line "$TMP/ierr"))"
fi
