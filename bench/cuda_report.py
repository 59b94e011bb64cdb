"""The evidence of bench/cuda.sh: what the machine has, and the draft of bench/results/cuda-DATE.md.

    python3 bench/cuda_report.py versions          GPU, driver, torch, CUDA and package versions, then
                                                   every module the notebooks import (exit 1 if one fails)
    python3 bench/cuda_report.py report OUT [MISSED ...]
                                                   OUT/summary.txt and OUT/cuda-DATE.md from the run's
                                                   files in OUT (test-cuda.xml, bench.txt, log.txt)
"""
import ast
import datetime
import importlib
import importlib.metadata
import json
import pathlib
import platform
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ["torch", "torchvision", "numpy", "matplotlib", "pandas", "scipy", "transformers", "d2l",
            "ipywidgets", "ipykernel", "nbclient", "nbformat", "nbval", "jupytext", "pytest"]
SUMMARY = re.compile(r"^=+ (.*\b(passed|failed|error|errors)\b.* in [0-9.]+s.*) =+$")


def machine():
    """GPU, driver and library versions, as a dict of short strings."""
    found = {"python": platform.python_version()}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        gpu, driver, memory = (part.strip() for part in smi.stdout.splitlines()[0].split(","))
        found.update(gpu=f"{gpu}, {memory}", driver=driver)
    except Exception as error:  # no nvidia-smi, no GPU, or an answer of another shape
        found.update(gpu=f"nvidia-smi gave none ({type(error).__name__})", driver="unknown")
    try:
        import torch

        found["torch"] = torch.__version__
        found["CUDA (torch built with)"] = str(torch.version.cuda)
        found["cuDNN"] = str(torch.backends.cudnn.version())
        found["torch sees a GPU"] = (torch.cuda.get_device_name() if torch.cuda.is_available() else "no")
    except Exception as error:
        found["torch"] = f"fails to import: {error}"
    for name in PACKAGES[1:]:
        try:
            where = importlib.metadata.distribution(name).locate_file("")
            found[name] = f"{importlib.metadata.version(name)} ({where})"
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def imported(path):
    """(module, name or None) for each import statement in a notebook's code cells or a script."""
    if path.suffix == ".ipynb":
        cells = ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]
                 if cell["cell_type"] == "code"]
    else:
        cells = [path.read_text()]
    for source in cells:
        source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                yield from ((alias.name, None) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                yield from ((node.module, alias.name) for alias in node.names)


def import_problems():
    """One line for each module or name that the notebooks (and bench/run.py) import and that fails."""
    sys.path.insert(0, str(ROOT))  # attnbook, as the notebooks' first cell finds it
    wanted = {}
    for path in sorted(ROOT.glob("notebooks/*.ipynb")) + [ROOT / "bench" / "run.py"]:
        for module, name in imported(path):
            wanted.setdefault((module, name), path.name)
    problems = []
    for (module, name), where in sorted(wanted.items(), key=lambda item: (item[0][0], item[0][1] or "")):
        try:
            loaded = importlib.import_module(module)
            if name and name != "*" and not hasattr(loaded, name):
                importlib.import_module(f"{module}.{name}")
        except Exception as error:
            what = f"from {module} import {name}" if name else f"import {module}"
            problems.append(f"{what} ({where}): {type(error).__name__}: {str(error).splitlines()[0][:150]}")
    return len(wanted), problems


def versions():
    for key, value in machine().items():
        print(f"{key}: {value}")
    count, problems = import_problems()
    for line in problems:
        print("import fails:", line)
    print(f"imports: {count - len(problems)} of the {count} the notebooks and bench/run.py make load")
    return 1 if problems else 0


def test_counts(out):
    """(summary line, counts dict, failing cells) from pytest's JUnit file and log, where present."""
    log = out / "log.txt"
    log_text = log.read_text(errors="replace") if log.exists() else ""
    lines = [m[1] for line in log_text.splitlines() if (m := SUMMARY.match(line.strip()))]
    junit = out / "test-cuda.xml"
    if not junit.exists():  # pytest stopped before writing it: count the cells -v printed
        verdicts = re.findall(r"^(notebooks/\S+::Cell \d+) (PASSED|FAILED|SKIPPED)", log_text, re.M)
        if not verdicts:
            return (lines[-1] if lines else None), None, []
        failing = [f"{cell}: failed (no report: pytest was stopped)" for cell, v in verdicts if v == "FAILED"]
        skipped = sum(v == "SKIPPED" for _, v in verdicts)
        counts = {"tests": len(verdicts), "failures": len(failing), "errors": 0, "skipped": skipped,
                  "passed": len(verdicts) - len(failing) - skipped}
        return f"stopped after {len(verdicts)} cells (no summary line)", counts, failing
    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    failing = []
    for case in suite.iter("testcase"):
        for bad in list(case.findall("failure")) + list(case.findall("error")):
            message = (bad.get("message") or bad.text or "").strip().splitlines()
            first = message[0][:200] if message else ""
            failing.append(f"{case.get('classname')}::{case.get('name')}: {first}")
    return (lines[-1] if lines else None), counts, failing


def report(out, missed):
    found = machine()
    summary, counts, failing = test_counts(out)
    bench = out / "bench.txt"
    table = bench.read_text(errors="replace").rstrip() if bench.exists() else ""
    counted = ("not run" if counts is None else
               f"{counts['passed']} passed, {counts['failures'] + counts['errors']} failed"
               f"{', %d skipped' % counts['skipped'] if counts['skipped'] else ''}")
    could_not = "; ".join(missed) if missed else "nothing: every step ran"
    (out / "summary.txt").write_text(
        f"test-cuda: {counted}\npytest: {summary or 'no summary line (see log.txt)'}\n"
        + "".join(f"failing: {line}\n" for line in failing)
        + f"bench: {'bench.txt' if table else 'no table'}\ncould not: {could_not}\n")

    today = datetime.datetime.now(datetime.UTC)
    rows = "\n".join(f"| {key} | {value} |" for key, value in found.items())
    failures = "\n".join(f"- `{line}`" for line in failing) or "none"
    text = f"""# The book on a CUDA GPU, {today:%Y-%m-%d}

Draft written by `bench/cuda.sh` on the GPU machine ({today:%H:%M} UTC); edit before committing.

| what | version |
| --- | --- |
{rows}

## `make test-cuda` (nbval strict, every notebook on the `book-cuda` kernel)

Cells: **{counted}** (from pytest's JUnit report, or its `-v` lines if it was stopped).

```text
{summary or 'no summary line: see log.txt'}
```

Failing cells:

{failures}

## The CUDA half of `make bench` (`bench/run.py --kernel book-cuda --skip-one-core`)

```text
{table or 'not run: see log.txt'}
```

Could not: {could_not}.
"""
    (out / f"cuda-{today:%Y-%m-%d}.md").write_text(text)
    print((out / "summary.txt").read_text(), end="")


if __name__ == "__main__":
    if sys.argv[1:2] == ["versions"]:
        sys.exit(versions())
    if sys.argv[1:2] == ["report"] and len(sys.argv) > 2:
        report(pathlib.Path(sys.argv[2]), sys.argv[3:])
    else:
        sys.exit(__doc__)
