"""Figures that are identical run to run: PNG everywhere, no SVG date or random ids."""
import io
import sys

import matplotlib


def use_png_figures():
    """Show inline figures as sharp PNG, also after d2l's plot helpers ask for SVG.

    The PNG is drawn at twice the figure's dots per inch and shown at its size ('retina': the
    output says its width and height), so it stays sharp at a projector's 150 % zoom and on
    high-density screens, in JupyterLab and in the stored notebook alike.

    d2l.use_svg_display() switches the inline backend to SVG, whose output carries a date and random
    ids, so a re-run never matches the stored notebook. We point d2l's switch at PNG instead. Call
    it after importing d2l; notebooks that do not use d2l are spared its slow import.
    """
    from matplotlib_inline import backend_inline

    def show_png():
        backend_inline.set_matplotlib_formats("retina")

    if "d2l.torch" in sys.modules:
        sys.modules["d2l.torch"].use_svg_display = show_png
    show_png()
    matplotlib.rcParams["svg.hashsalt"] = "attnbook"  # in case a reader saves an SVG after all
    matplotlib.rcParams["figure.dpi"] = 100


def png_bytes(fig, dpi=100):
    """Encode a figure as PNG bytes (the same bytes for the same drawing)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()
