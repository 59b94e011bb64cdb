"""Unit tests of the attnbook helpers."""
import base64
import html
import io

import ipywidgets as widgets
import matplotlib
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from PIL import Image

matplotlib.use("Agg")

import attnbook  # noqa: E402
from attnbook.device import NoGPUError, pick_device  # noqa: E402


def test_pick_device_reads_the_kernels_variable():
    assert pick_device({}) == torch.device("cuda" if torch.cuda.is_available() else "cpu")  # unset
    assert pick_device({"BOOK_DEVICE": ""}) == pick_device({})
    assert pick_device({"BOOK_DEVICE": " CPU "}) == torch.device("cpu")
    with pytest.raises(ValueError, match="expected 'cpu' or 'cuda'"):
        pick_device({"BOOK_DEVICE": "tpu"})


def test_unset_device_means_the_gpu_when_torch_sees_one(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device({}) == torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device({}) == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown where there is no GPU")
def test_cuda_kernel_without_gpu_says_so_in_one_line():
    with pytest.raises(NoGPUError) as error:
        pick_device({"BOOK_DEVICE": "cuda"})
    assert "torch sees no GPU" in str(error.value) and "\n" not in str(error.value)


def shown_outputs(fig):
    """The outputs a kernel shows for display(fig): [(data, metadata)]."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    formatter = InteractiveShell.instance().display_formatter
    formatter.active_types = formatter.format_types  # every format, as in a kernel
    with capture_output() as captured:
        display(fig)
    return [(output.data, output.metadata) for output in captured.outputs]


def test_d2l_figures_become_png():
    """After d2l asks for SVG, a figure still displays as PNG drawn at 2x and shown at its size."""
    from d2l import torch as d2l

    attnbook.use_png_figures()  # after importing d2l, as the notebooks do
    d2l.use_svg_display()
    fig = Figure(figsize=(3, 2), dpi=100)
    fig.subplots().plot([0, 1])
    (data, metadata), _ = shown_outputs(fig)
    assert "image/svg+xml" not in data and "image/png" in data
    width, height = Image.open(io.BytesIO(base64.b64decode(data["image/png"]))).size
    shown = metadata["image/png"]  # the size it is shown at, in CSS pixels
    assert (width // 2, height // 2) == (shown["width"], shown["height"])


def test_a_figure_is_shown_with_its_words_for_screen_readers():
    """After the image, an output only screen readers read in JupyterLab; the image's alt says the same."""
    attnbook.use_png_figures()
    fig = Figure(figsize=(4, 2))
    bars, grid = fig.subplots(1, 2)
    bars.bar(["the", "cat"], [0.3, 0.7])
    bars.set(ylabel="weight $\\alpha$", title="weights of 'sat'")
    image = grid.imshow(np.eye(2))
    grid.set(xlabel="key j", ylabel="query i", yscale="linear")
    fig.colorbar(image, ax=grid, label="$\\mathbf{p}_i\\cdot\\mathbf{p}_j$")
    grid.legend(handles=[grid.plot([], [], label="mask")[0]])
    (image_data, image_metadata), (words_data, words_metadata) = shown_outputs(fig)
    words = attnbook.figures.in_words(fig)
    assert words == ("Figure in words, 2 panels. 1. bar chart “weights of 'sat'”; x axis: the, cat; "
                     "y axis: weight α. 2. heatmap; x axis: key j; y axis: query i; colour bar: p_i·p_j; "
                     "legend: mask.")
    assert "image/png" in image_data and image_metadata["image/png"]["alt"] == words
    assert words_metadata == {attnbook.figures.WORDS_KEY: True} and words_data["text/plain"] == words
    assert words_data["text/html"] == attnbook.figures.screen_reader_only(words)
    assert words_data["text/html"].startswith('<p class="jp-sr-only" style="position:absolute;width:1px;')
    assert words_data["text/html"].endswith(">" + html.escape(words) + "</p>")


def test_a_figure_cells_words_are_the_books_alt_text(tmp_path, monkeypatch):
    """In a kernel that knows its notebook (JupyterLab's `__session__`), or finds it in its working
    directory (nbval), or is told its chapter (make notebooks), a figure's words are the alt text the book
    wrote for that cell; a cell whose code the reader changed gets the figure's own words instead."""
    import jupytext
    import nbformat
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    attnbook.use_png_figures()
    shell = InteractiveShell.instance()
    shell.display_formatter.active_types = shell.display_formatter.format_types
    code = ("from matplotlib.figure import Figure\nfig = Figure(figsize=(2, 2))\n"
            "fig.subplots().plot([0, 1], [0, 1])\ndisplay(fig)")
    alt = "A straight line rising from the bottom left corner to the top right one, at 45 degrees."
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(
        code, metadata={"mystnb": {"image": {"alt": alt}}})])

    def words_shown(cell_code):
        with capture_output() as captured:
            shell.run_cell(cell_code)
        image, words = captured.outputs  # the figure, then its words
        assert image.metadata["image/png"]["alt"] == words.data["text/plain"]
        return words.data["text/plain"]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    nbformat.write(book, tmp_path / "1-section.ipynb")
    shell.user_ns["__session__"] = str(tmp_path / "1-section.ipynb")
    assert words_shown(code) == alt  # the session's notebook
    with capture_output() as captured:  # drawn again after the cell, as a widget's callback redraws
        shell.display_formatter.format(shell.user_ns["fig"])
    assert captured.outputs[-1].data["text/plain"].startswith("Figure in words, 1 panel")
    assert words_shown(code + "  # changed").startswith("Figure in words, 1 panel")
    jupytext.write(book, tmp_path / "1-section.md", fmt="md:myst")
    shell.user_ns["__session__"] = str(tmp_path / "1-section.md")
    assert words_shown(code) == alt  # a chapter, as make notebooks runs it
    del shell.user_ns["__session__"]
    assert words_shown(code).startswith("Figure in words")  # no session, no notebook here
    monkeypatch.chdir(tmp_path)
    assert words_shown(code) == alt  # a notebook in the working directory, as under nbval


