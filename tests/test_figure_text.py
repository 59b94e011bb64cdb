"""Every figure's words can be read where the page shows them (issue 26): each text of each figure a
chapter shows is at least 9 pt there and has a contrast of 4.5:1 with what lies behind it, in the
light and the dark scheme (tests/figure_text.py says how that is measured).

The figures are those of test_devices' run of each chapter (tests/shown_figures.py): every code cell,
every figure as the notebook shows it (an inline figure at its dpi, an explorer at its css_size),
the page shrinking a wider one to its column. The figures in img/ are checked by tests/test_img.py.
"""
import json
import pathlib

import nbformat
import numpy as np
import pytest
from figure_text import problems
from matplotlib.figure import Figure
from shown_figures import chapter_run, run_cell

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))


def image_outputs(notebook):
    """How many pictures the executed notebook shows (a cell's image outputs)."""
    return sum(any(mime.startswith("image/") for mime in output.get("data", {}))
               for cell in nbformat.read(notebook, as_version=4).cells for output in cell.get("outputs", []))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_every_figures_text_is_large_and_dark_enough_on_the_page(chapter):
    run = chapter_run(chapter)
    figures, notebook = run["figures"], ROOT / "notebooks" / f"{chapter.stem}.ipynb"
    assert len(figures) == image_outputs(notebook), (
        f"{len(figures)} figures shown by the run of {chapter.name}, {image_outputs(notebook)} pictures in "
        f"{notebook.name} (a cell that raised, or a notebook to regenerate with `make`): "
        + json.dumps(run["violations"])[:2000])
    failing = [f"{chapter.name}:{figure['line']} (shown {figure['css_width']} px wide): {problem}"
               for figure in figures for problem in figure["problems"]]
    assert not failing, "figure text too small or too faint on the page:\n" + "\n".join(failing)


# ------------------------------------------------------------------- the check can fail, and finds
def test_small_or_faint_text_is_reported_and_readable_text_is_not():
    fig = Figure(figsize=(6, 3), dpi=100)
    ax = fig.subplots()
    ax.set_title("readable", fontsize=12)
    ax.tick_params(labelsize=12)
    drawing = fig.add_axes((0.8, 0.8, 0.1, 0.1))
    drawing.tick_params(labelsize=5)
    drawing.axis("off")  # its tick labels are not drawn: not on the page
    assert problems(fig, 600) == []
    ax.text(0.1, 0.5, "too small", fontsize=8)    # 8 pt at 100 CSS px per inch is 8 x 100/96 pt
    ax.text(0.1, 0.2, "too faint", fontsize=12, color="#b0b0b0")  # 2.1:1 on white
    found = problems(fig, 600)
    assert len(found) == 3, found  # the small one; the faint one in both schemes
    assert found[0].startswith("'too small': 8.3 pt") and "'too faint': contrast" in found[1]
    assert "light scheme" in found[1] and "dark scheme" in found[2]
    wide = Figure(figsize=(12, 3), dpi=100)
    wide.suptitle("readable where it is not shrunk", fontsize=12)
    assert problems(wide, 1200) == ["'readable where it is not shrunk': 7.0 pt on the page (at least 9)"]


def test_a_folded_figure_is_checked_in_the_folds_narrower_column():
    """7 in wide at 100 dpi is 700 CSS px: shrunk to the page's column its 9.1 pt title keeps 9 pt, shrunk
    further to a fold's, it does not."""
    fig = Figure(figsize=(7, 2), dpi=100)
    fig.suptitle("title", fontsize=9.1)
    assert problems(fig, 700) == []
    assert problems(fig, 700, folded=True) == ["'title': 8.9 pt on the page (at least 9)"]


def test_what_is_behind_a_text_is_measured_where_the_layout_put_it():
    """A constrained layout with its texts hidden would grow the heatmap under its tick labels: the
    background is taken from the layout as drawn (this heatmap's labels read 3.2:1 against its cells)."""
    fig = Figure(figsize=(6, 4), dpi=100, layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(np.random.default_rng(0).uniform(-1, 1, (60, 32)), cmap="RdBu", aspect="auto")
    ax.set(xlabel="column", ylabel="position")
    fig.colorbar(image, ax=ax, label="value")
    assert problems(fig, 610, 100) == []
    assert fig.get_layout_engine().__class__.__name__ == "ConstrainedLayoutEngine"  # put back


def test_a_cell_hands_over_each_figure_it_shows_at_its_shown_size():
    """The three ways a cell shows a figure; a figure the cell closed, or an empty one, shows nothing."""
    shown = []
    source = ("import attnbook\nimport matplotlib.pyplot as plt\nfrom matplotlib.figure import Figure\n"
              "plt.subplots(figsize=(3, 2)); plt.close(plt.figure(figsize=(3, 3)))\n"
              "probe = attnbook.LiveFigure(Figure(figsize=(4, 2), dpi=100), lambda: None)\n"  # not shown
              "empty = plt.figure(figsize=(9, 9))\n"
              "fig = Figure(figsize=(8, 2), dpi=100); fig.subplots()\nfig\n")
    def record(fig, width, per_inch):
        shown.append((fig.get_figwidth(), width, per_inch))

    namespace = {}
    run_cell(source, "<cell 0>", namespace, record)
    run_cell("attnbook.LiveFigure(Figure(figsize=(5, 2), dpi=100), lambda: None)", "<cell 1>", namespace,
             record)
    (last, inline_width, _), (pyplot, pyplot_width, _), explorer = shown
    assert (last, pyplot, explorer) == (8, 3, (5, 500, None))
    assert 600 < inline_width < 800 and 200 < pyplot_width < 300  # the tight box, 0.1 in padding: not figsize
    assert {per_inch for _, _, per_inch in shown[:2]} == {100}


def test_a_chapter_with_faint_small_text_fails(tmp_path):
    chapter = tmp_path / "9-example.md"
    chapter.write_text("```{code-cell} ipython3\nimport matplotlib.pyplot as plt\n"
                       "fig, ax = plt.subplots(figsize=(9, 3))\n"
                       "ax.set_xlabel('faint', color='#aaaaaa'); ax.set_ylabel('small', fontsize=7)\n"
                       "plt.show()\n```\n")
    run = chapter_run(chapter)
    assert run["violations"] == [] and len(run["figures"]) == 1
    found = run["figures"][0]["problems"]
    assert any(p.startswith("'faint': contrast") for p in found), found
    assert any(p.startswith("'small': 6.") for p in found), found  # 7 pt, its tight box shrunk to 672 px
