# Copies that no verdict will judge, for the short COPY record (tests/integration/cases/longrun.py): 40
# copies of 4 MB into the first half of an 8 MB buffer (a piece of an object, never a redundant-copy
# candidate: not linked for a verdict), each recorded exactly.
src = bytearray(4_000_000)  # SRC
big = bytearray(8_000_000)  # BIG
for i in range(40):
    src[0] = i
    big[0:4_000_000] = src  # PIECE
print(big[0])
