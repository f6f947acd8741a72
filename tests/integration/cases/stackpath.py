"""Integration cases: the recorder's fast path for a stack that repeats the thread's last one
(recorder/pf_record.c). A capture equal to the last one (every frame's code object and instruction offset,
the code objects still the same objects, the same native IPs) takes the last one's stack id without the
hash, the cache and the check against the interned stack. Each case makes consecutive allocations whose
stacks differ from the one before in one place only, and checks that each is charged to its own stack."""
from .common import marked_lines, once, per_version, prog, row


def _line(marker):
    (line,) = marked_lines("stack_repeats.py", marker)
    return line


def _under(doc, function, line, parent_function, parent_line):
    """The bytes of the call_tree nodes at (function, line) whose parent is at (parent_function, parent_line)."""
    nodes = doc["call_tree"]
    return sum(n["alloc_bytes"] for n in nodes
               if n["function"] == function and n["line"] == line and n["parent"] >= 0
               and nodes[n["parent"]]["function"] == parent_function and nodes[n["parent"]]["line"] == parent_line)


ROUNDS = 20_000


@per_version
def case_next_line(c):
    """Two lines allocating in turn (bytearray(1000), bytearray(3000)): the same frames, the innermost at
    another offset. Each line keeps its own allocations: the same count, 2000 bytes more a round on the
    second (a stray small object or two allowed: a free list missing once)."""
    _cp, d = c.profile(prog("stack_repeats.py"), "lines", str(ROUNDS), extra=("--exact",))
    a, b = row(d, "stack_repeats.py", _line("LINE_A")), row(d, "stack_repeats.py", _line("LINE_B"))
    assert abs(a["alloc_count"] - b["alloc_count"]) <= 4 and a["alloc_count"] >= 2 * ROUNDS, (a, b)
    assert abs(b["alloc_bytes"] - a["alloc_bytes"] - 2000 * ROUNDS) <= 2000, (a, b)


def _split_between(c, mode, function, marker, parents, each_bytes):
    """Runs `mode` under --exact; the bytes of `function`'s line `marker` under each of the two parents
    ((function, marker) each) must be at least each_bytes and within 1% of each other."""
    _cp, d = c.profile(prog("stack_repeats.py"), mode, str(ROUNDS), extra=("--exact",))
    line = _line(marker)
    first, second = (_under(d, function, line, f, _line(m)) for f, m in parents)
    assert first >= each_bytes and abs(first - second) <= 0.01 * first, (first, second)


@per_version
def case_same_line_other_caller(c):
    """One line (make's) reached from two callers in turn: the innermost frame is the same, the chain
    under it differs. Each caller's path holds half of make's bytes."""
    _split_between(c, "callers", "make", "MAKE", (("via_first", "CALLER_1"), ("via_second", "CALLER_2")),
                   1500 * ROUNDS)


@per_version
def case_generator_resumed_elsewhere(c):
    """A generator allocating at one line (the same frame, the same offset) and resumed from two lines in
    turn: only the frame it returns to differs. Each resuming line's path holds half of its bytes."""
    _split_between(c, "generator", "produce", "GEN_ALLOC", (("generator", "RESUME_1"), ("generator", "RESUME_2")),
                   2500 * ROUNDS)


@per_version
def case_code_object_at_reused_address(c):
    """Code objects of one module under two file names in turn (code.replace), each new one made just after
    the last one was dropped, so that it takes its address, each allocating 200 KB at the same offset under
    the same caller. Only the big blocks are recorded (object threshold 100 KB, nothing sampled), so each
    one's last stack is the other file's, the same frames but for the code object's identity: the two
    files must each hold half of them."""
    rounds = 500
    _cp, d = c.profile(prog("stack_repeats.py"), "code_reuse", str(rounds),
                       extra=("--object-bytes", "100k", "--sample-bytes", "1g"))
    files = {}
    for r in d["lines"]:
        if r["file"].endswith("_file.py"):
            files[r["file"]] = files.get(r["file"], 0) + r["alloc_count"]
    assert files.get("first_file.py") == rounds and files.get("second_file.py") == rounds, files
