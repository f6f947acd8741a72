# Threads and processes started by this file's lines that allocate with no line of it on their stacks:
# each line's memory includes what they allocated (pyflow's "started by your lines").
import json, multiprocessing, os, subprocess, sys, threading

BIG = "[" + ",".join(["2.5"] * 400_000) + "]"                      # about 3 MB of text


def main():
    t = threading.Thread(target=json.loads, args=(BIG,))              # line 9: a thread, library code
    t.start()
    t.join()
    with multiprocessing.get_context("spawn").Pool(1) as pool:        # line 12: a spawned interpreter
        print(sum(pool.map(len, pool.map(json.loads, [BIG] * 4))))
    code = "import json, sys; print(len(json.loads(sys.stdin.read())))"
    r = subprocess.run([sys.executable, "-c", code], input=BIG, capture_output=True, text=True)  # line 15
    print(r.stdout.strip())
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", code + " if False else None"], os.environ)  # 17
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
