"""Text copies: str.encode() of ASCII text, a latin-1 decode and a concatenation copy the characters as
they are, and nobody changes either end: three redundant copies, each with its own fix (make bytes from
the start, work on the bytes, build the text once), not the bytes(buf) advice of bytes_copies.py.

    pyflow run examples/text_copies.py
"""
import hashlib

text = "x" * 8_000_000
line = text + "\n"                                  # the 8 MB of text copied into a new str

digest = hashlib.sha256(line.encode()).hexdigest()  # its bytes copied once more, only to be hashed

raw = b"y" * 8_000_000
decoded = raw.decode("latin-1")                     # the same bytes, now in a str

print(digest[:8], len(decoded))
