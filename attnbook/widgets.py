"""A figure built once and redrawn in place when sliders move.

In JupyterLab the reader sees the live controls; GitHub, nbval and print see the PNG of the
default values, which rides along in the same output.

Redrawing is blitted in three layers, because text is most of matplotlib's drawing time:
1. the background (frames, labels, legends, colorbars, titles that never change) is drawn once, and
   again only when the size or the range of an axis that is not animated changes;
2. axes whose range follows a slider (mark them: `ax.xaxis.set_animated(True)`) are drawn over a
   copy of the background when the range or ticks of one of them changed, and that picture is kept;
3. the other artists marked `animated=True` (the data) are drawn over it on every move.
So whatever `draw` changes must be marked animated (a title whose text changes too), or sit on an
axis whose range changes with it: anything else keeps the picture it had when first drawn.
"""
import base64
import io

import ipywidgets as widgets
from matplotlib.axis import Axis
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
        for ax in fig.axes:  # frames go over the data, as in a plain draw (cheap: four lines each)
            for spine in ax.spines.values():
                spine.set_animated(True)
        self._static_key, self._static, self._axes_key, self._axes_layer = None, None, None, None
        self.full_redraws, self.axis_redraws = 0, 0  # how often each cached layer was redrawn
        # flex-start: shown at its own pixel size, not stretched to the output's width (blurry)
        self.image = widgets.Image(format="webp", layout=widgets.Layout(align_self="flex-start"))
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
        """Draw the figure as image bytes, redrawing each cached layer only when what it shows changed."""
        fig, canvas = self.fig, self.canvas
        animated = fig.findobj(lambda a: a.get_animated() and a.get_visible())
        still = [axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) if not axis.get_animated()]
        static_key = (tuple(fig.get_size_inches()), *map(_axis_key, still))
        if static_key != self._static_key:
            canvas.draw()  # skips animated artists: this is the background
            self._static_key, self._static = static_key, canvas.copy_from_bbox(fig.bbox)
            self._axes_layer, self.full_redraws = None, self.full_redraws + 1
        self._draw_moving_axes([a for a in animated if isinstance(a, Axis)])
        for artist in animated:
            if not isinstance(artist, Axis):
                fig.draw_artist(artist)
        # lossless and cheap to encode (about 2/3 of PNG's time at its fastest setting); the bytes
        # only travel to the browser: GitHub and nbval get a PNG from _repr_mimebundle_
        return self._encode(format="webp", lossless=True, method=0, quality=0)

    def _encode(self, **options):
        """The canvas as it was last drawn, encoded with PIL (the same pixels give the same bytes)."""
        canvas, buffer = self.canvas, io.BytesIO()
        rgb = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba()).convert("RGB")
        rgb.save(buffer, **options)
        return buffer.getvalue()

    def _draw_moving_axes(self, axes):
        """The middle layer: the background and the axes that follow a slider, kept until one changes.

        All of them are redrawn when one changed: that costs about what finding the box of the one
        that changed would cost, and cannot leave stale pixels where two boxes touch.
        """
        keys = tuple(map(_axis_key, axes))
        if keys != self._axes_key or self._axes_layer is None:
            self.canvas.restore_region(self._static)
            for axis in axes:
                self.fig.draw_artist(axis)
            self._axes_key, self._axes_layer = keys, self.canvas.copy_from_bbox(self.fig.bbox)
            self.axis_redraws += 1
        else:
            self.canvas.restore_region(self._axes_layer)

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
        bundle["image/png"] = base64.b64encode(self._encode(format="png")).decode("ascii")
        return bundle


def _axis_key(axis):
    """What an axis shows: its range and its ticks (a change means its labels must be redrawn)."""
    return tuple(axis.get_view_interval()), tuple(axis.get_majorticklocs())

