"""Figures that are identical run to run: PNG everywhere, no SVG date or random ids."""
import io

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Circle


def use_png_figures():
    """Show inline figures as sharp PNG, also after d2l's plot helpers ask for SVG.

    The PNG is drawn at twice the figure's dots per inch and shown at its size ('retina': the
    output says its width and height), so it stays sharp at a projector's 150 % zoom and on
    high-density screens, in JupyterLab and in the stored notebook alike.

    d2l.use_svg_display() calls matplotlib_inline's set_matplotlib_formats('svg'), whose output carries
    a date and random ids, so a re-run never matches the stored notebook. We make that call choose
    PNG instead, whether d2l is imported before or after this (the notebooks call it first thing,
    before a section imports d2l; sections that do not use d2l are spared its slow import).
    """
    from matplotlib_inline import backend_inline

    original = getattr(backend_inline.set_matplotlib_formats, "__wrapped__",
                       backend_inline.set_matplotlib_formats)

    def png_instead_of_svg(*formats, **kwargs):
        original(*["retina" if f == "svg" else f for f in formats], **kwargs)

    png_instead_of_svg.__wrapped__ = original
    backend_inline.set_matplotlib_formats = png_instead_of_svg
    original("retina")
    matplotlib.rcParams["svg.hashsalt"] = "attnbook"  # in case a reader saves an SVG after all
    matplotlib.rcParams["figure.dpi"] = 100


def png_bytes(fig, dpi=100):
    """Encode a figure as PNG bytes (the same bytes for the same drawing)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


# ------------------------------------------------ drawn figures (section 2; img/draw.py saves them as SVG)
INPUT, HIDDEN, OUTPUT, EDGE, PATH = "#dbe9f6", "#f2f2f2", "#fde0c5", "#b8b8b8", "#c0392b"


def nodes(ax, xs, y, labels, color):
    for x, label in zip(xs, labels, strict=True):
        ax.add_patch(Circle((x, y), 0.3, facecolor=color, edgecolor="#555", zorder=3))
        ax.text(x, y, label, ha="center", va="center", fontsize=11, zorder=4)


def edge(ax, start, end, on_path=False):
    """An arrow between node centres, trimmed to the circles; red when it lies on the path shown."""
    ax.annotate("", xy=end, xytext=start, zorder=2 if on_path else 1,
                arrowprops=dict(arrowstyle="-|>", color=PATH if on_path else EDGE, lw=1.6 if on_path else 0.8,
                                shrinkA=9, shrinkB=9, mutation_scale=8))


def cnn_rnn_self_attention():
    """Three layers over five tokens, numbered from 0 as in the book; red: every edge that carries x_0.

    Hidden values are z_i (convolution) and s_i (RNN state): h is the number of heads in this book."""
    n, xs = 5, range(5)
    fig = Figure(figsize=(8, 2.5))
    axes = fig.subplots(1, 3)
    fig.subplots_adjust(left=0.01, right=0.99, top=0.71, bottom=0.0, wspace=0.06)
    titles = ["convolution, κ = 3, two layers", "RNN", "self-attention"]
    notes = ["O(κnd²) FLOPs\nO(1) sequential · path O(n/κ)",
             "O(nd²) FLOPs\nO(n) sequential · path O(n)",
             "O(n²d + nd²) FLOPs\nO(1) sequential · path O(1)"]
    for ax, title, note in zip(axes, titles, notes, strict=True):
        ax.set_title(f"{title}\n{note}", fontsize=10.5)
        ax.set_xlim(-0.6, n - 0.4)
        ax.set_ylim(-0.6, 2.6)
        ax.set_aspect("equal")
        ax.axis("off")
        nodes(ax, xs, 0, [f"$x_{i}$" for i in xs], INPUT)

    cnn = axes[0]  # same padding: each node sees its neighbours one to the left and right
    reached = {0: {0}}  # layer -> positions that x_0 has reached (0-based)
    for layer in (0, 1):
        reached[layer + 1] = set()
        for i in xs:
            for j in (i - 1, i, i + 1):
                if 0 <= j < n:
                    carries_x0 = i in reached[layer]
                    edge(cnn, (i, layer), (j, layer + 1), carries_x0)
                    if carries_x0:
                        reached[layer + 1].add(j)
    assert reached[2] == {0, 1, 2}  # two layers of kernel width 3 carry x_0 to y_0, y_1, y_2 only
    nodes(cnn, xs, 1, [f"$z_{i}$" for i in xs], HIDDEN)
    nodes(cnn, xs, 2, [f"$y_{i}$" for i in xs], OUTPUT)

    rnn = axes[1]  # x_0 enters s_0 and travels along the chain s_0 -> s_1 -> ... -> s_4
    for i in xs:
        edge(rnn, (i, 0), (i, 1), on_path=i == 0)
        if i + 1 < n:
            edge(rnn, (i, 1), (i + 1, 1), on_path=True)
    nodes(rnn, xs, 1, [f"$s_{i}$" for i in xs], OUTPUT)

    attention = axes[2]  # one step from x_0 to every output; outputs two rows up, so that the
    for i in xs:          # long, shallow edges (x_0 to y_4) clear the inputs' circles on their way
        for j in xs:
            edge(attention, (i, 0), (j, 2), on_path=i == 0)
    nodes(attention, xs, 2, [f"$y_{i}$" for i in xs], OUTPUT)

    return fig
