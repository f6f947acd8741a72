# Sampled figures carry their error: the first line keeps 1 MB in 10 KB blocks (about 4 samples at the default
# 256 KiB mean: +-50%), the loop allocates 50 MB in 10 KB temporaries (about 200 samples: +-7%).
few = [bytearray(10_000) for i in range(100)]  # SMALL
for i in range(5000):
    t = bytearray(10_000)  # LARGE
print(len(few))
