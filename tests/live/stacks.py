#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The user stacks of folded files, measured and compared (tests/live/test_unwind.sh).

Two kinds of input:
  mmscope  mmscope faults --folded: comm;USER...;KERNEL...;[kind] COUNT. A user-mode fault's
           kind is [read minor], [write major], ... ("[kernel ...]" for a fault taken in kernel
           mode, "[tlb ...]" for an invalidation: neither is a user-mode fault). Its kernel
           frames start at the architecture's fault entry (asm_exc_page_fault on x86_64,
           el0t_64_sync on arm64...), found as the first such name in the longest run of
           kernel symbols (/proc/kallsyms) that ends the stack.
  perf     tests/live/perf_folded.py: comm;USER...;KERNEL_[k]... COUNT. A user-mode fault has
           no kernel frame (perf's page-faults event takes a kernel callchain only for faults
           taken in kernel mode).

Subcommands:
  expect FOLDED FORMAT EXPECT_FILE
      EXPECT_FILE holds a workload's "expect KIND COUNT main;...;LEAF" lines (deep_stack). For
      each, prints "GOT WANT ROOTED KIND CHAIN": GOT the faults of that kind whose user stack
      ends in exactly CHAIN (a '*' frame in CHAIN matching any frames), ROOTED how many of
      those also start at a root frame (below). Then "other N TOTAL": of the TOTAL user-mode
      faults of an expected kind at an expected leaf (for perf, which has no kinds: of any
      kind), the N that are in no expected stack.
  summary FOLDED FORMAT COMM_RE [ENTRY_FILE...]
      The user-mode faults of the comms matching COMM_RE: prints key=value words:
      faults, rooted_pct (the fault-weighted share whose user stack starts at a root frame),
      median_depth (user frames, fault-weighted), one_frame_pct (1 user frame),
      unknown_pct (a bare [unknown] user frame), top_root (the most common outermost frame)
      and top_root_ok (1 if that is a root frame).
  compare MMSCOPE_FOLDED PERF_FOLDED COMM_RE [ENTRY_FILE...]
      The same for both, as mm_* and perf_* words, then: top (how many of perf's 10
      heaviest user call chains that start at a root frame appear in mmscope's output among
      its chains that start at a root frame), top_n (how many there were), and top_missing,
      the first chain not found (or "-").

