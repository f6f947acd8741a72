"""Growth by realloc: a list and a bytearray that grow one element at a time.

What the report shows: the appends on lines 8 and 12 move their blocks as they grow; the moves are
`realloc` edges in the flow graph (--json flows of kind "realloc").
"""
items = []
for i in range(3_000_000):
    items.append(i)

blob = bytearray()
for i in range(200):
    blob += b"y" * 100_000
print(len(items), len(blob))
