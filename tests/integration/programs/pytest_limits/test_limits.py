"""The pytest plugin's limits: each test over its limit has a twin under it that must pass."""
import pytest

try:
    import numpy as np
except ImportError:     # an interpreter without numpy: its tests skip
    np = None

kept = []
needs_numpy = pytest.mark.skipif(np is None, reason="no numpy")


@pytest.mark.limit_memory("24 MB")
def test_peak_over():
    block = bytearray(32 << 20)     # 32 MiB live at once: over 24 MB
    del block


@pytest.mark.limit_memory("24 MB")
def test_peak_under():
    for _ in range(8):
        block = bytearray(8 << 20)  # 64 MiB allocated, never more than 16 MiB live: under
        del block


@pytest.mark.limit_leaks("1 MB")
def test_leaks_over():
    kept.append(bytearray(4 << 20))     # left live by the test


@pytest.mark.limit_leaks("1 MB")
def test_leaks_under():
    temp = bytearray(4 << 20)
    del temp


@needs_numpy
@pytest.mark.limit_memory("24 MB")
def test_numpy_peak_over():
    a = np.ones(5_000_000)          # 40 MB of native memory: numpy's bytes count
    assert a.sum() == 5_000_000


@needs_numpy
@pytest.mark.limit_memory("24 MB")
def test_numpy_peak_under():
    a = np.ones(1_000_000)          # 8 MB: under
    assert a.sum() == 1_000_000
