"""What the book's website does with the committed notebooks, as a small Sphinx extension.

* source-read (the notebook's JSON, before myst-nb parses it; the file on disk is untouched, so the
  page's .ipynb download is the committed notebook):
  - folds: `jupyter.source_hidden` -> myst-nb's `hide-input`, `jupyter.outputs_hidden` ->
    `hide-output`, a worked answer (tag `answer`) -> `hide-cell` (input and output folded);
  - widgets: no live widget works on a page without a kernel, so no widget state and no widget view
    is kept (myst-nb would otherwise load require.js and the ipywidgets embedder from a CDN); an
    output that is nothing but a widget is dropped, one that carries a picture keeps the picture;
  - a figure's words for JupyterLab's screen readers (attnbook.figures.show_with_words) are dropped:
    the page's <img> has the chapter's own alt text (cell metadata `mystnb: image: alt:`);
  - the explorer (the output that shows an attnbook.LiveFigure) becomes a placeholder that is
    filled, when the page is written, with the pictures precomputed by site/explorers.py.
* doctree-read: a deeper part (a heading cell tagged `deeper` and what follows up to the next heading
  of the same or a higher level: the heading's section) is marked; when the page is written it
  becomes one <details> whose <summary> is the heading (folded, as in JupyterLab).
* doctree-resolved: a section's page links its deck (`make slides`, site/slides.py), which lies at
  `booksite_slides`/<section>.html relative to the site's root (_build/slides beside _build/html).
* a fold's summary (myst-nb's hide-input/-output/-cell) is named by its visible words ("Show code
  cell source"), not by myst-nb's aria-label "Toggle hidden content" that a screen reader would say
  instead (WCAG 2.5.3, label in name); site/_templates does the same for the theme's search button.
* html-page-context: the student edition (_build/student/<section>.ipynb, `make student`) joins the
  page's download menu when it exists.
"""
import html
import json
import pathlib
import posixpath
import re
import shutil

import nbformat
from docutils import nodes
from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput
from sphinx.util import logging

logger = logging.getLogger(__name__)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FIGURE_WORDS = "attnbook_figure_words"  # attnbook.figures.WORDS_KEY: the output a page drops
EXPLORER_CLASS = "attnbook-explorer"
DEEPER_CLASS = "deeper-part"
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def headings(source):
    """The ATX headings of a markdown cell, outside code fences: [(level, text)]."""
    found, fenced = [], False
    for line in source.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            found.append((len(match.group(1)), match.group(2)))
    return found


def add_tag(cell, tag):
    tags = cell.metadata.setdefault("tags", [])
    if tag not in tags:
        tags.append(tag)


def is_explorer(output):
    return output.get("data", {}).get("text/plain", "").startswith("LiveFigure(")


def is_figure_words(output):
    """The words of a figure for JupyterLab's screen readers: a page and a deck have its alt text instead."""
    return bool(output.get("metadata", {}).get(FIGURE_WORDS))


def prepare(text, section, has_pictures):
    """The notebook as the site shows it (see the module's docstring); and its headings, each
    with whether it opens a deeper part."""
    nb = nbformat.reads(text, as_version=4)
    nb.metadata.pop("widgets", None)
    found = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "markdown":
            for number, (level, title) in enumerate(headings(cell.source)):
                found.append((level, title, number == 0 and "deeper" in tags))
            continue
        if cell.cell_type != "code":
            continue
        jupyter = cell.metadata.get("jupyter", {})
        if "answer" in tags:
            add_tag(cell, "hide-cell")
            cell.metadata["mystnb"] = {**cell.metadata.get("mystnb", {}),
                                       "code_prompt_show": "Show the worked answer",
                                       "code_prompt_hide": "Hide the worked answer"}
        else:
            if jupyter.get("source_hidden"):
                add_tag(cell, "hide-input")
            if jupyter.get("outputs_hidden"):
                add_tag(cell, "hide-output")
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data")
            if is_figure_words(output):
                continue
            if data is not None and is_explorer(output) and has_pictures:
                outputs.append(nbformat.v4.new_output(
                    "display_data", data={"text/html": f'<div class="{EXPLORER_CLASS}" '
                                                       f'data-section="{html.escape(section)}"></div>'}))
                continue
            if data is not None and WIDGET_VIEW in data:
                data.pop(WIDGET_VIEW)
                if set(data) <= {"text/plain"}:  # a widget and nothing to show without a kernel
                    continue
            outputs.append(output)
        cell.outputs = outputs
    return nbformat.writes(nb), found


