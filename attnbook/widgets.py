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
   copy of the background when the range or ticks of one of them changed (only those that did,
   where they meet no other), and that picture is kept;
3. the other artists marked `animated=True` (the data) are drawn over it where one of them changed:
   matplotlib marks an artist stale when a setter changes it or one of its parts (a legend's text),
   and an artist whose Axes' axes moved (hidden axes too) changed as well; what the changed artists
   cover, before and after, is redrawn with every artist there, and the rest of the last picture
   stays (a legend that follows one slider is not redrawn when another slider moves only the
   heatmap beside it).
So whatever `draw` changes must be marked animated (a title whose text changes too), or sit on an
axis whose range changes with it, and must change through setters (`set_data`, `set_text`; not by
writing into an array an artist holds): anything else keeps the picture it had when first drawn.

Never out of step: when `draw` raises ValueError the readout shows its one-line message and the
last picture is shown greyed out (`live.shown` is None, `live.error` the message) until a valid
value draws again.

Said in words: `describe(**values)`, the section's own describing function (the website's
precomputed pictures take their alt text from it too), says what the picture shows for the values
it was drawn for. An ipywidgets Image is a bare <img> that cannot carry alt text, so the words sit
right after it in a paragraph only screen readers read (JupyterLab's `jp-sr-only`); the stored PNG
carries them as its `alt` metadata. Without `describe`, the words are `figures.in_words(fig)`.
"""
import base64
import html
import io
import math
import re

import ipywidgets as widgets
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.lines import Line2D
from matplotlib.spines import Spine
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from PIL import Image, ImageOps

from attnbook.figures import in_words, screen_reader_only

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

    def __init__(self, fig, draw, describe=None, **controls):
        self.fig, self.draw, self.controls = fig, draw, controls
        self.describe = describe or (lambda **values: in_words(fig))
        self.description = None  # the picture in words (see the module's docstring)
        self.canvas = FigureCanvasAgg(fig)
        # the size the reader sees, in CSS pixels; the bitmap is drawn SCALE times as dense
        self.css_size = tuple(round(v) for v in fig.get_size_inches() * fig.dpi)
        fig.set_dpi(fig.dpi * SCALE)
        for ax in fig.axes:  # frames go over the data, as in a plain draw (cheap: four lines each)
            for spine in ax.spines.values():
                spine.set_animated(True)
        self._static_key, self._static, self._axes_keys, self._axes_layer = None, None, {}, None
        self._boxes = {}  # moving axis -> the box it was last drawn in
        self.full_redraws, self.axis_redraws = 0, 0  # how often each cached layer was redrawn
        self.partial_axis_redraws = 0  # of the axis redraws, those that redrew only the axes that changed
        self._frame, self._regions = None, {}  # the last picture, and where each animated artist paints
        self.shown, self.error = None, None
        # flex-start: not stretched to the output's width; max-width: shrinks to fit a narrow one
        # (no side margins, which would push it out by their width)
        self.image = widgets.Image(format=LIVE_FORMAT["format"], layout=widgets.Layout(
            align_self="flex-start", width=f"{self.css_size[0]}px", max_width="100%", height="auto",
            margin="2px 0px"))
        self.readout = widgets.HTML()
        self.words = widgets.HTML()  # self.description, for screen readers only
        for control in controls.values():
            _fit(control)
            control.observe(self.refresh, names="value")
        row = widgets.Box(list(controls.values()), layout=widgets.Layout(
            display="flex", flex_flow="row wrap", align_items="center", width="100%"))
        self.box = widgets.VBox([row, self.readout, self.image, self.words],
                                layout=widgets.Layout(max_width="100%"))
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
            self._say(f"Out of date, greyed out: {self.description}" if self.description
                      and not self.description.startswith("Out of date") else self.description)
            self._show(self._encode(**LIVE_FORMAT), values, stale=True)
            return False
        self._show(self.render(), values, stale=False)
        self.readout.value = readout or ""
        self.shown, self.error = values, None
        self._say(self.describe(**values))
        return True

    def _say(self, description):
        self.description = description
        self.words.value = screen_reader_only(description or "")

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
        """Draw the figure as image bytes, redrawing each cached layer only where what it shows changed."""
        fig, canvas = self.fig, self.canvas
        animated = _animated(fig)
        still = [axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) if not axis.get_animated()]
        static_key = (tuple(fig.get_size_inches()), fig.dpi, *map(_axis_key, still))
        if static_key != self._static_key:
            canvas.draw()  # skips animated artists: this is the background
            self._static_key, self._static = static_key, canvas.copy_from_bbox(fig.bbox)
            self._axes_layer, self._boxes, self.full_redraws = None, {}, self.full_redraws + 1
            self._frame = None
        moved = self._draw_moving_axes([a for a in animated if isinstance(a, Axis)])
        self._draw_data([a for a in animated if not isinstance(a, Axis) and a.get_visible()], moved)
        self.error = None  # the canvas now holds a current picture (refresh records its values)
        return self._encode(**LIVE_FORMAT)  # see LIVE_FORMAT: quick to encode; the stored PNG is lossless

    def redraw_all(self):
        """Draw every layer from scratch (what a cached picture is checked against); the image bytes."""
        self._static_key = None
        return self.render()

    def _draw_data(self, artists, moved):
        """The top layer: the animated artists, redrawn only where one of them changed.

        An artist changed when matplotlib marks it or a part of it stale (their setters do: a
        legend's text), when it is new or gone, or when the axes of its Axes moved. Each artist
        paints within its region (its clip box, or its extent when it is not clipped); the changed
        ones' regions, old and new, and every other artist whose region meets them, are redrawn over
        the middle layer; the rest of the picture is the last one. `moved` is what
        `_draw_moving_axes` returned.
        """
        canvas, renderer = self.canvas, self.canvas.get_renderer()
        if moved is None or self._frame is None:  # everything under the data changed: draw it all
            if moved is not None:
                canvas.restore_region(self._axes_layer)
            dirty, regions = set(artists), None
        else:
            moved_axes, boxes = moved
            old, present = self._regions, set(artists)
            dirty = {a for a in artists if a not in old or a.axes in moved_axes or _stale(a)}
            regions = {**old, **{a: _region(a, renderer) for a in dirty}}
            boxes = boxes + [old[a] for a in old if a in dirty or a not in present]
            boxes += [regions[a] for a in dirty]
            growing = True  # an unchanged artist under a redrawn box is redrawn too
            while growing:
                growing = False
                for artist in artists:
                    if artist not in dirty and any(old[artist].overlaps(box) for box in boxes):
                        dirty.add(artist)
                        boxes.append(old[artist])
                        growing = True
            canvas.restore_region(self._frame)
            for box in {tuple(box.extents): box for box in boxes}.values():  # each box once
                self._restore(self._axes_layer, box)
        for artist in artists:
            if artist in dirty:
                self.fig.draw_artist(artist)
        if regions is None:
            regions = {a: _region(a, renderer) for a in artists}
        self._regions = {a: regions[a] for a in artists}
        self._frame = canvas.copy_from_bbox(self.fig.bbox)

    def _restore(self, region, box):
        """Copy a saved picture of the whole figure back into the canvas, within a box from `_snap`.

        Agg restores the pixels from the first corner to the second, both included, so two boxes
        that do not overlap (Bbox.overlaps counts touching edges) restore no pixel in common.
        """
        width, height = self.canvas.get_width_height(physical=True)
        x0, y0, x1, y1 = (int(v) for v in box.extents)
        box = (max(x0, 0), max(height - y1, 0), min(x1, width), min(height - y0, height))  # rows from the top
        if box[0] < box[2] and box[1] < box[3]:
            # xy: where the saved region's own corner goes (the whole figure: its origin)
            self.canvas.restore_region(region, bbox=box, xy=region.get_extents()[:2])

    def _encode(self, **options):
        """The picture as it was last drawn, encoded with PIL (the same pixels give the same bytes).

        While `error` is set the picture is out of date: it is shown grey and faded.
        """
        canvas, buffer = self.canvas, io.BytesIO()
        if self._static is None:  # nothing drawn yet (the first values were invalid): the background
            canvas.draw()
        # Agg's RGBA read as RGBX, no copy: the JPEG encoder takes it as it is (the alpha is opaque)
        rgb = Image.frombuffer("RGBX", canvas.get_width_height(physical=True), canvas.buffer_rgba(),
                               "raw", "RGBX", 0, 1)
        if self.error is not None or options["format"] != "jpeg":
            rgb = rgb.convert("RGB")
        if self.error is not None:
            grey = ImageOps.grayscale(rgb).convert("RGB")
            rgb = Image.blend(grey, Image.new("RGB", rgb.size, "white"), 0.6)
        rgb.save(buffer, **options)
        return buffer.getvalue()

    def _draw_moving_axes(self, axes):
        """The middle layer: the background and the axes that follow a slider, kept until one changes.

        When some axes changed and none of them, where it drew before and where it draws now, meets
        an axis that did not change, only those are redrawn over the background (a colour bar whose
        scale follows the data while the plot's ticks stay; a plot's rows while its columns stay);
        otherwise all of them are, which cannot leave stale pixels where two of them touch. A hidden
        axis is not drawn, but its range still moves the data of its Axes.

        Returns None when the whole layer was redrawn, else (the Axes whose axes changed, the boxes
        of the layer that changed), both empty when no axis changed. Either way the canvas is not
        the finished picture: `_draw_data` puts the data over this layer, or over the last picture.
        """
        keys = {axis: _axis_key(axis) for axis in axes}
        changed = [axis for axis in axes if keys[axis] != self._axes_keys.get(axis)]
        if self._axes_layer is not None and not changed:
            return set(), []
        shown = [axis for axis in axes if axis.get_visible()]
        redraw = [axis for axis in changed if axis.get_visible()]
        renderer, boxes = self.canvas.get_renderer(), None
        if self._axes_layer is not None and len(redraw) < len(shown) and set(shown) == set(self._boxes):
            self.canvas.restore_region(self._axes_layer)
            for axis in redraw:  # the background under where it drew
                if self._boxes[axis] is not None:
                    self._restore(self._static, self._boxes[axis])
            for axis in redraw:
                self.fig.draw_artist(axis)
            new = {axis: _axis_box(axis, renderer) for axis in redraw}
            boxes = {axis: _union([self._boxes[axis], new[axis]]) for axis in redraw}
            # where it drew before and draws now: the background only (the axes' boxes did not meet)
            if any(boxes[axis] is not None and self._boxes[other] is not None
                   and boxes[axis].overlaps(self._boxes[other])
                   for axis in redraw for other in shown if other not in boxes):
                boxes = None  # it meets an axis it did not redraw: redraw them all
            else:
                self._boxes.update(new)
        if boxes is None:
            self.canvas.restore_region(self._static)
            for axis in shown:
                self.fig.draw_artist(axis)
            # where each axis now draws; not worth finding while every move changes them all
            self._boxes = {} if len(redraw) == len(shown) else {
                axis: _axis_box(axis, renderer) for axis in shown}
        self._axes_keys, self._axes_layer = keys, self.canvas.copy_from_bbox(self.fig.bbox)
        self.axis_redraws += 1
        self.partial_axis_redraws += boxes is not None
        return None if boxes is None else (
            {axis.axes for axis in changed}, [box for box in boxes.values() if box is not None])

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
        return bundle, {"image/png": {"width": width, "height": height, "alt": self.description}}


def _animated(artist):
    """The artists marked animated under this one, hidden ones too (a hidden axis still moves the
    data), in figure.findobj's order. An axis is drawn whole with its ticks, so what lies inside it
    is not searched (findobj would: an axis holds most of a figure's artists)."""
    found = []
    if not isinstance(artist, Axis):
        for child in artist.get_children():
            found += _animated(child)
    if artist.get_animated():
        found.append(artist)
    return found


def _snap(box):
    """A display box grown to whole pixels and one more on every side (anti-aliasing)."""
    x0, y0, x1, y1 = box.extents
    return Bbox.from_extents(math.floor(x0) - 1, math.floor(y0) - 1, math.ceil(x1) + 1, math.ceil(y1) + 1)


def _finite(box):
    return all(map(math.isfinite, box.extents))


def _union(boxes):
    """The box around the boxes that are not None (None when all are)."""
    boxes = [box for box in boxes if box is not None]
    return Bbox.union(boxes) if boxes else None


def _axis_box(axis, renderer):
    """Where an axis drew (display pixels, `_snap`ped; ask after drawing it; None: nowhere): the
    tick marks, grid lines and tick labels of the ticks in its range, its label and offset text."""
    parts = [axis.label, axis.offsetText]
    low, high = sorted(axis.get_view_interval())
    slack = 1e-6 * (high - low)  # a tick on the edge is drawn: keep it (a larger box is safe)
    for locs, ticks in ((axis.get_majorticklocs(), axis.majorTicks),
                        (axis.get_minorticklocs(), axis.minorTicks)):
        for loc, tick in zip(locs, ticks, strict=False):  # ticks beyond the locations are unused
            if low - slack <= loc <= high + slack:
                parts += [tick.tick1line, tick.tick2line, tick.gridline, tick.label1, tick.label2]
    boxes = []
    for part in parts:
        if not part.get_visible() or isinstance(part, Text) and not part.get_text():
            continue
        box = part.get_window_extent(renderer)
        if isinstance(part, Line2D):  # a tick mark is a marker as long as its size, from the tick
            box = box.padded((part.get_markersize() / 2 + part.get_markeredgewidth()
                              + part.get_linewidth()) * axis.figure.dpi / 72)
        boxes.append(box if _finite(box) else axis.figure.bbox)
    return _snap(Bbox.union(boxes)) if boxes else None


def _stale(artist):
    """Whether matplotlib marked the artist, or a visible part of it, as changed since it was drawn."""
    return artist.stale or any(child.get_visible() and _stale(child) for child in artist.get_children())


def _region(artist, renderer):
    """Where an animated artist may paint, in display pixels (`_snap`ped): its clip box when it has
    one, else its extent, wider by its line width; the whole figure when effects (a stroke or
    shadow, wrapped text) may paint outside what its extent measures."""
    figure = artist.figure
    if (artist.get_path_effects() or getattr(artist, "shadow", False)
            or isinstance(artist, Text) and artist.get_wrap()):
        return _snap(figure.bbox)
    if artist.get_clip_on() and artist.get_clip_box() is not None:
        return _snap(artist.get_clip_box())
    if (isinstance(artist, Spine) and artist.spine_type in ("left", "right", "bottom", "top")
            and artist.get_position() == ("outward", 0.0)):
        # a side of the frame lies on the Axes' edge (its path follows the axes' range only once
        # drawn; its own extent also measures the ticks: slow, and not needed)
        box = artist.axes.bbox
    else:
        box = artist.get_window_extent(renderer)
    if not _finite(box):
        return _snap(figure.bbox)
    width = artist.get_linewidth() if hasattr(artist, "get_linewidth") else 0.5
    return _snap(Bbox(box.get_points()).padded(width * figure.dpi / 72))


def _axis_key(axis):
    """What an axis shows: its range and its ticks (a change means its labels must be redrawn)."""
    return axis.get_visible(), tuple(axis.get_view_interval()), tuple(axis.get_majorticklocs())


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
