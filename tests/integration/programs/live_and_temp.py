keep = []

def churn():
    for i in range(2000):
        t = bytearray(100_000)         # line 5: 200 MB allocated, all freed
        del t

def hoard():
    for i in range(100):
        keep.append(bytearray(100_000))   # line 10: 10 MB kept alive in a global list

churn()
hoard()
print("ok", len(keep))
