"""Whether a figure's words can be read where the website shows it: every visible text of a matplotlib
figure is at least 9 pt at the size the page shows it, and has a contrast of at least 4.5:1 (WCAG 1.4.3)
with what is drawn behind it, in the theme's light scheme and in its dark one (where the theme dims
every picture: `shown_in_dark`).

    problems(fig, css_width)   # [] when every text passes; else one line per text that fails

`css_width` is the width, in CSS pixels, the notebook shows the figure at (LiveFigure.css_size for an
explorer, whose picture is the whole figure; for an inline figure, its tight box at its dpi, with
`css_per_inch=fig.dpi`: tests/shown_figures.inline_size); the page shrinks a wider one to its column
(website.COLUMN_PX). The background is measured, not assumed: the figure is drawn once with its
texts hidden, and each text's colour is compared with the pixels under it (a label on a heatmap's
cell, a legend's frame, the axes).
"""
import matplotlib.text
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from website import COLUMN_PX, column_px

MIN_PT = 9.0          # the smallest text the page may show, in CSS points (1 pt = 96/72 CSS pixels)
MIN_CONTRAST = 4.5    # WCAG 1.4.3 AA for text under 18 pt
# The theme's dark scheme draws every picture with `filter: brightness(.8) contrast(1.2)`
# (pydata-sphinx-theme), on a light card: a figure's white becomes 219/255 (test_a11y measures it).
DARK_BRIGHTNESS, DARK_CONTRAST = 0.8, 1.2
DARK_CARD = 0.9       # the brightest a figure may shine on the dark page, as a fraction of white


def shown_in_dark(rgb):
    """Colours (0-255, any shape) as the dark scheme's filter shows them (sRGB, as Chromium applies it)."""
    value = (np.asarray(rgb, dtype=float) / 255 * DARK_BRIGHTNESS - 0.5) * DARK_CONTRAST + 0.5
    return np.clip(value, 0, 1) * 255


def luminance(rgb):
    """WCAG relative luminance of sRGB colours (0-255), over the last axis."""
    c = np.asarray(rgb, dtype=float) / 255
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def contrast(a, b):
    la, lb = luminance(a), luminance(b)
    return (np.maximum(la, lb) + 0.05) / (np.minimum(la, lb) + 0.05)


def shown_pt(text, fig, css_width, css_per_inch=None, column=COLUMN_PX):
    """A text's size in CSS points on the page: its size on the figure, scaled as the page scales it
    (css_per_inch: by default the whole figure is shown css_width wide; a figure wider than the
    column, COLUMN_PX or FOLD_COLUMN_PX for one inside a fold, is shrunk to it)."""
    css_per_inch = css_per_inch or css_width / fig.get_figwidth()
    shrink = min(1.0, column / css_width)
    return text.get_fontsize() / 72 * css_per_inch * shrink * 72 / 96


def visible_texts(fig):
    """The texts a reader sees: visible, not empty, not transparent, in a visible axes (if any), and
    not the ticks and labels of an axes drawn without them (`ax.axis('off')` keeps them, not drawn)."""
    hidden = {id(text) for ax in fig.axes if not ax.axison
              for axis in (ax.xaxis, ax.yaxis) for text in axis.findobj(matplotlib.text.Text)}
    return [text for text in fig.findobj(matplotlib.text.Text)
            if text.get_visible() and text.get_text().strip() and text.get_alpha() != 0
            and (text.axes is None or text.axes.get_visible()) and id(text) not in hidden]


def agg_canvas(fig):
    """The figure's canvas, an Agg one (a bare `Figure()` has one that cannot draw pixels)."""
    return fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)


def problems(fig, css_width, css_per_inch=None, folded=False):
    """One line for each text of `fig` that is too small or too faint where the page shows it."""
    canvas = agg_canvas(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = visible_texts(fig)
    boxes = [text.get_window_extent(renderer) for text in texts]
    engine = fig.get_layout_engine()
    for text in texts:
        text.set_visible(False)
    try:  # the layout as drawn: a layout engine would grow the axes into the room the texts left
        fig.set_layout_engine("none")
        canvas.draw()
        behind = np.asarray(canvas.buffer_rgba())[..., :3].astype(float)
    finally:
        for text in texts:
            text.set_visible(True)
        fig.set_layout_engine(engine)
        canvas.draw()
    height, width = behind.shape[:2]
    found = []
    for text, box in zip(texts, boxes, strict=True):
        label = text.get_text().strip().replace("\n", " ")[:50]
        x0, x1 = max(int(box.x0), 0), min(int(np.ceil(box.x1)), width)
        y0, y1 = max(int(height - box.y1), 0), min(int(np.ceil(height - box.y0)), height)
        if x1 - x0 < 1 or y1 - y0 < 1:
            continue  # outside the figure: not on the page
        size = shown_pt(text, fig, css_width, css_per_inch, column_px(folded))
        if size < MIN_PT - 1e-6:
            found.append(f"{label!r}: {size:.1f} pt on the page (at least {MIN_PT:g})")
        colour = np.array(matplotlib.colors.to_rgba(text.get_color()))
        under = behind[y0:y1, x0:x1].reshape(-1, 3)
        ink = colour[:3] * 255 * colour[3] + np.median(under, axis=0) * (1 - colour[3])
        for scheme, shown in (("light", lambda c: c), ("dark", shown_in_dark)):
            ratio = float(np.median(contrast(shown(ink), shown(under))))  # what is behind most of it
            if ratio < MIN_CONTRAST:
                found.append(f"{label!r}: contrast {ratio:.2f}:1 in the {scheme} scheme "
                             f"(at least {MIN_CONTRAST:g})")
    return found
