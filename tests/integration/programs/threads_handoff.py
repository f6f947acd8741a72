"""Small objects handed between threads while the interpreter switches every microsecond: each thread frees
a string another thread made and makes a new one of the same size, which pymalloc hands it the block just
freed. An exact profile must see each free before the allocation at its address on the other thread.
Prints the bytes the 64 strings left at exit hold (each string's allocation: sys.getsizeof)."""
import sys
import threading

sys.setswitchinterval(1e-6)
shared = [("x" * 40 + str(i)) for i in range(64)]
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000


def work(k):
    for i in range(rounds):
        j = (i * 7 + k) % 64
        shared[j] = "x" * 40 + str(i)    # line 16: frees another thread's string, makes one


threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sum(sys.getsizeof(s) for s in shared))
