"""Every figure of the book says what it shows: its own alt text, written in the chapter (issue 26).

A figure is found, not listed: every code cell with an image output (matplotlib, a widget's stored
picture) and every image in a markdown cell (`![alt](src)`, `<img>`, MyST's `{image}` and `{figure}`).
A code cell's alt text is its metadata `mystnb: image: alt:`, which myst-nb puts on the website's
<img> (and so into the PDF, printed tagged); the student edition keeps the cell metadata. Each must be
there, read as words (at least MIN_WORDS, not a file name or a hash), and be unlike every other figure's
in the same section. The notebooks must carry the chapters' alt texts (`make notebooks` after a change).
"""
import json
import pathlib
import re
import sys

import jupytext
import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORDS_KEY = "attnbook_figure_words"  # attnbook.figures.WORDS_KEY: a figure's words for JupyterLab
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MIN_WORDS = 8
# a file or path (../_images/bc5b93f8.png, img/x.svg), or a bare hash: what a page shows when it has no alt
FILE_NAME = re.compile(r"\.(png|jpe?g|gif|svg|webp|pdf)\b|^\S*/\S*$|^[0-9a-f]{12,}$", re.IGNORECASE)
MARKDOWN_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)[^)]*\)")
HTML_IMAGE = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
HTML_ALT = re.compile(r"""\balt\s*=\s*("([^"]*)"|'([^']*)')""", re.IGNORECASE)
DIRECTIVE = re.compile(r"^(`{3,}|:{3,})\{(image|figure)\}\s*(?P<src>\S+)\n(?P<body>.*?)^\1",
                       re.MULTILINE | re.DOTALL)
DIRECTIVE_ALT = re.compile(r"^:alt:\s*(.+)$", re.MULTILINE)


def cell_alt(cell):
    image = cell.metadata.get("mystnb", {}).get("image", {})
    return image.get("alt") if isinstance(image, dict) else None


def figures(nb):
    """[(where, alt or None)] for every figure in a notebook, in order."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            images = [o for o in cell.get("outputs", [])
                      if any(mime.startswith("image/") for mime in o.get("data", {}))]
            if images:
                found.append((f"cell {index} (code, {len(images)} image output(s))", cell_alt(cell)))
        elif cell.cell_type == "markdown":
            for match in MARKDOWN_IMAGE.finditer(cell.source):
                found.append((f"cell {index} (markdown image {match['src']})", match["alt"] or None))
            for tag in HTML_IMAGE.findall(cell.source):
                alt = HTML_ALT.search(tag)
                found.append((f"cell {index} (<img>)", alt and (alt.group(2) or alt.group(3)) or None))
            for match in DIRECTIVE.finditer(cell.source):
                alt = DIRECTIVE_ALT.search(match["body"])
                alt = alt and alt.group(1).strip() or None
                found.append((f"cell {index} ({{image}} {match['src']})", alt))
    return found


def problems(nb):
    """What is wrong with the notebook's alt texts, one line each (empty: nothing)."""
    found, seen = [], {}
    for where, alt in figures(nb):
        if not alt or not str(alt).strip():
            found.append(f"{where}: no alt text")
            continue
        alt = " ".join(str(alt).split())
        if FILE_NAME.search(alt):
            found.append(f"{where}: a file name, not words: {alt!r}")
        elif len(alt.split()) < MIN_WORDS:
            found.append(f"{where}: {len(alt.split())} words, fewer than {MIN_WORDS}: {alt!r}")
        key = alt.casefold()
        if key in seen:
            found.append(f"{where}: the same alt text as {seen[key]}")
        seen.setdefault(key, where)
    return found


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_has_its_own_alt_text(notebook):
    nb = nbformat.read(notebook, as_version=4)
    assert figures(nb), f"{notebook.name}: no figure found (the search for figures is broken)"
    assert problems(nb) == []


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_carries_the_chapters_alt_texts(notebook):
    """The alt text is written in the chapter; the notebook (what the site, the PDF and the student
    edition are made from) must have been regenerated since."""
    chapter = jupytext.read(ROOT / "chapters" / f"{notebook.stem}.md")
    nb = nbformat.read(notebook, as_version=4)
    assert [cell_alt(c) for c in nb.cells] == [cell_alt(c) for c in chapter.cells], (
        f"{notebook.name} does not carry its chapter's alt texts: run `make {notebook.relative_to(ROOT)}`")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_jupyterlab_reads_each_figures_words_after_it(notebook):
    """JupyterLab shows no alt text on an image output: the executed notebook carries, right after each
    matplotlib figure, its words for screen readers (attnbook.figures.show_with_words), the same as
    the image's `alt` metadata: the chapter's alt text for the cell, which the kernel found by the cell's
    code (and nbval's rerun finds again). An explorer's stored picture has its describing function's words."""
    for index, cell in enumerate(nbformat.read(notebook, as_version=4).cells):
        outputs = cell.get("outputs", [])
        for position, output in enumerate(outputs):
            if "image/png" not in output.get("data", {}):
                continue
            alt = output.get("metadata", {}).get("image/png", {}).get("alt")
            assert alt and len(alt.split()) >= MIN_WORDS, f"cell {index}: no words on its image"
            if output["data"].get("text/plain", "").startswith("LiveFigure("):
                continue
            after = outputs[position + 1] if position + 1 < len(outputs) else {}
            assert after.get("metadata", {}).get(WORDS_KEY), f"cell {index}: no words after its figure"
            assert after["data"]["text/plain"] == alt == " ".join(cell_alt(cell).split()), (
                f"cell {index}: its figure's words are not the chapter's alt text: run `make notebooks`")
            assert 'class="jp-sr-only"' in after["data"]["text/html"]


