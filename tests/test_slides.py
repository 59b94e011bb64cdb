"""The decks (`make slides`, site/slides.py) read in Debian's headless Chromium with no network.

The decks are built first when one is missing or older than what it is made from (the notebooks,
site/slides.py and slides.css, the explorer's script and pictures, attnbook/). Each deck is served
from localhost with every request to another host blocked and recorded, and walked slide by slide:

* at 1280 x 720, where reveal.js shows the 1280 x 720 slide at scale 1: nothing outside the slide and
  nothing that scrolls, no text under 18 px (a formula's first-level scripts included: its font at
  least 18 px * sqrt 2), every image loaded, every figure with alt text, no code box over 12 lines;
* at 150 % zoom: a browser zoomed to 150 % lays the page out in a 853 x 480 CSS-pixel window at 1.5
  device pixels per CSS pixel; reveal.js scales the slide to that window (scale 2/3), so the layout
  is the one at 1280 x 720 and every text is as many device pixels as at 100 %. Checked: the scale
  (0.67: reveal.js rounds it, so the slide's empty padding may pass the window by 2 px), and again
  that nothing leaves the slide or the window and no text is under 18 device pixels.

Then: every formula typeset (no TeX delimiters left in the text, MathJax containers present), no
console error, no request to another host; the explorer's d and n sliders change the picture, the
values line and the readout; axe-core (tests/axe.py) finds no WCAG 2.0/2.1 A or AA violation on any
slide. Screenshots of each deck's first slide and explorer slide (at 1280 x 720, and the explorer
at 150 %) go to test-artifacts/slides-*.png; `SLIDES_SHOTS=all` saves every slide. Figures cannot
be read for font sizes: their display scale (the smallest figure's picture text is 9 pt at 100 dpi
in the notebook, 12.5 px, times that scale) is printed as a `measured:` line.
"""
import os
import pathlib
import re
import sys

import pytest
from axe import axe_violations, describe
from localhost import serve
from measured import ARTIFACTS, record
from test_site import STEP
from website import Page

ROOT = pathlib.Path(__file__).resolve().parents[1]
DECKS = ROOT / "_build" / "slides"
SECTIONS = sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))
PROJECTOR = {"viewport": {"width": 1280, "height": 720}}
ZOOMED = {"viewport": {"width": 853, "height": 480}, "device_scale_factor": 1.5}
MIN_TEXT_PX, MAX_CODE_LINES = 18, 12
FIGURE_TEXT_PX = 12.5  # a figure's smallest text in the notebook: 9 pt at 100 dpi

# Every slide, shown in turn: what leaves it, what scrolls, what is too small.
WALK = """async ([minText, maxCode]) => {
    const frame = () => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)));
    const name = (el) => el.tagName.toLowerCase()
        + (typeof el.className === 'string' ? '.' + el.className.trim().replace(/\\s+/g, '.') : '')
        + ' "' + (el.textContent || '').trim().slice(0, 40) + '"';
    const slides = Reveal.getSlides().filter((s) => !s.querySelector('section'));
    const out = [];
    for (const slide of slides) {
        const {h, v = 0} = Reveal.getIndices(slide);
        Reveal.slide(h, v);
        await frame();
        await Promise.all([...slide.querySelectorAll('img')].map((img) => img.decode().catch(() => null)));
        const scale = Reveal.getScale(), slideBox = slide.getBoundingClientRect();
        const problems = [], small = [];
        // what shows: the slide, within the window (reveal.js may scale the slide's empty padding past it)
        const box = {left: Math.max(slideBox.left, 0), top: Math.max(slideBox.top, 0),
                     right: Math.min(slideBox.right, innerWidth),
                     bottom: Math.min(slideBox.bottom, innerHeight)};
        for (const el of slide.querySelectorAll('*')) {
            if (el.closest('aside.notes, mjx-assistive-mml, script') || el.parentElement.closest('svg'))
                continue;
            const r = el.getBoundingClientRect();
            if (r.width === 0 && r.height === 0) continue;
            if (r.left < box.left - 1 || r.right > box.right + 1
                || r.top < box.top - 1 || r.bottom > box.bottom + 1)
                problems.push(name(el) + ' leaves the slide or the window');
            const style = getComputedStyle(el);
            if ((style.overflowX !== 'visible' && el.scrollWidth > el.clientWidth + 1) ||
                (style.overflowY !== 'visible' && el.scrollHeight > el.clientHeight + 1))
                problems.push(name(el) + ' scrolls');
            const size = parseFloat(style.fontSize) * scale * devicePixelRatio;  // in the screen's pixels
            const text = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
            if (text && size < minText - 0.01) small.push(`${name(el)}: ${size.toFixed(1)} px`);
            if (el.tagName === 'MJX-CONTAINER' && size / Math.SQRT2 < minText - 0.01)
                small.push(`formula ${name(el)}: ${size.toFixed(1)} px, its scripts smaller`);
        }
        const images = [...slide.querySelectorAll('img')];
        const figures = images.filter((img) => img.dataset.cssWidth).map((img) => {
            const w = +img.dataset.cssWidth, hgt = w * img.naturalHeight / img.naturalWidth;
            return Math.min(img.clientWidth / w, img.clientHeight / hgt) * scale;  // object-fit: contain
        });
        const code = [...slide.querySelectorAll('.highlight pre')].filter((p) => !p.closest('aside.notes'))
            .map((pre) => pre.textContent.replace(/\\n$/, '').split('\\n').length);
        out.push({index: `${h}/${v}`, title: (slide.querySelector('h1, h2') || {}).textContent || '',
                  scale, problems, small, figures, code: Math.max(0, ...code),
                  words: (() => { const c = slide.cloneNode(true);
                      c.querySelectorAll('aside.notes, pre, script, mjx-container').forEach((e) =>
                          e.remove());
                      return c.textContent.split(/\\s+/).filter(Boolean).length; })(),
                  broken: images.filter((i) => !(i.complete && i.naturalWidth > 0)).map((i) => i.src),
                  noAlt: images.filter((i) => !(i.getAttribute('alt') || '').trim()).map((i) => i.src),
                  explorer: Boolean(slide.querySelector('.attnbook-explorer'))});
    }
    Reveal.slide(0, 0);
    return out;
}"""

