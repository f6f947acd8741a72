"""Text copies: str.encode() of ASCII text and a latin-1 decode copy the characters as they are, nobody changes
either end: two redundant copies, each with its own fix, not the bytes(buf) advice of bytes_copies.py. The
concatenation copies the text into a new value (the text and a newline): no redundant copy.

    pyflow run examples/text_copies.py
"""
import hashlib

text = "x" * 8_000_000
line = text + "\n"                                  # the 8 MB of text copied into a new, longer str

digest = hashlib.sha256(line.encode()).hexdigest()  # its bytes copied once more, only to be hashed

raw = b"y" * 8_000_000
decoded = raw.decode("latin-1")                     # the same bytes, now in a str

print(digest[:8], len(decoded))
