# Sampled figures carry their error: the first line keeps 2 MB in 10 KB blocks (about 8 samples at the default
# 256 KiB mean: +-35%), the loop allocates 50 MB in 10 KB temporaries (about 200 samples: +-7%).
few = [bytearray(10_000) for i in range(200)]  # SMALL
for i in range(5000):
    t = bytearray(10_000)  # LARGE
del t   # nothing of the loop's stays live at exit (the last block, sampled one run in 26, would be)
print(len(few))
