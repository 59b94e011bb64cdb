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
    """Each section has its explorer, with the book's two sliders: the width d and the length n (the
    website's precomputed pictures are a grid over exactly these two; a label may say d_h)."""
    chapter, found = explorers
    assert found, f"{chapter}: no attnbook.LiveFigure in the notebook's namespace"
    for name, live in found.items():
        missing = {"d", "n"} - set(live.controls)
        assert not missing, f"{chapter}: explorer {name} has no control named {sorted(missing)}"


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


@pytest.mark.parametrize("explorers", ["4-relative-positional-encoding"], indirect=True)
def test_relative_explorer_follows_its_variant(explorers):
    """Section 4: each variant draws its own picture, and a control the variant ignores is disabled."""
    _, found = explorers
    live = found["explorer"]
    start, variants = live.values(), list(live.controls["variant"].options)
    try:
        images = set()
        for option in variants:
            assert live.set(variant=option, n=40)
            images.add(live.image.value)
        assert len(images) == len(variants) == 5
        assert live.set(variant=variants[0], c=0) and "shares one vector" in live.readout.value
        assert live.controls["d"].disabled and not live.controls["c"].disabled
        assert "d_h" not in live.readout.value
        assert live.set(n=1, c=3)
        rope = next(option for option in variants if option.startswith("RoPE"))
        assert not live.set(variant=rope, d=7) and "must be even" in live.readout.value  # from code only
        assert live.set(d=8) and "d_h = 8" in live.readout.value
        assert live.controls["c"].disabled and not live.controls["d"].disabled
        alibi = next(option for option in variants if option.startswith("ALiBi"))
        assert live.set(variant=alibi) and live.controls["d"].disabled and "c =" not in live.readout.value
    finally:
        restore(live, start)


def test_positional_encoding_explorer_follows_its_controls(explorers):
    """Section 3's explorer: a wider, longer table; a column that no longer exists at a smaller d; the
    curves' window of six wavelengths; whole ticks at n = 1 and 2; values that cannot work."""
    chapter, found = explorers
    if chapter != "3-positional-encoding":
        pytest.skip("section 3's explorer only")
    live = found["explorer"]
    start, before = live.values(), live.image.value
    try:
        assert live.set(d=64, n=128, first_column=20)
        assert live.image.value != before and "P is 128 × 64" in live.readout.value
        assert live.set(d=10, first_column=12)  # the column slider is pulled back to d - 1
        assert live.values() == {"d": 10, "n": 128, "first_column": 9}
        assert [t.get_text() for t in live.fig.axes[0].get_legend().get_texts()] == ["9: cos ℓ=4"]
        assert live.set(d=410, n=1000, first_column=0)  # fast columns: six wavelengths, 38 positions
        curves = live.fig.axes[0].get_lines()
        assert len(curves[0].get_xdata()) == 38
        assert live.fig.axes[1].get_images()[0].get_array().shape == (1000, 410)
        for n_small in (1, 2):
            assert live.set(n=n_small) and len(curves[0].get_xdata()) == n_small
            for ticks in (live.fig.axes[0].get_xticks(), live.fig.axes[1].get_yticks()):
                assert all(t == int(t) for t in ticks), ticks
        assert not live.controls["d"].step % 2 and live.controls["d"].min == 2
        for bad in [dict(d=7, n=10, first_column=0), dict(d=32, n=1001, first_column=0),
                    dict(d=4, n=10, first_column=5)]:
            with pytest.raises(ValueError) as error:
                live.draw(**bad)
            assert "\n" not in str(error.value)
    finally:
        restore(live, start)


