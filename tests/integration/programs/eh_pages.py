"""How many pages of call frame information (.eh_frame_hdr and .eh_frame) of the loaded objects are in this
process's page tables after a spell of work on stacks seen before. Prints "eh pages N of M" (present pages
of the spans, pages in them); run plain, N is what the program itself keeps (nothing reads them: 0 on a C
interpreter). Under --native pyflow's unwinders read them for every new stack, and must give them back.
With a library path as argument the program first loads it, calls back into Python from it and unloads it
(dlclose): from then on a range the loader freed may hold another mapping, and pyflow gives nothing back.

A span is what the runtime would give back: from the page after .eh_frame_hdr starts to the last whole page
of the read-only segment that holds it, found here from /proc/self/maps and each file's ELF headers."""
import os
import struct
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")


def spans_of(path, base_of_file):
    """[(lo, hi)] of the object at path, loaded so that its vaddr 0 is at base_of_file."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:
                return []
            phoff, = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return []
    phdrs = [struct.unpack_from("<IIQQQQQQ", table, i * phentsize) for i in range(phnum)]
    hdr = [p for p in phdrs if p[0] == 0x6474E550]  # PT_GNU_EH_FRAME
    if not hdr:
        return []
    at = hdr[0][3]
    out = []
    for typ, flags, off, vaddr, _, filesz, _, _ in phdrs:
        if typ == 1 and vaddr <= at < vaddr + filesz and not flags & 2:
            lo = base_of_file + (at + PAGE - 1) // PAGE * PAGE
            hi = base_of_file + (vaddr + filesz) // PAGE * PAGE
            if lo < hi:
                out.append((lo, hi))
    return out


def all_spans():
    bases, spans = {}, []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6 or not parts[5].startswith("/") or parts[5] in bases:
                continue
            lo = int(parts[0].split("-")[0], 16)
            if int(parts[2], 16) != 0:
                continue
            path = parts[5]
            with open(path, "rb") as elf:
                head = elf.read(64)
            etype = struct.unpack_from("<H", head, 16)[0] if head[:4] == b"\x7fELF" else 0
            # ET_EXEC is linked at its addresses; ET_DYN's first segment (at file offset 0) is its vaddr 0
            bases[path] = 0 if etype == 2 else lo
            spans += spans_of(path, bases[path])
    return spans


def present(spans, pagemap, buf):
    """(present pages, pages) of the spans, read with the same calls every time: the count must not make
    stacks of its own that the warm-up did not."""
    n = total = 0
    view = memoryview(buf)
    for lo, hi in spans:
        pages = (hi - lo) // PAGE
        pagemap.seek(lo // PAGE * 8)
        got = pagemap.readinto(view[: pages * 8])
        n += sum(b >> 7 for b in view[7:got:8])
        total += pages
    return n, total


def new_stacks():
    """Code paths through C the interpreter has not run yet: each of their stacks is new to the unwinders."""
    import decimal, json, random, zlib, hashlib, fractions  # noqa: E401
    kept = [json.dumps({"k": list(range(50))}), zlib.compress(b"x" * 5000), hashlib.sha256(b"y").hexdigest(),
            str(decimal.Decimal(1) / decimal.Decimal(7)), random.random(), fractions.Fraction(3, 7) ** 5]
    return kept


def quiet(n):
    """Allocations on stacks seen before: the unwinders read nothing new."""
    total = 0
    for i in range(n):
        total += len(str(i))
    return total


def load_and_unload(path):
    import _ctypes
    import ctypes
    callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda i: len(bytearray(100_000 + i)))
    lib = ctypes.CDLL(path)
    lib.call_back.argtypes = (type(callback), ctypes.c_int)
    lib.call_back(callback, 1)
    handle = lib._handle
    del lib
    _ctypes.dlclose(handle)


def main():
    if len(sys.argv) > 1:
        load_and_unload(sys.argv[1])
    spans = all_spans()
    buf = bytearray(max((hi - lo) // PAGE * 8 for lo, hi in spans))
    with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
        present(spans, pagemap, buf)    # its own stacks, seen before the count that matters
        new_stacks()
        present(spans, pagemap, buf)
        counts = []
        for _ in range(3):  # a count that meets stacks new to it (the interpreter's specializing) reads pages
            quiet(150_000)  # itself: they are given back in the next quiet spell, and the next count is clean
            counts.append(present(spans, pagemap, buf))
    n, total = min(counts)
    print(f"eh pages {n} of {total}")


main()
