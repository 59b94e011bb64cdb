"""Fixtures of the website's browser tests (test_site.py, test_a11y.py): the built site served on
localhost, and Debian's headless Chromium. The site is built first when _build/html is missing or
older than what it is made from."""
import os
import sys

import pytest
from localhost import serve
from website import CHROMIUM, HTML, ROOT, stale


@pytest.fixture(scope="module")
def site():
    """The built site served on a free localhost port: its base URL."""
    if stale():
        sys.path.insert(0, str(ROOT / "site"))
        import build

        build.html()
    with serve(HTML, max_age=600) as url:  # as GitHub Pages serves the published site
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install chromium, or set CHROMIUM")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()
