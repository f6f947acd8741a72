"""A deterministic pandas workload for bench/real_programs.sh: groupby, merge, pivot, string operations and
a CSV round trip on 400,000 rows. Prints digests of every result, so any change in results under pyflow
shows as a different output."""
import hashlib
import io

import numpy as np
import pandas as pd

rng = np.random.default_rng(2026)
n = 400_000
df = pd.DataFrame({
    "store": rng.integers(0, 500, n),
    "item": rng.integers(0, 2000, n),
    "qty": rng.integers(1, 20, n),
    "price": rng.random(n).round(4) * 100,
    "day": pd.to_datetime("2026-01-01") + pd.to_timedelta(rng.integers(0, 365, n), unit="D"),
    "tag": rng.choice(["alpha", "beta", "gamma", "delta"], n),
})
df["revenue"] = df["qty"] * df["price"]
stores = pd.DataFrame({"store": np.arange(500), "region": np.array(["north", "south", "east", "west"])[np.arange(500) % 4]})


def digest(obj):
    text = obj.to_csv(float_format="%.6f") if hasattr(obj, "to_csv") else repr(obj)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


by_store = df.groupby("store").agg(revenue=("revenue", "sum"), qty=("qty", "mean"), n=("item", "count"))
merged = df.merge(stores, on="store")
by_region = merged.groupby(["region", "tag"])["revenue"].sum().unstack()
pivot = merged.pivot_table(index=merged["day"].dt.month, columns="region", values="qty", aggfunc="sum")
tags = df["tag"].str.upper().str.replace("A", "4").str.len().value_counts().sort_index()
buf = io.StringIO()
df.head(100_000).to_csv(buf, index=False)
back = pd.read_csv(io.StringIO(buf.getvalue()), parse_dates=["day"])
rolled = df.sort_values(["store", "day"]).groupby("store")["revenue"].rolling(7).mean().dropna()
for name, obj in [("by_store", by_store), ("by_region", by_region), ("pivot", pivot), ("tags", tags),
                  ("csv", back), ("rolling", rolled)]:
    print(name, obj.shape if hasattr(obj, "shape") else len(obj), digest(obj))
