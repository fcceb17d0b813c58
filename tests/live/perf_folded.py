#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""perf script output -> folded stacks, for comparing perf's DWARF-unwound stacks with mmscope's.

  perf script --no-inline -F comm,tid,event,ip,sym,dso -i perf.data | perf_folded.py > folded
  perf_folded.py --clear-mmap-build-ids perf.data

The second form repairs a perf.data whose perf record did not ask for build IDs in its mmap
records (no --buildid-mmap) before perf script reads it: it clears the flag
PERF_RECORD_MISC_MMAP_BUILD_ID of every MMAP2 record, and prints how many had it. On this
host's kernel the flag leaks into other sessions' MMAP2 records while a perf event that asks
for build IDs is open anywhere (mmscope's mmap log opens one: user/core/mmap_log.c). The record
then holds the device and inode where the flag says a build ID is, perf 6.1 reads the major
number (254 here) as the build ID's size and aborts ("assertion failed at
util/build-id.c:1010", "stack smashing detected").

Each sample is one fault (perf record -e page-faults -c 1). Output lines are
  comm;ROOT;...;LEAF COUNT
with the frames root-first as in mmscope's --folded: the user frames, then, for a fault taken
in kernel mode, the kernel frames, each suffixed "_[k]" (stackcollapse-perf's mark), so that
user and kernel frames can be told apart without a symbol table. Identical stacks are summed.

Frame names: perf's symbol, without "+0xOFF" if symoff was printed; a frame perf could not name
but whose file it knows becomes FILE+0xADDR (FILE the base name; perf prints a user frame's
address relative to its file, the file offset mmscope prints too), and [unknown] only when
perf knows neither. Inlined entries (perf without --no-inline) are dropped: they come from
debug information, not from the stack.
"""
import collections
import mmap
import os
import re
import struct
import sys

# A frame: "\t    ffffffff8177d51a elf_load ([kernel.kallsyms])",
#          "\t          22810d [unknown] (/usr/bin/python3.11)"
FRAME_RE = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)$")


def frame_name(ip, sym, dso):
    """One frame's name as it is written in the folded line."""
    kernel = dso.startswith("[kernel") or int(ip, 16) >= 0xFFFF800000000000
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    if sym in ("", "[unknown]"):
        if dso and dso != "[unknown]" and not kernel:
            sym = "%s+0x%x" % (os.path.basename(dso), int(ip, 16))
        else:
            sym = "[unknown]"
    return sym + "_[k]" if kernel else sym


def fold(lines):
    """Counts of folded stacks from perf script's lines."""
    counts = collections.Counter()
    comm, frames = None, []

    def flush():
        if comm is not None:
            counts[";".join([comm] + frames[::-1])] += 1

    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        if not line[0].isspace():
            # A sample's header: "comm tid [cpu] event: ...": the comm may hold blanks, the tid
            # is the first all-digits word after it.
            flush()
            words = line.split()
            i = next((i for i, w in enumerate(words) if i > 0 and w.isdigit()), 1)
            comm, frames = " ".join(words[:i]).replace(";", ":"), []
            continue
        m = FRAME_RE.match(line)
        if m and comm is not None:
            ip, sym, dso = m.groups()
            if sym.endswith("(inlined)") or dso == "inlined":
                continue
            frames.append(frame_name(ip, sym, dso).replace(";", ":"))
    flush()
    return counts


PERF_RECORD_MMAP2 = 10
PERF_RECORD_MISC_MMAP_BUILD_ID = 1 << 14


def clear_mmap_build_ids(path):
    """Clears the build-ID flag of the MMAP2 records of a perf.data file; their number."""
    n = 0
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        # struct perf_file_header: magic, size, attr_size, attrs {offset, size}, data {...}
        off, size = struct.unpack_from("<QQ", m, 40)
        end = min(off + size, len(m))
        while off + 8 <= end:
            rtype, misc, rsize = struct.unpack_from("<IHH", m, off)
            if rsize < 8:
                break
            if rtype == PERF_RECORD_MMAP2 and misc & PERF_RECORD_MISC_MMAP_BUILD_ID:
                struct.pack_into("<H", m, off + 4, misc & ~PERF_RECORD_MISC_MMAP_BUILD_ID)
                n += 1
            off += rsize
    return n


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--clear-mmap-build-ids":
        print(clear_mmap_build_ids(sys.argv[2]))
        return
    src = open(sys.argv[1], errors="replace") if len(sys.argv) > 1 else sys.stdin
    for stack, n in sorted(fold(src).items(), key=lambda kv: (-kv[1], kv[0])):
        print("%s %d" % (stack, n))


if __name__ == "__main__":
    main()