TYPESET = """() => {
    const copy = document.querySelector('.reveal .slides').cloneNode(true);
    copy.querySelectorAll('pre, code, script, style, mjx-container').forEach((e) => e.remove());
    const raw = ['$$', '\\\\(', '\\\\[', '\\\\begin{'].filter((s) => copy.textContent.includes(s));
    return {raw, containers: document.querySelectorAll('mjx-container').length};
}"""


def stale():
    """Whether a deck is missing or older than anything it is made from."""
    decks = [DECKS / f"{section}.html" for section in SECTIONS]
    if not all(deck.exists() for deck in decks):
        return True
    built = min(deck.stat().st_mtime for deck in decks)
    sources = [*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "attnbook").glob("*.py"),
               *(ROOT / "site").glob("*.py"), *(ROOT / "site" / "_ext").glob("*.py"),
               ROOT / "site" / "slides.css", ROOT / "site" / "_static" / "explorer.js",
               ROOT / "pyproject.toml"]
    return any(path.stat().st_mtime > built for path in sources)


@pytest.fixture(scope="module")
def decks():
    """The decks served on a free localhost port: its base URL (`browser` is tests/conftest.py's)."""
    (ARTIFACTS / "slides.txt").unlink(missing_ok=True)  # the report holds this run's figures only
    if stale():
        sys.path.insert(0, str(ROOT / "site"))
        import slides

        slides.main()
    with serve(DECKS) as url:
        yield url


def open_deck(browser, decks, section, options):
    view = Page(browser, decks, section, **options)
    view.page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30_000)
    return view


def slide_at(view, index):
    h, v = index.split("/")
    view.page.evaluate(f"() => Reveal.slide({h}, {v})")
    view.page.evaluate("() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)))")


def walk(view, section):
    slides = view.page.evaluate(WALK, [MIN_TEXT_PX, MAX_CODE_LINES])
    if os.environ.get("SLIDES_SHOTS") == "all":
        for number, slide in enumerate(slides):
            slide_at(view, slide["index"])
            view.shot(f"slides-all-{section}-{number:02d}"
                      f"{'-150pct' if slide['scale'] < 1 else ''}.png")
    return slides


