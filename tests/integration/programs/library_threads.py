# Memory allocated in a thread the standard library started, from a builtin: no line of this file is on
# that thread's stack, so it is charged to the line that started the thread (line 9: pool.map starts it).
# And memory no line of this file asked for at all: an exit handler the program registered runs library
# code after the program's last line (json.loads, about 16 MB); the report says it once, as outside the
# user's code.
import atexit, json
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(1) as pool:
    blocks = list(pool.map(bytearray, [4_000_000] * 5))
mine = bytearray(3_000_000)
atexit.register(json.loads, "[" + ",".join(["1.5"] * 500_000) + "]")
print(len(blocks), len(mine))
