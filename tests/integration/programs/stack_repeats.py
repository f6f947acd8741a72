"""Consecutive allocations whose stacks differ from the one before in one place only, for the recorder's
check of a capture against the thread's last stack (recorder/pf_record.c): argv[1] picks the case, argv[2]
the rounds. Each allocation's line is marked with its name; the test reads the report's rows and paths."""
import sys


def lines(n):
    keep = []
    for _ in range(n):
        a = bytearray(1000)  # LINE_A
        b = bytearray(3000)  # LINE_B
        keep.append((a, b))
    return keep


def make():
    return bytearray(1500)  # MAKE


def via_first():
    return make()  # CALLER_1


def via_second():
    return make()  # CALLER_2


def callers(n):
    keep = []
    for _ in range(n):
        keep.append(via_first())
        keep.append(via_second())
    return keep


def produce(n):
    for _ in range(2 * n):
        yield bytearray(2500)  # GEN_ALLOC


def generator(n):
    gen, keep = produce(n), []
    for _ in range(n):
        keep.append(next(gen))  # RESUME_1
        keep.append(next(gen))  # RESUME_2
    return keep


def code_reuse(n):
    """Code objects made in turn from one compiled module under two file names (code.replace), each made
    just after the last one was dropped, so that it lands at the last one's address: each file's
    allocation is at the same offset, under the same caller, in a code object at the same address as the
    other file's was just before; only the code object's identity (its file name) differs."""
    base = compile("block = bytearray(200_000)\n", "first_file.py", "exec")
    code = None
    for i in range(2 * n):
        code = None
        code = base.replace(co_filename="first_file.py" if i % 2 == 0 else "second_file.py")
        exec(code, {})  # EXEC


CASES = {"lines": lines, "callers": callers, "generator": generator, "code_reuse": code_reuse}

if __name__ == "__main__":
    CASES[sys.argv[1]](int(sys.argv[2]))
