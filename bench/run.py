"""`make bench`: the book's performance figures, each a ratio measured in one run, with the device.

It executes every notebook (nbclient) and the d2l reference notebook on the same kernel, times
them, and collects the `measured: ...` lines that the notebooks' timing cells print
(attnbook.report). Benchmarks too slow for the notebooks live beside this file as
`bench/<section>.py`: each runs in its section's kernel after the notebook (so it can use what the
notebook defined), outside the notebook's timed run. Sections not written yet are reported as missing.

Then, as a class's hub runs it (about one core and 1–2 GB per student): each notebook again, in a
fresh python3 kernel pinned to one core (taskset: torch then uses one thread), timed from kernel start
to the last cell, with the kernel's peak resident memory (VmHWM). The d2l reference notebook runs
the same way, first in each of three rounds (--one-core-runs); the medians are compared. Targets:
every section under 1.5 GB, and its one-core Run-All at most 2× the d2l reference's one-core Run-All.
"""
import argparse
import json
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

import jupytext
import nbformat
import torch
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
SECTIONS = ["1-self-attention", "2-cnn-rnn-self-attention", "3-positional-encoding",
            "4-relative-positional-encoding", "5-rotary-position-embedding", "6-longer-than-trained"]
SECTION_TARGET = 1.5  # each section's Run-All against the d2l reference notebook's
HUB_MEMORY_TARGET_GB = 1.5  # a hub or Binder gives a student 1-2 GB
ONE_CORE_TARGET = 2.0  # each section's one-core Run-All against the d2l reference's, on one core too

#: One notebook in the python3 kernel (BOOK_DEVICE unset, as on a hub); prints seconds and the
#: kernel's peak resident memory in bytes. Run under `taskset -c 0`: the kernel inherits one core.
ONE_CORE = r"""
import json, sys, time
import jupytext
import nbformat
from nbclient import NotebookClient
path = sys.argv[1]
nb = jupytext.read(path) if path.endswith(".md") else nbformat.read(path, as_version=4)
client = NotebookClient(nb, kernel_name="python3", timeout=1800,
                        resources={"metadata": {"path": path.rsplit("/", 1)[0]}})
start = time.perf_counter()
with client.setup_kernel():
    for index, cell in enumerate(nb.cells):
        client.execute_cell(cell, index)
    seconds = time.perf_counter() - start
    status = open(f"/proc/{client.km.provisioner.pid}/status").read()
peak = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))) * 1024
print(json.dumps({"seconds": seconds, "peak_bytes": peak}))
"""


def on_one_core(path):
    """(seconds, peak bytes) of the notebook's Run-All in a kernel pinned to one core."""
    env = {key: value for key, value in os.environ.items() if key != "BOOK_DEVICE"}
    done = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", ONE_CORE, str(path)],
                          capture_output=True, text=True, env=env, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["seconds"], found["peak_bytes"]
MEASURED = re.compile(r"^measured: (?P<name>.+?) = (?P<value>[0-9.eE+-]+)(?P<rest>.*)$")


