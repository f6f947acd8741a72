"""Integration cases: packed exact events (PF_REC_PACKED, core/pf_packed.h). An --exact run's allocations and
frees go, delta-encoded, into one record per run of a thread's events; the reporter decodes them into the
very events the one-record-each form (PYFLOW_PACKED=0) gives, so every report of a recording is the same
byte for byte either way; a process killed mid-run keeps every event it finished."""
import json
import os
import shutil
import struct
import sys

from .common import line_of, once, per_version, prog, row, run

PROGRAM = "packed_events.py"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
from profile_stats import PACKED, packed_events, walk  # noqa: E402

ALLOC_SHORT, FREE = 21, 2


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v):
    return ((v << 1) ^ (v >> 63)) & (2**64 - 1)


def packable(rtype, aux):
    if rtype == ALLOC_SHORT:
        return aux & 0xFF < 6 and (aux >> 8) & ~0x0C == 0x12
    return rtype == FREE and aux & ~0xFF87 == 0 and aux & 7 < 6


def encode(rtype, aux, payload, state):
    """One event against state [t, addr, stack] (core/pf_packed.h), written independently of the runtime's
    encoder so that the reader is checked against the format's description."""
    t, addr = struct.unpack_from("<QQ", payload)
    body = varint(t - state[0]) + varint(zigzag((addr - state[1] + 2**63) % 2**64 - 2**63))
    state[0], state[1] = t, addr
    if rtype == ALLOC_SHORT:
        size, sid = struct.unpack_from("<II", payload, 16)
        flags = aux >> 8
        tag = 1 | (aux & 7) << 2 | (0x20 if flags & 0x4 else 0) | (0x40 if flags & 0x8 else 0)
        body += varint(size)
        if sid == state[2]:
            tag |= 0x80
        else:
            body += varint(zigzag(sid - state[2]))
            state[2] = sid
        return bytes([tag]) + body
    kind = aux >> 8
    tag = 2 | (aux & 7) << 2 | (0x20 if aux & 0x80 else 0) | (0x40 if kind else 0)
    return bytes([tag]) + body + (bytes([kind]) if kind else b"")


def repack(data, young=False):
    """The profile `data` (one record per event) with each chunk's runs of packable ALLOC_SHORT and FREE
    records replaced by packed records, everything else in place and in order. Returns (bytes, events).

    young: small allocations go in as YOUNG events (a life byte after their fields), and a free that may
    set its allocation's life byte instead of a FREE event, as core/pf_packed.h says, does. Such a free
    reads back at the time of the event before it, so the FREE record in `data` is retimed so too. Returns
    (bytes, events, the retimed one-record-each profile, frees that set a life byte)."""
    out, retimed = bytearray(data), bytearray(data)
    header_bytes, chunk_bytes = struct.unpack_from("<II", data, 12)
    events = aged = 0
    for off in range(header_bytes, len(data) - 16, chunk_bytes):
        if struct.unpack_from("<I", data, off)[0] == 0:
            continue
        end = min(off + chunk_bytes, len(data))
        chunk, group, state = bytearray(data[off:off + 16]), None, None

        def close():
            if group is not None:
                chunk.extend(struct.pack("<HHI", PACKED, 0, 8 + len(group)) + group)
                chunk.extend(bytes(-len(chunk) % 8))

        p = off + 16
        while p + 8 <= end:
            rtype, aux, size = struct.unpack_from("<HHI", data, p)
            if rtype == 0 or size < 8 or p + size > end:
                break
            payload = data[p + 8:p + size]
            if packable(rtype, aux) and (group is None or struct.unpack_from("<Q", payload)[0] >= state[0]):
                if group is None:
                    # the group's events written, its young allocations {addr: (event, life byte's offset,
                    # domain)}, and where and after which allocation's the last life byte was set
                    group, state, written, pending, due = bytearray(), [0, 0, 0], 0, {}, (-1, -1)
                t, addr = struct.unpack_from("<QQ", payload)
                if young and rtype == FREE and addr in pending:
                    born, life_at, domain = pending.pop(addr)
                    between = written - born - 1
                    if (not aux & 0x80 and aux & 7 == domain and aux >> 8 < 16 and between <= 14
                            and t - state[0] <= 2000 and not (due[0] == written and born > due[1])):
                        group[life_at] = (between + 1) | (aux >> 8) << 4
                        struct.pack_into("<Q", retimed, p + 8, state[0])
                        due, aged = (written, born), aged + 1
                        p += size
                        continue
                small = young and rtype == ALLOC_SHORT and struct.unpack_from("<I", payload, 16)[0] <= 512
                body = encode(rtype, aux, payload, state)
                if small:
                    group += bytes([body[0] | 3]) + body[1:] + b"\0"
                    pending[addr] = (written, len(group) - 1, aux & 7)
                else:
                    group += body
                written += 1
                events += 1
            else:
                close()
                group = None
                chunk.extend(data[p:p + size])
            p += size
        close()
        assert len(chunk) <= end - off
        out[off:end] = bytes(chunk) + bytes(end - off - len(chunk))
    if young:
        return bytes(out), events, bytes(retimed), aged
    return bytes(out), events


