"""Integration cases: GPU memory on the mock CUDA library."""
import json
import os

from .common import HERE, Skip, flows_at, once, prog, row, run


GPU = os.path.join(os.path.dirname(HERE), "gpu")


def profile_on_mock_cuda(c, program, stdout_end):
    """Profiles tests/gpu/PROGRAM against the mock CUDA library (skipped when it was not built); checks the
    program ran to its last line and returns its run and the JSON document."""
    lib = os.environ.get("PYFLOW_TEST_MOCKCUDA")
    if not lib or not os.path.exists(lib):
        raise Skip("the mock CUDA library was not built")
    cp, d = c.profile(os.path.join(GPU, program), lib)
    assert cp.returncode == 0 and cp.stdout.endswith(stdout_end), (cp.returncode, cp.stdout, cp.stderr[-800:])
    return cp, d


def assert_gpu_rows(d, script, rows):
    """rows: (line, MiB allocated there, MiB of it live at exit)."""
    for line, mib, kept in rows:
        r = row(d, script, line)
        assert r["gpu_bytes"] == mib << 20 and r["leaked_bytes"] == kept << 20, (line, r)


@once
def case_gpu_ctypes(c):
    """CUDA loaded late with ctypes: GPU bytes per line, frees, h2d/d2h edges, a redundant upload."""
    cp, d = profile_on_mock_cuda(c, "gpu_ctypes.py", "gpu ok\n")
    big, kept = row(d, "gpu_ctypes.py", 18), row(d, "gpu_ctypes.py", 19)
    assert big["gpu_bytes"] == 64 << 20 and big["leaked_bytes"] == 0, big
    assert kept["gpu_bytes"] == 16 << 20 and kept["leaked_bytes"] == 16 << 20, kept
    assert big["native_bytes"] == 0 and kept["python_bytes"] < 1 << 20, "device bytes counted as host bytes"
    assert d["totals"]["gpu_bytes"] == 80 << 20 and d["totals"]["gpu_peak_bytes"] == 80 << 20, d["totals"]
    gpu_series = [b for _, b in d["gpu_timeline"]]
    assert max(gpu_series) == 80 << 20 and gpu_series[-1] == 16 << 20, gpu_series
    assert "gpu" in cp.stderr.split("line ")[1].splitlines()[0], "no GPU column in the text report"
    nodes = {n["line"]: n for n in d["call_tree"] if n["file"].endswith("gpu_ctypes.py")}
    assert nodes[18]["gpu_bytes"] == 64 << 20 and nodes[18]["gpu_peak_bytes"] == 64 << 20, nodes[18]
    assert nodes[19]["gpu_bytes"] == 16 << 20 and nodes[19]["gpu_peak_bytes"] == 16 << 20, nodes[19]
    same = [f for f in flows_at(d, "gpu_ctypes.py", 22) if f["kind"] == "h2d"]
    assert same and same[0]["bytes"] == 5 * (4 << 20) and same[0]["count"] == 5, same
    assert same[0]["redundant"] and same[0]["evidence"] == "content-hash", same
    assert same[0]["dst"]["line"] == 19, same
    changed = [f for f in flows_at(d, "gpu_ctypes.py", 25) if f["kind"] == "h2d"]
    assert changed and not changed[0]["redundant"], changed
    down = [f for f in flows_at(d, "gpu_ctypes.py", 27) if f["kind"] == "d2h"]
    assert down and down[0]["bytes"] == 4 << 20 and down[0]["src"]["line"] == 19, down


@once
def case_gpu_staged_uploads(c):
    """A host copy into the pinned buffer an upload on its line sends takes the upload's verdict (CuPy's
    asarray): not redundant for the first upload of the bytes, redundant for the second; a host copy nothing
    sends keeps its own."""
    script = "gpu_staged.py"
    cp, d = profile_on_mock_cuda(c, script, "staged ok\n")

    def edge(line, kind):
        es = [f for f in flows_at(d, script, line) if f["kind"] == kind and f["bytes"] == 4 << 20]
        assert len(es) == 1, (line, kind, flows_at(d, script, line))
        return es[0]
    once_, again, spare = edge(20, "copy"), edge(21, "copy"), edge(22, "copy")
    assert once_["stages_upload"] and not once_["redundant"], once_
    assert not edge(20, "h2d")["redundant"], edge(20, "h2d")
    assert again["stages_upload"] and again["redundant"] and "staged and sent again" in again["fix"], again
    assert edge(21, "h2d")["redundant"], edge(21, "h2d")
    assert not spare["stages_upload"] and spare["redundant"], spare
    assert d["totals"]["redundant_copy_bytes"] == 3 * (4 << 20), d["totals"]
    text = cp.stderr.split("redundant copies", 1)[1]
    assert "gpu_staged.py:20" not in text and "gpu_staged.py:21" in text and "gpu_staged.py:22" in text, text


@once
def case_gpu_procaddress(c):
    """Driver functions fetched with cuGetProcAddress are hooked too."""
    cp, d = profile_on_mock_cuda(c, "gpu_procaddress.py", "procaddress ok\n")
    freed, kept = row(d, "gpu_procaddress.py", 17), row(d, "gpu_procaddress.py", 19)
    assert freed["gpu_bytes"] == 24 << 20 and freed["leaked_bytes"] == 0, freed
    assert kept["gpu_bytes"] == 8 << 20 and kept["leaked_bytes"] == 8 << 20, kept
    # cuGetProcAddress fetched through itself (a static CUDA runtime's bootstrap), in both ABIs
    assert_gpu_rows(d, "gpu_procaddress.py", ((29, 16, 16), (30, 4, 4)))


