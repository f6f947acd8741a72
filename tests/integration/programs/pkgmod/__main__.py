import sys
big = bytearray(1_500_000)
print("module main", sys.argv[1:])