def record(c, tmp, name, *args, packed=True):
    path = os.path.join(tmp, name)
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYFLOW_PACKED": "1" if packed else "0"}
    cp = run([c.pyflow, "run", "--python", c.python, "--exact", "--no-report", "-o", path, prog(PROGRAM), *args],
             env=env)
    return cp, path


def reports(c, path):
    """Every rendering of the profile at path, run from its directory under one name: {format: bytes}."""
    out = {}
    for fmt in ("text", "json", "dot", "html", "csv", "speedscope", "pprof"):
        cp = run([c.pyflow, "report", os.path.basename(path), "--format", fmt], cwd=os.path.dirname(path),
                 text=False)
        assert cp.returncode == 0, f"{fmt}: {cp.stderr[-2000:]}"
        out[fmt] = cp.stdout
    return out


def packed_stats(path):
    """(bytes in packed records, their events, allocations among them, frees)."""
    data = open(path, "rb").read()
    nbytes = events = allocs = 0
    for rtype, p, size in walk(data):
        if rtype == PACKED:
            nbytes += size
            for ev in packed_events(data, p, size):
                events += 1
                allocs += ev[0] == ALLOC_SHORT
    return nbytes, events, allocs, events - allocs


@once
def case_packed_reports_identical(c):
    """One recording, its events one record each (PYFLOW_PACKED=0) and the same events packed (re-encoded
    here from the format's description, in place in their chunks): text, JSON, dot, HTML, CSV, speedscope
    and pprof reports are the same byte for byte. Then a packed recording of the same deterministic program:
    at most 24 bytes per allocation-and-free (56 one record each; 15.7 measured on this program, whose two
    threads take turns), and the program's lines
    allocate the same bytes and objects as in the unpacked recording, within 0.02% (the two threads'
    interleaving decides which objects come from the interpreter's free lists)."""
    a, b = os.path.join(c.tmp, "unpacked"), os.path.join(c.tmp, "repacked")
    os.makedirs(a, exist_ok=True)
    os.makedirs(b, exist_ok=True)
    cp, plain = record(c, a, "p.pfp", packed=False)
    assert cp.returncode == 0, cp.stderr
    data = open(plain, "rb").read()
    assert not any(rtype == PACKED for rtype, _, _ in walk(data)), "PYFLOW_PACKED=0 wrote packed records"
    packed, moved = repack(data)
    assert moved > 100000, f"only {moved} events to pack"
    with open(os.path.join(b, "p.pfp"), "wb") as f:
        f.write(packed)
    ra, rb = reports(c, plain), reports(c, os.path.join(b, "p.pfp"))
    for fmt in ra:
        assert ra[fmt] == rb[fmt], f"{fmt} report differs once the same events are packed"
    # young frees: a life byte for each free that may have one, against the same events, those frees
    # retimed to the event before them, one record each
    y, r = os.path.join(c.tmp, "young"), os.path.join(c.tmp, "retimed")
    os.makedirs(y, exist_ok=True)
    os.makedirs(r, exist_ok=True)
    young, _, retimed, aged = repack(data, young=True)
    assert aged > 50000, f"only {aged} frees set a life byte"
    for d, blob in ((y, young), (r, retimed)):
        with open(os.path.join(d, "p.pfp"), "wb") as f:
            f.write(blob)
    ry, rr = reports(c, os.path.join(y, "p.pfp")), reports(c, os.path.join(r, "p.pfp"))
    for fmt in ry:
        assert ry[fmt] == rr[fmt], f"{fmt} report differs once frees are young"

    cp, live = record(c, b, "live.pfp")
    assert cp.returncode == 0, cp.stderr
    nbytes, events, allocs, frees = packed_stats(live)
    assert allocs > 100000 and frees > 100000, f"{allocs} allocations and {frees} frees packed"
    per_pair = nbytes / (events / 2)
    assert per_pair <= 24, f"{per_pair:.1f} bytes per allocation-and-free"
    rep_a = run([c.pyflow, "report", plain, "--format", "json"])
    rep_b = run([c.pyflow, "report", live, "--format", "json"])
    assert rep_a.returncode == 0 and rep_b.returncode == 0, rep_a.stderr + rep_b.stderr
    doc_a, doc_b = json.loads(rep_a.stdout), json.loads(rep_b.stdout)
    # Two runs, two threads taking turns: where the GIL switches decides whether a dict or list object comes
    # from the interpreter's free list or from the allocator, so a line may allocate an object more or
    # less (64 bytes in one CI run out of 42.9 MB). A lost or doubled packed record is hundreds of events.
    for marker in ("CHURN", "DICTS", "KEPT", "GROWN"):
        line = line_of(prog(PROGRAM), "# " + marker)
        ra_, rb_ = row(doc_a, PROGRAM, line), row(doc_b, PROGRAM, line)
        for key in ("alloc_bytes", "alloc_count"):
            assert abs(ra_[key] - rb_[key]) <= 0.0002 * ra_[key], f"{marker}: {key} {ra_[key]} unpacked, {rb_[key]} packed"


