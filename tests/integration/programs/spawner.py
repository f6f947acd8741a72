"""Children of every kind: subprocess running Python, multiprocessing with spawn and forkserver."""
import multiprocessing as mp
import subprocess
import sys


def work(n):
    data = bytearray(n)                      # line 8: allocated in each worker
    return len(data)


if __name__ == "__main__":
    out = subprocess.run([sys.executable, "-c", "x = bytearray(3_000_000); print(len(x))"],
                         capture_output=True, text=True)
    print("subprocess", out.stdout.strip())
    for method in ("spawn", "forkserver"):
        ctx = mp.get_context(method)
        with ctx.Pool(2) as pool:
            print(method, sum(pool.map(work, [2_000_000] * 4)))