@once
def case_gpu_vmm(c):
    """The virtual memory API (PyTorch's expandable segments): mapped chunks are GPU blocks of the line that
    mapped them, until unmapped (one unmap may end several); a copy into a chunk is an h2d edge to it."""
    cp, d = profile_on_mock_cuda(c, "gpu_vmm.py", "vmm ok\n")
    assert_gpu_rows(d, "gpu_vmm.py", ((22, 16, 0), (23, 32, 32), (24, 8, 0), (25, 8, 0)))
    up = [f for f in flows_at(d, "gpu_vmm.py", 26) if f["kind"] == "h2d"]
    assert up and up[0]["bytes"] == 1 << 20 and up[0]["dst"]["line"] == 23, up


@once
def case_gpu_copies_2d(c):
    """2D and 3D copies (runtime and driver) and copies between devices are flow edges; only a contiguous upload
    is judged by content."""
    cp, d = profile_on_mock_cuda(c, "gpu_copies_2d.py", "2d ok\n")

    def edge(line, kind):
        found = [f for f in flows_at(d, "gpu_copies_2d.py", line) if f["kind"] == kind]
        assert len(found) == 1, (line, kind, flows_at(d, "gpu_copies_2d.py", line))
        return found[0]
    first, again, strided = edge(23, "h2d"), edge(24, "h2d"), edge(25, "h2d")
    assert first["bytes"] == 4 << 20 and first["dst"]["line"] == 21 and not first["redundant"], first
    assert again["bytes"] == 4 << 20 and again["redundant_bytes"] == 4 << 20, again
    assert strided["bytes"] == 2 << 20 and not strided["redundant"], strided
    for line in (27, 31, 45):
        down = edge(line, "d2h")
        assert down["bytes"] == 4 << 20 and down["src"]["line"] == 21, down
    up3 = edge(44, "h2d")      # the runtime's 3D copy: 2 slices of 2 rows of 1 MiB, back to back
    assert up3["bytes"] == 4 << 20 and up3["dst"]["line"] == 21 and up3["redundant_bytes"] == 4 << 20, up3
    for line, src, dst in ((28, 21, 22), (29, 22, 21)):
        peer = edge(line, "d2d")
        assert peer["bytes"] == 4 << 20 and peer["src"]["line"] == src and peer["dst"]["line"] == dst, peer


@once
def case_gpu_pools(c):
    """Allocations from a program's own memory pool and pitched allocations are GPU bytes (pitch x height)."""
    cp, d = profile_on_mock_cuda(c, "gpu_pools.py", "pools ok\n")
    assert_gpu_rows(d, "gpu_pools.py", ((15, 8, 0), (17, 4, 4), (18, 1, 1), (19, 1, 0)))


@once
def case_gpu_extension(c):
    """A C extension linked against CUDA (calls through the PLT) is seen too."""
    ext = os.environ.get("PYFLOW_TEST_GPUEXT")
    if not ext or not os.path.isdir(ext):
        raise Skip("the test extension was not built (no python3-dev)")
    cp, d = c.profile(os.path.join(GPU, "gpu_extension.py"), ext)
    assert cp.returncode == 0 and cp.stdout == "ext ok\n", (cp.returncode, cp.stdout, cp.stderr[-800:])
    keep, tmp = row(d, "gpu_extension.py", 8), row(d, "gpu_extension.py", 9)
    assert keep["gpu_bytes"] == 32 << 20 and keep["leaked_bytes"] == 32 << 20, keep
    assert tmp["gpu_bytes"] == 8 << 20 and tmp["leaked_bytes"] == 0, tmp


@once
def case_gpu_per_tensor(c):
    """--gpu-per-tensor asks PyTorch for its cudaMallocAsync backend, keeping the user's other settings."""
    code = "import os; print(os.environ['PYTORCH_CUDA_ALLOC_CONF'])"
    env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
    r = run([c.pyflow, "run", "--python", c.python, "--gpu-per-tensor", "--no-report", "-c", code], env=env)
    assert r.stdout == "expandable_segments:True,backend:cudaMallocAsync\n", (r.stdout, r.stderr)


@once
def case_gpu_peak_instant(c):
    """The GPU's peak is its own instant: JSON `gpu_peak_at_s` (null without GPU memory), the text report's
    gpu line and a marker of its own on the HTML timeline, apart from the host's peak 0.3 s later."""
    html = os.path.join(c.tmp, "p.html")
    cp, d = profile_on_mock_cuda(c, "gpu_peaks_apart.py", "peaks ok\n")
    t = d["totals"]
    assert t["gpu_peak_bytes"] == 64 << 20 and t["peak_bytes"] >= 200_000_000, t
    assert t["gpu_peak_at_s"] is not None and t["gpu_peak_at_s"] + 0.25 < t["peak_at_s"], t
    assert f"at {t['gpu_peak_at_s']:.2f} s" in cp.stderr.split("gpu: ", 1)[1].splitlines()[0], cp.stderr[-1500:]
    cp2 = run([c.pyflow, "run", "--python", c.python, "--no-report", "--html", html, os.path.join(GPU, "gpu_peaks_apart.py"),
               os.environ["PYFLOW_TEST_MOCKCUDA"]])
    assert cp2.returncode == 0, cp2.stderr[-800:]
    with open(html) as f:
        page = f.read()
    data = json.loads(page.split('id="timeline-data">', 1)[1].split("</script>", 1)[0])
    assert data["gpu_peak"] and data["gpu_peak"][1] == 64 << 20 and data["gpu_peak"][0] + 0.25 < data["peak"][0], data
    assert "'gpu-peak'" in page, "no marker drawn for the GPU peak"
    _, plain = c.profile(prog("diff_base.py"))
    assert plain["totals"]["gpu_peak_at_s"] is None and plain["totals"]["peak_at_s"] > 0, plain["totals"]
