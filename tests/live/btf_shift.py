#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write a copy of a BTF file in which one structure has a field inserted before MEMBER: the
offsets of MEMBER and every member after it grow by BYTES, and so does the structure's size,
as in the BTF of a kernel built with one more field there (another config, another version).
Everything else is byte for byte the same, so the file still parses as BTF.

    btf_shift.py IN OUT STRUCT MEMBER BYTES

STRUCT "" is the first anonymous structure that has MEMBER (mm_struct's fields are in one).

The type section is walked by the record sizes of the BTF format (include/uapi/linux/btf.h);
exit 1 if STRUCT or MEMBER is not found.
"""
import struct
import sys

# Bytes that follow the 12-byte struct btf_type, per kind: a fixed part, and per vlen entry.
EXTRA = {1: (4, 0), 2: (0, 0), 3: (12, 0), 4: (0, 12), 5: (0, 12), 6: (0, 8), 7: (0, 0),
         8: (0, 0), 9: (0, 0), 10: (0, 0), 11: (0, 0), 12: (0, 0), 13: (0, 8), 14: (4, 0),
         15: (0, 12), 16: (0, 0), 17: (4, 0), 18: (0, 0), 19: (0, 12)}
KIND_STRUCT = 4


def main():
    src, dst, sname, mname, nbytes = sys.argv[1:6]
    nbytes = int(nbytes)
    data = bytearray(open(src, "rb").read())
    magic, _ver, _flags, hdr_len, type_off, type_len, str_off, _str_len = \
        struct.unpack_from("<HBBIIIII", data, 0)
    if magic != 0xEB9F:
        sys.exit(f"{src}: not little-endian BTF (magic {magic:#x})")
    types, strs = hdr_len + type_off, hdr_len + str_off

    def name(off):
        end = data.index(0, strs + off)
        return data[strs + off:end].decode()

    pos = types
    while pos < types + type_len:
        name_off, info, _size = struct.unpack_from("<III", data, pos)
        kind, vlen, kflag = (info >> 24) & 0x1F, info & 0xFFFF, info >> 31
        fixed, per = EXTRA[kind]
        members = pos + 12
        found = [i for i in range(vlen) if name(struct.unpack_from("<I", data, members + 12 * i)[0]) == mname] \
            if kind == KIND_STRUCT and name(name_off) == sname else []
        if kind == KIND_STRUCT and name(name_off) == sname and (found or sname):
            if not found:
                sys.exit(f"struct {sname} has no member {mname}")
            i = found[0]
            for j in range(i, vlen):
                m = members + 12 * j
                off = struct.unpack_from("<I", data, m + 8)[0]
                # With kind_flag, the low 24 bits are the bit offset (the high 8 a bitfield's size).
                off = (off & 0xFF000000) | ((off & 0xFFFFFF) + 8 * nbytes) if kflag else off + 8 * nbytes
                struct.pack_into("<I", data, m + 8, off)
            struct.pack_into("<I", data, pos + 8, _size + nbytes)
            open(dst, "wb").write(data)
            return 0
        pos += 12 + fixed + per * vlen
    sys.exit(f"no struct {sname} in {src}")


if __name__ == "__main__":
    sys.exit(main())
