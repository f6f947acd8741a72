#!/usr/bin/env python3
"""Compares the call stacks two recordings charged their allocations to, allocation by allocation: for two
runs of one deterministic program (by two builds, say) every allocation must come out with the same stack.

    bench/stack_sequence.py A.pyflow B.pyflow [--show N]

Each ALLOC, ALLOC_SHORT and packed allocation is resolved to its stack's content, whatever its id: the
Python frames as (file, function, first line, instruction offset) from the CODE records, and the native IPs
as (module file name, offset in it) from the MODULE records (addresses move with ASLR and with the size of
the preloaded runtime). The two profiles' (stack, size, domain, flags) multisets must be equal; the first
differences are printed. Exits 1 when they differ. Reads the format directly (core/pf_format.h), as
bench/profile_stats.py does.
"""
import argparse
import bisect
import collections
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_stats import PACKED, packed_events, walk  # noqa: E402

ALLOC, CODE, MODULE, STACK, ALLOC_SHORT, NATIVE_STACK = 1, 3, 4, 13, 21, 24
STACK_REF = 0x10           # PF_ALLOC_STACK_REF
NATIVE_BY_ID = 0x1         # PF_STACK_NATIVE_BY_ID


def allocations(path):
    """Counter of (stack, size, domain, flags) over the profile's allocations; stack = (python frames,
    native frames), both innermost first."""
    data = open(path, "rb").read()
    if data[:8] != b"PYFLOWPF":
        sys.exit(f"{path}: not a pyflow profile")
    codes, modules, stacks, natives, raw = {}, [], {}, {}, collections.Counter()
    for rtype, p, size in walk(data):
        aux = struct.unpack_from("<H", data, p + 2)[0]
        q = p + 8
        if rtype == CODE:
            cid, first, flen, nlen = struct.unpack_from("<IiII", data, q)
            codes[cid] = (data[q + 24:q + 24 + flen].decode(errors="replace"),
                          data[q + 24 + flen:q + 24 + flen + nlen].decode(errors="replace"), first)
        elif rtype == MODULE:
            start, end, bias, plen = struct.unpack_from("<QQQI", data, q)
            modules.append((start, end, bias, os.path.basename(data[q + 32:q + 32 + plen].decode(errors="replace"))))
        elif rtype == STACK:
            sid, n_py, n_native = struct.unpack_from("<IHH", data, q)
            py = struct.unpack_from(f"<{2 * n_py}I", data, q + 8)
            tail = q + 8 + 8 * n_py
            if aux & NATIVE_BY_ID:
                native = ("id", struct.unpack_from("<I", data, tail)[0])
            else:
                native = struct.unpack_from(f"<{n_native}Q", data, tail)
            stacks[sid] = (py, native)
        elif rtype == NATIVE_STACK:
            nid, n = struct.unpack_from("<IH", data, q)
            natives[nid] = struct.unpack_from(f"<{n}Q", data, q + 8)
        elif rtype == ALLOC:
            _t, _addr, sz, _est, domain, flags, n_py, n_native = struct.unpack_from("<QQQQBBHH", data, q)
            tail = q + 40
            if flags & STACK_REF:
                raw[(("id", struct.unpack_from("<I", data, tail)[0]), sz, domain, flags)] += 1
            else:
                py = struct.unpack_from(f"<{2 * n_py}I", data, tail)
                native = struct.unpack_from(f"<{n_native}Q", data, tail + 8 * n_py)
                raw[((py, native), sz, domain, flags)] += 1
        elif rtype == ALLOC_SHORT:
            _t, _addr, sz, sid = struct.unpack_from("<QQII", data, q)
            raw[(("id", sid), sz, aux & 0xFF, aux >> 8)] += 1
        elif rtype == PACKED:
            for ev in packed_events(data, p, size):
                if ev[0] == ALLOC_SHORT:
                    raw[(("id", ev[5]), ev[4], ev[1] & 0xFF, ev[1] >> 8)] += 1
    modules.sort()
    starts, places = [m[0] for m in modules], {}

    def where(ip):
        if ip not in places:
            i = bisect.bisect_right(starts, ip) - 1
            # segments may overlap (a module listed again): the latest start at or below ip that holds it
            while i >= 0 and not modules[i][0] <= ip < modules[i][1]:
                i -= 1
            places[ip] = (modules[i][3], ip - modules[i][2]) if i >= 0 else ("?", ip)
        return places[ip]

    def content(st):
        if st[0] == "id":
            st = stacks.get(st[1], (("missing", st[1]), ()))
        py, native = st
        if native and native[0] == "id":
            native = natives.get(native[1], ("missing",))
        frames = tuple((codes.get(py[i], ("?", "?", py[i])), py[i + 1]) for i in range(0, len(py), 2))
        return frames, tuple(where(ip) if isinstance(ip, int) else ip for ip in native)

    out = collections.Counter()
    for (st, sz, domain, flags), n in raw.items():
        out[(content(st), sz, domain, flags & ~STACK_REF)] += n
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--show", type=int, default=5, help="differences to print")
    args = ap.parse_args()
    a, b = allocations(args.a), allocations(args.b)
    only_a, only_b = a - b, b - a
    total = sum(a.values())
    if not only_a and not only_b:
        print(f"same stacks: {total} allocations over {len({k[0] for k in a})} stacks")
        return 0
    print(f"DIFFER: {sum(only_a.values())} allocations only in {args.a}, {sum(only_b.values())} only in {args.b}"
          f" (of {total} and {sum(b.values())})")
    for name, only in ((args.a, only_a), (args.b, only_b)):
        for key, n in only.most_common(args.show):
            print(f"  {name}: {n} x size {key[1]} domain {key[2]} flags {key[3]:#x} stack {key[0]}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