@pytest.mark.parametrize("explorers", ["2-cnn-rnn-self-attention"], indirect=True)
def test_complexity_explorer_at_its_suggested_settings(explorers):
    """Section 2: the two settings the text suggests, drawn inside the figure with whole ticks (layer 1
    among them), the FLOP axis hugging the curves, and an even κ refused in one line."""
    _, found = explorers
    live = found["explorer"]
    start, before = live.values(), live.image.value
    assert tuple(live.fig.get_size_inches()) <= (8, 3.4) and live.fig.get_size_inches()[1] <= 3.4
    try:
        assert live.set(n=1000, d=64, kernel_width=5)
        assert live.image.value != before
        assert live.fig.axes[1].get_title() == "reaches input 0 after 500 layers"
        assert "FLOPs: convolution" in live.readout.value
        assert "Path in edges: convolution 500, RNN 1000, self-attention 1." in live.readout.value
        curves = [line.get_ydata() for line in live.fig.axes[0].get_lines() if len(line.get_ydata()) > 2]
        low, high = live.fig.axes[0].get_ylim()  # a third of the least FLOPs, three times the most
        assert np.isclose(3 * low, min(c[0] for c in curves))
        assert np.isclose(high / 3, max(c[-1] for c in curves))
        assert 1 in live.fig.axes[1].get_yticks()
        renderer = live.fig.canvas.get_renderer()
        for n in [1, 2]:
            assert live.set(n=n, d=1024, kernel_width=15)
            field = live.fig.axes[1]
            assert all(float(t).is_integer() for t in [*field.get_xticks(), *field.get_yticks()])
            assert field.get_title() == "reaches input 0 after 1 layer"
            assert live.readout.value.endswith("self-attention 1."), live.readout.value
            assert all(live.fig.bbox.contains(*corner) for ax in live.fig.axes
                       for corner in ax.get_tightbbox(renderer).corners())  # every label inside the picture
        assert "RNN 2, self-attention 1." in live.readout.value  # n = 2: x_0 -> s_0 -> s_1, as the table
        assert not live.set(kernel_width=4) and "odd κ" in live.readout.value
        assert live.set(**start) and live.fig.canvas is live.canvas  # still drawing on its own canvas
    finally:
        restore(live, start)


def hatched_areas(ax):
    """The area of each hatched (masked-key) shape on an axes, by the shoelace formula."""
    hatches = next(c for c in ax.collections if c.get_hatch())
    return [abs((v[:-1, 0] * v[1:, 1] - v[1:, 0] * v[:-1, 1]).sum()) / 2
            for v in (path.vertices for path in hatches.get_paths())]


@pytest.mark.parametrize("explorers", ["1-self-attention"], indirect=True)
def test_attention_explorer_follows_its_controls(explorers):
    """Section 1: the heads menu offers divisors of d and comes back to the reader's choice; the masked
    keys of a valid length and of causal are hatched in every head; n = 1 and 2 draw; the colour bar's
    top is the first step at or above the largest weight; 4 heads of d = 10 are refused in one line."""
    _, found = explorers
    live = found["explorer"]
    heads_menu, valid_slider = live.controls["heads"], live.controls["valid"]
    start = live.values()
    ax = live.fig.axes[0]
    try:
        assert live.set(d=16, n=8, heads=4, valid=6, causal=False)
        strip = ax.get_images()[0].get_array()
        assert strip.shape == (8, 4 * 8 + 3 * 2)  # 4 heads of 8 keys, 2 blank columns between two heads
        starts = [0, 10, 20, 30]
        for x0 in starts:  # each head: keys 0-5 share each row's weight of 1, keys 6 and 7 masked
            assert np.allclose(strip[:, x0:x0 + 6].sum(axis=1), 1) and strip[:, x0 + 6:x0 + 8].mask.all()
        assert hatched_areas(ax) == [2 * 8.0] * 4
        assert [t.get_text() for t in ax.get_xticklabels(minor=True)] == [f"head {g}" for g in (1, 2, 3, 4)]
        assert "keys 6 to 7 masked" in live.readout.value and "4 heads of width 4" in live.readout.value
        assert "keys 6 to 7 masked" in live.description

        assert live.set(d=12, n=10, heads=3, valid=10) and "Y (1, 10, 12)" in live.readout.value
        assert "no keys masked" in live.readout.value and not any(hatched_areas(ax))
        assert live.set(heads=4)
        live.controls["d"].value = 10  # as a reader drags d: 4 does not divide 10, the nearest divisor is 5
        assert list(heads_menu.options) == [1, 2, 5]
        assert live.shown == live.values() == dict(d=10, n=10, heads=5, valid=10, causal=False)
        assert ax.get_title(loc="left") == "d = 10, n = 10, valid length 10: 5 heads of width 2"
        live.controls["d"].value = 16  # back to the reader's choice
        assert heads_menu.value == 4 and live.shown == live.values()

        assert live.set(n=1) and valid_slider.disabled and valid_slider.value == 1
        assert ax.get_images()[0].get_array().shape[0] == 1
        assert live.set(n=2) and not valid_slider.disabled and live.set(valid=1)
        assert "key 1 masked" in live.readout.value and hatched_areas(ax) == [2.0] * 4
        assert live.set(n=4, valid=4, causal=True) and "causal: keys j > i masked" in live.readout.value
        assert hatched_areas(ax) == [6.0] * 4  # the 6 keys above the diagonal of a 4 x 4 block, per head
        first_query = ax.get_images()[0].get_array()[0, :4]
        assert first_query[0] == 1 and first_query.mask[1:].all()  # the first query attends to itself only

        steps = [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0]
        for d in (18, 20, 22, 30, 54):
            assert live.set(d=d, n=8, heads=2, valid=6, causal=False)
            largest, top = ax.get_images()[0].get_array().max(), ax.get_images()[0].get_clim()[1]
            assert top in steps and steps[steps.index(top) - 1] < largest <= top, (d, top)
        tops = []  # as the text says: raise n and valid together, and the colour bar's top falls
        for n in (8, 32):
            assert live.set(d=16, n=n, heads=4, valid=n)
            largest, top = ax.get_images()[0].get_array().max(), ax.get_images()[0].get_clim()[1]
            assert top in steps and steps[steps.index(top) - 1] < largest <= top, (n, top)
            tops.append(top)
        assert tops[1] < tops[0], tops

        with pytest.raises(ValueError, match="4 heads do not divide d=10") as error:
            live.draw(d=10, n=10, heads=4, valid=10, causal=False)  # only from code: the menu never offers it
        assert "\n" not in str(error.value)
        with pytest.raises(ValueError, match="valid length 9 must lie between 1 and n=8"):
            live.draw(d=16, n=8, heads=4, valid=9, causal=False)
    finally:
        restore(live, start)


