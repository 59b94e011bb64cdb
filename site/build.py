"""`make site` and `make pdf`: the book's website from the committed notebooks, never re-executed.

    python site/build.py html      # _build/html/ (what `make site` runs)
    python site/build.py pdf       # _build/book.pdf: the one-page build printed by Chromium

Steps: stage the sources (site/index.md, notebooks/*.ipynb, img/*) into _build/site-src/ as the
repository lays them out; copy MathJax from site/node_modules (npm ci) into _build/site-static/mathjax;
render each explorer's precomputed pictures into _build/site-static/explorers (site/explorers.py,
cached); build attnbook's wheel into _build/site-static (site/publish.py: the file every notebook
pins, served from _static/); run Sphinx with -W (a warning fails the build).
"""
import contextlib
import fcntl
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
BUILD = ROOT / "_build"
SRC, STATIC = BUILD / "site-src", BUILD / "site-static"
MATHJAX = SITE / "node_modules" / "mathjax" / "es5"
# what the pages use of the package: the combined TeX-to-SVG component (every TeX extension in it),
# and what its menu loads on demand (accessibility, speech)
MATHJAX_PARTS = ["tex-svg-full.js", "ui", "a11y", "sre", "input/tex/extensions"]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

sys.path.insert(0, str(SITE))
import explorers  # noqa: E402
import publish  # noqa: E402


def stage():
    """The sources Sphinx reads, laid out as in the repository (launch links name these paths)."""
    if SRC.exists():
        shutil.rmtree(SRC)
    (SRC / "notebooks").mkdir(parents=True)
    shutil.copy2(SITE / "index.md", SRC / "index.md")
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copy2(notebook, SRC / "notebooks" / notebook.name)
    if (ROOT / "img").is_dir():
        shutil.copytree(ROOT / "img", SRC / "img", ignore=shutil.ignore_patterns("*.py", "*.md"))


def npm_ci():
    subprocess.run(["npm", "ci", "--prefix", str(SITE), "--no-audit", "--no-fund", "--loglevel=error"],
                   check=True)


def mathjax(target=STATIC / "mathjax"):
    """The parts of MathJax the pages use, copied to `target` (the slides' own copy: site/slides.py)."""
    if not MATHJAX.is_dir():  # make site installs it first; a test run alone does it here
        npm_ci()
    stamp = target / ".version"
    version = (MATHJAX.parent / "package.json").read_text()
    if stamp.exists() and stamp.read_text() == version:
        return
    if target.exists():
        shutil.rmtree(target)
    for part in MATHJAX_PARTS:
        source, dest = MATHJAX / part, target / part
        dest.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, dest)
    stamp.write_text(version)


def sphinx(builder, out):
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-E", "-b", builder,
               "-c", str(SITE), "-d", str(BUILD / f"site-doctrees-{builder}"), str(SRC), str(out)]
    subprocess.run(command, check=True)


@contextlib.contextmanager
def locked():
    """One build at a time in _build (make site and a test may start one together)."""
    BUILD.mkdir(exist_ok=True)
    with open(BUILD / ".site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def prepare():
    stage()
    mathjax()
    explorers.render_all(STATIC / "explorers")


@locked()
def html():
    start = time.perf_counter()
    prepare()
    publish.build_wheel(STATIC)  # _static/attnbook-*.whl: what a notebook opened alone installs
    rendered = time.perf_counter()
    shutil.rmtree(BUILD / "html", ignore_errors=True)  # nothing left from an older build (pictures, images)
    sphinx("html", BUILD / "html")
    done = time.perf_counter()
    print(f"site: _build/html/index.html (explorer pictures {rendered - start:.1f} s, "
          f"Sphinx {done - rendered:.1f} s)")


@locked()
def pdf(out=BUILD / "book.pdf"):
    """The whole book in one PDF: the one-page build, deeper parts opened, printed by Chromium."""
    from playwright.sync_api import sync_playwright

    prepare()
    single = BUILD / "singlehtml"
    shutil.rmtree(single, ignore_errors=True)
    sphinx("singlehtml", single)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(reduced_motion="reduce")  # an opened fold prints at once, not mid-fade
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else route.abort())
        page.goto((single / "index.html").as_uri(), wait_until="load")
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                               timeout=60_000)
        page.evaluate("() => MathJax.startup.promise")
        # deeper parts open (the whole book); folded plumbing and answers stay as on the page
        page.evaluate("() => document.querySelectorAll('details.deeper').forEach((d) => { d.open = true; })")
        page.emulate_media(media="print")
        # tagged: a PDF with structure (headings, reading order, each figure's alt text as its /Alt), which
        # a screen reader reads; outline: the headings as bookmarks
        page.pdf(path=str(out), format="A4", print_background=True, scale=0.8,  # wide equations fit
                 margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"},
                 tagged=True, outline=True)
        browser.close()
    print(f"pdf: {out.relative_to(ROOT)} ({out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    {"html": html, "pdf": pdf}[sys.argv[1] if len(sys.argv) > 1 else "html"]()
