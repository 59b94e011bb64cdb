"""`make slides`: one reveal.js deck per section, _build/slides/<section>.html, from the committed
notebooks' main line (never re-executed).

    python site/slides.py              # every notebooks/*.ipynb
    python site/slides.py 3-positional-encoding

The main line is every cell not tagged `deeper` or `answer`, less the deeper parts (a markdown
heading cell tagged `deeper` and every cell up to the next heading of the same or a higher level).

Where slides start: at the title, at each `##` or `###` heading, at each figure and at the explorer;
and where the next piece would not fit the 1280 x 720 slide (an estimate from the fonts of
slides.css; tests/test_slides.py measures the result in Chromium). A cell's `slideshow.slide_type`
metadata (JupyterLab's property inspector, nbconvert's convention) overrides: `slide` and `subslide`
start a slide (a subslide below the current one), `fragment` appears on the next key press, `skip`
leaves the cell out, `notes` puts it in the speaker notes, `-` keeps it on the current slide.

What a slide shows: of a short markdown cell (at most LEAD_WORDS words, one paragraph) all of it;
of a longer one the first sentence of its first paragraph and of each paragraph with a bold run-in
(`**Causal.** ...`), its displayed equations, its lists (each item's first sentence) and tables,
and the whole cell goes to the speaker notes. Code of at most MAX_CODE_LINES lines is shown with
its output; longer code is cut between top-level statements into two slides, or, when that is not
possible, only its output is shown and the code goes to the notes. A cell whose code only imports
goes to the notes. Code whose input is folded in the notebook (`jupyter.source_hidden`) shows its
figure or table, not its code. Figures carry their cell's alt text (`mystnb.image.alt`). The
explorer is the website's: the pictures site/explorers.py precomputed (_build/site-static/explorers)
and site/_static/explorer.js, copied into the deck's folder, with the live notebook's link.

Offline: reveal.js (site/node_modules, npm) and MathJax are copied into _build/slides/lib/, and the
deck asks no other host for anything.
"""
import ast
import base64
import html
import io
import math
import pathlib
import re
import shutil
import sys
import time
from dataclasses import dataclass, field

import nbformat
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from PIL import Image
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

SITE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(SITE), str(SITE / "_ext")]
import booksite  # noqa: E402
import build  # noqa: E402
import conf  # noqa: E402

ROOT, BUILD = build.ROOT, build.BUILD
OUT = BUILD / "slides"
LIB = OUT / "lib"
REVEAL = SITE / "node_modules" / "reveal.js" / "dist"
REVEAL_PARTS = ["reveal.css", "reveal.js", "theme/white.css", "plugin/notes.js"]
CODE_STYLE = "a11y-light"  # accessible-pygments: every token colour at WCAG AA contrast on white

MAX_CODE_LINES = 12
LEAD_WORDS = 45
# The estimate behind the automatic breaks, in CSS pixels of a 1280 x 720 slide (slides.css): what
# is left under the padding, and the height of each kind of line.
SLIDE_HEIGHT = 720 - 26 - 50  # padding: below it, reveal.js's arrows and slide number
BUDGET = SLIDE_HEIGHT - 40  # a margin for the estimate
TITLE_LINE, TITLE_CHARS = 52, 56
TEXT_LINE, TEXT_CHARS = 35, 84
CODE_LINE, CODE_CHARS = 25, 100
FIGURE_MIN = 300  # a figure gets at least this much height, else it goes to the next slide
WIDTH, FIGURE_SCALE = 1200, 1.44

md = MarkdownIt("commonmark", {"html": True}).enable("table").use(
    dollarmath_plugin, double_inline=True,
    renderer=lambda tex, options: (f"\\[{html.escape(tex)}\\]" if options.get("display_mode")
                                   else f"\\({html.escape(tex)}\\)"))
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ABBREVIATIONS = ("al.", "e.g.", "i.e.", "vs.", "cf.", "etc.", "Fig.", "Eq.", "Sec.", "no.", "approx.")


