"""A figure built once and redrawn in place when sliders move.

In JupyterLab the reader sees the live controls; GitHub, nbval and print see the PNG of the
default values, which rides along in the same output.

Sharp on any screen: the figure keeps its size in CSS pixels (figsize × dpi as the chapter built it)
and its bitmap is drawn at SCALE (2) times that, for projectors at 150 % zoom and high-density
screens; the image is shown at the CSS size and shrinks (max-width 100 %) in a narrower output area.
The controls sit in rows that wrap, labels at their natural width, so no slider is squeezed.

Redrawing is blitted in three layers, because text is most of matplotlib's drawing time:
1. the background (frames, labels, legends, colorbars, titles that never change) is drawn once, and
   again only when the size or the range of an axis that is not animated changes;
2. axes whose range follows a slider (mark them: `ax.xaxis.set_animated(True)`) are drawn over a
   copy of the background when the range or ticks of one of them changed (only those of the Axes
   whose did, where that is safe), and that picture is kept;
3. the other artists marked `animated=True` (the data) are drawn over it on every move.
So whatever `draw` changes must be marked animated (a title whose text changes too), or sit on an
axis whose range changes with it: anything else keeps the picture it had when first drawn.

Never out of step: when `draw` raises ValueError the readout shows its one-line message and the
last picture is shown greyed out (`live.shown` is None, `live.error` the message) until a valid
value draws again.
"""
import base64
import html
import io
import re

import ipywidgets as widgets
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.transforms import Bbox
from PIL import Image, ImageOps

SCALE = 2  # bitmap pixels per CSS pixel
TRACK_PX = 100  # the least a slider's track may get, in CSS pixels
LABEL_PX_PER_CHAR = 8  # generous for JupyterLab's 13 px UI font: a label is never cut
SLIDERS = (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider, widgets.IntRangeSlider,
           widgets.FloatRangeSlider, widgets.SelectionSlider, widgets.SelectionRangeSlider)
STALE_CLASS = "attnbook-stale"  # on the image while it shows an outdated picture
#: How a live picture travels to the browser: JPEG at quality 95 without chroma subsampling. At twice
#: the CSS size a figure is about a million pixels, and libjpeg-turbo encodes it in a few ms where
#: lossless WebP (the fastest lossless encoder PIL has, method 0) takes about 20 ms and PNG more;
#: at this quality and density the difference from lossless is not visible. The stored picture
#: (GitHub, nbval, print) stays a lossless PNG.
LIVE_FORMAT = dict(format="jpeg", quality=95, subsampling=0)
MAX_ERROR_CHARS = 200


