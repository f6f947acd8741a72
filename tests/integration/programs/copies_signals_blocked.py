"""Makes 40 copies of a 4 MB buffer, changing the source after each; with an argument, first blocks every
signal (as worker threads often do), so watchpoints cannot report."""
import signal, sys
if len(sys.argv) > 1:
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
src = bytearray(4_000_000)
for i in range(40):
    c = bytes(src)
    src[0] = i
print("ok")