def test_a_dial_has_a_caption_and_a_row_name_not_axes():
    """A dial's x label is the caption under it and its y label names the row (section 6's figure 2); a
    drawing without ticks keeps its axes (section 3's unit circles: sine across, cosine up)."""
    fig = Figure()
    dial = fig.add_subplot(1, 2, 1, projection="polar")
    dial.set(xticks=[], yticks=[], title="pair 0", xlabel="57° apart", ylabel="RoPE")
    circle = fig.add_subplot(1, 2, 2)
    circle.plot([0, 1, 0], [1, 0, -1])
    circle.set(xticks=[], yticks=[], xlabel="sin", ylabel="cos")
    said = attnbook.figures.in_words(fig)
    assert ("1. dial “pair 0”; caption: 57° apart; label: RoPE. "
            "2. drawing; x axis: sin; y axis: cos.") in said


@pytest.mark.parametrize("label, said", [
    (r"test length n ($n_{\rm train}$ = 16)", "test length n (n_train = 16)"),
    (r"slowed by $\kappa_\ell = \omega_\ell/\omega^\prime_\ell$", "slowed by κ_ℓ = ω_ℓ/ω′_ℓ"),
    (r"$\mathbf{p}_i\cdot\mathbf{p}_j$", "p_i·p_j"),
    (r"$\left(\mathbf{q}^\top\mathbf{k}\right)/\sqrt{d_h}$, $n_{\text{train}}$", "(qᵀk)/√d_h, n_train"),
    (r"$\ell \leq 3$ and $\cos\,x$", "ℓ ≤ 3 and cos x"),
])
def test_a_label_is_said_without_tex(label, said):
    """A screen reader hears n_train, not 'n r m train' (round 20's reader of section 6)."""
    assert attnbook.figures._text(label) == said


def test_a_legend_entry_with_a_comma_stays_one_entry():
    fig = Figure()
    ax = fig.subplots()
    for label in ["all n = 16 inputs", "convolution, κ = 3", "RNN"]:
        ax.plot([0, 1, 2], [0, 1, 2], label=label)
    ax.legend()
    said = attnbook.figures.in_words(fig)
    assert said.endswith("legend: “all n = 16 inputs”, “convolution, κ = 3”, “RNN”.")


