"""Every figure a chapter shows, met as the notebook shows it, from the one in-process run of each
chapter that tests/test_devices.py makes (the book is not executed once more for its figures).

    run_cell(source, filename, namespace, on_figure)   # exec one code cell; on_figure(fig, width, per_inch)
    chapter_run(chapter)    # {"violations": [...], "figures": [...]}: test_devices' run, once per session

A cell shows a matplotlib figure in three ways, and `on_figure` is called for each, with the width in
CSS pixels the notebook shows it at and the CSS pixels per inch of the figure there:
* its last expression is a Figure (`fig`): IPython shows it as the inline backend does,
  a PNG of its tight box (`bbox_inches='tight'`, padded by savefig.pad_inches) at the figure's dpi;
* it leaves pyplot figures open (`plt.show()` draws nothing under Agg): the inline backend shows them
  at the end of the cell, the same way, and closes them;
* its last expression is an explorer (attnbook.LiveFigure): its picture is shown whole at `css_size`
  (an explorer made and not shown, to test it, is not a figure on the page).
"""
import ast
import functools
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def inline_size(fig):
    """(CSS width, CSS pixels per inch) of an inline figure, as IPython's retina PNG is shown."""
    from figure_text import agg_canvas
    from matplotlib import rcParams

    canvas = agg_canvas(fig)
    canvas.draw()
    box = fig.get_tightbbox(canvas.get_renderer()).padded(rcParams["savefig.pad_inches"])
    return box.width * fig.dpi, fig.dpi


def run_cell(source, filename, namespace, on_figure=None):
    """Execute one code cell in `namespace` (line numbers and tracebacks name `filename`); with
    `on_figure`, hand it every figure the cell shows (see the module's docstring)."""
    tree = ast.parse(source, filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, filename, "exec"), namespace)
    value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace) if last else None
    if on_figure is None:
        return
    from matplotlib.figure import Figure

    from attnbook.widgets import LiveFigure

    shown = [value] if isinstance(value, Figure) else []
    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        shown += [plt.figure(number) for number in plt.get_fignums()
                  if plt.figure(number) is not value]
        plt.close("all")
    for fig in shown:
        if fig.axes or fig.lines:  # IPython shows nothing for an empty figure
            on_figure(fig, *inline_size(fig))
    if isinstance(value, LiveFigure):
        on_figure(value.fig, value.css_size[0], None)


@functools.cache
def chapter_run(chapter):
    """test_devices' run of a chapter (in a fresh process, as a kernel would be): its device violations
    and, for every figure it shows, figure_text's problems. Made once per pytest session, for both."""
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "test_devices.py"), str(chapter)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600, env=env)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_text(figures, start, folded, fig, css_width, css_per_inch):
    """An `on_figure` for run_cell (with the cell's first line and whether it is folded bound):
    figure_text's problems."""
    from figure_text import problems

    figures.append({"line": start, "css_width": round(css_width), "folded": folded,
                    "problems": problems(fig, css_width, css_per_inch, folded)})
