import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
import tinylib  # noqa: E402


def load():
    return tinylib.make_table(16 << 20)  # line 9: the user's line that calls into the library


table = load()  # line 12
print(len(table[0]))
