# A busy copying program for the default recording's size switch (tests/integration/cases/longrun.py): a
# fixed amount of work, 80000 copies of 256 KB (about 20 GB copied), whatever the machine's speed.
buf = bytearray(b"c" * 262144)
total = 0
for i in range(80000):
    total += len(bytes(buf))
print(total)