def small_figure():
    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    (line,) = ax.plot([], [], animated=True)
    ax.set(xlim=(0, 10), ylim=(0, 10))

    def draw(n):
        if n < 1:
            raise ValueError(f"n={n} is too small; choose n >= 1")
        line.set_data(range(n), range(n))
        ax.set_xlim(0, max(10, n))
        return f"drew {n} points"

    return fig, draw


def test_png_bytes_is_reproducible():
    fig, draw = small_figure()
    draw(5)
    assert attnbook.png_bytes(fig) == attnbook.png_bytes(fig)


def test_live_figure_updates_in_place_and_explains_bad_values():
    fig, draw = small_figure()
    live = attnbook.LiveFigure(fig, draw, n=widgets.IntSlider(3, min=0, max=20))
    first = bytes(live.image.value)
    assert first[:3] == b"\xff\xd8\xff" and live.readout.value == "drew 3 points"  # a JPEG
    assert live.shown == {"n": 3} and live.error is None
    assert live.set(n=4) and live.image.value != first and live.full_redraws == 1  # same frame: blitted
    assert live.set(n=15) and live.full_redraws == 2  # x range changed: background redrawn
    assert not live.set(n=0)
    assert "n=0 is too small" in live.readout.value and live.fig is fig
    assert live.shown is None and live.error == "n=0 is too small; choose n >= 1"


def pixels(data):
    return Image.open(io.BytesIO(bytes(data))).convert("RGB")


def test_live_figure_marks_the_picture_stale_until_a_valid_value():
    fig, draw = small_figure()
    live = attnbook.LiveFigure(fig, draw, n=widgets.IntSlider(5, min=0, max=20))
    current = pixels(live.image.value)
    live.controls["n"].value = 0  # as a reader would: through the control
    stale = pixels(live.image.value)
    assert live.shown is None and "attnbook-stale" in live.image._dom_classes
    assert "attnbook-for-n-0" in live.image._dom_classes
    # the same picture, faded to grey: no colour left, and lighter everywhere it was not white
    stale_rgb, current_rgb = np.asarray(stale, dtype=int), np.asarray(current, dtype=int)
    assert stale.size == current.size and (stale_rgb == stale_rgb[..., :1]).all()  # R = G = B
    assert stale_rgb.sum() > current_rgb.sum()
    live.controls["n"].value = 7
    assert live.shown == {"n": 7} and live.error is None and live.readout.value == "drew 7 points"
    # the page can tell which values the picture is for (the browser test reads these classes)
    assert live.image._dom_classes == ("attnbook-figure", "attnbook-for-n-7")
    fresh = attnbook.LiveFigure(*small_figure(), n=widgets.IntSlider(7))
    assert pixels(live.image.value).tobytes() == pixels(fresh.image.value).tobytes()


def test_live_figure_errors_are_one_line_and_escaped():
    fig = Figure(figsize=(2, 1))
    fig.subplots()

    def draw(n):
        if n:
            raise ValueError("first line\n  second <line> " + "x" * 500)

    live = attnbook.LiveFigure(fig, draw, n=widgets.IntSlider(1))  # invalid from the start
    assert live.shown is None and "\n" not in live.error and len(live.error) <= 200
    assert live.error.startswith("first line second <line> x") and live.error.endswith("…")
    assert "&lt;line&gt;" in live.readout.value and "<line>" not in live.readout.value
    assert pixels(live.image.value).size == (400, 200)  # the background, greyed
    assert live.set(n=0) and live.shown == {"n": 0} and live.error is None


def test_live_figure_draws_twice_as_many_pixels_as_it_shows():
    fig, draw = small_figure()  # 3 × 2 in at 100 dpi: 300 × 200 CSS pixels
    live = attnbook.LiveFigure(fig, draw, n=widgets.IntSlider(3))
    assert live.css_size == (300, 200) and pixels(live.image.value).size == (600, 400)
    assert live.image.layout.width == "300px" and live.image.layout.max_width == "100%"


