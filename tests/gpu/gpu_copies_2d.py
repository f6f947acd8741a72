"""2D, 3D and peer copies. Ground truth: lines 21, 22 allocate 4 MiB device blocks a, b. Line 23 uploads 4 rows
of 1 MiB back to back into a (h2d, 4 MiB), 24 the same bytes again (redundant), 25 2 rows 2 MiB apart (h2d,
2 MiB, not judged: not contiguous). 27 downloads a by the driver's 2D copy (d2h), 31 by its unaligned one (a
static runtime's cudaMemcpy2D), 45 by its 3D copy; 44 uploads 2 slices of 2 rows by the runtime's 3D copy
(h2d, 4 MiB). 28 copies a to b between devices (d2d), 29 b to a by the driver's peer copy (d2d)."""
import ctypes
import os
import sys

cuda = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else os.environ["PYFLOW_TEST_MOCKCUDA"])
size_t, u64, vp, MiB = ctypes.c_size_t, ctypes.c_ulonglong, ctypes.c_void_p, 1 << 20
cuda.cudaMemcpy2D.argtypes = [vp, size_t, vp, size_t, size_t, size_t, ctypes.c_int]
cuda.cudaMemcpyPeer.argtypes = [vp, ctypes.c_int, vp, ctypes.c_int, size_t]
cuda.cuMemcpyPeer.argtypes = [u64, vp, u64, vp, size_t]
MEMCPY2D = type("MEMCPY2D", (ctypes.Structure,), {"_fields_": [
    (n, t) for n, t in zip("sx sy stype shost sdev sarr spitch dx dy dtype dhost ddev darr dpitch w h".split(),
                           (size_t, size_t, ctypes.c_int, vp, u64, vp, size_t, size_t, size_t, ctypes.c_int, vp,
                            u64, vp, size_t, size_t, size_t))]})
a, b = vp(), vp()
host, back = ctypes.create_string_buffer(b"\x07" * (4 * MiB), 4 * MiB), ctypes.create_string_buffer(4 * MiB)
assert cuda.cudaMalloc(ctypes.byref(a), size_t(4 * MiB)) == 0
assert cuda.cudaMalloc(ctypes.byref(b), size_t(4 * MiB)) == 0
assert cuda.cudaMemcpy2D(a, MiB, host, MiB, MiB, 4, 1) == 0
assert cuda.cudaMemcpy2D(a, MiB, host, MiB, MiB, 4, 1) == 0
assert cuda.cudaMemcpy2D(a, MiB, host, 2 * MiB, MiB, 2, 1) == 0
c = MEMCPY2D(stype=2, sdev=a.value, spitch=MiB, dtype=1, dhost=ctypes.addressof(back), dpitch=MiB, w=MiB, h=4)
assert cuda.cuMemcpy2D_v2(ctypes.byref(c)) == 0
assert cuda.cudaMemcpyPeer(b, 1, a, 0, 4 * MiB) == 0
assert cuda.cuMemcpyPeer(a.value, None, b.value, None, 4 * MiB) == 0
assert back.raw == host.raw
assert cuda.cuMemcpy2DUnaligned_v2(ctypes.byref(c)) == 0
PP = type("PITCHED", (ctypes.Structure,), {"_fields_": [("ptr", vp), ("pitch", size_t), ("xsize", size_t),
                                                         ("ysize", size_t)]})
P3 = type("MEMCPY3DPARMS", (ctypes.Structure,), {"_fields_": [
    ("sarr", vp), ("sx", size_t), ("sy", size_t), ("sz", size_t), ("sptr", PP), ("darr", vp), ("dx", size_t),
    ("dy", size_t), ("dz", size_t), ("dptr", PP), ("w", size_t), ("h", size_t), ("d", size_t), ("kind", ctypes.c_int)]})
C3 = type("MEMCPY3D", (ctypes.Structure,), {"_fields_": [(n, t) for n, t in zip(
    "sx sy sz slod stype shost sdev sarr r0 spitch sheight dx dy dz dlod dtype dhost ddev darr r1 dpitch dheight w h d"
    .split(), (size_t,) * 4 + (ctypes.c_int, vp, u64, vp, vp, size_t, size_t) + (size_t,) * 4 +
    (ctypes.c_int, vp, u64, vp, vp) + (size_t,) * 5)]})
up3 = P3(sptr=PP(ctypes.addressof(host), MiB, MiB, 2), dptr=PP(a.value, MiB, MiB, 2), w=MiB, h=2, d=2, kind=1)
down3 = C3(stype=2, sdev=a.value, spitch=MiB, sheight=2, dtype=1, dhost=ctypes.addressof(back), dpitch=MiB,
           dheight=2, w=MiB, h=2, d=2)
assert cuda.cudaMemcpy3D(ctypes.byref(up3)) == 0
assert cuda.cuMemcpy3D_v2(ctypes.byref(down3)) == 0 and back.raw == host.raw
print("2d ok")
