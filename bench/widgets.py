"""The kernel's share of a slider move: attnbook.LiveFigure against matplotlib's widget backend ipympl.

    .venv/bin/python bench/widgets.py [--moves 40]

ipympl is not in the book's environment; to include it, install it beside (not into) the venv:
    .venv/bin/python -m pip install --no-deps --target /tmp/ipympl ipympl
    PYTHONPATH=/tmp/ipympl .venv/bin/python bench/widgets.py

One representative figure, both at 2 image pixels per CSS pixel (ipympl after the page reports a
device pixel ratio of 2; LiveFigure at 1 too, as before this change): 8 × 3.4 in at 100 dpi, four
lines over n positions on the left, an n × 512 heatmap with a colour bar on the right, and a title
that says n. A move sets n (the lines' x axis and the heatmap's y axis follow it) and the time is
taken from the new value to the encoded bytes the kernel sends:
- LiveFigure: draw(...) updates the artists, render() blits its cached layers and encodes JPEG;
- ipympl: the same update, then what ipympl does on the 'draw' the page asks for after draw_idle():
  canvas.draw(), a full draw (ipympl keeps no background), then get_diff_image() (a PNG of the
  pixels that changed) handed to send_binary. The round trip draw_idle() -> page -> 'draw' is
  not counted here.
The browser's share (decode and paint) is measured by tests/test_browser.py.
"""
import argparse
import statistics
import time

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.figure import Figure

matplotlib.use("Agg")

import attnbook  # noqa: E402
import attnbook.widgets  # noqa: E402

WIDTH = 512


def build(fig, animated):
    """The figure's artists, and update(n) that changes them."""
    ax_lines, ax_heat = fig.subplots(1, 2, width_ratios=[3, 2])
    fig.subplots_adjust(left=0.07, right=0.95, bottom=0.15, top=0.88, wspace=0.25)
    lines = [ax_lines.plot([], [], animated=animated)[0] for _ in range(4)]
    ax_lines.set(xlabel="position i", ylabel="value", ylim=(-1.1, 1.1))
    image = ax_heat.imshow(np.zeros((1, 1)), cmap="RdBu", vmin=-1, vmax=1, aspect="auto",
                           interpolation="antialiased", interpolation_stage="data", animated=animated)
    ax_heat.set(xlabel="dimension", ylabel="position i")
    fig.colorbar(image, ax=ax_heat, label="value")
    title = ax_lines.set_title(" ", loc="left", animated=animated)
    if animated:
        for axis in (ax_lines.xaxis, ax_heat.yaxis):
            axis.set_animated(True)
    frequencies = 1 / 10000 ** (np.arange(WIDTH) / WIDTH)

    def update(n):
        table = np.sin(np.arange(n)[:, None] * frequencies)  # n × 512
        for k, line in enumerate(lines):
            line.set_data(np.arange(n), table[:, 2 * k])
        ax_lines.set_xlim(0, n - 1)
        image.set_data(table)
        image.set_extent((-0.5, WIDTH - 0.5, n - 0.5, -0.5))
        title.set_text(f"n = {n}")
        return f"n = {n}"

    return update


def values(moves):
    """A drag: n from 300 up to 512 and back, one step per move (about what 20 mouse steps give)."""
    up = np.linspace(300, 512, moves // 2).round().astype(int).tolist()
    return up + up[::-1]


def time_livefigure(moves, scale=2):
    attnbook.widgets.SCALE = scale
    fig = Figure(figsize=(8, 3.4), dpi=100)
    update = build(fig, animated=True)
    live = attnbook.LiveFigure(fig, lambda n: update(n), n=widgets.IntSlider(300, min=1, max=WIDTH))
    times = []
    for n in values(moves):
        start = time.perf_counter()
        live.controls["n"].value = n
        size = len(live.image.value)
        times.append((time.perf_counter() - start) * 1000)
    return times, size, live.full_redraws, live.axis_redraws


def time_ipympl(moves):
    from ipympl.backend_nbagg import Canvas, FigureManager

    fig = Figure(figsize=(8, 3.4), dpi=100)
    canvas = Canvas(fig)
    FigureManager(canvas, 1)  # the manager's refresh_all() hands the PNG diff to canvas.send_binary
    sent = []
    canvas.send_binary = lambda data: sent.append(len(data))  # no page here: keep the size only
    canvas._set_device_pixel_ratio(2)  # what the page sends at a device pixel ratio of 2
    update = build(fig, animated=False)
    update(300)
    canvas.draw()
    times = []
    for n in values(moves):
        start = time.perf_counter()
        update(n)
        canvas.draw()  # ipympl's handle_draw, after the page answered draw_idle(): draw, diff, send
        times.append((time.perf_counter() - start) * 1000)
    assert len(sent) == moves + 1, sent
    return times, sent[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=40)
    args = parser.parse_args()
    for scale in (2, 1):  # the book's, and the bitmap at the figure's own size (before 2x) for scale
        times, size, full, axes = time_livefigure(args.moves, scale)
        print(f"measured: LiveFigure at {scale}x value-to-bytes per move = {statistics.median(times):.1f} ms "
              f"median (max {max(times):.1f}); {args.moves} moves, {size / 1024:.0f} KiB JPEG, background "
              f"redrawn {full}x, moving axes {axes}x")
    attnbook.widgets.SCALE = 2
    try:
        import ipympl  # noqa: F401
    except ImportError:
        print("ipympl is not importable: see the module's docstring to include it")
        return
    times, size = time_ipympl(args.moves)
    print(f"measured: ipympl value-to-bytes per move = {statistics.median(times):.1f} ms median "
          f"(max {max(times):.1f}); {args.moves} moves, {size / 1024:.0f} KiB PNG diff (full draw each move)")


if __name__ == "__main__":
    main()
