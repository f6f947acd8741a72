#!/usr/bin/env python3
"""What a saved profile's bytes are made of: records per type (count, bytes, share, average size), the
bytes that hold records against the file's size, and with --rate SECONDS the record bytes per second.
Reads the file straight from its format (core/pf_format.h), so it also works on profiles the reporter
would refuse. Used for the profile-growth figures in README.md:

    pyflow run -o /tmp/p.pflow --no-report app.py
    bench/profile_stats.py /tmp/p.pflow [--rate SECONDS]
"""
import argparse
import struct
import sys

TYPES = {1: "ALLOC", 2: "FREE", 3: "CODE", 4: "MODULE", 5: "THREAD", 6: "MARK", 7: "EXIT", 8: "COPY",
         9: "VERDICT", 10: "ACCESS_PAIR", 11: "WATCH_STATS", 12: "COPY_WRITE", 13: "STACK", 14: "SPAWN", 15: "WRITER",
         16: "ARGV", 17: "CONTENT", 18: "AGG_SITES", 19: "AGG_PEAK", 20: "NOTE", 21: "ALLOC_SHORT",
         22: "AGG_FLOWS", 23: "COPY_SHORT", 24: "NATIVE_STACK", 25: "PACKED"}
PACKED = 25


def walk(data):
    """Yields (type, offset, size) of every record, chunk by chunk, as the reader does (the integration
    tests read profiles with it too). A packed record's size is its valid bytes; the next record starts at
    the 8-aligned end."""
    header_bytes, chunk_bytes = struct.unpack_from("<II", data, 12)
    for off in range(header_bytes, len(data) - 16, chunk_bytes):
        if struct.unpack_from("<I", data, off)[0] == 0:
            continue
        p, end = off + 16, min(off + chunk_bytes, len(data))
        while p + 8 <= end:
            rtype, _aux, size = struct.unpack_from("<HHI", data, p)
            span = (size + 7) & ~7 if rtype == PACKED else size
            if rtype == 0 or size < 8 or span & 7 or p + span > end:
                break
            yield rtype, p, size
            p += span


def varint(data, p):
    """(value, offset after it) of the varint at p."""
    v = shift = 0
    while True:
        b = data[p]
        p += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, p


def unzigzag(u):
    return (u >> 1) ^ -(u & 1)


def packed_events(data, p, size):
    """Yields the events of the packed record at p (valid bytes size; core/pf_packed.h) as the records they
    stand for: (21, aux, t_ns, addr, size, stack_id) for an ALLOC_SHORT, (2, aux, t_ns, addr) for a FREE (a
    young allocation's free among them, handed out after the events its life byte says, at the time of the
    last of them)."""
    q, end, t, addr, sid, read, young = p + 8, p + size, 0, 0, 0, 0, []
    while True:
        due = [y for y in young if y[0] <= read]
        if due:
            young.remove(due[-1])   # the latest allocation's first
            yield 2, due[-1][2], t, due[-1][1]
            continue
        if q >= end or not data[q]:
            return
        tag = data[q]
        domain = tag >> 2 & 7
        dt, q = varint(data, q + 1)
        da, q = varint(data, q)
        t, addr = t + dt, (addr + unzigzag(da)) & (2**64 - 1)
        read += 1
        if tag & 3 != 2:
            n, q = varint(data, q)
            if not tag & 0x80:
                d, q = varint(data, q)
                sid += unzigzag(d)
            if tag & 3 == 3:
                life, q = data[q], q + 1
                if life:
                    young.append((read + (life & 15) - 1, addr, domain | (life >> 4) << 8))
            flags = 0x12 | (0x4 if tag & 0x20 else 0) | (0x8 if tag & 0x40 else 0)
            yield 21, domain | flags << 8, t, addr, n, sid
        else:
            kind = 0
            if tag & 0x40:
                kind, q = data[q], q + 1
            yield 2, domain | kind << 8 | (0x80 if tag & 0x20 else 0), t, addr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--events", action="store_true", help="also count the events of packed records")
    ap.add_argument("--rate", type=float, help="the run's wall seconds: also print record bytes per second")
    a = ap.parse_args()
    data = open(a.profile, "rb").read()
    if data[:8] != b"PYFLOWPF":
        sys.exit(f"{a.profile}: not a pyflow profile")
    version = struct.unpack_from("<I", data, 8)[0]
    count, size, events = {}, {}, 0
    for rtype, p, n in walk(data):
        count[rtype] = count.get(rtype, 0) + 1
        size[rtype] = size.get(rtype, 0) + n
        if rtype == PACKED and a.events:
            events += sum(1 for _ in packed_events(data, p, n))
    total = sum(size.values())
    print(f"{a.profile}: format version {version}, {len(data)} bytes, {total} in records")
    print(f"{'type':<12} {'count':>9} {'bytes':>11} {'share':>6} {'avg':>6}")
    for rtype in sorted(size):
        print(f"{TYPES.get(rtype, str(rtype)):<12} {count[rtype]:>9} {size[rtype]:>11} "
              f"{100 * size[rtype] / total:>5.1f}% {size[rtype] / count[rtype]:>6.0f}")
    if a.events:
        print(f"packed events: {events}, {size.get(PACKED, 0) / max(events, 1):.2f} bytes each")
    if a.rate:
        print(f"record bytes per second: {total / a.rate / 1e6:.3f} MB/s")


if __name__ == "__main__":
    main()
