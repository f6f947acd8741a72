"""300000 allocations of about 1 KB from one line: with --sample-bytes 1k they would take ~25 MB of
profile, so a 2 MiB --max-profile makes the sampling coarsen several times during the run."""
keep = []
for i in range(300000):
    keep.append(bytearray(1000))    # line 5
    if len(keep) > 100:
        keep.pop(0)
print("done")