def execute(notebook, kernel, extra=None, keep_going=False):
    """Run a notebook top to bottom, then the code `extra` in the same kernel.

    Returns (seconds, notebook): the seconds cover starting the kernel and running the notebook,
    not `extra`, whose cell is appended to the returned notebook. keep_going: a cell that raises
    keeps its error as an output and the run goes on.
    """
    client = NotebookClient(notebook, kernel_name=kernel, timeout=1800, allow_errors=keep_going,
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    start = time.perf_counter()
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            client.execute_cell(cell, index)
        seconds = time.perf_counter() - start
        if extra:
            notebook.cells.append(nbformat.v4.new_code_cell(extra))
            client.execute_cell(notebook.cells[-1], len(notebook.cells) - 1)
    return seconds, notebook


def measurements(notebook):
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            for line in output.get("text", "").splitlines():
                if match := MEASURED.match(line):
                    yield match["name"], float(match["value"]), match["rest"].strip(" ;")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="book-cuda" if torch.cuda.is_available() else "book-cpu")
    parser.add_argument("--skip-one-core", action="store_true", help="leave out the hub's one-core runs")
    parser.add_argument("--one-core-runs", type=int, default=3, help="one-core runs per notebook (median)")
    parser.add_argument("--executed", type=pathlib.Path, help="also write each executed notebook here")
    parser.add_argument("--keep-going", action="store_true", help="a cell that raises is a row, not the end")
    args = parser.parse_args()
    device = torch.cuda.get_device_name() if args.kernel == "book-cuda" else platform.processor() or "CPU"
    print(f"kernel {args.kernel} on {device}, torch {torch.__version__}\n")

    # The reference first: each section's time is reported as a ratio to it.
    reference_seconds, _ = execute(jupytext.read(ROOT / "bench" / "d2l_reference.md"), args.kernel)
    rows, book_seconds, floor_seconds = [], 0.0, 0.0
    for section in SECTIONS:
        path = ROOT / "notebooks" / f"{section}.ipynb"
        if not path.exists():
            rows.append((f"{section}", "missing", "section not written yet"))
            continue
        extra = ROOT / "bench" / f"{section}.py"
        seconds, notebook = execute(nbformat.read(path, as_version=4), args.kernel,
                                    extra.read_text() if extra.exists() else None, args.keep_going)
        found = [(f"  {name}", f"{value:.3g}", rest) for name, value, rest in measurements(notebook)]
        raised = [f"{out.ename}: {out.evalue}"[:120] for cell in notebook.cells
                  for out in cell.get("outputs", []) if out.output_type == "error"]
        if raised:
            found.append((f"  cells that raised (the notebook's and bench/{section}.py)", len(raised),
                          "; ".join(raised)))
        # As it goes, so that a time limit that stops the run before the table keeps these lines:
        print(f"{section}: Run-All {seconds:.1f} s", *(f"{n} = {v} {r}" for n, v, r in found),
              sep="\n", flush=True)
        if args.executed:
            args.executed.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, args.executed / path.name)
        # The fixed cost: a kernel that runs only the notebook's setup and imports (its first two
        # code cells) and
        # imports torch._dynamo, which every section loads on first use anyway: d2l through
        # torchvision, FlopCounterMode and the dispatch modes directly, and torch.testing.assert_close
        # loads torch.distributed.tensor (most of it). The d2l reference pays it once, through d2l.
        first = nbformat.read(path, as_version=4)
        first.cells = [cell for cell in first.cells if cell.cell_type == "code"][:2] + [
            nbformat.v4.new_code_cell("import torch._dynamo")]
        floor_seconds += execute(first, args.kernel, keep_going=args.keep_going)[0]
        book_seconds += seconds
        ratio = seconds / reference_seconds
        rows.append((f"{section}: execution time / d2l reference ({seconds:.1f} s)", f"{ratio:.2f}",
                     f"target ≤ {SECTION_TARGET}: {'met' if ratio <= SECTION_TARGET else 'NOT met'}"))
        rows.extend(found)

    ratio = book_seconds / reference_seconds
    rows.append((f"whole book / d2l reference notebook ({book_seconds:.1f} s / {reference_seconds:.1f} s)",
                 f"{ratio:.2f}", f"target ≤ 4: {'met' if ratio <= 4 else 'NOT met'}"))
    rows.append((f"  of which starting the kernels and importing ({floor_seconds:.1f} s)",
                 f"{floor_seconds / reference_seconds:.2f}",
                 "each notebook's first cell + torch._dynamo alone, same ratio"))
    rows.append((f"  of which the sections' own work ({book_seconds - floor_seconds:.1f} s)",
                 f"{(book_seconds - floor_seconds) / reference_seconds:.2f}", "the rest, same ratio"))

    if shutil.which("taskset") and not args.skip_one_core:
        # One run's spread (the kernel start, the imports' disk reads) is as large as the margins, so
        # each notebook runs `--one-core-runs` times, the reference and the sections taking turns within
        # each round (a slow minute slows all of them), and the medians are compared.
        paths = {"d2l reference notebook": ROOT / "bench" / "d2l_reference.md"} | {
            section: ROOT / "notebooks" / f"{section}.ipynb" for section in SECTIONS}
        runs = {name: [] for name in paths}
        for _ in range(args.one_core_runs):
            for name, path in paths.items():
                runs[name].append(on_one_core(path))
        times = {name: [seconds for seconds, _ in found] for name, found in runs.items()}
        median = {name: statistics.median(found) for name, found in times.items()}

        def spread(name):
            return f"median of {len(times[name])}, {min(times[name]):.1f}–{max(times[name]):.1f} s"

        rows.append((f"on one core, as on a hub (python3 kernel, Run-All, median of {args.one_core_runs})",
                     "", ""))
        reference_one_core = median["d2l reference notebook"]
        rows.append(("  d2l reference notebook: Run-All on one core, s", f"{reference_one_core:.1f}",
                     spread("d2l reference notebook")))
        for section in SECTIONS:
            seconds, peak = median[section], max(peak for _, peak in runs[section])
            met = "met" if peak < HUB_MEMORY_TARGET_GB * 1e9 else "NOT met"
            ratio = seconds / reference_one_core
            verdict = "met" if ratio <= ONE_CORE_TARGET else "NOT met"
            rows.append((f"  {section}: Run-All on one core, s ({ratio:.2f}× the d2l reference's)",
                         f"{seconds:.1f}", f"target ≤ {ONE_CORE_TARGET:g}×: {verdict}; {spread(section)}"))
            rows.append((f"  {section}: kernel peak memory, GB (the largest of its runs)",
                         f"{peak / 1e9:.2f}", f"target < {HUB_MEMORY_TARGET_GB} GB: {met}"))

    width = max(len(name) for name, _, _ in rows)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>8}  {note}")


if __name__ == "__main__":
    main()
