#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# What user frames are called: C++ names demangled (as c++filt -p prints them), and a frame in
# a known file without a symbol there named file+0xOFFSET (as perf prints it), [unknown] only
# where the mapping itself is unknown. Oracles: the programs' own arithmetic (one write fault
# per fresh page), and readelf's symbol table and program headers of the unstripped file.
. "$(dirname "$0")/lib.sh"

command -v g++ >/dev/null || { skip "names: no g++ (tools/deps.sh installs it)"; exit 0; }

# ---- C++: a function template in a namespace writes N fresh pages ----
# (-O0: every function keeps its frame pointer, so main is on the stack: naming, not unwinding,
# is tested here)
N=700
cat >"$TMP/touch.cc" <<'EOF'
#include <cstdlib>
#include <sys/mman.h>
#include <unistd.h>
namespace mm {
template <class T> struct Touches {
	static __attribute__((noinline)) void pages(char *p, unsigned long n, long page)
	{
		for (unsigned long i = 0; i < n; i++)
			*(volatile T *)(p + i * page) = (T)i;
	}
};
} // namespace mm
int main(int argc, char **argv)
{
	unsigned long n = strtoul(argv[1], nullptr, 0);
	long page = sysconf(_SC_PAGESIZE);
	char *p = (char *)mmap(nullptr, n * page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	madvise(p, n * page, MADV_NOHUGEPAGE); // one fault a page
	mm::Touches<long>::pages(p, n, page);
	return 0;
}
EOF
if ! g++ -O0 -o "$TMP/touch_cxx" "$TMP/touch.cc" 2>"$TMP/gxx.err"; then
	fail "names: g++ could not build the C++ workload ($(one_line "$TMP/gxx.err"))"
	exit 0
fi
want=$(nm "$TMP/touch_cxx" | awk '/Touches/ { print $3 }' | c++filt -p)
"$MMSCOPE" faults --folded -o "$TMP/cxx.folded" -- "$TMP/touch_cxx" $N 2>"$TMP/cxx.err"
rc=$?
ok "names: C++ workload traced, exit 0" "exit $rc: $(one_line "$TMP/cxx.err")" [ $rc -eq 0 ]
ok "names: c++filt -p names the template 'mm::Touches<long>::pages'" "$want" [ "$want" = "mm::Touches<long>::pages" ]
n=$(awk -v f=";main;$want;" 'index($0, f) && /\[write minor\]/ { s += $NF } END { print s + 0 }' "$TMP/cxx.folded")
ok "names: main;$want holds the $N write faults (demangled frame)" "$n; $(grep -c . "$TMP/cxx.folded") lines: $(head -c 300 "$TMP/cxx.folded" | tr '\n' '|')" [ "$n" -eq $N ]
ok "names: no mangled C++ frame left in the stacks" "$(grep -o ';_Z[A-Za-z0-9_]*' "$TMP/cxx.folded" | head -3 | tr '\n' ' ')" \
	bash -c "! grep -q ';_Z[A-Za-z0-9_]*;' '$TMP/cxx.folded'"
"$MMSCOPE" faults --json --top 50 -o "$TMP/cxx.json" -- "$TMP/touch_cxx" $N 2>>"$TMP/cxx.err"
loc=$(json_get "$TMP/cxx.json" 'sum(r["count"] for r in d["faults"]["top_locations"] if r["symbol"] == "'"$want"'")')
ok "names: the location table holds the $N writes at '$want'" "$loc" [ "$loc" -ge $N ]

# ---- no symbol: a stripped copy of page_touch; frames are file+0xOFFSET ----
W=600
strip -o "$TMP/pt_stripped" "$WORKLOADS/page_touch"
# touch_write_pages's file offsets, from the unstripped file: its address and size (readelf
# -s), through the PT_LOAD segment holding it (readelf -l: offset, virtual address, file size).
read -r lo hi < <(python3 - "$WORKLOADS/page_touch" <<'PY2'
import subprocess, sys
sym = [l.split() for l in subprocess.run(["readelf", "-sW", sys.argv[1]], capture_output=True,
                                         text=True).stdout.splitlines()]
addr, size = next((int(f[1], 16), int(f[2])) for f in sym if len(f) > 7 and f[7] == "touch_write_pages")
for l in subprocess.run(["readelf", "-lW", sys.argv[1]], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if f and f[0] == "LOAD":
        off, va, fs = int(f[1], 16), int(f[2], 16), int(f[4], 16)
        if va <= addr < va + fs:
            print(addr - va + off, addr - va + off + size)
PY2
)
"$MMSCOPE" faults --folded -o "$TMP/st.folded" -- "$TMP/pt_stripped" -w $W >/dev/null 2>"$TMP/st.err"
rc=$?
ok "names: stripped workload traced, exit 0" "exit $rc: $(one_line "$TMP/st.err")" [ $rc -eq 0 ]
# The write faults' leaf user frame: pt_stripped+0xOFF with OFF inside touch_write_pages.
n=$(python3 - "$TMP/st.folded" "${lo:-1}" "${hi:-0}" <<'PY2'
import sys
lo, hi, n = int(sys.argv[2]), int(sys.argv[3]), 0
for line in open(sys.argv[1]):
    stack, count = line.rsplit(" ", 1)
    if "[write minor]" not in stack:
        continue
    user = [f for f in stack.split(";") if f.startswith("pt_stripped+0x")]
    if user and lo <= int(user[-1][len("pt_stripped+0x"):], 16) < hi:
        n += int(count)
print(n)
PY2
)
ok "names: the $W writes are at pt_stripped+0xOFF inside touch_write_pages (readelf)" \
	"$n in $lo..$hi; $(grep write "$TMP/st.folded" | sort -t' ' -k2 -n | tail -2 | tr '\n' '|')" [ "$n" -eq $W ]