def test_live_figure_controls_wrap_and_keep_their_labels():
    fig, draw = small_figure()
    long_label = widgets.IntSlider(3, description="a long description")
    chosen = widgets.IntSlider(1, description="m", style={"description_width": "50px"},
                               layout=widgets.Layout(width="200px"))
    menu = widgets.Dropdown(options=["one", "a much longer option"], description="pick")
    live = attnbook.LiveFigure(fig, lambda n, m, pick: draw(n), n=long_label, m=chosen, pick=menu)
    row = live.box.children[0]
    assert row.layout.flex_flow == "row wrap" and list(row.children) == [long_label, chosen, menu]
    assert long_label.style.description_width == "initial" and menu.style.description_width == "initial"
    # room for the label (8 px a character), a 100 px track and the readout
    assert int(long_label.layout.min_width.removesuffix("px")) >= 18 * 8 + 100
    assert int(menu.layout.min_width.removesuffix("px")) >= (4 + 20) * 8
    assert chosen.style.description_width == "50px" and chosen.layout.min_width is None  # kept


def two_panels():
    """Two panels whose x ranges follow n and m: their x axes are marked animated."""
    fig = Figure(figsize=(4, 2), dpi=50)
    axes = fig.subplots(1, 2)
    lines = [ax.plot([], [], animated=True)[0] for ax in axes]
    for ax in axes:
        ax.set(ylim=(0, 1), xlabel="x")
        ax.xaxis.set_animated(True)

    def draw(n, m):
        for ax, line, size in zip(axes, lines, (n, m), strict=True):
            line.set_data([0, size], [0, 1])
            ax.set_xlim(0, size)

    return fig, draw


def heatmap_with_colour_bar():
    """A heatmap whose rows follow n and whose colour scale follows its largest value."""
    fig = Figure(figsize=(4, 2.5), dpi=50)
    ax = fig.subplots()
    image = ax.imshow(np.zeros((1, 4)), aspect="auto", animated=True)
    colour_bar = fig.colorbar(image, ax=ax, label="value")
    for axis in (ax.yaxis, colour_bar.ax.yaxis):
        axis.set_animated(True)

    def draw(n, top):
        image.set_data(np.linspace(0, top, 4 * n).reshape(n, 4))
        image.set_extent((-0.5, 3.5, n - 0.5, -0.5))
        image.set_clim(0, top)

    return fig, draw


def drawn_from_scratch(live, figure):
    """Whether the live picture is, pixel for pixel, what a new LiveFigure of `figure` draws for the
    same slider values (every layer from scratch): no stale tick label, line or panel left."""
    controls = {name: widgets.IntSlider(control.value, max=control.max)
                for name, control in live.controls.items()}
    fresh = attnbook.LiveFigure(*figure(), **controls)
    return bytes(live.canvas.buffer_rgba()) == bytes(fresh.canvas.buffer_rgba())


def test_live_figure_redraws_only_the_colour_bar_when_only_it_changed():
    fig, draw = heatmap_with_colour_bar()
    live = attnbook.LiveFigure(fig, draw, n=widgets.IntSlider(3, max=500), top=widgets.IntSlider(5, max=5000))
    for n, top in [(3, 7), (3, 900), (40, 900), (40, 3), (2, 4000)]:
        assert live.set(n=n, top=top) and drawn_from_scratch(live, heatmap_with_colour_bar), (n, top)
    assert live.partial_axis_redraws >= 3  # the colour bar alone (and the rows alone) were redrawn


def test_live_figure_redraws_moving_axes_only_when_a_range_changed():
    fig, draw = two_panels()
    live = attnbook.LiveFigure(fig, draw, n=widgets.IntSlider(10, max=5000),
                               m=widgets.IntSlider(10, max=5000))
    for n, m, redrawn in [(10, 10, 0), (200, 10, 1), (200, 3000, 1), (200, 3000, 0), (4000, 20, 1)]:
        before = live.axis_redraws
        assert live.set(n=n, m=m) and live.axis_redraws - before == redrawn
        assert drawn_from_scratch(live, two_panels), (n, m)
    assert live.full_redraws == 1  # the x axes were marked animated: the background never changed


