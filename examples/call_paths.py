"""Call paths: one helper, two callers. The line table says the helper's line allocated 96 MiB; the call
paths (text report, JSON "call_tree", the HTML flame graph) say which caller the memory belongs to:
load_all keeps the 32 MiB it reads, which is the peak; scan reads 64 MiB and drops each block at once.

    pyflow run examples/call_paths.py
"""


def read_block(size):
    return bytearray(size)


def load_all(n):
    return [read_block(2 << 20) for _ in range(n)]


def scan(n):
    total = 0
    for _ in range(n):
        total += len(read_block(2 << 20))
    return total


def main():
    blocks = load_all(16)
    scanned = scan(32)
    return blocks, scanned


if __name__ == "__main__":
    blocks, scanned = main()
    print(f"kept {len(blocks)} blocks, scanned {scanned >> 20} MiB")