def on_source_read(app, docname, source):
    path = pathlib.Path(app.env.doc2path(docname))
    if path.suffix != ".ipynb":
        return
    section = path.stem
    manifest = explorer_dir(app) / section / "manifest.json"
    source[0], found = prepare(source[0], section, manifest.exists())
    app.env.temp_data["booksite_headings"] = found  # read by on_doctree_read for this document


def on_doctree_read(app, doctree):
    docname = app.env.docname
    found = app.env.temp_data.get("booksite_headings")
    if found is None:
        return
    sections = [node for node in doctree.findall(nodes.section)]
    if len(sections) != len(found):
        logger.warning(f"{docname}: {len(found)} headings in the notebook's markdown cells but "
                       f"{len(sections)} sections on the page; deeper parts not folded", location=docname)
        return
    for node, (_, _title, deeper) in zip(sections, found, strict=True):
        if deeper:
            node["classes"].append(DEEPER_CLASS)


def explorer_dir(app):
    return pathlib.Path(app.config.booksite_explorers)


def relative_static(app, docname):
    """The page's path to _static (pages in folders, and the one-page build, differ)."""
    page = app.builder.get_target_uri(docname)
    return posixpath.relpath("_static", posixpath.dirname(page) or ".")


def spoken(name):
    """A control's name as the page says it: first_column -> first column."""
    return name.replace("_", " ")


def explorer_html(app, docname, section):
    pictures = f"{relative_static(app, docname)}/explorers/{section}/"
    return explorer_markup(explorer_dir(app) / section, pictures, app.config.booksite_launch.get(section, ""))


def explorer_markup(folder, base, launch=""):
    """The precomputed explorer whose manifest.json is in `folder`, its pictures read from `base`
    (a URL folder), with a link to the live notebook at `launch`: the page's and the slides'."""
    manifest = json.loads((folder / "manifest.json").read_text())
    d, n = manifest["default"]["d"], manifest["default"]["n"]
    first = manifest["pictures"][f"{d},{n}"]
    others = ", ".join(f"{spoken(name)} = {value}" for name, value in manifest["others"].items())
    chosen = manifest.get("chosen_option")
    if chosen:
        others = f"{chosen[0]} {chosen[1]} (the first choice where d matters)" + (
            "; " + ", ".join(f"{spoken(k)} = {v}" for k, v in manifest["others"].items()
                             if k and v != chosen[1])
            if len(manifest["others"]) > 1 else "")
    sliders = []
    for name in ("d", "n"):
        values = manifest[name]
        label = manifest["labels"][name]
        shown = f"{html.escape(label)}" + ("" if label == name else f" ({name})")
        sliders.append(
            f'<label class="explorer-slider"><span class="explorer-label">{shown}</span>'
            f'<input type="range" name="{name}" min="0" max="{len(values) - 1}" step="1" '
            f'value="{values.index(manifest["default"][name])}" '
            f'aria-label="{name}: one of {len(values)} precomputed values">'
            f'<output>{manifest["default"][name]}</output></label>')
    lite = {key: manifest[key] for key in ("d", "n", "default")}
    lite["pictures"] = {key: {"src": p["src"], "readout": p["readout"], "error": p["error"], "alt": p["alt"]}
                        for key, p in manifest["pictures"].items()}
    data = json.dumps(lite, ensure_ascii=False).replace("</", "<\\/")
    link = (f' <a class="explorer-launch reference external" href="{html.escape(launch)}">Launch the live '
            f'notebook</a> for every value.') if launch else ""
    return (
        f'<div class="{EXPLORER_CLASS} explorer-ready" data-base="{html.escape(base)}">'
        f'<p class="explorer-note"><strong>Precomputed explorer.</strong> The sliders step through '
        f'{len(manifest["d"])} × {len(manifest["n"])} pictures drawn when this page was built'
        f'{f" (other controls: {html.escape(others)})" if others else ""}.{link}</p>'
        f'<div class="explorer-controls">{"".join(sliders)}</div>'
        f'<p class="explorer-values" aria-live="polite">d = {d}, n = {n} (precomputed)</p>'
        f'<p class="explorer-readout" aria-live="polite">{html.escape(first["readout"])}</p>'
        f'<img class="explorer-picture" src="{html.escape(base + first["src"])}" '
        f'width="{manifest["width"]}" height="{manifest["height"]}" '
        f'alt="{html.escape(first["alt"])}">'
        f'<script type="application/json" class="explorer-data">{data}</script></div>')


