"""Sphinx configuration of the book's website (`make site`; site/build.py stages the sources).

Offline by construction: MathJax 3 is served from _static (the npm package, site/package.json),
myst-nb loads no widget scripts, the theme loads no web fonts, and no page asks another host for
anything. The repository's address is read from pyproject.toml ([project.urls] Repository), and
every launch and download link is made from it.
"""
import os
import pathlib
import sys
import tomllib
from urllib.parse import urlencode

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
sys.path.insert(0, str(ROOT / "site" / "_ext"))

REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
OWNER, NAME = REPOSITORY.removeprefix("https://github.com/").strip("/").split("/")[:2]
BRANCH = "main"
BINDER = "https://mybinder.org"
COLAB = "https://colab.research.google.com"
# The class's JupyterHub (nbgitpuller pulls the repository into the reader's home there): a visible
# placeholder, HUB as in the README's templates, until the publisher sets BOOK_JUPYTERHUB_URL.
JUPYTERHUB = os.environ.get("BOOK_JUPYTERHUB_URL", "https://HUB")

project = "Self-attention and positional encoding"
author = "the attnbook authors"
copyright = "the attnbook authors"
root_doc = "index"
extensions = ["myst_nb", "booksite"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

# The notebooks are shown with the outputs they were committed with: never executed here.
nb_execution_mode = "off"
nb_ipywidgets_js = {}  # no require.js / widget embedder from a CDN: widgets do not run without a kernel
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# MathJax 3 from the npm package, copied into _static/mathjax by site/build.py (SVG output: sharp at
# any zoom and in print, and no font files to fetch).
mathjax_path = "mathjax/tex-svg-full.js"
mathjax3_config = {"svg": {"fontCache": "global"}}

html_theme = "sphinx_book_theme"
html_title = project
html_static_path = ["_static", str(BUILD / "site-static")]
html_copy_source = True  # the page's .ipynb download is the committed notebook (_sources/)
html_last_updated_fmt = None
html_context = {"default_mode": "light"}  # light on a projector (and no console error for an unset mode)
html_theme_options = {
    "repository_url": REPOSITORY,
    "repository_branch": BRANCH,
    "path_to_docs": "",  # the staged sources mirror the repository: notebooks/<section>.ipynb
    "use_repository_button": True,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "launch_buttons": {
        "binderhub_url": BINDER,
        "jupyterhub_url": JUPYTERHUB,
        "colab_url": COLAB,
        "notebook_interface": "jupyterlab",
    },
    "show_toc_level": 2,
}


def launch_urls(section):
    """Binder, JupyterHub (nbgitpuller) and Colab addresses of notebooks/<section>.ipynb."""
    path = f"notebooks/{section}.ipynb"
    pull = urlencode({"repo": REPOSITORY, "urlpath": f"lab/tree/{NAME}/{path}", "branch": BRANCH}, safe="/")
    return {"binder": f"{BINDER}/v2/gh/{OWNER}/{NAME}/{BRANCH}?urlpath=lab/tree/{path}",
            "jupyterhub": f"{JUPYTERHUB}/hub/user-redirect/git-pull?{pull}",
            "colab": f"{COLAB}/github/{OWNER}/{NAME}/blob/{BRANCH}/{path}"}


booksite_explorers = str(BUILD / "site-static" / "explorers")
booksite_student = str(BUILD / "student")
booksite_slides = "../slides"  # the decks (make slides, site/slides.py): _build/slides, beside _build/html
booksite_launch = {path.stem: launch_urls(path.stem)["binder"]
                   for path in sorted((ROOT / "notebooks").glob("*.ipynb"))}