@dataclass
class Piece:
    """One thing on a slide: its HTML, its estimated height, and how it joins the others."""
    html: str
    height: float
    kind: str = "text"  # text | figure | explorer
    group: tuple = ()  # consecutive pieces of one list or table: (opening tag, closing tag)
    fragment: bool = False


@dataclass
class Slide:
    title: str
    pieces: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    vertical: bool = False  # a subslide: below the slide before it
    kind: str = "content"

    def used(self):
        return (TITLE_LINE * math.ceil(len(self.title) / TITLE_CHARS) if self.title else 0) + sum(
            piece.height for piece in self.pieces)

    def has(self, kind):
        return any(piece.kind == kind for piece in self.pieces)


# ---------------------------------------------------------------------------- the main line
def main_line(nb):
    """The cells a lecture shows: not tagged `deeper` or `answer`, and outside every deeper part."""
    cells, open_level = [], None
    for cell in nb.cells:
        tags = set(cell.metadata.get("tags", []))
        found = booksite.headings(cell.source) if cell.cell_type == "markdown" else []
        if found and open_level is not None and found[0][0] <= open_level:
            open_level = None
        if found and "deeper" in tags:
            open_level = found[0][0]
        if open_level is None and not tags & {"deeper", "answer"}:
            cells.append(cell)
    return cells


def slide_type(cell):
    return cell.metadata.get("slideshow", {}).get("slide_type")


# ---------------------------------------------------------------------------- prose
def plain(markdown):
    """Roughly the text a reader sees (for estimating its length)."""
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", lambda m: "x" * max(1, len(m.group(0)) // 3), markdown,
                  flags=re.S)
    return re.sub(r"[*_`]|\[([^\]]*)\]\([^)]*\)", r"\1", text)


def text_height(markdown, chars=TEXT_CHARS, line=TEXT_LINE):
    lines = sum(max(1, math.ceil(len(part) / chars)) for part in plain(markdown).split("\n\n"))
    return lines * line + 14


def first_sentence(text):
    """The text up to the end of its first sentence: never inside math or code, not after an
    abbreviation, and a bold run-in (`**The question.**`) takes the sentence after it along."""
    text = " ".join(text.split())
    quote = None
    for index, char in enumerate(text):
        if char in "$`" and (quote is None or quote == char):
            quote = None if quote == char else char
        if quote or char not in ".?!" or index + 1 >= len(text):
            continue
        end = index + 1
        while end < len(text) and text[end] in "*_)":
            end += 1
        if end >= len(text) or text[end] != " ":
            continue
        word = text[:index + 1].rsplit(" ", 1)[-1].lstrip("(*_")
        if word in ABBREVIATIONS or re.fullmatch(r"[A-Z]\.|\d+\.", word):
            continue
        sentence = text[:end]
        if sentence.startswith("**") and sentence.endswith("**") and sentence.count("**") == 2:
            continue  # a run-in heading alone is not a lead
        return sentence
    return text


def blocks(source):
    """The top-level blocks of a markdown cell: [(token type, source lines)]."""
    lines = source.splitlines()
    found = []
    for token in md.parse(source):
        if token.level == 0 and token.map and not token.type.endswith("_close"):
            found.append((token.type, "\n".join(lines[token.map[0]:token.map[1]])))
    return found


