"""Publishing the book (site/publish.py; README, "Publishing the book").

The notebooks pin the wheel attnbook/ builds now (else: run make pin); that wheel is the same bytes
from any copy of the sources; and `make publish-check` tells a publisher, one line at a time, what is
left to do: set the address, pin, regenerate the notebooks, build the site.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import jupytext.cli
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "site"))
import publish  # noqa: E402

SET = {"Repository": "https://github.com/alice/attention-book", "Homepage": "https://alice.github.io/attention-book/"}


def test_the_notebooks_pin_the_wheel_attnbook_builds():
    try:
        publish.check_pins()
        stale = None
    except publish.PublishError as error:
        stale = str(error)
    if stale:
        pytest.fail(stale, pytrace=False)


def test_the_wheel_is_the_same_bytes_from_another_copy(tmp_path):
    """Other times and file modes (a fresh clone, another umask): the same sha256."""
    copy = tmp_path / "clone"
    shutil.copytree(ROOT / "attnbook", copy / "attnbook", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy)
    for path in copy.rglob("*"):
        path.chmod(0o775 if path.is_dir() else 0o664)
        os.utime(path, (2e9, 2e9))
    ours = publish.build_wheel(tmp_path / "ours")
    theirs = publish.build_wheel(tmp_path / "theirs", copy)
    assert ours.name == theirs.name and publish.sha256(ours) == publish.sha256(theirs)


def test_the_wheel_holds_every_module_of_attnbook(tmp_path):
    """Package discovery: subpackages go in too, and nothing else."""
    import zipfile

    wheel = publish.build_wheel(tmp_path)
    inside = {name for name in zipfile.ZipFile(wheel).namelist()
              if not name.split("/")[0].endswith(".dist-info")}
    sources = {path.relative_to(ROOT).as_posix() for path in (ROOT / "attnbook").rglob("*.py")
               if "__pycache__" not in path.parts}
    assert inside == sources


def set_addresses(root, urls):
    text = (root / "pyproject.toml").read_text()
    for key, url in urls.items():
        text = re.sub(rf'^{key} = "[^"]*"$', f'{key} = "{url}"', text, count=1, flags=re.M)
    (root / "pyproject.toml").write_text(text)
    assert publish.addresses(root) == urls


def publish_check(root):
    """`make publish-check` on another copy of the book: exit code and what it printed."""
    done = subprocess.run([sys.executable, str(ROOT / "site" / "publish.py"), "check", str(root)],
                          capture_output=True, text=True)
    return done.returncode, (done.stdout + done.stderr).strip()


def test_publish_check_names_each_step_left_in_one_line(tmp_path):
    """A copy of the book (its first section) with the placeholder address, taken through a
    publisher's steps."""
    root = tmp_path / "book"
    for name in ("pyproject.toml", "jupytext.toml", "chapters/1-self-attention.md",
                 "notebooks/1-self-attention.ipynb"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "attnbook", root / "attnbook", ignore=shutil.ignore_patterns("__pycache__"))
    set_addresses(root, publish.PLACEHOLDERS)
    version = publish.to_pin(root)[1]

    steps = []
    for make in ("set the address", "pin", "notebooks", "site", None):
        code, said = publish_check(root)
        assert "\n" not in said, said
        steps.append((code, said))
        if make == "set the address":
            set_addresses(root, SET)
        elif make == "pin":
            subprocess.run([sys.executable, str(ROOT / "site" / "publish.py"), "pin", str(root)], check=True,
                           capture_output=True)
        elif make == "notebooks":  # the sources only (outputs kept): what make notebooks writes first
            for chapter in publish.chapters(root):
                jupytext.cli.jupytext(["--quiet", "--to", "ipynb", "--update", "-o",
                                       str(root / "notebooks" / f"{chapter.stem}.ipynb"), str(chapter)])
        elif make == "site":
            publish.build_wheel(root / "_build" / "html" / "_static", root)
    assert steps[0] == (1, "publish-check: the book's address is still a placeholder: set [project.urls] "
                           f"Repository = \"{publish.PLACEHOLDERS['Repository']}\" in pyproject.toml to the "
                           "real one, then run make notebooks site")
    assert steps[1][0] == 1 and steps[1][1].startswith(f"publish-check: 1-self-attention.md does not pin "
                                                       f"{SET['Homepage']} and attnbook {version} "), steps[1]
    assert steps[1][1].endswith("run make pin"), steps[1]
    assert steps[2] == (1, "publish-check: notebooks/1-self-attention.ipynb does not pin what its chapter "
                           "pins: run make notebooks")
    assert steps[3][0] == 1 and steps[3][1].endswith("run make site"), steps[3]
    assert steps[4] == (0, f"publish-check: ready to publish at {SET['Homepage']}")
    pinned = publish.pinned(publish.first_code_cell(root / "notebooks" / "1-self-attention.ipynb"))
    assert pinned == publish.to_pin(root) and pinned[0] == SET["Homepage"]