@pytest.mark.parametrize("section", SECTIONS)
def test_deck_fits_a_projector_offline_and_typeset(decks, browser, section):
    with open_deck(browser, decks, section, PROJECTOR) as view:
        slides = walk(view, section)
        assert len(slides) > 1, "a deck of one slide"
        faults = [f"slide {s['index']} ({s['title']}): {p}"
                  for s in slides for p in s["problems"] + s["small"]]
        faults += [f"slide {s['index']} ({s['title']}): {s['code']} lines of code" for s in slides
                   if s["code"] > MAX_CODE_LINES]
        faults += [f"slide {s['index']}: image not loaded {src}" for s in slides for src in s["broken"]]
        faults += [f"slide {s['index']}: image without alt text {src}" for s in slides for src in s["noAlt"]]
        assert not faults, "\n".join(faults[:30])
        assert all(s["scale"] == 1 for s in slides), "reveal.js shows the slide scaled at 1280 x 720"
        math = view.page.evaluate(TYPESET)
        assert math["raw"] == [] and math["containers"] > 0, math
        explorers = [s for s in slides if s["explorer"]]
        assert len(explorers) == 1, f"{len(explorers)} explorer slides"
        figures = [scale for s in slides for scale in s["figures"]]
        largest = max(slides, key=lambda s: (s["code"], s["words"]))
        record(f"measured: {section} deck: {len(slides)} slides; largest slide {largest['index']} "
               f"({largest['title']!r}): {largest['code']} lines of code, {largest['words']} words; "
               f"most words on a slide {max(s['words'] for s in slides)}; figures shown at "
               f"{min(figures):.2f}-{max(figures):.2f} x their notebook size (their 9 pt text: "
               f"{FIGURE_TEXT_PX * min(figures):.1f} px at the smallest)", "slides.txt")
        ARTIFACTS.mkdir(exist_ok=True)
        slide_at(view, slides[0]["index"])
        view.shot(f"slides-{section}-first.png")
        slide_at(view, explorers[0]["index"])
        view.shot(f"slides-{section}-explorer.png")
        assert view.errors == [], f"console errors: {view.errors}"
        assert view.foreign == [], f"requests to other hosts: {view.foreign}"


@pytest.mark.parametrize("section", SECTIONS)
def test_deck_fits_at_150_percent_zoom(decks, browser, section):
    with open_deck(browser, decks, section, ZOOMED) as view:
        slides = walk(view, section)
        faults = [f"slide {s['index']} ({s['title']}): {p}"
                  for s in slides for p in s["problems"] + s["small"]]
        assert not faults, "\n".join(faults[:30])
        assert all(abs(s["scale"] - 2 / 3) < 0.01 for s in slides), {s["scale"] for s in slides}
        slide_at(view, next(s for s in slides if s["explorer"])["index"])
        view.shot(f"slides-{section}-explorer-150pct.png")
        assert view.errors == [] and view.foreign == [], (view.errors, view.foreign)


@pytest.mark.parametrize("section", SECTIONS)
def test_deck_explorer_moves(decks, browser, section):
    with open_deck(browser, decks, section, PROJECTOR) as view:
        page = view.page
        index = page.evaluate("""() => {
            const s = document.querySelector('.attnbook-explorer').closest('section');
            const {h, v = 0} = Reveal.getIndices(s); return `${h}/${v}`; }""")
        slide_at(view, index)
        seen = set()
        for name in ("d", "n"):
            count = page.locator(f'.attnbook-explorer input[name="{name}"]').evaluate("(i) => +i.max + 1")
            for position in range(count):
                step = page.evaluate(STEP, [name, position])
                seen.add(step["src"])
                assert step["key"].split(",")[0 if name == "d" else 1] == step["output"], step
                assert step["values"].endswith("(precomputed)") and step["readout"], step
        assert len(seen) > 2, f"the pictures did not change: {seen}"
        broken = page.evaluate("() => [...document.querySelectorAll('.attnbook-explorer img')]"
                               ".filter((i) => !(i.complete && i.naturalWidth > 0)).map((i) => i.src)")
        assert broken == [], broken
        links = page.locator(".attnbook-explorer a, .deck-links a")
        links = links.evaluate_all("(l) => l.map((a) => a.text)")
        assert "Live notebook" in links and any("live notebook" in text for text in links), links
        assert view.errors == [] and view.foreign == [], (view.errors, view.foreign)


# axe's exceptions, each with why (none yet).
AXE_ALLOWED = ()


@pytest.mark.parametrize("section", SECTIONS)
def test_deck_has_no_wcag_violations(decks, browser, section):
    """axe on every slide as the audience sees it (reveal.js hides the others from assistive tech)."""
    with open_deck(browser, decks, section, PROJECTOR) as view:
        count = view.page.evaluate("() => Reveal.getTotalSlides()")
        found = []
        for number in range(count):
            view.page.evaluate(f"() => {{ const s = Reveal.getSlides()[{number}];"
                               " const i = Reveal.getIndices(s); Reveal.slide(i.h, i.v); }")
            for violation in axe_violations(view.page, AXE_ALLOWED):
                violation["id"] = f"slide {number + 1}: {violation['id']}"
                found.append(violation)
        assert not found, describe(found)


def test_site_links_each_deck():
    """Each section's page on the website (make site) links its deck."""
    html = ROOT / "_build" / "html"
    if not (html / "index.html").exists():
        pytest.fail("no website: make site (make test builds it first)")
    for section in SECTIONS:
        page = html / "notebooks" / f"{section}.html"
        found = re.search(r'class="slides-link"><a href="([^"]+)"', page.read_text())
        assert found, f"{page.name}: no link to the slides"
        target = (page.parent / found.group(1)).resolve()
        assert target == (DECKS / f"{section}.html").resolve(), found.group(1)