def line_and_label():
    """A line whose height follows n beside a label that names m: each slider moves one panel."""
    fig = Figure(figsize=(4, 2), dpi=50)
    ax_line, ax_label = fig.subplots(1, 2)
    line = ax_line.plot([], [], animated=True)[0]
    ax_line.set(xlim=(0, 10), ylim=(0, 10))
    label = ax_label.text(0.5, 0.5, "", ha="center", animated=True)

    def draw(n, m):
        if list(line.get_ydata()) != [0, n]:  # set_data marks a line stale even with the same data
            line.set_data([0, 10], [0, n])
        label.set_text(f"m = {m}")  # the same text again does not mark it stale

    return fig, draw


def test_live_figure_redraws_only_the_artists_that_changed():
    fig, draw = line_and_label()
    live = attnbook.LiveFigure(fig, draw, n=widgets.IntSlider(3), m=widgets.IntSlider(5))
    line, label = fig.axes[0].get_lines()[0], fig.axes[1].texts[0]
    drawn, draw_artist = [], fig.draw_artist
    fig.draw_artist = lambda artist: (drawn.append(artist), draw_artist(artist))
    for n, m, moved, kept in [(7, 5, line, label), (7, 9, label, line), (2, 1, None, None)]:
        drawn.clear()
        assert live.set(n=n, m=m)
        assert moved is None or moved in drawn and kept not in drawn, (n, m, drawn)
        assert drawn_from_scratch(live, line_and_label), (n, m)  # the kept panel is still right
    assert live.full_redraws == 1


def panels_four_pixels_apart():
    """A line and an image in two Axes 4.4 bitmap pixels apart, frames hidden: a box restored under the
    line must not reach the image unless the image is redrawn (a gap that rounding once got wrong)."""
    fig = Figure(figsize=(2, 1), dpi=50)  # 100 × 50 CSS pixels, 200 × 100 in the bitmap
    left, right = fig.add_axes((0.05, 0.1, 0.44, 0.8)), fig.add_axes((0.512, 0.1, 0.45, 0.8))
    line = left.plot([], [], lw=3, animated=True)[0]
    left.set(xlim=(0, 1), ylim=(0, 10))
    image = right.imshow(np.arange(16.0).reshape(4, 4), aspect="auto", animated=True)
    for ax in (left, right):
        ax.set_axis_off()

    def draw(n, m):
        line.set_data([0, 1], [n, n])
        if m != image.get_array()[0, 0]:
            image.set_data(np.arange(16.0).reshape(4, 4) + m)

    return fig, draw


def hidden_moving_axis():
    """A line on an Axes whose hidden y axis follows n: the data must still move."""
    fig = Figure(figsize=(2, 1), dpi=50)
    ax = fig.subplots()
    line = ax.plot([0, 1], [0, 1], animated=True)[0]
    ax.yaxis.set_animated(True)
    ax.yaxis.set_visible(False)

    def draw(n, m):
        ax.set_ylim(0, n + 1)
        line.set_linewidth(1 + m % 3)

    return fig, draw


def legend_whose_text_changes():
    """A legend kept, its entry's text set: a part of it is stale, not the legend itself."""
    fig = Figure(figsize=(2, 1), dpi=50)
    ax = fig.subplots()
    line = ax.plot([0, 1], [0, 1], label="n = 0", animated=True)[0]
    legend = ax.legend(loc="upper left")
    legend.set_animated(True)

    def draw(n, m):
        legend.get_texts()[0].set_text(f"n = {n}")
        line.set_linewidth(1 + m % 3)

    return fig, draw


def stroked_title():
    """A figure title drawn with a wide white-and-black stroke, outside what its extent measures."""
    from matplotlib import patheffects
    fig = Figure(figsize=(2, 1), dpi=50)
    fig.subplots()
    stroke = [patheffects.withStroke(linewidth=6, foreground="k")]
    title = fig.suptitle(" ", animated=True, path_effects=stroke)

    def draw(n, m):
        title.set_text(f"n = {n}, m = {m}")

    return fig, draw