def one_line(error):
    """An exception's message on one line: whitespace (newlines too) joined, cut at MAX_ERROR_CHARS."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"


class LiveFigure:
    """Sliders + one matplotlib figure: `draw(**values)` updates the figure's artists in place.

    `draw` returns a one-line readout (or None) and raises ValueError with a one-line message for
    values that cannot work; the message is shown instead of a traceback and the figure is greyed
    out until the next valid value. `shown` holds the control values the picture shows (None while
    it is stale) and `error` the message shown (None when there is none).
    """

    def __init__(self, fig, draw, **controls):
        self.fig, self.draw, self.controls = fig, draw, controls
        self.canvas = FigureCanvasAgg(fig)
        # the size the reader sees, in CSS pixels; the bitmap is drawn SCALE times as dense
        self.css_size = tuple(round(v) for v in fig.get_size_inches() * fig.dpi)
        fig.set_dpi(fig.dpi * SCALE)
        for ax in fig.axes:  # frames go over the data, as in a plain draw (cheap: four lines each)
            for spine in ax.spines.values():
                spine.set_animated(True)
        self._static_key, self._static, self._axes_keys, self._axes_layer = None, None, {}, None
        self._boxes = {}  # Axes -> the box its moving axes were last drawn in
        self.full_redraws, self.axis_redraws = 0, 0  # how often each cached layer was redrawn
        self.partial_axis_redraws = 0  # of the axis redraws, those that redrew only the groups that changed
        self.shown, self.error = None, None
        # flex-start: not stretched to the output's width; max-width: shrinks to fit a narrow one
        # (no side margins, which would push it out by their width)
        self.image = widgets.Image(format=LIVE_FORMAT["format"], layout=widgets.Layout(
            align_self="flex-start", width=f"{self.css_size[0]}px", max_width="100%", height="auto",
            margin="2px 0px"))
        self.readout = widgets.HTML()
        for control in controls.values():
            _fit(control)
            control.observe(self.refresh, names="value")
        row = widgets.Box(list(controls.values()), layout=widgets.Layout(
            display="flex", flex_flow="row wrap", align_items="center", width="100%"))
        self.box = widgets.VBox([row, self.readout, self.image], layout=widgets.Layout(max_width="100%"))
        self.refresh()

    def values(self):
        return {name: control.value for name, control in self.controls.items()}

    def refresh(self, change=None):
        values = self.values()
        try:
            readout = self.draw(**values)
        except ValueError as error:
            self.error, self.shown = one_line(error), None
            message = html.escape(self.error)
            self.readout.value = f"<span style='color:#b00'>Cannot show this: {message}</span>"
            self._show(self._encode(**LIVE_FORMAT), values, stale=True)
            return False
        self._show(self.render(), values, stale=False)
        self.readout.value = readout or ""
        self.shown, self.error = values, None
        return True

    def _show(self, image, values, stale):
        """Send the picture with classes that say what it is for, in one message (a page can check it).

        `attnbook-for-NAME-VALUE` per control (characters other than letters, digits, - and _ become
        _), and STALE_CLASS when it is out of date.
        """
        classes = [f"attnbook-for-{name}-{re.sub(r'[^A-Za-z0-9_-]', '_', str(value))}"
                   for name, value in values.items()]
        with self.image.hold_sync():
            self.image.value = image
            self.image._dom_classes = ("attnbook-figure", *classes, *([STALE_CLASS] if stale else []))

    def render(self):
        """Draw the figure as image bytes, redrawing each cached layer only when what it shows changed."""
        fig, canvas = self.fig, self.canvas
        animated = fig.findobj(lambda a: a.get_animated() and a.get_visible())
        still = [axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) if not axis.get_animated()]
        static_key = (tuple(fig.get_size_inches()), fig.dpi, *map(_axis_key, still))
        if static_key != self._static_key:
            canvas.draw()  # skips animated artists: this is the background
            self._static_key, self._static = static_key, canvas.copy_from_bbox(fig.bbox)
            self._axes_layer, self._boxes, self.full_redraws = None, {}, self.full_redraws + 1
        self._draw_moving_axes([a for a in animated if isinstance(a, Axis)])
        for artist in animated:
            if not isinstance(artist, Axis):
                fig.draw_artist(artist)
        self.error = None  # the canvas now holds a current picture (refresh records its values)
        return self._encode(**LIVE_FORMAT)  # see LIVE_FORMAT: quick to encode; the stored PNG is lossless

    def _encode(self, **options):
        """The picture as it was last drawn, encoded with PIL (the same pixels give the same bytes).

        While `error` is set the picture is out of date: it is shown grey and faded.
        """
        canvas, buffer = self.canvas, io.BytesIO()
        if self._static is None:  # nothing drawn yet (the first values were invalid): the background
            canvas.draw()
        rgb = Image.frombuffer("RGBA", canvas.get_width_height(physical=True), canvas.buffer_rgba())
        rgb = rgb.convert("RGB")
        if self.error is not None:
            grey = ImageOps.grayscale(rgb).convert("RGB")
            rgb = Image.blend(grey, Image.new("RGB", rgb.size, "white"), 0.6)
        rgb.save(buffer, **options)
        return buffer.getvalue()

    def _draw_moving_axes(self, axes):
        """The middle layer: the background and the axes that follow a slider, kept until one changes.

        Moving axes are grouped by the Axes they belong to (a plot, a colour bar). When the axes of
        some groups changed and each such group's box (where its axes draw, before and after) meets
        no other group's box, only those boxes are redrawn over the background (a colour bar whose
        scale follows the data, while the plot's ticks stay); otherwise all of them are, which
        cannot leave stale pixels where two boxes touch.
        """
        keys = {axis: _axis_key(axis) for axis in axes}
        groups = {}
        for axis in axes:
            groups.setdefault(axis.axes, []).append(axis)
        changed = [ax for ax, members in groups.items()
                   if any(keys[axis] != self._axes_keys.get(axis) for axis in members)]
        if self._axes_layer is not None and not changed:
            self.canvas.restore_region(self._axes_layer)
            return
        renderer = self.canvas.get_renderer()
        every_group_changed, boxes = len(changed) == len(groups), None
        if not every_group_changed and self._axes_layer is not None and set(groups) == set(self._boxes):
            new = {ax: _group_box(ax, groups[ax], renderer) for ax in changed}
            boxes = {**self._boxes, **{ax: Bbox.union([self._boxes[ax], new[ax]]) for ax in changed}}
            if any(boxes[ax].overlaps(box) for ax in changed
                   for other, box in boxes.items() if other is not ax):
                boxes = None  # two groups meet: redraw them all
        if boxes is None:
            changed = list(groups)
            self.canvas.restore_region(self._static)
        else:
            self.canvas.restore_region(self._axes_layer)
            width, height = self.canvas.get_width_height(physical=True)
            for ax in changed:  # the background under the old and the new picture of this group
                x0, y0, x1, y1 = boxes[ax].extents
                box = (max(int(x0), 0), max(int(height - y1), 0),  # Agg counts rows from the top
                       min(int(x1) + 1, width), min(int(height - y0) + 1, height))
                # xy: where the saved region's own corner goes (the whole figure: its origin)
                self.canvas.restore_region(self._static, bbox=box, xy=self._static.get_extents()[:2])
        for ax in changed:
            for axis in groups[ax]:
                self.fig.draw_artist(axis)
        if boxes is None:  # where each group now draws; not worth finding while every move changes all
            self._boxes = {} if every_group_changed else {
                ax: _group_box(ax, groups[ax], renderer) for ax in groups}
        else:
            self._boxes.update(new)
        self._axes_keys, self._axes_layer = keys, self.canvas.copy_from_bbox(self.fig.bbox)
        self.axis_redraws += 1
        self.partial_axis_redraws += boxes is not None

    def set(self, **values):
        """Move several controls at once (one redraw), as a reader moving sliders would.

        A value a control refuses (a Dropdown option it does not have) raises its TraitError, after
        the figure has been redrawn for the values the controls then hold.
        """
        with self.box.hold_sync():
            for control in self.controls.values():
                control.unobserve(self.refresh, names="value")
            try:
                for name, value in values.items():
                    self.controls[name].value = value
            finally:
                for control in self.controls.values():
                    control.observe(self.refresh, names="value")
                drawn = self.refresh()
        return drawn

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.box._repr_mimebundle_(**kwargs)
        settings = ", ".join(f"{name}={value}" for name, value in self.values().items())
        bundle["text/plain"] = f"LiveFigure({settings})"
        # the stored picture is as sharp as the live one: SCALE × the pixels, shown at the CSS size
        bundle["image/png"] = base64.b64encode(self._encode(format="png")).decode("ascii")
        width, height = self.css_size
        return bundle, {"image/png": {"width": width, "height": height}}


def _group_box(ax, axes, renderer):
    """Where an Axes' moving axes draw: the frame of the Axes, their tick labels and labels, and
    what lies between (the tick marks), a few pixels wider (display pixels)."""
    boxes = [ax.bbox] + [axis.get_tightbbox(renderer) for axis in axes]
    return Bbox.union([box for box in boxes if box is not None]).padded(3 * ax.figure.dpi / 72)


def _axis_key(axis):
    """What an axis shows: its range and its ticks (a change means its labels must be redrawn)."""
    return tuple(axis.get_view_interval()), tuple(axis.get_majorticklocs())


def _fit(control):
    """Give a control room in a wrapping row: its label whole, a slider's track >= TRACK_PX.

    Labels take their natural width (description_width 'initial') unless the chapter chose one;
    a minimum width keeps the track when the row is narrow (the control then wraps to a new row).
    Sizes the chapter set itself are kept.
    """
    style = getattr(control, "style", None)
    if style is not None and hasattr(style, "description_width") and not style.description_width:
        style.description_width = "initial"
    label = len(getattr(control, "description", "") or "") * LABEL_PX_PER_CHAR
    unset = control.layout.min_width is None and control.layout.width is None
    if isinstance(control, SLIDERS) and control.orientation == "horizontal" and unset:
        # label + its margin, the track + the handle's margins, the readout box
        control.layout.min_width = f"{label + 8 + TRACK_PX + 16 + 56}px"
    elif isinstance(control, widgets.Dropdown) and unset:
        widest = max((len(str(option)) for option in control.options), default=1)
        control.layout.min_width = f"{label + 8 + widest * LABEL_PX_PER_CHAR + 32}px"