A root frame is where a whole user stack starts: _start, or a thread's start (clone, clone3,
__clone, __clone3, start_thread); or, for an ENTRY_FILE (a program whose _start has no
symbol: stress-ng has dynamic symbols only), a FILE+0xOFF frame whose offset is inside the
code at the ELF entry point (its first 64 bytes: glibc's _start on x86_64 is 34). main,
__libc_start_call_main and __libc_start_main are not roots: with glibc they are always called
from _start, and a stack that ends there is one whose walk stopped (a frame-pointer walk of a
program built without frame pointers can end at main: deep_stack's does).

Chains are compared by function names, symbol versions (@GLIBC_2.34) dropped; two unnamed
frames FILE+0xOFF are the same if they are in the same file at offsets at most 1 apart (the
leaf is the faulting instruction in both tools; a caller's frame is its return address, which
a tool may print as the address of the call's last byte).
"""
import collections
import os
import re
import subprocess
import sys

ROOT_NAMES = {
    "_start",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
    "start_thread",
}
# The first kernel frame of a user-mode fault's stack, per architecture.
FAULT_ENTRIES = {
    "asm_exc_page_fault",
    "exc_page_fault",
    "el0t_64_sync",
    "el0t_64_sync_handler",
    "el0_sync",
    "data_access_common_virt",
    "instruction_access_common_virt",
    "do_page_fault",
}
# ... and of a fault taken in kernel mode (a system call's), for completeness.
SYSCALL_ENTRIES = {
    "entry_SYSCALL_64",
    "entry_SYSCALL_64_after_hwframe",
    "entry_SYSCALL_64_safe_stack",
    "el0t_64_sync",
    "system_call_common",
    "system_call_vectored_common",
}
KIND_RE = re.compile(r"^\[(kernel )?(read|write|exec|fault) (minor|major|incomplete)\]$")
UNNAMED_RE = re.compile(r"^(.+)\+0x([0-9a-f]+)$")

_kallsyms = None


def kallsyms():
    global _kallsyms
    if _kallsyms is None:
        _kallsyms = set()
        try:
            with open("/proc/kallsyms") as f:
                for line in f:
                    w = line.split()
                    if len(w) >= 3:
                        _kallsyms.add(w[2])
        except OSError:
            pass
    return _kallsyms


def entry_ranges(files):
    """{file base name: (lo, hi)}: the file offsets of the first 64 bytes at each ELF entry."""
    ranges = {}
    for path in files:
        try:
            out = subprocess.run(["readelf", "-hlW", path], capture_output=True, text=True,
                                 check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            continue
        m = re.search(r"Entry point address:\s+0x([0-9a-f]+)", out)
        if not m:
            continue
        entry = int(m.group(1), 16)
        for line in out.splitlines():
            w = line.split()
            if w and w[0] == "LOAD":
                off, va, filesz = int(w[1], 16), int(w[2], 16), int(w[4], 16)
                if va <= entry < va + filesz:
                    lo = entry - va + off
                    ranges[os.path.basename(path)] = (lo, lo + 64)
    return ranges


def is_root(frame, ranges):
    if frame in ROOT_NAMES:
        return True
    m = UNNAMED_RE.match(frame)
    if m and m.group(1) in ranges:
        lo, hi = ranges[m.group(1)]
        return lo <= int(m.group(2), 16) < hi
    return False


def unversioned(frame):
    """A symbol without its version: __libc_start_main@@GLIBC_2.34 -> __libc_start_main."""
    return re.sub(r"@.*$", "", frame) if not frame.startswith("@") else frame


def norm(frame):
    """A frame's name for chain comparison."""
    frame = unversioned(frame)
    m = UNNAMED_RE.match(frame)
    return m.group(1) + "+?" if m else frame


def parse(path, fmt):
    """Yields (comm, user_mode, kind, user frames root-first, count) for each line."""
    ksyms = kallsyms()
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if " " not in line:
                continue
            stack, count = line.rsplit(" ", 1)
            if not count.isdigit():
                continue
            frames = stack.split(";")
            comm, frames = frames[0], frames[1:]
            if fmt == "perf":
                user = [fr for fr in frames if not fr.endswith("_[k]")]
                kmode = len(user) != len(frames)
                yield comm, not kmode, None, [unversioned(fr) for fr in user], int(count)
                continue
            if not frames:
                continue
            m = KIND_RE.match(frames[-1])
            if not m:
                continue  # [tlb ...] and anything else that is no fault
            kmode = m.group(1) is not None
            frames = frames[:-1]
            # The longest run of kernel symbols that ends the stack, then its first entry frame.
            start = len(frames)
            while start > 0 and frames[start - 1] in ksyms:
                start -= 1
            entries = FAULT_ENTRIES | (SYSCALL_ENTRIES if kmode else set())
            cut = next((i for i in range(start, len(frames)) if frames[i] in entries), None)
            if cut is None:
                cut = start if ksyms else len(frames)
            yield comm, not kmode, m.group(2), [unversioned(fr) for fr in frames[:cut]], int(count)


def chain_matches(user, chain):
    """Whether the user stack ends in exactly chain, '*' matching any frames."""
    pat = "".join("(?:[^\n]*\n)*" if c == "*" else re.escape(c) + "\n" for c in chain)
    return re.search("(^|\n)" + pat + r"\Z", "".join(fr + "\n" for fr in user)) is not None


def cmd_expect(path, fmt, expect_file):
    stacks = list(parse(path, fmt))
    expects = []
    for line in open(expect_file):
        w = line.split()
        if len(w) == 4 and w[0] == "expect":
            expects.append((w[1], int(w[2]), w[3]))
    matched = [False] * len(stacks)
    for kind, want, text in expects:
        chain = text.split(";")
        got = rooted = 0
        for i, (_comm, umode, k, user, n) in enumerate(stacks):
            if not umode or (k is not None and k != kind) or not chain_matches(user, chain):
                continue
            matched[i] = True
            got += n
            if user and is_root(user[0], {}):
                rooted += n
        print(got, want, rooted, kind, text)
    # The faults of an expected kind at an expected leaf (perf: of any kind), in no expected
    # stack: an instruction fetch fault on the leaf's code is none of them.
    leaves = {(text.split(";")[-1], kind) for kind, _, text in expects}
    at_leaf = [umode and user and (user[-1], k) in leaves if k is not None else
               umode and user and any(user[-1] == leaf for leaf, _ in leaves)
               for _c, umode, k, user, _n in stacks]
    other = sum(st[4] for i, st in enumerate(stacks) if at_leaf[i] and not matched[i])
    total = sum(st[4] for i, st in enumerate(stacks) if at_leaf[i])
    print("other", other, total)


def median(pairs):
    """The weighted median of (value, weight) pairs."""
    total = sum(w for _, w in pairs)
    acc = 0
    for v, w in sorted(pairs):
        acc += w
        if 2 * acc >= total:
            return v
    return 0


def summary(path, fmt, comm_re, ranges):
    """Key figures of the user-mode faults of the comms matching comm_re, and the counts of
    their user chains that start at a root frame."""
    faults = rooted = one = unknown = 0
    depths, roots, chains = [], collections.Counter(), collections.Counter()
    for comm, umode, _k, user, n in parse(path, fmt):
        if not umode or not re.search(comm_re, comm):
            continue
        faults += n
        depths.append((len(user), n))
        one += n if len(user) == 1 else 0
        unknown += n if "[unknown]" in user else 0
        roots[user[0] if user else "(none)"] += n
        if user and is_root(user[0], ranges):
            rooted += n
            chains[tuple(user)] += n
    pct = lambda x: "%.1f" % (100.0 * x / faults) if faults else "0"
    top_root = roots.most_common(1)[0][0] if roots else "-"
    return {
        "faults": faults,
        "rooted_pct": pct(rooted),
        "median_depth": median(depths),
        "one_frame_pct": pct(one),
        "unknown_pct": pct(unknown),
        "top_root": top_root.replace(" ", "_"),
        "top_root_ok": int(is_root(top_root, ranges)),
    }, chains


def same_frame(a, b):
    """Frames are the same function: equal names, or unnamed in the same file at offsets at
    most 1 apart (a return address may be printed as the call's last byte)."""
    if a == b:
        return True
    ma, mb = UNNAMED_RE.match(a), UNNAMED_RE.match(b)
    return bool(ma and mb and ma.group(1) == mb.group(1)
                and abs(int(ma.group(2), 16) - int(mb.group(2), 16)) <= 1)


def cmd_summary(path, fmt, comm_re, files):
    s, _ = summary(path, fmt, comm_re, entry_ranges(files))
    print(" ".join("%s=%s" % kv for kv in s.items()))


def cmd_compare(mm_path, perf_path, comm_re, files):
    ranges = entry_ranges(files)
    mm, mm_chains = summary(mm_path, "mmscope", comm_re, ranges)
    pf, pf_chains = summary(perf_path, "perf", comm_re, ranges)
    by_names = collections.defaultdict(list)
    for c in mm_chains:
        by_names[tuple(norm(fr) for fr in c)].append(c)
    top = [c for c, _ in sorted(pf_chains.items(), key=lambda kv: (-kv[1], kv[0]))][:10]
    missing = [c for c in top
               if not any(all(same_frame(a, b) for a, b in zip(c, m))
                          for m in by_names.get(tuple(norm(fr) for fr in c), []))]
    words = ["mm_%s=%s" % kv for kv in mm.items()] + ["perf_%s=%s" % kv for kv in pf.items()]
    words += ["top=%d" % (len(top) - len(missing)), "top_n=%d" % len(top),
              "top_missing=%s" % (";".join(missing[0]).replace(" ", "_") if missing else "-")]
    print(" ".join(words))


def main():
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "expect":
        cmd_expect(a[1], a[2], a[3])
    elif len(a) >= 4 and a[0] == "summary":
        cmd_summary(a[1], a[2], a[3], a[4:])
    elif len(a) >= 4 and a[0] == "compare":
        cmd_compare(a[1], a[2], a[3], a[4:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
