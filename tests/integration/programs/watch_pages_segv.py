"""A crash under faulthandler: the report and the exit status must be the interpreter's own."""
import ctypes
import faulthandler
import sys

import numpy as np

faulthandler.enable()
a = np.ones(100_000)
print(float((a * 2).sum()))
sys.stdout.flush()
ctypes.string_at(0)
