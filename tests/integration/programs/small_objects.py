"""Many small, short-lived objects: a str and a tuple key built for every dict lookup. Under --exact each
allocation and each free is a record: about 12 MB of profile a round. Usage: small_objects.py ROUNDS"""
import sys

index = {(i % 97, str(i)): i for i in range(20_000)}
total = 0
for r in range(int(sys.argv[1])):
    for i in range(20_000):                  # LOOP: one int a turn (past the cached small ones)
        total += index[(i % 97, str(i))]   # LOOKUP: one str, one tuple
print(total)
