"""Many distinct deep stacks with native parts: importing numpy under --exact --native makes ~100,000 stacks
over ~40,000 native parts, 64 IPs deep (tests/integration/cases/robustness.py, case_exact_native_rss_bound)."""
import numpy as np

a = np.arange(100_000, dtype=np.float64)
for _ in range(20):
    b = np.array(a)     # a copy, a native allocation
    a = b * 1.0
print("done")
