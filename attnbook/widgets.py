"""A figure built once and redrawn in place when sliders move.

In JupyterLab the reader sees the live controls; GitHub, nbval and print see the PNG of the
default values, which rides along in the same output.

Redrawing is blitted: artists marked `animated=True` (the data) are drawn over a cached picture of
everything else (axes, ticks, labels), which is redrawn only when an axis range or the size changes.
Text is most of matplotlib's drawing time, so this is what makes a slider move cheap.
"""
import base64
import io

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from PIL import Image


class LiveFigure:
    """Sliders + one matplotlib figure: `draw(**values)` updates the figure's artists in place.

    `draw` returns a one-line readout (or None) and raises ValueError with a one-line message for
    values that cannot work; the message is shown instead of a traceback and the figure is kept.
    """

    def __init__(self, fig, draw, **controls):
        self.fig, self.draw, self.controls = fig, draw, controls
        self.canvas = FigureCanvasAgg(fig)
        self._frame, self._background, self.full_redraws = None, None, 0
        # flex-start: shown at its own pixel size, not stretched to the output's width (blurry)
        self.image = widgets.Image(format="png", layout=widgets.Layout(align_self="flex-start"))
        self.readout = widgets.HTML()
        for control in controls.values():
            control.observe(self.refresh, names="value")
        self.box = widgets.VBox([widgets.HBox(list(controls.values())), self.readout, self.image])
        self.refresh()

    def values(self):
        return {name: control.value for name, control in self.controls.items()}

    def refresh(self, change=None):
        try:
            readout = self.draw(**self.values())
        except ValueError as error:
            self.readout.value = f"<span style='color:#b00'>Cannot show this: {error}</span>"
            return False
        self.readout.value = readout or ""
        self.image.value = self.render()
        return True

    def render(self):
        """Draw the figure as PNG bytes, redrawing the static parts only when the frame changed."""
        fig, canvas = self.fig, self.canvas
        frame = (tuple((ax.get_xlim(), ax.get_ylim(), tuple(ax.get_xticks()), tuple(ax.get_yticks()))
                       for ax in fig.axes), tuple(fig.get_size_inches()))
        if frame != self._frame:
            canvas.draw()  # skips animated artists: this is the background
            self._background = canvas.copy_from_bbox(fig.bbox)
            self._frame, self.full_redraws = frame, self.full_redraws + 1
        else:
            canvas.restore_region(self._background)
        for artist in fig.findobj(lambda a: a.get_animated() and a.get_visible()):
            fig.draw_artist(artist)
        buffer = io.BytesIO()
        rgb = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba()).convert("RGB")
        rgb.save(buffer, format="png", compress_level=1)  # fast; the bytes only travel to the browser
        return buffer.getvalue()

    def set(self, **values):
        """Move several controls at once (one redraw), as a reader moving sliders would."""
        with self.box.hold_sync():
            for control in self.controls.values():
                control.unobserve(self.refresh, names="value")
            try:
                for name, value in values.items():
                    self.controls[name].value = value
            finally:
                for control in self.controls.values():
                    control.observe(self.refresh, names="value")
        return self.refresh()

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.box._repr_mimebundle_(**kwargs)
        settings = ", ".join(f"{name}={value}" for name, value in self.values().items())
        bundle["text/plain"] = f"LiveFigure({settings})"
        bundle["image/png"] = base64.b64encode(self.image.value).decode("ascii")
        return bundle