@once
def case_young_frees_keep_every_row(c):
    """A small object freed within a few events of its allocation sets the allocation's life byte instead of
    writing a FREE event (core/pf_packed.h). One thread's deterministic program recorded with and without
    (PYFLOW_YOUNG_FREES=0): its lines allocate, peak and keep the same bytes and objects to the byte, and
    the profile's packed events take at most 0.85 of the bytes (0.76 measured)."""
    rows, sizes = [], []
    for young in ("1", "0"):
        path = os.path.join(c.tmp, f"young{young}.pfp")
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYFLOW_YOUNG_FREES": young}
        cp = run([c.pyflow, "run", "--python", c.python, "--exact", "--json", path + ".json", "-o", path,
                  prog(PROGRAM), "alone"], env=env)
        assert cp.returncode == 0, cp.stderr
        doc = json.load(open(path + ".json"))
        rows.append({m: row(doc, PROGRAM, line_of(prog(PROGRAM), "# " + m)) for m in ("CHURN", "DICTS", "KEPT", "GROWN")})
        nbytes, events, allocs, frees = packed_stats(path)
        assert allocs > 50000 and abs(frees - allocs) < 0.05 * allocs, f"{allocs} allocations, {frees} frees"
        sizes.append(nbytes)
    for m in rows[0]:
        for key in ("alloc_bytes", "alloc_count", "peak_bytes", "leaked_bytes"):
            assert rows[0][m][key] == rows[1][m][key], f"{m}: {key} {rows[0][m][key]} young, {rows[1][m][key]} not"
    assert sizes[0] <= 0.85 * sizes[1], f"packed bytes {sizes[0]} with young frees, {sizes[1]} without"


@per_version
def case_packed_sigkill_keeps_events(c):
    """A process that SIGKILLs itself after 20000 allocations of distinct sizes (every other one freed):
    its profile, written packed, holds each of those allocations and frees, and reads without complaint."""
    n = 20000
    cp, path = record(c, c.tmp, "killed.pfp", "kill", str(n))
    assert cp.returncode != 0, "the program was to kill itself"
    data = open(path, "rb").read()
    live, alloc_sizes, freed_sizes, packed = {}, set(), set(), 0
    for rtype, p, size in walk(data):
        if rtype != PACKED:
            continue
        for ev in packed_events(data, p, size):
            packed += 1
            if ev[0] == ALLOC_SHORT:
                live[ev[3]] = ev[4]
                alloc_sizes.add(ev[4])
            elif ev[3] in live:
                freed_sizes.add(live.pop(ev[3]))
    # bytearray(70000 + i) asks for 70000 + i + 1 bytes
    missing = [i for i in range(n) if 70001 + i not in alloc_sizes]
    assert not missing, f"{len(missing)} of {n} allocations lost, the first {missing[:5]} ({packed} packed events)"
    unfreed = [i for i in range(0, n - 1, 2) if 70001 + i not in freed_sizes]
    assert not unfreed, f"{len(unfreed)} of {n // 2} frees lost, the first {unfreed[:5]}"
    rep = run([c.pyflow, "report", path, "--format", "json"])
    assert rep.returncode == 0, rep.stderr
    killed = row(json.loads(rep.stdout), PROGRAM, line_of(prog(PROGRAM), "# KILLED"))
    assert killed["alloc_count"] >= n, f"the report counts {killed['alloc_count']} allocations of {n}"


@per_version
def case_exact_times_after_idle(c):
    """--exact's clock may give a small event (512 bytes or less) its thread's latest time again while events
    come densely, at most three in a row, in a process with one recording thread: the first small events
    after an idle spell may carry the time before it, never more than three of them, and a large block
    never. The 30 MB block made after a 0.4 s sleep (one block: the first event after the sleep) is the peak,
    at its time; before the sleep ended, the two lines after it show at most those three small events."""
    script = prog("exact_after_idle.py")
    cp, d = c.profile(script, extra=("--exact",))
    assert cp.returncode == 0, cp.stderr[-800:]
    big, small = row(d, "exact_after_idle.py", 7), row(d, "exact_after_idle.py", 8)
    assert big["alloc_bytes"] >= 30_000_000 and small["alloc_bytes"] >= 2000 * 49, (big, small)
    assert d["totals"]["peak_at_s"] >= 0.4, d["totals"]
    for t, _ in big["timeline"]:
        early = sum(b for (u, b) in big["timeline"] if u == t) + sum(b for (u, b) in small["timeline"] if u == t)
        assert t >= 0.38 or early <= 3 * 512, (t, early, big["timeline"], small["timeline"])
