"""WCAG 2.1 A/AA on every page of the website (`make site`), in the theme's light and dark schemes.

axe-core (tests/axe.py, rules tagged wcag2a, wcag2aa, wcag21a, wcag21aa) runs on every page with every
fold and deeper part opened, so what a reader opens is audited too; it must find nothing. What axe
cannot judge is tested here directly:
- every slider and every fold is reached with Tab alone, shows a focus ring there, and works with the
  keys (arrows move a slider, Enter opens and closes a fold);
- the explorer's values and readout are live regions (a screen reader says them when they change);
- a page reads in order: one h1, no heading level skipped;
- every equation carries MathML for screen readers (MathJax's assistive MathML) and MathJax's
  speech engine, served from the site's own _static, speaks it offline;
- dark scheme: a figure sits on the theme's light card, dimmed (no white box on a dark page, no dark
  line on a dark background), as tests/figure_text.py assumes when it checks the figures' text.
Screenshots of one section in each scheme: test-artifacts/a11y-<scheme>.png.
"""
import pytest
from axe import axe_violations, describe
from figure_text import DARK_CARD, shown_in_dark
from website import PAGES, SCHEMES, SECTIONS, Page, artifact_name, column_px

# Exceptions: (axe rule, CSS selector, why it cannot be fixed). None are needed today.
ALLOWED = []
SHOWCASE = "3-positional-encoding"  # the section photographed in both schemes

# The headings a screen reader meets (every fold open; not the theme's print-only title block)
HEADINGS = """() => [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')]
    .filter((h) => h.checkVisibility())
    .map((h) => [Number(h.tagName[1]), h.textContent.trim().slice(0, 60)])"""

# Every control a reader must reach: the explorer's sliders and every fold's summary.
MARK_CONTROLS = """() => {
    const controls = [...document.querySelectorAll('main input[type="range"], main details > summary')];
    controls.forEach((c, i) => { c.dataset.a11y = String(i); });
    return controls.length;
}"""

FOCUSED = """() => {
    const e = document.activeElement;
    if (!e || e === document.body) return null;
    const style = getComputedStyle(e);
    const ring = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 1)
        || style.boxShadow !== 'none';
    return {id: e.dataset.a11y ?? null, ring, tag: e.tagName,
            text: (e.textContent || e.name || '').trim().slice(0, 40)};
}"""


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("path", PAGES)
def test_no_wcag_violations(site, browser, path, scheme):
    with Page(browser, site, path, scheme=scheme,
              shot_on_failure=f"a11y-{artifact_name(path)}-{scheme}.png") as view:
        assert view.page.evaluate("document.documentElement.dataset.theme") == scheme
        view.open_every_fold()
        violations = axe_violations(view.page, ALLOWED)
        assert not violations, f"{path} ({scheme}):\n{describe(violations)}"


def test_reduced_motion_opens_a_fold_at_once(site, browser):
    """A reader whose system asks for less motion sees a fold's code at once (booksite.css); others see
    myst-nb's 0.3 s fade-in, during which the code is at a third of its contrast."""
    fading = {}
    for motion in ("no-preference", "reduce"):
        with Page(browser, site, f"notebooks/{SHOWCASE}", reduced_motion=motion) as view:
            fading[motion] = view.page.evaluate("""() => {
                document.querySelectorAll('div.cell details.hide').forEach((d) => { d.open = true; });
                return document.getAnimations()
                    .filter((a) => a.effect && a.effect.target && a.effect.target.closest('details.hide'))
                    .length;
            }""")
    assert fading["no-preference"] > 0, "no fold fades in: myst-nb's animation changed; recheck the CSS rule"
    assert fading["reduce"] == 0, f"{fading['reduce']} fold contents still fade in under reduced motion"


@pytest.mark.parametrize("path", PAGES)
def test_page_reads_in_order(site, browser, path):
    with Page(browser, site, path) as view:
        view.open_every_fold()
        headings = view.page.evaluate(HEADINGS)
        assert [level for level, _ in headings].count(1) == 1, f"not one h1: {headings}"
        assert headings[0][0] == 1, f"the first heading is not the h1: {headings[0]}"
        for (before, _), (level, text) in zip(headings, headings[1:], strict=False):
            assert level <= before + 1, f"h{before} then h{level} ({text!r}): a level skipped"


@pytest.mark.parametrize("section", SECTIONS)
def test_keyboard_alone_works_every_control(site, browser, section):
    with Page(browser, site, f"notebooks/{section}") as view:
        page = view.page
        view.open_every_fold()  # a fold inside a closed one is reached once that one is open
        count = page.evaluate(MARK_CONTROLS)
        assert count > 2, "no slider or fold on the page"
        reached, without_ring = set(), []
        page.locator("body").focus()
        for _ in range(2000):  # Tab through the whole page once
            page.keyboard.press("Tab")
            focused = page.evaluate(FOCUSED)
            if focused is None:
                break
            if focused["id"] is not None:
                if focused["id"] in reached:
                    break
                reached.add(focused["id"])
                if not focused["ring"]:
                    without_ring.append(focused)
        assert len(reached) == count, f"Tab reached {len(reached)} of {count} sliders and folds"
        assert without_ring == [], f"focused without a visible focus ring: {without_ring}"

        box = page.locator(".attnbook-explorer.explorer-live")
        for name in ("d", "n"):
            slider = box.locator(f'input[name="{name}"]')
            slider.focus()
            before = {"value": slider.input_value(), "src": box.locator("img").get_attribute("src")}
            key = "ArrowLeft" if before["value"] == slider.get_attribute("max") else "ArrowRight"
            page.keyboard.press(key)
            after = {"value": slider.input_value(), "src": box.locator("img").get_attribute("src")}
            assert after["value"] != before["value"], f"{key} did not move the {name} slider"
            shown = box.locator(f'input[name="{name}"] + output').text_content()
            assert f"{name} = {shown}" in box.locator(".explorer-values").text_content()

        for summary in page.locator("main details > summary").all()[:6]:
            details = summary.locator("xpath=..")
            was_open = details.evaluate("(d) => d.open")
            summary.focus()
            for expected in (not was_open, was_open):
                page.keyboard.press("Enter")
                assert details.evaluate("(d) => d.open") == expected, (
                    f"Enter did not {'open' if expected else 'close'} {summary.text_content().split()[:4]}")


