"""The book in every Jupyter a class uses, each tried the way that place runs it (README, "Running the book").

* **A hub** (nbgitpuller pulls the repository; the requirements are installed, the book's package is
  not; no PYTHONPATH; Jupyter started anywhere; the standard python3 kernel, which starts in the
  notebook's folder). Each notebook runs top to bottom twice in one kernel, Run All and then Run All
  again, so a cell whose rerun fails (a name rebound below it, a generator's state) fails here.
* **A notebook alone** (downloaded from the website, or opened in Colab): one notebook in an empty
  folder, in an environment with torch, Jupyter and the scientific packages but neither d2l nor the
  book's package. Its first cell installs both, pinned by sha256 (pip --require-hashes, --no-deps):
  attnbook's wheel from the book's website, here a localhost server holding the wheel `make site`
  builds (BOOK_WEBSITE points the cell at it), and d2l 1.0.3 from a local folder (PIP_FIND_LINKS);
  nothing else: torch and the rest stay the environment's own. The student edition (`make student`:
  answers removed) runs the same way, each exercise's check printing its one "not yet" line.
* **What must not be installed**: a wheel with one byte changed, a kernel that already has another
  version, the book's address never set, a package index that refuses, a missing package the book
  never installs: each gives one line and installs nothing.

The environment for "alone" is a new venv whose site-packages point (one symlink each) at this
project's packages, all but d2l and attnbook: cheap to make, and torch is the very one the project has.
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import nbformat
import pytest
from localhost import serve
from measured import record

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "site"))
import publish  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
STUDENT = ROOT / "_build" / "student"
WEBSITE = publish.addresses()["Homepage"]
NOT_IN_THE_BOOKS_ENVIRONMENT = ("d2l", "attnbook")

#: Runs a notebook with nbclient in the python3 kernel, started in the notebook's folder, `runs` times
#: in one kernel; prints a JSON line: the first error (cell index, ename, evalue, traceback) or None.
RUNNER = r"""
import json, sys
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
path, runs, stop_after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
nb = nbformat.read(path, as_version=4)
client = NotebookClient(nb, kernel_name="python3", timeout=900,
                        resources={"metadata": {"path": path.rsplit("/", 1)[0]}})
error = None
with client.setup_kernel():
    for run in range(runs):
        for index, cell in enumerate(nb.cells[:stop_after or None]):
            try:
                client.execute_cell(cell, index)
            except CellExecutionError as failed:
                error = {"run": run + 1, "cell": index, "ename": failed.ename, "evalue": failed.evalue,
                         "outputs": cell.outputs}
                break
        if error:
            break
nbformat.write(nb, path)
print(json.dumps(error))
"""


def clean_environment(**extra):
    """The environment of a hub user: no PYTHONPATH, no device chosen, Matplotlib's inline backend."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "BOOK_DEVICE", "MPLBACKEND") and not key.startswith("PIP_")}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **extra}


def run_notebook(python, path, runs=1, stop_after=0, **env):
    """Run `path` in the python3 kernel of `python`, from another folder (Jupyter started anywhere)."""
    done = subprocess.run([str(python), "-c", RUNNER, str(path), str(runs), str(stop_after)],
                          capture_output=True, text=True, cwd=path.anchor, timeout=1800,
                          env=clean_environment(**env))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def describe(error):
    return f"run {error['run']}, cell {error['cell']}: {error['ename']}: {error['evalue'][:500]}"


