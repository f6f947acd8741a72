# Copies that are no redundant copy (NOT marks each line that must get no redundant-copy finding): values
# built from the copied bytes (concatenation, join, formatting), imports, and allocations that copy nothing
# (np.ones). Usage: copies_not_redundant.py python|numpy
import sys
import json  # NOT
import email.mime.text  # NOT

flavor = sys.argv[1]
keep = ['r' * 1000 + str(i) for i in range(4000)]  # NOT
parts = ['p' * 2000 for i in range(100)]
joined = [''.join([parts[i % 100], 'x']) for i in range(3000)]  # NOT
formatted = ['%s-%d' % (parts[i % 100], i) for i in range(3000)]  # NOT
fstrings = [f'{parts[i % 100]}:{i}' for i in range(3000)]  # NOT
blobs = [b'b' * 3000 + b'%d' % i for i in range(3000)]  # NOT
if flavor == "numpy":
    import numpy as np  # NOT
    ones = [np.ones(1000) for i in range(3000)]  # NOT
    zeros = [np.zeros((100, 10)) + i for i in range(3000)]  # NOT
print(len(keep), len(joined), len(formatted), len(fstrings), len(blobs))