@pytest.mark.parametrize("section", SECTIONS)
def test_explorer_readout_is_announced(site, browser, section):
    with Page(browser, site, f"notebooks/{section}") as view:
        box = view.page.locator(".attnbook-explorer.explorer-live")
        for part in (".explorer-values", ".explorer-readout"):
            live = box.locator(part).evaluate(
                "(e) => { const r = e.closest('[aria-live]'); return r && r.getAttribute('aria-live'); }")
            assert live in ("polite", "assertive"), f"{part} is not in a live region"
        slider = box.locator('input[name="d"]')
        before = box.locator(".explorer-values").text_content()
        slider.focus()
        at_end = slider.input_value() == slider.get_attribute("max")
        view.page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
        assert box.locator(".explorer-values").text_content() != before, "the live region did not change"


# What a screen reader gets for an equation: the MathML MathJax puts beside the picture (the SVG is
# hidden from it), and what MathJax's own speech engine (sre, from _static/mathjax) says for it.
SPEECH = """async () => {
    const containers = [...document.querySelectorAll('mjx-container')];
    const bare = containers.filter((c) => !c.querySelector('mjx-assistive-mml math')
                                          || c.querySelector(':scope > svg:not([aria-hidden="true"])'));
    const first = document.querySelector('mjx-container[display="true"]');
    const mathml = first.querySelector('mjx-assistive-mml math').outerHTML;
    await MathJax.loader.load('a11y/sre');
    const module = MathJax._.a11y.sre, Sre = module.Sre || module.default || module;
    await Sre.setupEngine({locale: 'en', domain: 'clearspeak', modality: 'speech'});
    await Sre.sreReady();
    return {count: containers.length, bare: bare.map((c) => c.outerHTML.slice(0, 300)), mathml,
            speech: Sre.toSpeech(mathml)};
}"""


def test_equations_speak_offline(site, browser):
    with Page(browser, site, f"notebooks/{SHOWCASE}") as view:
        spoken = view.page.evaluate(SPEECH)
        assert spoken["count"] > 0 and spoken["bare"] == [], spoken["bare"]
        assert "<mi>" in spoken["mathml"], spoken["mathml"]
        assert spoken["speech"], f"MathJax's speech engine said nothing for {spoken['mathml'][:200]}"
        print(f"equation MathML: {spoken['mathml']}\nspoken: {spoken['speech']}")
        assert view.foreign == [] and view.errors == [], (view.foreign, view.errors)


FIGURES = """() => [...document.querySelectorAll('main .cell_output img')].map((img) => {
    const style = getComputedStyle(img);
    return {src: img.getAttribute('src'), shown: img.getBoundingClientRect().width
            - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight),
            width: Number(img.getAttribute('width')) || img.naturalWidth, filter: style.filter,
            card: style.backgroundColor, folded: img.closest('details') !== null};
})"""


@pytest.mark.parametrize("scheme", SCHEMES)
def test_figures_are_readable_in_both_schemes(site, browser, scheme):
    """Every figure is shown at least as large as the figure check assumes; in the dark scheme on a
    light card and dimmed as figure_text.shown_in_dark computes (measured on the rendered pixels)."""
    import io

    import numpy as np
    from PIL import Image

    with Page(browser, site, f"notebooks/{SHOWCASE}", scheme=scheme) as view:
        page = view.page
        view.open_every_fold()
        figures = page.evaluate(FIGURES)
        assert figures, "no figure on the page"
        for figure in figures:
            assert figure["shown"] >= min(figure["width"], column_px(figure["folded"])) - 1, figure
        first = page.locator("main .cell_output img").first
        first.scroll_into_view_if_needed()
        pixels = np.asarray(Image.open(io.BytesIO(first.screenshot())).convert("RGB"), dtype=float)
        brightest = np.percentile(pixels.mean(axis=-1), 90)  # the figure's own background
        if scheme == "dark":
            assert all(f["filter"] != "none" and f["card"] != "rgba(0, 0, 0, 0)" for f in figures), figures
            assert abs(brightest - shown_in_dark(np.array([255.0]))[0]) <= 3, brightest
            assert brightest <= DARK_CARD * 255, f"a figure shines at {brightest:.0f}/255 on the dark page"
        else:
            assert brightest >= 250
        view.page.evaluate("() => document.querySelector('main .cell_output img').scrollIntoView()")
        view.shot(f"a11y-{scheme}.png")
