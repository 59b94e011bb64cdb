"""Figures that are identical run to run: PNG everywhere, no SVG date or random ids."""
import html
import io
import re

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
    show_figures_with_words()


# ------------------------------------------------ a figure in words, for screen readers in JupyterLab
#: Marks the output that carries a figure's words (the website, which has the chapter's alt text, drops it).
WORDS_KEY = "attnbook_figure_words"
#: JupyterLab's own class for text that only screen readers read (it hides its mermaid figcaptions so).
SCREEN_READER_ONLY = "jp-sr-only"
#: The same rule inline, for front ends that lack JupyterLab's stylesheet (Colab, VS Code, nbviewer):
#: out of sight and one pixel in size, yet in the page, so a screen reader still reads it.
SCREEN_READER_ONLY_STYLE = ("position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;"
                            "clip:rect(0,0,0,0);white-space:nowrap;border:0")


def screen_reader_only(words):
    """A paragraph of `words` that screen readers read and no front end shows."""
    return f'<p class="{SCREEN_READER_ONLY}" style="{SCREEN_READER_ONLY_STYLE}">{html.escape(words)}</p>'


def show_figures_with_words():
    """Every figure a cell shows comes with its words, made at execution from the figure itself.

    JupyterLab (4.6) draws an image output as an <img> without alt text, whatever the output's
    metadata says. So after the image, one more output holds the figure's words in a paragraph with
    JupyterLab's screen-reader-only class: read aloud after the picture, not seen. The image output
    carries the same words as its `alt` metadata, which nbconvert's HTML export puts on the <img>.

    The words are the book's own alt text for the cell (its metadata `mystnb: image: alt:`, which the
    website shows too), found by the cell's code in the notebook this kernel runs (`book_alt_text`);
    for a cell the reader has changed, or where no notebook is found, `in_words(fig)`.
    """
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    shell.display_formatter.ipython_display_formatter.for_type(Figure, show_with_words)
    if _remember_cell not in shell.events.callbacks["pre_run_cell"]:
        shell.events.register("pre_run_cell", _remember_cell)
        shell.events.register("post_run_cell", _forget_cell)


_running = {"code": None}  # the code of the cell being run (IPython's pre_run_cell event), else None
_alt_texts = {}  # path -> (modification time, {a figure cell's code: its alt text})


def _remember_cell(info):
    _running["code"] = info.raw_cell


def _forget_cell(result):
    """After a cell (and after the inline backend has shown its figures, at post_execute), a figure that a
    widget redraws belongs to no cell: it gets in_words, not the alt text of the cell run last."""
    _running["code"] = None


def book_alt_text(code, shell):
    """The alt text the book wrote for the cell whose code is `code` (stripped), or None.

    Looked for in the notebook this kernel runs: the session's (JupyterLab and Jupyter Notebook tell the
    kernel, as `__session__`; VS Code as `__vsc_ipynb_file__`), else each notebook in the working
    directory (nbval, a hub's kernel started elsewhere). A session may name a chapter's .md (jupytext
    reads it). A cell's code is matched whole, so an edited cell gets no stale words.
    """
    import pathlib

    named = [shell.user_ns.get(key) for key in ("__session__", "__vsc_ipynb_file__")]
    paths = [pathlib.Path(p) for p in named if isinstance(p, str) and p]

    def candidates():  # lazily: the working directory is globbed only when the session has no match
        yield from dict.fromkeys(paths + [pathlib.Path.cwd() / p.name for p in paths])
        yield from sorted(pathlib.Path.cwd().glob("*.ipynb"))  # the notebooks beside the kernel (nbval)

    return next((alt for path in candidates() if (alt := _alt_text_in(path, code))), None)


def _alt_text_in(path, code):
    """The alt text of the cell with this code in the notebook at path (read once per modification)."""
    try:
        mtime = path.stat().st_mtime
        if _alt_texts.get(path, (None,))[0] != mtime:
            _alt_texts[path] = (mtime, _cells_alt_texts(path))
    except (OSError, ValueError, KeyError, ImportError):
        return None
    alt = _alt_texts[path][1].get(code.strip())
    return " ".join(alt.split()) if alt else None


