"""`make check`: each chapter (the source) and its notebook (generated, executed) agree."""
import pathlib

import jupytext
import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))


def cells(notebook):
    return [(cell.cell_type, cell.source) for cell in notebook.cells]


def test_chapters_and_notebooks_pair_up():
    assert CHAPTERS, "no chapters found"
    assert [p.stem for p in CHAPTERS] == sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_notebook_has_the_chapters_cells(chapter):
    notebook = nbformat.read(ROOT / "notebooks" / f"{chapter.stem}.ipynb", as_version=4)
    assert cells(notebook) == cells(jupytext.read(chapter)), (
        f"{chapter.name} and its notebook differ: run `make notebooks` and commit both")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_notebook_was_executed_top_to_bottom_on_the_cpu_kernel(chapter):
    notebook = nbformat.read(ROOT / "notebooks" / f"{chapter.stem}.ipynb", as_version=4)
    counts = [cell.execution_count for cell in notebook.cells if cell.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), "run `make notebooks` (never edit outputs by hand)"
    assert notebook.metadata.kernelspec.name == "python3"  # the standard kernel every Jupyter has