# ------------------------------------------------------------------------- what every notebook names
def first_code_cell(path):
    return next(cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code")


def test_every_notebook_opens_in_any_jupyter():
    """The standard kernelspec, and the same first cell everywhere, carrying pyproject's address."""
    first_cells = {path.stem: first_code_cell(path).source for path in NOTEBOOKS}
    for path in NOTEBOOKS:
        assert nbformat.read(path, as_version=4).metadata.kernelspec.name == "python3", path.name
    assert len(set(first_cells.values())) == 1, "the first code cell differs between sections"
    assert f"BOOK_WEBSITE = '{WEBSITE}'" in next(iter(first_cells.values())), "run make notebooks"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_nothing_points_outside_the_notebook(path):
    """A notebook alone has no ../img/ and no other file beside it: pictures are drawn by cells."""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "markdown":
            local = re.findall(r"\]\((?!https?://|#)([^)\s]+)\)|src=\"(?!https?://|data:)([^\"]+)\"",
                               cell.source)
            assert not local, f"{path.name} points at files beside it: {local}"


# ------------------------------------------------------------------------------------------ a hub
@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The repository as nbgitpuller leaves it in a user's home, and a Python with the requirements
    only: the project's venv, where the book's package is not installed."""
    home = tmp_path_factory.mktemp("hub") / "self-attention-book"
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in tracked.stdout.splitlines():
        if (ROOT / name).is_file():
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, home / name)
    find = "import importlib.util as u; print(u.find_spec('attnbook'))"
    probe = subprocess.run([sys.executable, "-c", find],
                           cwd=home.anchor, capture_output=True, text=True, env=clean_environment())
    assert probe.stdout.strip() == "None", "attnbook is installed in the test's Python: not a hub"
    return home


@pytest.mark.parametrize("name", [path.name for path in NOTEBOOKS], ids=lambda n: n[:-6])
def test_on_a_hub_each_notebook_runs_twice_in_one_kernel(hub, name):
    error = run_notebook(sys.executable, hub / "notebooks" / name, runs=2)
    assert error is None, describe(error)


# ------------------------------------------------------------------------------ a notebook alone
def colab_like(tmp_path, hidden=NOT_IN_THE_BOOKS_ENVIRONMENT):
    """A new venv that sees every package of this project's environment except `hidden`."""
    site = pathlib.Path(next(p for p in sys.path if p.endswith("site-packages")))
    shadow = tmp_path / "packages"
    shadow.mkdir(parents=True)
    for entry in site.iterdir():
        top = re.split(r"[-.]", entry.name)[0].lower()
        if top not in hidden and not entry.name.endswith(".pth") and entry.name != "__pycache__":
            (shadow / entry.name).symlink_to(entry)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    (pathlib.Path(own) / "environment.pth").write_text(f"{shadow}\n")
    return python, pathlib.Path(own)


def installed_here(site):
    return sorted(p.name.split("-")[0].lower() for p in site.glob("*.dist-info"))


def pins(name):
    """(version, sha256) of `name` in the notebooks' first cell."""
    return publish.pin_line(name).search(first_code_cell(NOTEBOOKS[0]).source).groups()


@pytest.fixture(scope="module")
def d2l_folder(tmp_path_factory):
    """d2l's wheel from the package index, fetched by the notebooks' pin (so the pin is PyPI's file)."""
    folder = tmp_path_factory.mktemp("d2l")
    version, digest = pins("d2l")
    (folder / "pin.txt").write_text(f"d2l=={version} --hash=sha256:{digest}\n")
    subprocess.run([sys.executable, "-m", "pip", "-q", "download", "--no-deps", "--require-hashes",
                    "-d", str(folder), "-r", str(folder / "pin.txt")], check=True, capture_output=True)
    return folder


@pytest.fixture(scope="module")
def website(tmp_path_factory):
    """The book's website as `make site` lays out its wheel (site/publish.py), served on localhost."""
    folder = tmp_path_factory.mktemp("website")
    publish.build_wheel(folder / "_static")
    with serve(folder) as url:
        yield folder, url


def offline(d2l_folder, url):
    """A notebook alone's environment: d2l from the local folder only, attnbook from `url`."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(d2l_folder), "BOOK_WEBSITE": url}


@pytest.fixture(scope="module")
def alone(tmp_path_factory, d2l_folder, website):
    python, site = colab_like(tmp_path_factory.mktemp("colab"))
    return python, site, offline(d2l_folder, website[1])


def single(tmp_path, source):
    folder = tmp_path / "Downloads"
    folder.mkdir()
    shutil.copy2(source, folder / source.name)
    return folder / source.name


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_alone_installs_only_what_is_missing(alone, tmp_path, source):
    python, site, env = alone
    error = run_notebook(python, single(tmp_path, source), **env)
    assert error is None, describe(error)
    assert set(installed_here(site)) <= {"pip", "setuptools", "d2l", "attnbook"}, installed_here(site)
    assert {"d2l", "attnbook"} <= set(installed_here(site))


def student_notebooks():
    return sorted(STUDENT.glob("*.ipynb"))


@pytest.fixture(scope="module")
def student_edition():
    subprocess.run(["make", "--no-print-directory", "student", f"PYTHON={sys.executable}"], cwd=ROOT,
                   check=True, capture_output=True)
    return student_notebooks()


@pytest.mark.parametrize("index", range(len(NOTEBOOKS)))
def test_the_student_edition_runs_alone_with_its_stubs(student_edition, alone, tmp_path, index):
    python, site, env = alone
    source = student_edition[index]
    cells = nbformat.read(source, as_version=4).cells
    assert not [cell for cell in cells if "answer" in cell.metadata.get("tags", [])]
    # it promises no worked answer it does not have
    assert not [cell for cell in cells if "worked answer follows" in cell.source], source.name
    path = single(tmp_path, source)
    error = run_notebook(python, path, **env)
    assert error is None, describe(error)
    checks = [cell for cell in nbformat.read(path, as_version=4).cells
              if cell.cell_type == "code" and "attnbook.check(" in cell.source]
    for cell in checks:
        text = "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")
        assert len(text.strip().splitlines()) == 1 and "not yet" in text, (source.name, cell.source[:80],
                                                                            text)


# ------------------------------------------------------------ the pinned install and what it refuses
def only_line(error):
    """The one line a failing setup cell shows: its error output's whole traceback."""
    shown = [out for out in error["outputs"] if out["output_type"] in ("error", "stream")]
    assert len(shown) == 1 and shown[0]["output_type"] == "error", shown
    assert len(shown[0]["traceback"]) == 1 and "\n" not in shown[0]["traceback"][0], shown[0]["traceback"]
    return shown[0]["traceback"][0]


def through_setup(path):
    """How many cells to run to reach the end of the first code cell (the setup)."""
    return 1 + next(i for i, c in enumerate(nbformat.read(path, as_version=4).cells) if c.cell_type == "code")


def setup_fails(python, path, **env):
    """Run a notebook alone up to its setup cell, which must fail: the one line it shows."""
    cells = through_setup(path)
    error = run_notebook(python, path, stop_after=cells, **env)
    assert error and error["cell"] == cells - 1, error
    return only_line(error)


def written_with():
    return " and ".join(f"{name} {pins(name)[0]}" for name in ("d2l", "attnbook"))


def test_the_pinned_install_from_the_website_succeeds_and_is_checked(tmp_path, d2l_folder, website):
    """A new environment: the first cell installs exactly the pinned files, from the (localhost)
    website and the d2l folder, and says so; run again, it installs nothing."""
    python, site = colab_like(tmp_path)
    path = single(tmp_path, NOTEBOOKS[0])
    cells, env = through_setup(path), offline(d2l_folder, website[1])
    seconds = []
    for run in range(2):
        start = time.perf_counter()
        error = run_notebook(python, path, stop_after=cells, **env)
        seconds.append(time.perf_counter() - start)
        assert error is None, describe(error)
        shown = "".join(out.get("text", "") for out in first_code_cell(path).outputs)
        said = f"installed {written_with()}, each checked against its sha256"
        assert (said in shown) == (run == 0), shown
    assert [name for name in installed_here(site) if name not in ("pip", "setuptools")] == ["attnbook", "d2l"]
    # pip's record of where attnbook came from: the website's wheel, with the pinned sha256
    direct = json.loads(next(site.glob("attnbook-*.dist-info/direct_url.json")).read_text())
    assert direct["url"] == f"{website[1]}/_static/attnbook-{pins('attnbook')[0]}-py3-none-any.whl", direct
    assert direct["archive_info"]["hashes"] == {"sha256": pins("attnbook")[1]}, direct
    # the install alone, timed: the cell's pip command, in another new environment
    other, _ = colab_like(tmp_path / "timed")
    (version, digest), (d2l_version, d2l_digest) = pins("attnbook"), pins("d2l")
    pinned = tmp_path / "pinned.txt"
    pinned.write_text(f"d2l=={d2l_version} --hash=sha256:{d2l_digest}\n"
                      f"attnbook @ {website[1]}/_static/attnbook-{version}-py3-none-any.whl "
                      f"--hash=sha256:{digest}\n")
    start = time.perf_counter()
    subprocess.run([str(other), "-m", "pip", "install", "-q", "--no-deps", "--require-hashes", "-r",
                    str(pinned)], check=True, env=clean_environment(**env))
    install = time.perf_counter() - start
    record(f"measured: a notebook alone, its first cell in a new environment {seconds[0]:.1f} s (once "
           f"installed {seconds[1]:.1f} s: kernel start and torch); the install itself {install:.1f} s "
           "(pip install -q --no-deps --require-hashes -r pinned.txt: d2l 1.0.3 and attnbook's wheel from a "
           "localhost website; pytest tests/test_ways_in.py -k pinned_install)", "ways-in.txt")


def test_a_wheel_with_one_byte_changed_is_refused_in_one_line(tmp_path, d2l_folder, website):
    tampered = tmp_path / "website"
    shutil.copytree(website[0], tampered)
    wheel = next((tampered / "_static").glob("attnbook-*.whl"))
    data = bytearray(wheel.read_bytes())
    data[len(data) // 2] ^= 0x01
    wheel.write_bytes(data)
    python, site = colab_like(tmp_path)
    with serve(tampered) as url:
        line = setup_fails(python, single(tmp_path, NOTEBOOKS[0]), **offline(d2l_folder, url))
    assert line.startswith(f"Could not install {written_with()} (pip: a downloaded file is not the one"), line
    assert "its sha256 differs); nothing was installed." in line, line
    assert installed_here(site) == ["pip", "setuptools"], installed_here(site)


def test_the_address_never_set_gives_one_line_and_installs_nothing(tmp_path, d2l_folder):
    """A notebook from a book whose publisher did not set the address (pyproject.toml's placeholder)."""
    unset = publish.PLACEHOLDERS["Homepage"]
    notebook = nbformat.read(NOTEBOOKS[0], as_version=4)
    setup = next(cell for cell in notebook.cells if cell.cell_type == "code")
    setup.source = publish.WEBSITE_LINE.sub(f"BOOK_WEBSITE = '{unset}'", setup.source)
    path = tmp_path / "Downloads" / NOTEBOOKS[0].name
    path.parent.mkdir()
    nbformat.write(notebook, path)
    python, site = colab_like(tmp_path)
    line = setup_fails(python, path, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(d2l_folder))
    assert line == ("Nothing was installed: this notebook comes from a copy of the book whose address was "
                    f"never set ({unset}). Open it from the book's website or repository."), line
    assert installed_here(site) == ["pip", "setuptools"], installed_here(site)


def test_a_kernel_with_another_attnbook_is_told_in_one_line(tmp_path, d2l_folder, website):
    """An earlier notebook of another edition installed its attnbook: this one says so, installs nothing."""
    python, site = colab_like(tmp_path)
    (site / "attnbook").mkdir()
    (site / "attnbook" / "__init__.py").write_text("")
    (site / "attnbook-0.0.9.dist-info").mkdir()
    (site / "attnbook-0.0.9.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: attnbook\n"
                                                                 "Version: 0.0.9\n")
    line = setup_fails(python, single(tmp_path, NOTEBOOKS[0]), **offline(d2l_folder, website[1]))
    assert line == (f"This kernel has attnbook 0.0.9; this notebook was written with {written_with()}. "
                    "Run: pip uninstall -y attnbook, restart the kernel and run this cell again."), line
    assert "d2l" not in installed_here(site)


def test_an_index_that_refuses_gives_one_line_and_installs_nothing(tmp_path, website):
    python, site = colab_like(tmp_path)
    empty = tmp_path / "empty-index"
    empty.mkdir()
    line = setup_fails(python, single(tmp_path, NOTEBOOKS[0]), **offline(empty, website[1]))
    assert line.startswith(f"Could not install {written_with()} (pip: No matching distribution found for "
                           f"d2l=={pins('d2l')[0]}); nothing was installed."), line
    assert installed_here(site) == ["pip", "setuptools"], installed_here(site)


def test_a_package_the_book_never_installs_is_named_with_its_command(tmp_path):
    python, site = colab_like(tmp_path, hidden=(*NOT_IN_THE_BOOKS_ENVIRONMENT, "transformers"))
    line = setup_fails(python, single(tmp_path, NOTEBOOKS[0]), PIP_NO_INDEX="1")
    assert line.startswith("Missing: transformers.") and "pip install transformers" in line, line
    assert "d2l" not in installed_here(site)
