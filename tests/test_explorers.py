"""Property tests of every section's explorer (attnbook.LiveFigure), driven as a restless reader would.

Each chapters/*.md runs once, in-process (IPython's InteractiveShell, BOOK_DEVICE=cpu, matplotlib's
Agg backend), every code cell of it up to the one that builds its (last) explorer. Every
LiveFigure left in its namespace is then driven with random sequences of control values, valid and
invalid: slider values inside and outside their range (the slider clamps them), values off the
slider's step (odd widths), any option of a menu, several controls at once through
`live.set(...)` or one at a time through `control.value = ...`.

After each step: no exception escaped, and either the figure shows the current values (`live.shown
== live.values()`, no error, the readout is what `draw` says for them) or the readout shows a
one-line message and the picture is marked stale. A chapter added later (chapters/5-*.md) is picked
up by the glob.
"""
import pathlib

import ipywidgets as widgets
import matplotlib
import numpy as np
import pytest
import traitlets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

matplotlib.use("Agg")

from attnbook.widgets import STALE_CLASS, LiveFigure  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTERS = sorted(ROOT.glob("chapters/*.md"))
MAX_EXAMPLES = 25
MAX_STEPS = 5


@pytest.fixture(scope="module", params=[path.stem for path in CHAPTERS])
def explorers(request):
    """Run one chapter's code cells in a fresh namespace; return its LiveFigures by variable name."""
    import jupytext
    from IPython.core.interactiveshell import InteractiveShell

    patch = pytest.MonkeyPatch()  # the variables and folder the notebook runs with, undone after
    patch.setenv("BOOK_DEVICE", "cpu")
    patch.setenv("MPLBACKEND", "Agg")
    patch.chdir(ROOT / "notebooks")  # where the notebook runs: relative paths resolve the same way
    shell = InteractiveShell.instance()
    shell.reset(new_session=False)
    try:
        notebook = jupytext.read(ROOT / "chapters" / f"{request.param}.md")
        code = [(index, cell.source) for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
        # Quick: stop once the cells that build explorers have run and one of them made a LiveFigure
        # (the explorer may be built by a later cell calling the function the last one defined).
        last = max((k for k, (_, source) in enumerate(code) if "LiveFigure" in source), default=len(code))
        before = set()
        for k, (index, source) in enumerate(code):
            if k == last:
                before = {id(value) for value in shell.user_ns.values() if isinstance(value, LiveFigure)}
            result = shell.run_cell(source, silent=True, store_history=False)
            if not result.success:
                error = result.error_in_exec or result.error_before_exec
                pytest.fail(f"{request.param}: code cell {index} failed: {type(error).__name__}: {error}")
            made = {id(value) for value in shell.user_ns.values() if isinstance(value, LiveFigure)}
            if k >= last and made - before:
                break
    except BaseException:
        patch.undo()
        raise
    found = {name: value for name, value in shell.user_ns.items() if isinstance(value, LiveFigure)}
    yield request.param, found
    import matplotlib.pyplot as plt

    plt.close("all")
    shell.reset(new_session=False)
    patch.undo()


def value_strategy(control):
    """Values a reader or a line of code could give this control, invalid ones included."""
    if isinstance(control, widgets.IntSlider | widgets.BoundedIntText | widgets.IntText):
        low, high = getattr(control, "min", -100), getattr(control, "max", 100)
        span = max(high - low, 4)
        # anywhere in the range (off its step too), the ends, and beyond them (clamped by the slider)
        return st.one_of(st.integers(low, high), st.sampled_from([low, high, low + 1, high - 1]),
                         st.integers(low - span, high + span))
    if isinstance(control, widgets.FloatSlider | widgets.FloatLogSlider):
        low, high = control.min, control.max
        return st.floats(low - (high - low), high + (high - low), allow_nan=False)
    if isinstance(control, widgets.Checkbox | widgets.ToggleButton):
        return st.booleans()
    if hasattr(control, "_options_values"):  # Dropdown, ToggleButtons, RadioButtons, Select...
        return st.sampled_from(list(control._options_values)) if control._options_values else None
    return None


def check(live):
    """What must hold after every move."""
    assert live.error is None or (isinstance(live.error, str) and live.error and "\n" not in live.error)
    if live.error is None:
        assert live.shown == live.values(), "the picture shows other values than the controls"
        assert STALE_CLASS not in live.image._dom_classes
        assert live.readout.value == (live.draw(**live.values()) or ""), "readout is not for these values"
        # the picture drawn from the cached layers is the picture drawn from scratch: no stale tick
        # label or line left (a colour bar's gradient, drawn once, may differ in its anti-aliasing
        # by a few levels when its scale changed: invisible, and allowed)
        blitted = np.asarray(live.canvas.buffer_rgba(), dtype=np.int16).copy()
        live.redraw_all()
        difference = np.abs(np.asarray(live.canvas.buffer_rgba(), dtype=np.int16) - blitted).max(axis=-1)
        assert (difference > 16).sum() == 0, f"the cached layers left {(difference > 16).sum()} stale pixels"
    else:
        assert live.shown is None
        assert "Cannot show this" in live.readout.value and "\n" not in live.readout.value
        assert STALE_CLASS in live.image._dom_classes, "an error, but the picture is not marked stale"


def restore(live, values):
    """Back to the chapter's values (twice: a menu's options may depend on a slider set before it)."""
    for _ in range(2):
        try:
            live.set(**values)
        except traitlets.TraitError:
            continue
        if live.values() == values:
            return
    assert live.values() == values, "could not return to the chapter's values"


def test_every_chapter_has_an_explorer(explorers):
    chapter, found = explorers
    assert found, f"{chapter}: no attnbook.LiveFigure in the notebook's namespace"


@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_explorers_never_fall_out_of_step(explorers, data):
    chapter, found = explorers
    for name, live in found.items():
        start = live.values()
        try:
            check(live)
            for _ in range(data.draw(st.integers(1, MAX_STEPS), label="steps")):
                names = data.draw(st.lists(st.sampled_from(list(live.controls)), min_size=1,
                                           max_size=len(live.controls), unique=True), label="controls")
                together = data.draw(st.booleans(), label="set together")
                moves = {}
                for control_name in names:
                    strategy = value_strategy(live.controls[control_name])
                    if strategy is not None:
                        moves[control_name] = data.draw(strategy, label=f"{name}.{control_name}")
                try:
                    if together:
                        live.set(**moves)
                    else:
                        for control_name, value in moves.items():
                            live.controls[control_name].value = value
                except traitlets.TraitError:
                    pass  # a menu refused an option it no longer has (its options followed a slider)
                check(live)
        finally:
            restore(live, start)
