"""--watch=copies (tests/integration/cases/watch.py, watch_copies): three copies of 2 MB, each judged differently.

  kept = bytes(base)        nobody writes either end: redundant, by compare-at-free
  changed = bytearray(base) the copy's first word is written on the next line: needed, by watch (to: copy)
  other = bytes(src)        the source's first word is written on the next line: needed, by watch (to: source)

burn() spends CPU time between the copies: where watchpoints are emulated by single steps (VMs without
debug registers), a copy watch comes only after the thread ran unwatched 4 times as long as the last one
stepped (up to ~65 ms of steps for a watch nobody triggers, as on `kept`).
"""
import time


def burn():
    t = time.process_time()
    while time.process_time() - t < 0.6:
        pass


base = bytearray(b"x" * 2_000_000)
burn()
kept = bytes(base)
burn()
changed = bytearray(base)
changed[0] = 1
burn()
src = bytearray(b"y" * 2_000_000)
burn()
other = bytes(src)
src[0] = 7
print(len(kept), changed[0], other[0], src[0])