@pytest.mark.parametrize("explorers", ["6-longer-than-trained"], indirect=True)
def test_scaling_explorer_shows_what_the_text_says(explorers):
    """Section 6: each stretching method draws its own picture (the factor greyed out for plain RoPE),
    and the three things the text asks the reader to look for hold on the scores: PI's curve is
    RoPE's stretched by s, the fastest pair is kept, YaRN's curve starts at c² ≈ 1.30 for s = 4."""
    import torch
    from IPython.core.interactiveshell import InteractiveShell

    ns = InteractiveShell.instance().user_ns
    methods, frequencies, scaling_for = ns["METHODS"], ns["rope_frequencies"], ns["scaling_for"]
    mean_cos = ns["mean_cos_at_every_distance"]
    probe = ns["scaling_explorer"]()  # its own instance: the chapter's stays where the reader left it
    images = set()
    for method in methods:
        assert probe.set(method=method, factor=8)
        assert probe.controls["factor"].disabled == (method == "RoPE")
        assert ("factor 8" in probe.readout.value) == (method != "RoPE")
        images.add(probe.image.value)
    assert len(images) == len(methods)
    assert probe.set(d=4, n=2, n_train=16) and "d_h = 4, n = 2" in probe.readout.value
    omega = frequencies(16)[0]  # every whole-number distance, as a direct sum would give
    direct = torch.cos(torch.arange(1001)[:, None] * omega).mean(-1)
    torch.testing.assert_close(mean_cos(omega, 1000), direct, atol=1e-4, rtol=0)
    x_shown, y_shown = ns["envelope"](direct)
    assert y_shown.max() == direct.max() and y_shown.min() == direct.min() and x_shown.max() <= 1000
    omega_64 = {m: frequencies(64, scaling=scaling_for(m, 4, 4096), seq_len=8192) for m in methods}
    plain, stretched = (mean_cos(omega_64[m][0], 8192) for m in ["RoPE", "PI (linear)"])
    torch.testing.assert_close(stretched[::4], plain[:2049], atol=1e-4, rtol=0)  # PI: stretched by s
    for method in ["dynamic NTK", "YaRN"]:  # the fastest pair kept
        torch.testing.assert_close(omega_64[method][0][0], omega_64["RoPE"][0][0])
    ntk_short = frequencies(64, scaling=scaling_for("dynamic NTK", 4, 4096), seq_len=4096)[0]
    assert torch.equal(ntk_short, omega_64["RoPE"][0])  # NTK up to n_train: plain RoPE
    assert round(omega_64["YaRN"][1] ** 2, 2) == 1.30  # YaRN's curve starts at c²
