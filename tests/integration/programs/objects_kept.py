import sys
import tracemalloc

MEASURE = len(sys.argv) > 1 and sys.argv[1] == "measure"
if MEASURE:
    tracemalloc.start()
kept = [str(i) * 3 for i in range(100_000)]   # line 7: live until exit
pairs = {i: (i, str(i)) for i in range(50_000)}   # line 8: live until exit
if MEASURE:
    print(tracemalloc.get_traced_memory()[0])
