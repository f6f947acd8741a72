#!/usr/bin/env python3
"""Where pyflow's resident memory goes at the profiled program's peak, by structure.

Needs a build configured with -DPYFLOW_MAP_LOG=ON: its runtime appends every mapping it makes for itself
(and every unmap) to /tmp/pyflow-maps.PID with the source file and function that made it. This script runs one
`pyflow run --no-report` of a program, samples the Python process's RSS every few milliseconds and, each
time it reaches a new high, counts the resident pages of every live runtime mapping from
/proc/PID/pagemap (leaving out the kernel's shared zero page, which a read of a never-written page maps
and RSS does not count) and reads /proc/PID/smaps for pyflow's own files (libpyflow.so and its .bss,
libZydis). It prints the breakdown at the highest sample taken and the highest RSS seen.

    bench/rss_breakdown.py --pyflow MAPLOG_BUILD/bin/pyflow [--python /usr/bin/python3] [MODE FLAGS...] -- PROGRAM
    e.g. bench/rss_breakdown.py --pyflow /tmp/maplog/bin/pyflow --exact --native -- bench/workloads/churn.py
"""
import argparse
import ctypes
import glob
import mmap
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

PAGE = os.sysconf("SC_PAGE_SIZE")

# The structure a mapping belongs to, by the source file and function that made it (first match).
LABELS = [
    ("pf_objdense.c", "object table: dense map (directory and leaves)"),
    ("pf_objtable.c:pf_objtable_init", "object table: filter"),
    ("pf_objtable.c", "object table: hashed slots and pools"),
    ("pf_writer.c", "profile: writer's mapped chunks"),
    ("pf_seqstore.c:grow_slots", "stack store: index"),
    ("pf_seqstore.c", "stack store: segments"),
    ("pf_idtable.c:grow", "id tables: slot arrays"),
    ("pf_idtable.c", "id tables: entries"),
    ("pf_cfi.c", "native walk: CFI table"),
    ("pf_aggregate", "aggregate tables"),
]


def label_of(where):
    base = os.path.basename(where)
    for key, label in LABELS:
        if base.startswith(key):
            return label
    return base


def python_child(launcher):
    """The pid of the profiled interpreter: the launcher's descendant (the launcher is not counted)."""
    todo = [launcher]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            continue
        for k in kids:
            try:
                if "python" in os.readlink(f"/proc/{k}/exe"):
                    return k
            except OSError:
                pass
        todo += kids
    return None


def live_maps(pid):
    """Live runtime mappings {address: (bytes, where)} from the log, replayed in order."""
    live = {}
    try:
        with open(f"/tmp/pyflow-maps.{pid}") as f:
            for line in f:
                op, addr, size, where = line.split()
                addr, size = int(addr, 16), int(size, 16)
                if op == "M":
                    live[addr] = (size, where)
                else:
                    live.pop(addr, None)
    except OSError:
        pass
    return live


def zero_page_pfn():
    """The kernel's shared zero page, which a read of a never-written anonymous page maps: present in the
    pagemap but not counted in RSS. Found by reading a fresh mapping of our own (the frame numbers need
    root; without them every present page counts)."""
    m = mmap.mmap(-1, PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m[0]    # a read: maps the zero page
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(addr // PAGE * 8)
        pfn = struct.unpack("<Q", f.read(8))[0] & ((1 << 55) - 1)
    return pfn or None


ZERO_PFN = zero_page_pfn()


def resident(pagemap, addr, size):
    first, n = addr // PAGE, (size + PAGE - 1) // PAGE
    pagemap.seek(first * 8)
    data = pagemap.read(n * 8)
    pages = 0
    for (e,) in struct.iter_unpack("<Q", data):
        pfn = e & ((1 << 55) - 1)
        if e >> 63 and pfn != ZERO_PFN:
            pages += 1
    return pages * PAGE


def smaps_files(pid):
    """Rss of pyflow's own library mappings (its .bss is the anonymous mapping right after it)."""
    out, prev_pyflow, cur = {}, False, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$", line)
            if m:
                path = m.group(3)
                if "libpyflow" in path:
                    cur = "libpyflow.so (code, data)"
                elif "Zydis" in path:
                    cur = "libZydis (code, data)"
                elif prev_pyflow and not path:
                    cur = "libpyflow.so .bss"
                else:
                    cur = None
                prev_pyflow = "libpyflow" in path
            elif cur and line.startswith("Rss:"):
                out[cur] = out.get(cur, 0) + int(line.split()[1]) * 1024
    return out


def snapshot(pid):
    parts, maps = {}, live_maps(pid)
    with open(f"/proc/{pid}/pagemap", "rb") as pm:
        for addr, (size, where) in maps.items():
            try:
                parts[label_of(where)] = parts.get(label_of(where), 0) + resident(pm, addr, size)
            except OSError:
                pass
    parts.update(smaps_files(pid))
    with open(f"/proc/{pid}/smaps_rollup") as f:
        roll = {l.split(":")[0]: int(l.split()[1]) * 1024 for l in f if l.split(":")[0] in ("Rss", "Anonymous")}
    return roll, parts, bool(maps)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pyflow", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--every", type=float, default=0.005, help="seconds between RSS samples")
    if "--" not in sys.argv:
        sys.exit("usage: rss_breakdown.py --pyflow P [FLAGS...] -- PROGRAM [ARGS...]")
    cut = sys.argv.index("--")
    a, flags = ap.parse_known_args(sys.argv[1:cut])
    prog = sys.argv[cut + 1:]
    for old in glob.glob("/tmp/pyflow-maps.*"):
        try:
            os.unlink(old)
        except OSError:
            pass
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [a.pyflow, "run", "--no-report", "-o", os.path.join(tmp, "p.pflow"), *flags, "--python", a.python, *prog]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        pid, best, best_rss, taken_at = None, None, 0, 0
        while p.poll() is None:
            try:
                pid = pid or python_child(p.pid)
                if pid:
                    with open(f"/proc/{pid}/statm") as f:
                        rss = int(f.read().split()[1]) * PAGE
                    if rss > best_rss and (rss > taken_at + 16 * PAGE or not best):
                        best, best_rss, taken_at = snapshot(pid), rss, rss
                    best_rss = max(best_rss, rss)
            except (OSError, ValueError):
                pass
            time.sleep(a.every)
    if not best:
        sys.exit("no sample of the Python process (is the build configured with -DPYFLOW_MAP_LOG=ON?)")
    roll, parts, logged = best
    if not logged:
        print("no mapping of the runtime logged at the peak: is the build configured with -DPYFLOW_MAP_LOG=ON?")
    mib = 1 << 20
    print(f"peak sample: Rss {roll['Rss'] / mib:.1f} MiB (anonymous {roll['Anonymous'] / mib:.1f}); "
          f"highest RSS seen {best_rss / mib:.1f} MiB")
    for label, b in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"  {b / mib:6.2f} MiB  {label}")
    print(f"  {sum(parts.values()) / mib:6.2f} MiB  pyflow's total")


if __name__ == "__main__":
    main()
