import os, signal, numpy as np
got = []
signal.signal(signal.SIGTRAP, lambda s, f: got.append("trap"))
for k in range(0, signal.SIGRTMAX - signal.SIGRTMIN + 1):
    signal.signal(signal.SIGRTMIN + k, lambda s, f: got.append(s))
a = np.ones(300000)
t = 0.0
for i in range(30000):
    t += a[i]
os.kill(os.getpid(), signal.SIGTRAP)
for k in range(0, signal.SIGRTMAX - signal.SIGRTMIN + 1):
    os.kill(os.getpid(), signal.SIGRTMIN + k)
print(t, got.count("trap"), len(got), signal.getsignal(signal.SIGTRAP) is not None)
