"""A library module (not the user's code under --profile-only waste_imports.py) that, when imported,
builds the same value again and again and reserves memory it never touches: tests/integration/programs/
waste_imports.py imports it and calls the same functions from lines of its own."""


def build(n):
    total = 0
    for i in range(n):
        same = ",".join(["abcdefgh"] * 40)      # the same 408-byte str every iteration
        total += len(same)
    return total


def reserve():
    return bytes(80_000_000)                    # calloc'd, never touched


TOTAL = build(100_000)
RESERVED = reserve()
