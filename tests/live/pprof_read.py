#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Read a --pprof profile with python3-protobuf, not with mmscope's encoder (tests/live/test_pprof.sh).

  pprof_read.py PROFILE.pb.gz

The messages come from tests/live/profile.proto (pprof's public field numbers), compiled here
by protoc. Checks the rules of profile.proto that readers rely on, then prints one fact a line:
  error TEXT                       a rule broken (the test fails on any)
  sample_type TYPE UNIT            in order
  period_type TYPE UNIT / period N / default_sample_type NAME
  time_nanos N / duration_nanos N
  total TYPE N                     the sum of that value over the samples
  label KEY VALUE N                samples' first value by label (string labels; pid numeric)
  function NAME N                  first value of the samples whose stack holds NAME (once)
  leaf NAME N                      ... whose leaf function is NAME
  mapping FILENAME BUILD_ID START LIMIT OFFSET HAS_FUNCTIONS
  kernel_locations N / unmapped_locations N
  comment TEXT
"""
import collections
import gzip
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
with tempfile.TemporaryDirectory() as gen:
    subprocess.run(["protoc", "-I", here, "--python_out", gen, os.path.join(here, "profile.proto")],
                   check=True)
    sys.path.insert(0, gen)
    import profile_pb2  # noqa: E402

raw = open(sys.argv[1], "rb").read()
if raw[:2] != b"\x1f\x8b":
    print("error not gzipped")
    sys.exit(0)
p = profile_pb2.Profile()
p.ParseFromString(gzip.decompress(raw))
st = list(p.string_table)


def s(i):
    if not 0 <= i < len(st):
        print(f"error string index {i} of {len(st)}")
        return "?"
    return st[i]


if not st or st[0] != "":
    print("error string_table[0] is not the empty string")
if len(set(st)) != len(st):
    print("error a string twice in string_table")

def by_id(items, what):
    d = {}
    for x in items:
        if x.id == 0 or x.id in d:
            print(f"error {what} id {x.id} zero or repeated")
        d[x.id] = x
    return d


maps = by_id(p.mapping, "mapping")
locs = by_id(p.location, "location")
funcs = by_id(p.function, "function")
for l in p.location:
    if l.mapping_id and l.mapping_id not in maps:
        print(f"error location {l.id}: no mapping {l.mapping_id}")
    if l.mapping_id and not (maps[l.mapping_id].memory_start <= l.address < maps[l.mapping_id].memory_limit):
        print(f"error location {l.id}: address {l.address:#x} outside its mapping")
    if not l.mapping_id and not l.line:
        print(f"error location {l.id}: neither mapping nor function")
    for ln in l.line:
        if ln.function_id not in funcs:
            print(f"error location {l.id}: no function {ln.function_id}")

for t in p.sample_type:
    print("sample_type", s(t.type), s(t.unit))
print("period_type", s(p.period_type.type), s(p.period_type.unit))
print("period", p.period)
print("default_sample_type", s(p.default_sample_type) if p.default_sample_type else "")
print("time_nanos", p.time_nanos)
print("duration_nanos", p.duration_nanos)

totals = [0] * len(p.sample_type)
labels = collections.Counter()
functions = collections.Counter()
leaves = collections.Counter()


def names(loc_id):
    l = locs.get(loc_id)
    if l is None:
        print(f"error sample: no location {loc_id}")
        return []
    return [s(funcs[ln.function_id].name) for ln in l.line if ln.function_id in funcs]


for smp in p.sample:
    if len(smp.value) != len(p.sample_type):
        print(f"error a sample of {len(smp.value)} values, {len(p.sample_type)} types")
        continue
    for i, v in enumerate(smp.value):
        totals[i] += v
    n = smp.value[0]
    for lb in smp.label:
        labels[(s(lb.key), s(lb.str) if lb.str else str(lb.num))] += n
    stack = [names(i) for i in smp.location_id]
    if stack and stack[0]:
        leaves[stack[0][-1]] += n
    for name in set(x for frame in stack for x in frame):
        functions[name] += n

for t, v in zip(p.sample_type, totals):
    print("total", s(t.type), v)
for (k, v), n in sorted(labels.items()):
    print("label", k, v.replace(" ", "_"), n)
for name, n in sorted(functions.items()):
    print("function", name.replace(" ", "_"), n)
for name, n in sorted(leaves.items()):
    print("leaf", name.replace(" ", "_"), n)
for m in p.mapping:
    print("mapping", s(m.filename), s(m.build_id) or "-", m.memory_start, m.memory_limit,
          m.file_offset, int(m.has_functions))
kmaps = {m.id for m in p.mapping if s(m.filename) == "[kernel.kallsyms]"}
print("kernel_locations", sum(1 for l in p.location if l.mapping_id in kmaps))
print("unmapped_locations", sum(1 for l in p.location if not l.mapping_id))
for c in p.comment:
    print("comment", s(c))
