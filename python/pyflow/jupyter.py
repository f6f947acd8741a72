"""Jupyter: a kernel "Python 3 (pyflow)" that runs ipykernel under pyflow, and the %pyflow magic.

    python -m pyflow.jupyter install [--user | --prefix PREFIX] [--name pyflow]

installs the kernelspec; its kernels load this module as an IPython extension, which marks each cell's
start and end in the profile (pyflow.runtime.mark). In a notebook:

    %pyflow            the report of the last cell run: its lines by bytes allocated, peak and left live
    %pyflow session    the same for the session so far
    %pyflow --top 20   more lines (default 10); --full: pyflow's whole HTML page (in an iframe)

The report is pyflow's own (`pyflow report --window` over the cell's span of the profile the kernel is
writing), shown as inline HTML. Elsewhere (a kernel not under pyflow) %pyflow says how to get one."""
import argparse
import html
import json
import linecache
import os
import sys

from . import runtime
from .runtime import human_bytes as human

KERNEL_NAME = "pyflow"
DISPLAY_NAME = "Python 3 (pyflow)"


def kernel_spec(python=None):
    """kernel.json's contents: ipykernel under pyflow, with this module loaded."""
    python = python or sys.executable
    return {"argv": [python, "-m", "pyflow", "run", "--no-report", "--python", python, "-m", "ipykernel_launcher",
                     "-f", "{connection_file}", "--ext=pyflow.jupyter"],
            "display_name": DISPLAY_NAME, "language": "python", "interrupt_mode": "signal",
            "metadata": {"debugger": False}}


def install(user=False, prefix=None, name=KERNEL_NAME):
    """Installs the kernelspec; returns where."""
    import tempfile
    from jupyter_client.kernelspec import KernelSpecManager
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "kernel.json"), "w") as f:
            json.dump(kernel_spec(), f, indent=1)
        return KernelSpecManager().install_kernel_spec(d, name, user=user, prefix=prefix)


class CellTimes:
    """The spans of the cells run, on the profile's clock, from IPython's pre/post_run_cell events."""

    def __init__(self):
        self.cells = []         # (execution count, start ns, end ns)
        self.start = None

    def pre_run_cell(self, info=None):
        self.start = runtime.mark("cell-start")

    def post_run_cell(self, result=None):
        end = runtime.mark("cell-end")
        count = getattr(result, "execution_count", None) if result is not None else None
        if self.start is not None and end:
            self.cells.append((count, self.start, end))
        self.start = None


def _source(file, line, row):
    text = row.get("source") or linecache.getline(file, line).strip()
    return text


def _library_dirs():
    import sysconfig
    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(d + os.sep for d in dirs if d) + ("/usr/lib/python3/",)


def _rows_html(doc, top):
    """The notebook's own lines (the cells, and the user's modules): not the standard library's or
    packages', nor start-up's."""
    library = _library_dirs()
    rows = [l for l in doc.get("lines", []) if not l["file"].startswith(("[", "<")) and not l["file"].startswith(library)]
    rows = [l for l in rows if l.get("alloc_bytes", 0) > 0]
    rows.sort(key=lambda l: (l.get("leaked_bytes", 0), l.get("peak_bytes", 0), l["alloc_bytes"]), reverse=True)
    out = ["<table><tr><th>line</th><th>allocated</th><th>python</th><th>native</th><th>at its peak</th>"
           "<th>left live</th><th>source</th></tr>"]
    for l in rows[:top]:
        where = f"{os.path.basename(l['file'])}:{l['line']} {l['function']}"
        out.append("<tr><td>{}</td>{}<td><code>{}</code></td></tr>".format(
            html.escape(where),
            "".join(f"<td style='text-align:right'>{human(l.get(k, 0))}</td>"
                    for k in ("alloc_bytes", "python_bytes", "native_bytes", "peak_bytes", "leaked_bytes")),
            html.escape(_source(l["file"], l["line"], l)[:120])))
    out.append("</table>")
    return "\n".join(out)


def report_html(doc, title, top):
    t = doc.get("totals", {})
    head = (f"<b>{html.escape(title)}</b>: allocated {human(t.get('alloc_bytes', 0))} "
            f"(python {human(t.get('python_bytes', 0))}, native {human(t.get('native_bytes', 0))}), "
            f"peak {human(t.get('peak_bytes', 0))}, left live {human(t.get('leaked_bytes', 0))}")
    return f"<div class='pyflow-report'><p>{head}</p>\n{_rows_html(doc, top)}</div>"


def load_ipython_extension(ip):
    from IPython.core.magic import Magics, line_magic, magics_class
    from IPython.display import HTML, display

    times = CellTimes()
    ip.events.register("pre_run_cell", times.pre_run_cell)
    ip.events.register("post_run_cell", times.post_run_cell)

    @magics_class
    class PyflowMagics(Magics):
        @line_magic
        def pyflow(self, line):
            """%pyflow [cell|session] [--top N] [--full]: pyflow's report of the last cell or the session."""
            p = argparse.ArgumentParser(prog="%pyflow", add_help=False)
            p.add_argument("what", nargs="?", default="cell", choices=["cell", "session"])
            p.add_argument("--top", type=int, default=10)
            p.add_argument("--full", action="store_true")
            try:
                a = p.parse_args(line.split())
            except SystemExit:
                print("usage: %pyflow [cell|session] [--top N] [--full]")
                return
            if not runtime.active():
                print("pyflow: this kernel does not run under pyflow: choose the kernel "
                      f"\"{DISPLAY_NAME}\" (python -m pyflow.jupyter install --user)")
                return
            if a.what == "session":
                span, title = (0, runtime.counters().now_ns), "pyflow: the session so far"
            elif times.cells:
                count, start, end = times.cells[-1]
                span, title = (start, end), f"pyflow: cell [{count}]"
            else:
                print("pyflow: no cell has run yet")
                return
            if a.full:
                page = runtime.window_report(*span, fmt="html")
                if page:
                    display(HTML(f"<div><iframe style='width:100%;height:600px;border:0' srcdoc=\"{html.escape(page)}\">"
                                 "</iframe></div>"))
                    return
            doc = runtime.window_report(*span)
            if doc is None:
                print("pyflow: the report could not be made from the profile")
                return
            display(HTML(report_html(doc, title, a.top)))

    ip.register_magics(PyflowMagics)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pyflow.jupyter", description="the Jupyter kernel under pyflow")
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("install", help=f"install the kernelspec \"{DISPLAY_NAME}\"")
    g = i.add_mutually_exclusive_group()
    g.add_argument("--user", action="store_true", help="for this user (~/.local/share/jupyter)")
    g.add_argument("--prefix", help="under PREFIX/share/jupyter (a venv: sys.prefix)")
    i.add_argument("--name", default=KERNEL_NAME)
    a = p.parse_args(argv)
    try:
        where = install(user=a.user, prefix=a.prefix, name=a.name)
    except ImportError:
        sys.stderr.write("pyflow: jupyter_client is not installed (Debian: python3-ipykernel)\n")
        return 2
    print(f"pyflow: kernel \"{DISPLAY_NAME}\" installed in {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
