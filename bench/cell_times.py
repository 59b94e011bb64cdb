"""Where a notebook's Run All spends its time: run it once and print its slowest cells.

    taskset -c 0 .venv/bin/python bench/cell_times.py notebooks/4-relative-positional-encoding.ipynb

Runs a copy in the python3 kernel with `make bench`'s runner (run.execute, from notebooks/; nbclient records
each cell's times), writes nothing back, and prints the total of the cells' own times and the 12 slowest
cells (seconds, index, tags, first line).
"""
import datetime
import sys

import nbformat
from run import execute


def seconds(cell):
    timing = cell.metadata["execution"]
    start, end = (datetime.datetime.fromisoformat(timing[key].replace("Z", "+00:00"))
                  for key in ("iopub.execute_input", "shell.execute_reply"))
    return (end - start).total_seconds()


def main(path):
    _, notebook = execute(nbformat.read(path, as_version=4), "python3")
    timed = [(index, cell) for index, cell in enumerate(notebook.cells) if "execution" in cell.metadata]
    rows = sorted(((seconds(cell), index, cell.metadata.get("tags", []), cell.source.split("\n", 1)[0][:70])
                   for index, cell in timed), reverse=True)
    print(f"{path}: {sum(row[0] for row in rows):.2f} s in its cells")
    for row in rows[:12]:
        print(f"{row[0]:6.2f} {row[1]:3d} {row[2]} {row[3]}")


if __name__ == "__main__":
    main(sys.argv[1])