def _cells_alt_texts(path):
    """{code: alt text} of a notebook's (or a jupytext chapter's) cells that have one."""
    if path.suffix == ".ipynb":
        import json

        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    else:
        import jupytext

        cells = jupytext.read(path).cells
    found = {}
    for cell in cells:
        image = cell.get("metadata", {}).get("mystnb", {}).get("image", {})
        if cell.get("cell_type") == "code" and isinstance(image, dict) and image.get("alt"):
            source = cell["source"]
            found[("".join(source) if isinstance(source, list) else source).strip()] = str(image["alt"])
    return found


def show_with_words(fig):
    """Publish a figure as IPython would (PNG, text) with its words as `alt`, then the words for screen
    readers (see show_figures_with_words)."""
    from IPython import get_ipython
    from IPython.display import publish_display_data

    formatter = get_ipython().display_formatter
    formatter.ipython_display_formatter.enabled = False  # the usual formats, without coming back here
    try:
        data, metadata = formatter.format(fig)
    finally:
        formatter.ipython_display_formatter.enabled = True
    code = _running["code"]
    words = (code and book_alt_text(code, get_ipython())) or in_words(fig)
    for mime in data:
        if mime.startswith("image/"):
            metadata[mime] = {**metadata.get(mime, {}), "alt": words}
    publish_display_data(data, metadata)
    publish_display_data({"text/plain": words,
                          "text/html": screen_reader_only(words)},
                         {WORDS_KEY: True})
    return True


def in_words(fig):
    """What a matplotlib figure shows, read from its parts: for each panel its kind, title, axes (with
    the names on an axis that has names), legend and colour bar; the figure's titles and legends.
    Nothing is read from the data, so the words are the same on every device."""
    panels = [ax for ax in fig.axes if not hasattr(ax, "_colorbar") and _shows_something(ax)]
    said = [f"Figure in words, {len(panels)} panel{'s' if len(panels) != 1 else ''}"]
    titles = [_text(f.get_suptitle()) for f in [fig, *_subfigures(fig)] if f.get_suptitle()]
    if titles:
        said[0] += ": " + "; ".join(f"“{t}”" for t in titles)
    for number, ax in enumerate(panels, 1):
        kind = _kind(ax)
        parts = [kind]
        title = " ".join(t for t in (ax.get_title("left"), ax.get_title(), ax.get_title("right")) if t)
        if title:
            parts[0] += f" “{_text(title)}”"
        dial = kind == "dial"  # a polar panel has no x and y: its labels are a caption and a row's name
        for name, axis in (("caption" if dial else "x axis", ax.xaxis),
                           ("label" if dial else "y axis", ax.yaxis)):
            label = _text(axis.get_label_text())
            names = _names(axis)
            scale = " (log scale)" if axis.get_scale() == "log" and "log" not in label else ""
            if label or names:
                said_axis = f"{label} ({names})" if label and names else label or names
                parts.append(f"{name}{scale}: {said_axis}")
        colourbars = {id(cb): cb for image in [*ax.images, *ax.collections]
                      if (cb := getattr(image, "colorbar", None)) is not None}
        for cb in colourbars.values():
            label = _text(cb.ax.get_ylabel() or cb.ax.get_xlabel())
            parts.append("colour bar" + (f": {label}" if label else ""))
        legend = ax.get_legend()
        if legend is not None:
            parts.append("legend: " + _legend(legend))
        said.append(f"{number}. " + "; ".join(parts))
    for legend in [*fig.legends, *(lg for f in _subfigures(fig) for lg in f.legends)]:
        said.append("legend: " + _legend(legend))
    return ". ".join(said) + "."


def _legend(legend):
    """A legend's entries, each quoted when one holds a comma (so that "convolution, κ = 3" stays one)."""
    entries = [_text(t.get_text()) for t in legend.get_texts()]
    return ", ".join(f"“{e}”" for e in entries) if any("," in e for e in entries) else ", ".join(entries)


def _subfigures(fig):
    found = []
    for sub in getattr(fig, "subfigs", []):
        found += [sub, *_subfigures(sub)]
    return found


def _shows_something(ax):
    return ax.axison or ax.images or ax.lines or ax.collections or ax.patches or ax.texts or ax.get_title()