def list_items(source):
    """The items of a list: [(number or None, item source)]."""
    items, numbered = [], re.match(r"\s*(\d+)[.)]\s", source)
    start = int(numbered.group(1)) if numbered else None
    for part in re.split(r"\n(?=\s{0,3}(?:[-*+]|\d+[.)])\s)", source):
        items.append(re.sub(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+", "", part).strip())
    return start, items


def chunks(cell):
    """A markdown cell cut at its headings: [(level or None, title, body)]."""
    parts, level, title, body = [], None, "", []
    fenced = False
    for line in cell.source.splitlines():
        if booksite.FENCE.match(line):
            fenced = not fenced
        match = not fenced and booksite.HEADING.match(line)
        if match:
            if body or title:
                parts.append((level, title, "\n".join(body).strip()))
            level, title, body = len(match.group(1)), match.group(2), []
        else:
            body.append(line)
    parts.append((level, title, "\n".join(body).strip()))
    return [part for part in parts if part[1] or part[2]]


def display_lines(source):
    """A displayed equation cut at each top-level `\\qquad` (the book's separator between two
    formulas on one line): a slide is narrower than a page, so each goes on a line of its own."""
    tex = source.strip().removeprefix("$$").removesuffix("$$").strip()
    parts, depth, environments, start = [], 0, 0, 0
    for match in re.finditer(r"\\qquad|\\begin|\\end|[{}]", tex):
        token = match.group(0)
        depth += {"{": 1, "}": -1}.get(token, 0)
        environments += {"\\begin": 1, "\\end": -1}.get(token, 0)
        if token == "\\qquad" and depth == 0 and environments == 0:
            parts.append(tex[start:match.start()])
            start = match.end()
    parts.append(tex[start:])
    return [part.strip() for part in parts if part.strip(" ,")]


def prose_pieces(body):
    """What a slide shows of a markdown body, and whether that is all of it."""
    words = len(plain(body).split())
    found = blocks(body)
    if words <= LEAD_WORDS and [kind for kind, _ in found] == ["paragraph_open"]:
        return [Piece(md.render(body), text_height(body))], True
    pieces = []
    for number, (kind, source) in enumerate(found):
        if kind == "paragraph_open" and (number == 0 or source.lstrip().startswith("**")):
            lead = first_sentence(source)
            pieces.append(Piece(f'<p class="lead">{md.renderInline(lead)}</p>', text_height(lead)))
        elif kind in ("math_block", "math_block_label", "amsmath"):
            for tex in display_lines(source):
                tall = tex.count("\\\\") + 2 * tex.count("\\begin") + tex.count("\\frac")
                pieces.append(Piece(f'<div class="math">\\[{html.escape(tex)}\\]</div>', 70 + 30 * tall))
        elif kind in ("bullet_list_open", "ordered_list_open"):
            start, items = list_items(source)
            for offset, item in enumerate(items):
                short = first_sentence(item)
                tag = "ol" if start is not None else "ul"
                number_attr = f' value="{start + offset}"' if start is not None else ""
                pieces.append(Piece(f"<li{number_attr}>{md.renderInline(short)}</li>",
                                    text_height(short, chars=TEXT_CHARS - 6) - 6,
                                    group=(f"<{tag}>", f"</{tag}>")))
        elif kind == "table_open":
            table = md.render(source)
            head = re.search(r"<thead>.*?</thead>", table, flags=re.S).group(0)
            for row in re.findall(r"<tr>.*?</tr>", table.split("<tbody>", 1)[-1], flags=re.S):
                cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
                length = sum(len(plain(re.sub(r"<[^>]+>", "", c))) + 4 for c in cells)
                pieces.append(Piece(row, 18 + TEXT_LINE * max(1, math.ceil(length / TEXT_CHARS)),
                                    group=(f'<table class="slide-table">{head}<tbody>', "</tbody></table>")))
            rows = [piece for piece in pieces if piece.group and piece.group[0].startswith("<table")]
            if rows:
                rows[0].height += 50  # the header row
    return pieces, False


# ---------------------------------------------------------------------------- code and outputs
def code_html(source):
    return highlight(source, PythonLexer(), HtmlFormatter(cssclass="highlight code"))


def code_height(source):
    return 24 + CODE_LINE * sum(max(1, math.ceil(len(line) / CODE_CHARS)) for line in source.splitlines())


def only_imports(source):
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return bool(tree.body) and all(isinstance(node, (ast.Import, ast.ImportFrom)) for node in tree.body)


def split_code(source, most=MAX_CODE_LINES):
    """The code cut between top-level statements into parts of at most `most` lines (comment lines
    go with the statement below them); None when one statement alone is longer."""
    lines = source.rstrip().splitlines()
    if len(lines) <= most:
        return [source.rstrip()]
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    starts = [min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
              for node in tree.body]
    for position, start in enumerate(starts):  # comments and blank lines just above join the statement
        while start > (starts[position - 1] if position else 0) and (
                not lines[start - 1].strip() or lines[start - 1].lstrip().startswith("#")):
            start -= 1
        starts[position] = start
    starts[0] = 0
    parts, begin = [], 0
    for index, start in enumerate(starts[1:] + [len(lines)], 1):
        if start - begin > most:
            end = starts[index - 1]
            if end <= begin:
                return None
            parts.append((begin, end))
            begin = end
    parts.append((begin, len(lines)))
    if any(end - begin > most for begin, end in parts):
        return None
    return ["\n".join(lines[begin:end]).strip("\n") for begin, end in parts]


def image_size(data, metadata):
    """The CSS size a notebook shows the picture at (its metadata, else its pixels)."""
    size = metadata.get("image/png", {}) if isinstance(metadata, dict) else {}
    if "width" in size and "height" in size:
        return int(size["width"]), int(size["height"])
    return Image.open(io.BytesIO(data)).size


class Deck:
    """The slides of one section, built cell by cell."""

    def __init__(self, section, nb):
        self.section, self.nb = section, nb
        self.slides, self.title, self.figures = [], "", 0
        self.explorer = (build.STATIC / "explorers" / section / "manifest.json").exists()
        self.pending_notes = []

    # -- slides
    @property
    def current(self):
        return self.slides[-1] if self.slides else None

    def new_slide(self, title=None, vertical=False, kind="content"):
        self.slides.append(Slide(self.title if title is None else title, vertical=vertical, kind=kind))
        self.slides[-1].notes += self.pending_notes
        self.pending_notes = []
        return self.slides[-1]

    def add(self, piece, force=False):
        """Put a piece on the current slide, or on a new one (the section's title, continued)
        when it would not fit there."""
        slide = self.current
        if piece.kind == "figure":
            full = slide is None or slide.has("figure") or slide.has("explorer") or (
                slide.used() + FIGURE_MIN > BUDGET)
        else:
            full = slide is None or slide.has("figure") or slide.has("explorer") or (
                slide.used() + piece.height > BUDGET and slide.pieces)
        if full and not force:
            slide = self.new_slide(f"{self.title} (continued)" if self.title else "")
        slide.pieces.append(piece)

    def note(self, html_text):
        (self.current.notes if self.current else self.pending_notes).append(html_text)

    # -- cells
    def markdown(self, cell, kind, before_code):
        for level, title, body in chunks(cell):
            if level == 1:
                self.title = title
                slide = self.new_slide(title, kind="title")
                for _, source in [b for b in blocks(body) if b[0] == "paragraph_open"][:1]:
                    question = source if len(plain(source).split()) <= 60 else first_sentence(source)
                    slide.pieces.append(Piece(f'<p class="lead">{md.renderInline(question)}</p>', 0))
                slide.notes.append(md.render(body))
                continue
            if level is not None:
                if level <= 3 or kind in ("slide", "subslide"):
                    self.title = title
                    self.new_slide(title, vertical=kind == "subslide")
                else:
                    self.add(Piece(f"<h3>{md.renderInline(title)}</h3>", TITLE_LINE))
            elif kind in ("slide", "subslide"):
                self.new_slide(vertical=kind == "subslide")
            if not body:
                continue
            if kind == "notes":
                self.note(md.render(body))
                continue
            pieces, whole = prose_pieces(body)
            if self.current and (self.current.has("figure") or self.current.has("explorer")) and not (
                    before_code or any("\\[" in p.html for p in pieces)):
                self.note(md.render(body))  # prose about the figure above: said, not shown
                continue
            if not pieces:
                self.note(md.render(body))
            for number, piece in enumerate(pieces):
                piece.fragment = kind == "fragment"
                self.add(piece)
                if number == 0 and not whole:
                    self.note(md.render(body))
            self.last_lead = pieces[0] if whole and len(pieces) == 1 else None

    def figure(self, data, metadata, cell, kind):
        self.figures += 1
        folder = OUT / self.section
        folder.mkdir(parents=True, exist_ok=True)
        name = f"figure-{self.figures}.png"
        (folder / name).write_bytes(data)
        width, height = image_size(data, metadata)
        alt = (cell.metadata.get("mystnb", {}).get("image", {}).get("alt")
               or metadata.get("image/png", {}).get("alt") or self.fallback_alt())
        # A figure starts a slide (unless its cell says `-`), and a lead-in just before it ("In
        # pictures: ...") comes along; a slide that holds only its title and that lead-in is kept.
        slide, lead = self.current, None
        alone = slide is not None and all(p is self.last_lead for p in slide.pieces)
        if kind != "-" and slide is not None and not alone:
            if self.last_lead is not None and slide.pieces[-1] is self.last_lead:
                lead = slide.pieces.pop()
            self.new_slide(self.title)
            if lead is not None:
                self.current.pieces.append(lead)
        # A figure's text is 9 pt at 100 dpi in the notebook (12.5 px): shown FIGURE_SCALE times larger
        # it reaches 18 px. When the prose above it keeps it smaller, the prose goes to the notes.
        slide = self.current
        if slide is not None and slide.pieces and all(p.kind == "text" for p in slide.pieces):
            room = SLIDE_HEIGHT - TITLE_LINE
            scale = min(WIDTH / width, (room - sum(p.height for p in slide.pieces)) / height)
            if scale < FIGURE_SCALE and min(WIDTH / width, room / height) > scale:
                slide.notes[:0] = [p.html for p in slide.pieces]
                slide.pieces.clear()
        piece = Piece(f'<figure class="slide-figure" style="max-width: {round(width * 1.8)}px; '
                      f'max-height: {round(height * 1.8)}px"><img src="{self.section}/{name}" '
                      f'alt="{html.escape(alt)}" width="{width}" height="{height}" '
                      f'data-css-width="{width}"></figure>', FIGURE_MIN, kind="figure")
        self.add(piece)
        self.last_lead = None

    def fallback_alt(self):
        """Until a figure has its alt text: the lead-in sentence before it, else the slide's title."""
        slide = self.current
        texts = [re.sub(r"<[^>]+>", "", p.html) for p in (slide.pieces if slide else []) if p.kind == "text"]
        return f"Figure: {html.unescape(texts[-1]).strip() if texts else self.title}"

    def explorer_slide(self):
        # prose just above it under the same title goes to the notes: the explorer needs the room
        previous = self.current
        notes = []
        if previous is not None and previous.title == self.title and all(
                p.kind == "text" and "highlight" not in p.html for p in previous.pieces):
            notes = [p.html for p in previous.pieces if "<" in p.html and not p.group] + previous.notes
            self.slides.remove(previous)
        slide = self.new_slide(self.title, kind="explorer")
        slide.notes[:0] = notes
        launch = conf.booksite_launch.get(self.section, "")
        folder = build.STATIC / "explorers" / self.section
        markup = booksite.explorer_markup(folder, f"explorers/{self.section}/", launch)
        slide.pieces.append(Piece(markup, BUDGET, kind="explorer"))

    def code(self, cell, kind):
        if kind == "skip":
            return
        hidden = cell.metadata.get("jupyter", {})
        source = cell.source.rstrip()
        if any(booksite.is_explorer(o) for o in cell.get("outputs", [])) and self.explorer:
            self.explorer_slide()
            return
        if kind == "notes" or (source and not hidden.get("source_hidden") and only_imports(source)):
            self.note(code_html(source))
            return
        if kind in ("slide", "subslide"):
            self.new_slide(vertical=kind == "subslide")
        outputs = [] if hidden.get("outputs_hidden") else cell.get("outputs", [])
        if source and not hidden.get("source_hidden"):
            parts = split_code(source)
            if parts is not None and len(parts) <= 2:
                for number, part in enumerate(parts):
                    if number:
                        self.new_slide(f"{self.title} (continued)")
                    self.add(Piece(code_html(part), code_height(part), fragment=kind == "fragment"))
            else:
                lines = len(source.splitlines())
                self.add(Piece(f'<p class="code-elsewhere">The output of {lines} lines of code '
                               '(the code is in the notebook and in the speaker notes):</p>', TEXT_LINE + 10))
                self.note(code_html(source))
        self.outputs(outputs, cell, not hidden.get("source_hidden"), kind)
        self.last_lead = None

    def outputs(self, outputs, cell, shown_code, kind):
        text, fragment = [], kind == "fragment"
        for output in outputs:
            if output.get("output_type") == "stream":
                if shown_code:
                    text.append(ANSI.sub("", output.get("text", "")))
                continue
            if output.get("output_type") == "error":
                text.append(f"{output.get('ename')}: {output.get('evalue')}")
                continue
            data = output.get("data", {})
            if output.get("metadata", {}).get("attnbook_figure_words") or 'class="jp-sr-only"' in str(
                    data.get("text/html", "")):
                continue  # the figure in words, for a screen reader: on a slide, the figure's alt text
            if "image/png" in data:
                self.flush(text, fragment)
                self.figure(base64.b64decode(data["image/png"]), output.get("metadata", {}), cell, kind)
            elif "text/html" in data and booksite.WIDGET_VIEW not in data:
                self.flush(text, fragment)
                rows = data["text/html"].count("<tr")
                self.add(Piece(f'<div class="output-html">{data["text/html"]}</div>', 40 + 38 * rows,
                               fragment=fragment))
            elif "text/plain" in data and booksite.WIDGET_VIEW not in data and shown_code:
                text.append(ANSI.sub("", data["text/plain"]))
        self.flush(text, fragment)

    def flush(self, text, fragment):
        if text:
            joined = "\n".join(t.rstrip("\n") for t in text)
            self.add(Piece(f'<pre class="output">{html.escape(joined)}</pre>', code_height(joined),
                           fragment=fragment))
            text.clear()

    def build(self):
        self.last_lead = None
        cells = [cell for cell in main_line(self.nb) if slide_type(cell) != "skip"]
        for index, cell in enumerate(cells):
            kind = slide_type(cell)
            if cell.cell_type == "markdown":
                after = cells[index + 1] if index + 1 < len(cells) else None
                before_code = after is not None and after.cell_type == "code" and not after.metadata.get(
                    "jupyter", {}).get("source_hidden") and not any(
                    booksite.is_explorer(o) for o in after.get("outputs", []))
                self.markdown(cell, kind, before_code)
            elif cell.cell_type == "code":
                self.code(cell, kind)
        if not any(slide.kind == "explorer" for slide in self.slides) and self.explorer:
            raise RuntimeError(f"{self.section}: an explorer was rendered but no main-line cell shows it")
        self.fold_lonely_prose()
        self.links()
        return self.slides

    def fold_lonely_prose(self):
        """A continuation slide that would show only a sentence or two of prose: its text goes to
        the speaker notes of the slide before it."""
        for slide in list(self.slides[1:]):
            if slide.title.endswith("(continued)") and slide.pieces and all(
                    p.kind == "text" and not p.group and "\\[" not in p.html and "<pre" not in p.html
                    and "highlight" not in p.html for p in slide.pieces):
                previous = self.slides[self.slides.index(slide) - 1]
                previous.notes += [p.html for p in slide.pieces] + slide.notes
                self.slides.remove(slide)

    def links(self):
        """The title slide's links: the live notebook, and the section's page on the website."""
        live = conf.booksite_launch.get(self.section)
        page = f"../html/notebooks/{self.section}.html"
        items = [f'<a href="{html.escape(live)}">Live notebook</a> (JupyterLab on Binder)'] if live else []
        items.append(f'<a href="{page}">The section on the website</a>')
        self.slides[0].pieces.append(Piece('<p class="deck-links">' + " · ".join(items) + "</p>", 0))
        self.slides[0].pieces.append(Piece(
            '<p class="deck-keys">→ next · S speaker notes · F full screen · Esc overview</p>', 0))


# ---------------------------------------------------------------------------- the HTML
def slide_html(slide):
    parts, group = [], ()
    for piece in slide.pieces:
        if piece.group != group:
            if group:
                parts.append(group[1])
            if piece.group:
                parts.append(piece.group[0])
            group = piece.group
        body = piece.html
        if piece.fragment:
            body = f'<div class="fragment">{body}</div>' if not piece.group else body.replace(
                "<li", '<li class="fragment"', 1)
        parts.append(body)
    if group:
        parts.append(group[1])
    heading = "h1" if slide.kind == "title" else "h2"
    title = f"<{heading}>{md.renderInline(slide.title)}</{heading}>" if slide.title else ""
    notes = f'<aside class="notes">{"".join(slide.notes)}</aside>' if slide.notes else ""
    return f'<section class="slide-{slide.kind}">{title}{"".join(parts)}{notes}</section>'


def deck_html(section, slides):
    sections, stack = [], []
    for slide in slides:
        if slide.vertical and stack:
            stack.append(slide_html(slide))
            continue
        if len(stack) > 1:
            sections.append("<section>" + "".join(stack) + "</section>")
        elif stack:
            sections.append(stack[0])
        stack = [slide_html(slide)]
    sections.append("<section>" + "".join(stack) + "</section>" if len(stack) > 1 else stack[0])
    title = html.escape(re.sub(r"[*_`$]", "", slides[0].title))
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} (slides)</title>
<link rel="stylesheet" href="lib/reveal/reveal.css">
<link rel="stylesheet" href="lib/reveal/theme/white.css">
<link rel="stylesheet" href="lib/code.css">
<link rel="stylesheet" href="lib/slides.css">
<script>
window.MathJax = {{
  tex: {{inlineMath: [['\\\\(', '\\\\)']], displayMath: [['\\\\[', '\\\\]']]}},
  svg: {{fontCache: 'local'}}  // each formula whole: the speaker view copies the notes into its own window
}};
</script>
<script defer src="lib/mathjax/tex-svg-full.js"></script>
</head>
<body>
<div class="reveal"><div class="slides">
{chr(10).join(sections)}
</div></div>
<script src="lib/reveal/reveal.js"></script>
<script src="lib/reveal/plugin/notes.js"></script>
<script defer src="lib/explorer.js"></script>
<script>
Reveal.initialize({{
  width: 1280, height: 720, margin: 0, center: false, display: 'flex',
  hash: true, slideNumber: 'c/t', transition: 'none', backgroundTransition: 'none',
  plugins: [RevealNotes]
}});
</script>
</body>
</html>
"""


def copy_lib():
    """reveal.js, MathJax, the explorer script and the styles, into _build/slides/lib/."""
    for part in REVEAL_PARTS:
        target = LIB / "reveal" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REVEAL / part, target)
    build.mathjax(LIB / "mathjax")
    shutil.copy2(SITE / "_static" / "explorer.js", LIB / "explorer.js")
    shutil.copy2(SITE / "slides.css", LIB / "slides.css")
    (LIB / "code.css").write_text(HtmlFormatter(style=CODE_STYLE).get_style_defs(".reveal .highlight"))


def build_deck(notebook):
    section = notebook.stem
    shutil.rmtree(OUT / section, ignore_errors=True)
    explorers = build.STATIC / "explorers" / section
    if explorers.is_dir():
        shutil.copytree(explorers, OUT / "explorers" / section, dirs_exist_ok=True)
    slides = Deck(section, nbformat.read(notebook, as_version=4)).build()
    (OUT / f"{section}.html").write_text(deck_html(section, slides))
    return slides


def main(sections=()):
    start = time.perf_counter()
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if sections:
        notebooks = [path for path in notebooks if path.stem in sections]
    with build.locked():
        if not REVEAL.is_dir():  # make slides installs it first; a test run alone does it here
            build.npm_ci()
        build.explorers.render_all(build.STATIC / "explorers", notebooks)
        rendered = time.perf_counter()
        shutil.rmtree(OUT / "explorers", ignore_errors=True)
        copy_lib()
        for notebook in notebooks:
            slides = build_deck(notebook)
            print(f"slides: _build/slides/{notebook.stem}.html, {len(slides)} slides")
    done = time.perf_counter()
    print(f"slides: built in {done - start:.1f} s (explorer pictures {rendered - start:.1f} s, "
          f"decks {done - rendered:.1f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