def student_drops():
    """The cell tags `make student` drops, as the Makefile lists them (answers, and book-only lines)."""
    return re.search(r"^STUDENT_DROPS = (.+)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()


def test_the_student_edition_keeps_the_alt_texts():
    """`make student`'s conversion (nbconvert, answers removed), in process: every figure keeps its alt."""
    from nbconvert import NotebookExporter
    from traitlets.config import Config

    drops = student_drops()
    config = Config()
    config.TagRemovePreprocessor.enabled = True
    config.TagRemovePreprocessor.remove_cell_tags = drops
    for notebook in NOTEBOOKS:
        book = nbformat.read(notebook, as_version=4)
        body, _ = NotebookExporter(config=config).from_notebook_node(book)
        student = nbformat.reads(body, as_version=4)
        kept = [cell_alt(c) for c in book.cells if not set(drops) & set(c.metadata.get("tags", []))]
        assert [cell_alt(c) for c in student.cells] == kept, notebook.name
        assert problems(student) == [], notebook.name


def test_a_page_keeps_the_alt_and_drops_the_words_for_jupyterlab():
    """What the website's extension hands myst-nb: each figure cell with its alt text (myst-nb's <img alt>),
    and none of the figure words meant for JupyterLab's screen readers (a page would show them)."""
    sys.path.insert(0, str(ROOT / "site" / "_ext"))
    import booksite

    for notebook in NOTEBOOKS:
        text = notebook.read_text()
        book = nbformat.reads(text, as_version=4)
        outputs = [o for c in book.cells for o in c.get("outputs", [])]
        assert any(booksite.is_figure_words(o) for o in outputs), notebook.name
        page = nbformat.reads(booksite.prepare(text, notebook.stem, has_pictures=True)[0], as_version=4)
        assert [cell_alt(c) for c in page.cells] == [cell_alt(c) for c in book.cells]
        assert not any(booksite.is_figure_words(o) for c in page.cells for o in c.get("outputs", []))


def test_an_explorer_picture_has_the_describing_functions_words(tmp_path):
    """The website's explorer: the <img> alt is the manifest's words for the values shown, and every
    picture's words go to the page's script, which puts them on the <img> when a slider moves."""
    sys.path.insert(0, str(ROOT / "site" / "_ext"))
    import booksite

    words = {f"{d},{n}": f"Heatmap of the attention weights, d = {d}, n = {n}, 4 heads"
             for d in (8, 16) for n in (4, 8)}
    manifest = {"d": [8, 16], "n": [4, 8], "default": {"d": 16, "n": 8}, "labels": {"d": "d", "n": "n"},
                "others": {}, "chosen_option": None, "width": 700, "height": 300,
                "pictures": {key: {"src": f"{i}.webp", "readout": "", "error": None, "alt": alt}
                             for i, (key, alt) in enumerate(words.items())}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    markup = booksite.explorer_markup(tmp_path, "_static/explorers/x/")
    assert f'alt="{words["16,8"]}"' in markup
    data = json.loads(re.search(r'<script type="application/json" class="explorer-data">(.*?)</script>',
                                markup).group(1))
    assert {key: p["alt"] for key, p in data["pictures"].items()} == words
    assert "img.alt = picture.alt" in (ROOT / "site" / "_static" / "explorer.js").read_text()


def test_the_check_catches_each_fault():
    """A made-up section with every fault the check must name, and one figure that is fine."""
    png = {"output_type": "display_data", "metadata": {},
           "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}}

    def figure_cell(alt=None):
        cell = nbformat.v4.new_code_cell("plot()")
        cell.outputs = [nbformat.from_dict(png)]
        if alt is not None:
            cell.metadata["mystnb"] = {"image": {"alt": alt}}
        return cell

    good = "Line plot of the score against the offset for d = 64: it peaks at offset 0"
    nb = nbformat.v4.new_notebook(cells=[
        figure_cell(good),
        figure_cell(),
        figure_cell("../_images/bc5b93f8a1c2.png"),
        figure_cell("bc5b93f8a1c2d4e5"),
        figure_cell("A heatmap of the weights"),
        figure_cell(good.upper()),
        nbformat.v4.new_code_cell("print(1)"),  # no image: not a figure
        nbformat.v4.new_markdown_cell("![](img/cnn.svg) and ![Three graphs over five tokens, the edges that "
                                      "carry x0 in red](img/cnn.svg)"),
        nbformat.v4.new_markdown_cell('<img src="a.png" alt="a.png"> <img src="b.png">'),
        nbformat.v4.new_markdown_cell("```{figure} img/x.svg\n:width: 80%\n\nA caption\n```\n"
                                      "```{image} img/y.svg\n:alt: Two circles, the query and the key "
                                      "turned by the same angle\n```"),
    ])
    found = problems(nb)
    expected = ["cell 1 (code, 1 image output(s)): no alt text",
                "cell 2 (code, 1 image output(s)): a file name, not words",
                "cell 3 (code, 1 image output(s)): a file name, not words",
                "cell 4 (code, 1 image output(s)): 5 words, fewer than 8",
                "cell 5 (code, 1 image output(s)): the same alt text as cell 0",
                "cell 7 (markdown image img/cnn.svg): no alt text",
                "cell 8 (<img>): a file name, not words",
                "cell 8 (<img>): no alt text",
                "cell 9 ({image} img/x.svg): no alt text"]
    assert len(found) == len(expected), found
    for line, start in zip(found, expected, strict=True):
        assert line.startswith(start), (line, start)
    assert len(figures(nb)) == 12


def alt_counts():
    """Figures with alt text per section (what the report gives)."""
    return {path.stem: sum(alt is not None for _, alt in figures(nbformat.read(path, as_version=4)))
            for path in NOTEBOOKS}


if __name__ == "__main__":
    for section, count in alt_counts().items():
        print(f"{section}: {count} figures with alt text")
