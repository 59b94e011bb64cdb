"""Unit tests of the attnbook helpers."""
import base64
import io

import ipywidgets as widgets
import matplotlib
import pytest
import torch
from matplotlib.figure import Figure
from PIL import Image

matplotlib.use("Agg")

import attnbook  # noqa: E402
from attnbook.device import NoGPUError, pick_device  # noqa: E402


def test_pick_device_reads_the_kernels_variable():
    assert pick_device({}) == torch.device("cpu")
    assert pick_device({"BOOK_DEVICE": " CPU "}) == torch.device("cpu")
    with pytest.raises(ValueError, match="expected 'cpu' or 'cuda'"):
        pick_device({"BOOK_DEVICE": "tpu"})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown where there is no GPU")
def test_cuda_kernel_without_gpu_says_so_in_one_line():
    with pytest.raises(NoGPUError) as error:
        pick_device({"BOOK_DEVICE": "cuda"})
    assert "torch sees no GPU" in str(error.value) and "\n" not in str(error.value)


def test_d2l_figures_become_png():
    from d2l import torch as d2l
    from matplotlib_inline import backend_inline

    attnbook.use_png_figures()  # after importing d2l, as the notebooks do
    d2l.use_svg_display()
    formats = backend_inline.InlineBackend.instance().figure_formats
    assert set(formats) == {"png"}


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
    assert first[8:12] == b"WEBP" and live.readout.value == "drew 3 points"
    assert live.set(n=4) and live.image.value != first and live.full_redraws == 1  # same frame: blitted
    assert live.set(n=15) and live.full_redraws == 2  # x range changed: background redrawn
    kept = bytes(live.image.value)
    assert not live.set(n=0)
    assert "n=0 is too small" in live.readout.value and live.image.value == kept and live.fig is fig


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


def test_live_figure_redraws_moving_axes_only_when_a_range_changed():
    fig, draw = two_panels()
    live = attnbook.LiveFigure(fig, draw, n=widgets.IntSlider(10, max=5000),
                               m=widgets.IntSlider(10, max=5000))
    for n, m, redrawn in [(10, 10, 0), (200, 10, 1), (200, 3000, 1), (200, 3000, 0), (4000, 20, 1)]:
        before = live.axis_redraws
        assert live.set(n=n, m=m) and live.axis_redraws - before == redrawn
        fresh_fig, fresh_draw = two_panels()
        fresh = attnbook.LiveFigure(fresh_fig, fresh_draw, n=widgets.IntSlider(n, max=5000),
                                    m=widgets.IntSlider(m, max=5000))
        # pixel for pixel what drawing everything from scratch gives: no stale tick labels left
        assert bytes(live.canvas.buffer_rgba()) == bytes(fresh.canvas.buffer_rgba()), (n, m)
    assert live.full_redraws == 1  # the x axes were marked animated: the background never changed


def test_live_figure_output_carries_a_static_png():
    fig, draw = small_figure()
    live = attnbook.LiveFigure(fig, draw, n=widgets.IntSlider(3))
    bundle = live._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    png = base64.b64decode(bundle["image/png"])
    assert png.startswith(b"\x89PNG")
    shown = Image.open(io.BytesIO(bytes(live.image.value)))
    assert shown.format == "WEBP" and Image.open(io.BytesIO(png)).tobytes() == shown.tobytes()  # same pixels
    assert bundle["text/plain"] == "LiveFigure(n=3)"


def test_median_ms_and_report(capsys):
    assert attnbook.median_ms(lambda: sum(range(100)), min_run_time=0.01) > 0
    calls = []
    assert attnbook.mean_ms(calls.append, 1, number=4) >= 0
    assert len(calls) == 2 + 4  # two warm-up calls, then the timed ones
    attnbook.report("a / b", 0.25, target=0.4, detail="1 ms vs 4 ms")
    assert capsys.readouterr().out == "measured: a / b = 0.25 (target ≤ 0.4: met); 1 ms vs 4 ms\n"
