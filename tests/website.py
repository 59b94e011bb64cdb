"""The built website (_build/html) as the browser tests read it: what a page is, how one is opened.

Shared by tests/test_site.py (offline, typeset, explorers, links) and tests/test_a11y.py (WCAG);
their fixtures (`site`, `browser`) are in tests/conftest.py.
"""
import os
import pathlib

from measured import ARTIFACTS

ROOT = pathlib.Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SECTIONS = sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))
PAGES = ["index", "search", *(f"notebooks/{section}" for section in SECTIONS)]
SCHEMES = ["light", "dark"]
# The width a figure gets in the page's column at 1280 x 800, in the dark scheme's card (CSS pixels;
# 688 in the light scheme): a wider figure is shrunk to it
# (test_a11y measures it; tests/figure_text.py checks figures' text at the size it gives).
COLUMN_PX = 672
# A figure inside a fold (a deeper part's <details>, a worked answer) gets less: the fold's padding
# leaves it 655 CSS pixels in the dark scheme (measured by test_a11y, 2026-11-27).
FOLD_COLUMN_PX = 655


def column_px(folded):
    """The width a figure may take on the page: the fold's for one inside a fold, else the page's."""
    return FOLD_COLUMN_PX if folded else COLUMN_PX


def stale():
    """Whether the built site is missing or older than anything it is made from."""
    index = HTML / "index.html"
    if not index.exists():
        return True
    built = index.stat().st_mtime
    sources = [*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "attnbook").rglob("*.py"),
               ROOT / "pyproject.toml", *(p for p in (ROOT / "site").rglob("*")
                                          if p.is_file() and "node_modules" not in p.parts)]
    return any(path.stat().st_mtime > built for path in sources)


# Opens every <details>, then waits one frame (for an opened fold's animation to start) and for
# every finite animation to end.
OPEN_EVERY_FOLD = """async () => {
    document.querySelectorAll('details').forEach((d) => { d.open = true; });
    await new Promise(requestAnimationFrame);
    const finite = document.getAnimations()
        .filter((a) => a.effect && a.effect.getComputedTiming().endTime !== Infinity);
    await Promise.all(finite.map((a) => a.finished.catch(() => null)));
}"""


def local(url, site):
    """Whether a page's request stays on the served site (or is a data: URL): the rest are other hosts."""
    return url.startswith((site + "/", "data:"))


class Page:
    """A page opened with every other host blocked; what it tried and what the console said.
    A context manager: `with Page(...) as view:` closes the page on the way out, after a full-page
    screenshot in test-artifacts/ named `shot_on_failure` when the block raised.

    `scheme` chooses the theme's colour scheme the way its switch does (localStorage "mode" and
    "theme", read before the page is drawn), and the system preference to match; None leaves both
    to the site's default.
    """

    def __init__(self, browser, site, path, scheme=None, shot_on_failure=None, **options):
        self.shot_on_failure = shot_on_failure
        if scheme:
            options.setdefault("color_scheme", scheme)
        # reduced motion: what is measured is a page at rest, not a fold half-way through fading in
        self.page = browser.new_page(**({"viewport": {"width": 1280, "height": 800},
                                         "reduced_motion": "reduce"} | options))
        if scheme:
            self.page.add_init_script(f"localStorage.setItem('mode', '{scheme}');"
                                      f"localStorage.setItem('theme', '{scheme}');")
        self.foreign, self.errors = [], []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def route(route):
            if local(route.request.url, site):
                route.continue_()
            else:
                self.foreign.append(route.request.url)
                route.abort()

        self.page.route("**/*", route)
        self.page.goto(f"{site}/{path}.html", wait_until="load")
        self.page.wait_for_function("() => !window.MathJax || (MathJax.startup && MathJax.startup.promise)",
                                    timeout=30_000)
        self.page.evaluate("() => window.MathJax ? MathJax.startup.promise.then(() => true) : true")

    def open_every_fold(self):
        """Open every fold and deeper part; return once nothing on the page is still animating."""
        self.page.evaluate(OPEN_EVERY_FOLD)

    def __enter__(self):
        return self

    def __exit__(self, failed, *exc):
        try:
            if failed and self.shot_on_failure:
                self.shot(self.shot_on_failure, full_page=True)
        finally:
            self.page.close()

    def shot(self, name, **options):
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / name), **options)


def artifact_name(path):
    return "site-" + path.replace("/", "-")
