#!/usr/bin/env python3
"""Seed corpus for fuzz_profile from real profiles (core/pf_format.h layout).

A real profile is 4 MiB: a 4 KiB header, then 64 KiB chunks that are mostly zeros, with the launcher's
trailer chunk (the EXIT record) near the end. libFuzzer only mutates the first -max_len bytes, so the real
files would never show it the trailer. Each profile is therefore also written *compacted*: the same
records, in the same order and with the same thread ids, re-packed into small chunks (the header's
chunk_bytes patched; the reader accepts any multiple of 8 from 4096). Then variants the reader must
survive: compacted files cut short, bit-flipped, with a record length of 3 (corrupt), and the empty,
foreign and bad-magic files of the integration test corrupt_profiles.

    make_seeds.py OUT_DIR PROFILE...      (prints how many seeds it wrote; exit 1 if no profile was usable)
"""
import os
import random
import struct
import sys

HEADER = 4096
CHUNK_HDR = 16
CHUNK_MAGIC = 0x4B434650
PACKED = 25     # PF_REC_PACKED


def records(data):
    """(tid, [record bytes]) per chunk, in file order; None if this is not a walkable profile."""
    if len(data) < HEADER or data[:8] != b"PYFLOWPF":
        return None
    cb = struct.unpack_from("<I", data, 16)[0]
    if cb < 4096 or cb & 7:
        return None
    chunks = []
    for off in range(HEADER, len(data) - CHUNK_HDR + 1, cb):
        magic, tid = struct.unpack_from("<II", data, off)
        if magic == 0:
            continue
        if magic != CHUNK_MAGIC:
            return None
        recs, p, end = [], off + CHUNK_HDR, min(off + cb, len(data))
        while p + 8 <= end:
            typ, _aux, n = struct.unpack_from("<HHI", data, p)
            if typ == PACKED:   # its length is its valid bytes: it takes up to the 8-aligned end
                n = (n + 7) & ~7
            if typ == 0 or n < 8 or n & 7 or p + n > end:
                break
            recs.append(data[p:p + n])
            p += n
        chunks.append((tid, recs))
    return chunks


def compact(data, chunks, chunk_bytes):
    """The same records re-packed into chunks of chunk_bytes (a record never spans two chunks)."""
    biggest = max((len(r) for _, recs in chunks for r in recs), default=0)
    while chunk_bytes < CHUNK_HDR + biggest + 8:
        chunk_bytes *= 2
    head = bytearray(data[:HEADER])
    struct.pack_into("<I", head, 16, chunk_bytes)
    out = [bytes(head)]
    for tid, recs in chunks:
        body = b""
        for r in recs + [None]:
            if r is None or len(body) + len(r) + 8 > chunk_bytes - CHUNK_HDR:
                chunk = struct.pack("<IIQ", CHUNK_MAGIC, tid, 0) + body
                out.append(chunk + b"\0" * (chunk_bytes - len(chunk)))
                body = b""
            if r is not None:
                body += r
    return b"".join(out)


def main():
    out, profiles = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    rnd = random.Random(7)
    seeds = {}
    usable = 0
    for path in profiles:
        try:
            data = open(path, "rb").read()
        except OSError:
            continue
        chunks = records(data)
        if not chunks:
            continue
        usable += 1
        name = os.path.basename(path)
        for cb in (4096, 16384):
            small = compact(data, chunks, cb)
            seeds[f"{name}.c{cb}"] = small
            seeds[f"{name}.c{cb}.cut"] = small[: HEADER + (len(small) - HEADER) * 2 // 3]
            flipped = bytearray(small)
            for _ in range(16):
                flipped[rnd.randrange(HEADER, len(flipped))] ^= 1 << rnd.randrange(8)
            seeds[f"{name}.c{cb}.flip"] = bytes(flipped)
        bad = bytearray(seeds[f"{name}.c4096"])
        struct.pack_into("<I", bad, HEADER + CHUNK_HDR + 4, 3)     # first record's length: 3
        seeds[f"{name}.badlen"] = bytes(bad)
        seeds[f"{name}.head"] = data[:HEADER + 8192]
    if not usable:
        print("make_seeds: no usable profile among", profiles, file=sys.stderr)
        return 1
    seeds["empty"] = b""
    seeds["foreign"] = b"hello world, not a profile at all" * 200
    seeds["header-only"] = next(v for k, v in seeds.items() if k.endswith(".c4096"))[:HEADER]
    for k, v in seeds.items():
        with open(os.path.join(out, "seed-" + k), "wb") as f:
            f.write(v)
    print(f"make_seeds: {len(seeds)} seeds from {usable} profiles, largest {max(map(len, seeds.values()))} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