def link_slides(app, doctree, docname):
    """A line under a section page's title: the link to its deck."""
    page = app.builder.get_target_uri(docname)
    section = docname.rsplit("/", 1)[-1]
    href = posixpath.relpath(f"{app.config.booksite_slides}/{section}.html", posixpath.dirname(page) or ".")
    first = doctree.next_node(nodes.section)
    title = first.next_node(nodes.title)
    first.insert(first.index(title) + 1, nodes.raw("", (
        f'<p class="slides-link"><a href="{html.escape(href)}">Slides of this lecture</a> '
        '(its main line as a deck, with the explorer; S opens the speaker notes)</p>'), format="html"))


def on_doctree_resolved(app, doctree, docname):
    if app.builder.format != "html":
        return
    if app.builder.name == "html" and app.config.booksite_slides and docname.startswith("notebooks/"):
        link_slides(app, doctree, docname)
    for raw in list(doctree.findall(nodes.raw)):
        match = re.search(rf'class="{EXPLORER_CLASS}" data-section="([^"]+)"', raw.astext())
        if match:
            section = html.unescape(match.group(1))
            raw.replace_self(nodes.raw("", explorer_html(app, docname, section), format="html"))
    for section in list(doctree.findall(nodes.section)):
        if DEEPER_CLASS in section["classes"] and not section.get("booksite_folded"):
            section["booksite_folded"] = True
            title = section.next_node(nodes.title)
            index = section.index(title)
            section.insert(index, nodes.raw("", '<details class="deeper"><summary>', format="html"))
            section.insert(index + 2, nodes.raw("", "</summary>", format="html"))
            section.append(nodes.raw("", "</details>", format="html"))


def on_page_context(app, pagename, templatename, context, doctree):
    """Add the student edition to the page's download menu when `make student` wrote it."""
    section = pagename.rsplit("/", 1)[-1]
    student = pathlib.Path(app.config.booksite_student) / f"{section}.ipynb"
    if not pagename.startswith("notebooks/") or not student.exists():
        return
    target = pathlib.Path(app.outdir) / "student" / student.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(student, target)
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"].insert(1, {
                "type": "link", "url": f"{context['pathto']('student', 1)}/{student.name}",
                "text": "student .ipynb", "icon": "fas fa-user-graduate",
                "tooltip": "Download the student edition (no worked answers)",
                "label": "download-student-button"})


def visit_fold(self, node):
    """myst-nb's fold without its aria-label: the summary's name is the prompt it shows."""
    self.body.append(f'<details class="admonition hide {" ".join(node["classes"])}">\n<summary>\n')
    for state, prompt in (("collapsed", node["prompt_show"]), ("expanded", node["prompt_hide"])):
        self.body.append(f'<p class="{state} admonition-title">{html.escape(prompt)}</p>\n')
    self.body.append("</summary>\n")


def add_templates(app, config):
    config.templates_path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "_templates"))


def setup(app):
    app.add_node(HideCodeCellNode, override=True, html=(visit_fold, depart_HideCellInput))
    app.connect("config-inited", add_templates)
    app.add_config_value("booksite_explorers", "", "html")
    app.add_config_value("booksite_student", "", "html")
    app.add_config_value("booksite_launch", {}, "html")
    app.add_config_value("booksite_slides", "", "html")
    app.connect("source-read", on_source_read)
    app.connect("doctree-read", on_doctree_read)
    app.connect("doctree-resolved", on_doctree_resolved)
    app.connect("html-page-context", on_page_context, priority=600)
    app.add_js_file("explorer.js", loading_method="defer")
    app.add_css_file("booksite.css")
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
