"""A clear memory peak in the middle of the run.

What the report shows: line 10 holds almost all of the peak (peak% near 100) and its trend sparkline is a
hump: nothing before, 200 MB in the middle, nothing after."""
import time

time.sleep(0.2)


big = [bytearray(1_000_000) for _ in range(200)]
time.sleep(0.2)
del big
time.sleep(0.2)
print("done")