@pytest.mark.parametrize("figure", [panels_four_pixels_apart, hidden_moving_axis,
                                    legend_whose_text_changes, stroked_title])
def test_live_figure_blits_what_a_fresh_draw_shows(figure):
    live = attnbook.LiveFigure(*figure(), n=widgets.IntSlider(3), m=widgets.IntSlider(5))
    for n, m in [(7, 5), (7, 9), (2, 9), (2, 1), (9, 4)]:
        assert live.set(n=n, m=m) and drawn_from_scratch(live, figure), (figure.__name__, n, m)


def test_live_figure_output_carries_a_static_png():
    fig, draw = small_figure()
    live = attnbook.LiveFigure(fig, draw, n=widgets.IntSlider(3))
    bundle, metadata = live._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    png = base64.b64decode(bundle["image/png"])
    assert png.startswith(b"\x89PNG")
    shown = Image.open(io.BytesIO(bytes(live.image.value)))
    assert shown.format == "JPEG" and shown.size == Image.open(io.BytesIO(png)).size
    stored = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)
    difference = np.abs(np.asarray(shown, dtype=float) - stored)
    assert difference.mean() < 1 and np.percentile(difference, 99) < 16  # the same picture, lossy only
    assert bundle["text/plain"] == "LiveFigure(n=3)"
    # as sharp as the live picture: twice the pixels, displayed at the figure's size
    assert Image.open(io.BytesIO(png)).size == (600, 400)
    assert metadata == {"image/png": {"width": 300, "height": 200, "alt": live.description}}


def test_live_figure_says_its_picture_in_words():
    """The section's describing function, for the values drawn; greyed out when they cannot be drawn."""
    fig, draw = small_figure()
    live = attnbook.LiveFigure(fig, draw, describe=lambda n: f"A line plot of the first {n} squares",
                               n=widgets.IntSlider(3, min=-5))
    assert live.description == "A line plot of the first 3 squares"
    assert live.words.value == attnbook.figures.screen_reader_only("A line plot of the first 3 squares")
    assert live.words.value.endswith(">A line plot of the first 3 squares</p>")
    live.set(n=5)
    assert live.description == "A line plot of the first 5 squares"
    assert not live.set(n=0)
    assert live.description == "Out of date, greyed out: A line plot of the first 5 squares"
    assert live.set(n=2) and live.description == "A line plot of the first 2 squares"
    plain = attnbook.LiveFigure(*small_figure(), n=widgets.IntSlider(3))
    assert plain.description == attnbook.figures.in_words(plain.fig)


def test_ipython_displays_the_static_png_at_its_size():
    from IPython.core.formatters import DisplayFormatter

    live = attnbook.LiveFigure(*small_figure(), n=widgets.IntSlider(3))
    data, metadata = DisplayFormatter().format(live)
    assert "image/png" in data and metadata["image/png"] == {"width": 300, "height": 200,
                                                            "alt": live.description}


def test_median_ms_and_report(capsys):
    assert attnbook.median_ms(lambda: sum(range(100)), min_run_time=0.01) > 0
    calls = []
    assert attnbook.mean_ms(calls.append, 1, number=4) >= 0
    assert len(calls) == 2 + 4  # two warm-up calls, then the timed ones
    attnbook.report("a / b", 0.25, target=0.4, detail="1 ms vs 4 ms")
    assert capsys.readouterr().out == "measured: a / b = 0.25 (target ≤ 0.4: met); 1 ms vs 4 ms\n"


def test_new_storage_counts_what_operations_allocate_not_views():
    x = torch.zeros(4, 8)
    with attnbook.NewStorage() as memory:
        x.t()  # a view: no new storage
        x.add_(1)  # in place: none either
        y = x @ x.t()  # (4, 4) float32: 64 bytes
        torch.cat([x, x])  # (8, 8) float32: 256 bytes, the largest
        y.reshape(16)  # a view again
    assert memory.bytes == 64 + 256
    assert (memory.largest_bytes, memory.largest_shape) == (256, (8, 8))