def _kind(ax):
    from matplotlib.container import BarContainer
    from matplotlib.projections.polar import PolarAxes

    if isinstance(ax, PolarAxes):
        return "dial"
    if not ax.axison or not (len(ax.get_xticks()) or len(ax.get_yticks())):  # no axes, or no scale on them
        return "drawing"
    if ax.images:
        return "heatmap"
    if any(isinstance(c, BarContainer) for c in ax.containers):
        return "bar chart"
    lines = [line for line in ax.lines if len(line.get_xdata()) > 2]
    if lines and all(line.get_linestyle() in ("None", "", " ") for line in lines):
        return "scatter plot"
    if lines:
        return "line plot"
    return "grid" if ax.patches or ax.collections else "panel"


def _names(axis, most=12):
    """The tick labels of an axis whose ticks the code named with words (the, cat, ...), else ''."""
    from matplotlib.category import StrCategoryFormatter
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    if not isinstance(axis.get_major_formatter(), (FixedFormatter, FuncFormatter, StrCategoryFormatter)):
        return ""
    labels = [_text(t.get_text()) for t in axis.get_majorticklabels() if t.get_text()]
    if not any(re.search(r"[^\W\d_]", label) for label in labels):  # numbers only: not names
        return ""
    return ", ".join(labels[:most]) + (", …" if len(labels) > most else "")


def _text(text):
    """A label as a screen reader should say it: TeX's $, fonts and braces dropped, Greek letters and
    symbols as characters, lines joined ($n_{\\rm train}$ -> n_train, $\\omega^\\prime_\\ell$ -> ω′_ℓ)."""
    text = text.replace("$", "")
    for tex, said in TEX_WORDS.items():  # a whole command only: \le is not the start of \left
        text = re.sub(re.escape(tex) + r"(?![A-Za-z])", said, text)
    text = re.sub(r"\\(?:math[a-z]*|text[a-z]*|operatorname)\{([^{}]*)\}", r"\1", text)  # \mathbf{p} -> p
    text = re.sub(r"\\(?:rm|it|bf|sf|tt|displaystyle)(?![A-Za-z])\s*", "", text)  # {\rm train} -> {train}
    text = re.sub(r"\\(?:left|right|[bB]igg?)(?![A-Za-z])", "", text)  # sizes of brackets
    text = re.sub(r"\^\s*\{?([′ᵀ])\}?", r"\1", text)  # ω^′ -> ω′, q^ᵀ -> qᵀ
    text = re.sub(r"\\([A-Za-z]+)\s?", r"\1 ", text)  # \sin x -> sin x
    text = re.sub(r"\\[,;: !]", " ", text)  # TeX's spaces
    text = re.sub(r"\\.|[{}]", "", text)  # other escapes and braces
    return " ".join(text.split())


TEX_WORDS = {"\\cdot": "·", "\\ell": "ℓ", "\\omega": "ω", "\\alpha": "α", "\\beta": "β", "\\gamma": "γ",
             "\\delta": "δ", "\\Delta": "Δ", "\\epsilon": "ε", "\\kappa": "κ", "\\lambda": "λ", "\\mu": "μ",
             "\\pi": "π", "\\rho": "ρ", "\\sigma": "σ", "\\tau": "τ", "\\theta": "θ", "\\phi": "φ",
             "\\prime": "′", "\\top": "ᵀ", "\\times": "×", "\\leq": "≤", "\\le": "≤", "\\geq": "≥",
             "\\ge": "≥", "\\approx": "≈", "\\propto": "∝", "\\infty": "∞", "\\to": "→", "\\sqrt": "√",
             "\\ldots": "…", "\\dots": "…"}


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
    fig = Figure(figsize=(8, 2.8))
    axes = fig.subplots(1, 3)
    fig.subplots_adjust(left=0.01, right=0.99, top=0.66, bottom=0.0, wspace=0.06)
    titles = ["convolution, κ = 3, two layers", "RNN", "self-attention"]
    # sequential operations per layer (a convolution stack reaching all n runs O(n/κ) layers in turn)
    notes = ["O(κnd²) FLOPs per layer\nO(1) sequential per layer\npath O(n/κ) edges",
             "O(nd²) FLOPs per layer\nO(n) sequential per layer\npath O(n) edges",
             "O(n²d + nd²) FLOPs per layer\nO(1) sequential per layer\npath O(1) edges"]
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
