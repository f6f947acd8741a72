# Memory allocated in a thread the standard library started, from a builtin: no line of this file is on
# that thread's stack, so the line table cannot hold it; the report says it once, as outside the user's code.
from concurrent.futures import ThreadPoolExecutor

with ThreadPoolExecutor(1) as pool:
    blocks = list(pool.map(bytearray, [4_000_000] * 5))
mine = bytearray(3_000_000)
print(len(blocks), len(mine))
