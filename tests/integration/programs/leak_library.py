# Leak shape: memory a library keeps for the user's line: logging's QueueHandler formats each record and
# puts it in a queue nobody reads, so the records made by the logging call pile up (mode "leak"); its twin
# reads the queue every 100 requests (mode "twin"). Usage: leak_library.py leak|twin python
import logging
import logging.handlers
import queue
import sys

mode = sys.argv[1]
pending = queue.SimpleQueue()
log = logging.getLogger("requests")
log.propagate = False
log.addHandler(logging.handlers.QueueHandler(pending))
log.setLevel(logging.INFO)


def handle(i):
    parts = [str(k * i) for k in range(20)]
    log.info("request %d from %s took %s", i, "client-%d" % (i % 97), parts[-1])  # LEAK KEPT
    if mode == "twin" and i % 100 == 99:
        while not pending.empty():
            pending.get_nowait()
    return len(parts)


print(sum(handle(i) for i in range(20_000)))
