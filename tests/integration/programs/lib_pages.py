"""Prints, for the libraries pyflow brings into the program whose code only start-up runs (libZydis, the
watch engine's decoder until a watch traps; liblzma, libunwind's dependency) or that only --native runs
(libunwind), the pages of their executable segments present in this process's page tables, at the
program's first line: "LIBRARY PRESENT OF PAGES" per library found."""
import os
import struct

PAGE = os.sysconf("SC_PAGE_SIZE")
WANTED = ("libZydis.so", "liblzma.so", "libunwind.so")

segments = []
with open("/proc/self/maps") as f:
    for line in f:
        parts = line.split()
        if len(parts) >= 6 and parts[1].startswith("r-x") and os.path.basename(parts[5]).startswith(WANTED):
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            segments.append((os.path.basename(parts[5]), lo, hi))
with open("/proc/self/pagemap", "rb", buffering=0) as pm:
    for name, lo, hi in segments:
        pm.seek(lo // PAGE * 8)
        words = pm.read((hi - lo) // PAGE * 8)
        present = sum(w >> 63 for (w,) in struct.iter_unpack("<Q", words))
        print(name, present, (hi - lo) // PAGE)
