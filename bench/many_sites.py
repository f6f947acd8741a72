"""A stress for the aggregated profile's reporter: 300 allocation sites (each its own line), each keeping and
freeing 300 KB objects, for SECONDS (default 20). Under `PYFLOW_AGGREGATE_MS=5 pyflow run --aggregate` it
writes thousands of snapshots each naming up to 300 sites: more snapshot entries than an hour of any bench
workload at the default second (docs/long-runs.md)."""
import sys
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20
src = "\n".join(f"def site_{i}(keep):\n    keep.append(bytearray(300_000))\n    if len(keep) > 3:\n        keep.pop(0)\n"
                for i in range(300))
ns = {}
exec(compile(src, "many_sites_generated.py", "exec"), ns)
sites = [(ns[f"site_{i}"], []) for i in range(300)]
end = time.monotonic() + seconds
while time.monotonic() < end:
    for fn, keep in sites:
        fn(keep)
