"""Pure-Python copies: bytes(bytearray) and slicing duplicate buffers.

What the report shows: line 8 (bytes(buf)) copies 16 MB that nobody modifies: redundant; line 11
(a bytearray copy that is then changed) is not.
"""
buf = bytearray(b"x" * 16_000_000)

frozen = bytes(buf)           # redundant: neither is changed afterwards
print(len(frozen))

work = bytearray(buf)         # needed: the copy is changed below
work[0] = 0
print(work[:1])
