# Two gevent greenlets passing 300 buffers of about 200 KB through a queue. Each switch between them (and
# the hub) has greenlet copy a saved C stack back over the frames, with memcpy. Prints a digest of what
# went through, which must not change under pyflow. Line 12 allocates about 60 MB, and so does line 21.
import hashlib

import gevent
import gevent.queue


def producer(q, n):
    for i in range(n):
        q.put(bytes(200_000 + i))
        gevent.sleep(0)
    q.put(None)


def consumer(q):
    h, kept = hashlib.sha256(), []
    while (b := q.get()) is not None:
        h.update(b)
        kept.append(bytearray(b))
    return h.hexdigest(), len(kept)


q = gevent.queue.Queue()
g1, g2 = gevent.spawn(producer, q, 300), gevent.spawn(consumer, q)
gevent.joinall([g1, g2])
print(g2.value)
