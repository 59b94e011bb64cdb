"""The book's public address, and the wheel of its helpers that every notebook pins.

    python site/publish.py pin         # make pin: every chapter's first cell gets the address and
                                       # the version and sha256 of the wheel attnbook/ builds now
    python site/publish.py check       # make publish-check: one line and exit 1 until the book can be
                                       # published (address set, notebooks and website on this wheel)

`make site` puts the same wheel into the website's _static/ (build_wheel, from site/build.py).

The address is set in one place, pyproject.toml [project.urls]: Repository (the GitHub repository:
Binder, Colab and JupyterHub launch links) and Homepage (where `make site`'s _build/html is served;
a notebook opened alone installs attnbook's wheel from its _static/). Until a publisher sets them
they are placeholders naming OWNER and REPO.

The wheel is built reproducibly, since its sha256 is written into every notebook: from a fresh copy
of pyproject.toml and attnbook/ (nothing left over from an older build), through setuptools' PEP 517
hook with its package discovery, every timestamp fixed (SOURCE_DATE_EPOCH). The same sources and the
same setuptools (pinned in requirements.txt) give the same bytes.
"""
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The addresses pyproject.toml holds until a publisher sets them: any address naming OWNER is unset.
PLACEHOLDERS = {"Repository": "https://github.com/OWNER/REPO", "Homepage": "https://OWNER.github.io/REPO/"}
PLACEHOLDER = "OWNER"
EPOCH = "315532800"  # 1980-01-01, the earliest time a zip file can hold
# The two lines of the notebooks' first cell that `pin` writes, and reads back.
WEBSITE_LINE = re.compile(r"^BOOK_WEBSITE = '(?P<website>[^']*)'", re.M)


def pin_line(name):
    """The first cell's `'name': ('version', 'sha256')`, the file a notebook alone installs."""
    return re.compile(rf"'{name}': \('(?P<version>[^']+)', '(?P<sha256>[0-9a-f]{{64}})'\)")


WHEEL_LINE = pin_line("attnbook")


class PublishError(Exception):
    """What stops publishing, in one line."""


def addresses(root=ROOT):
    """pyproject.toml's [project.urls]: {'Repository': ..., 'Homepage': ...}."""
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]["urls"]


def build_wheel(dest, root=ROOT):
    """attnbook's wheel, built from root's pyproject.toml and attnbook/ into dest: its path."""
    dest = pathlib.Path(dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("attnbook-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory() as stage:
        shutil.copy(root / "pyproject.toml", stage)
        shutil.copytree(root / "attnbook", pathlib.Path(stage) / "attnbook",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        hook = "import sys, setuptools.build_meta as b; print(b.build_wheel(sys.argv[1]))"
        built = subprocess.run([sys.executable, "-c", hook, str(dest)], cwd=stage, capture_output=True,
                               text=True, env={**os.environ, "SOURCE_DATE_EPOCH": EPOCH})
    if built.returncode:
        raise PublishError("building attnbook's wheel failed: "
                           + (built.stderr.strip().splitlines() or ["no message"])[-1])
    return dest / built.stdout.strip().splitlines()[-1]


def sha256(path):
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def pinned(source):
    """What a first cell's source pins: (website, attnbook's version, the wheel's sha256), or None."""
    website, wheel = WEBSITE_LINE.search(source), WHEEL_LINE.search(source)
    return (website["website"], wheel["version"], wheel["sha256"]) if website and wheel else None


def to_pin(root=ROOT):
    """What the first cells should pin now: the Homepage and the wheel attnbook/ builds."""
    with tempfile.TemporaryDirectory() as folder:
        wheel = build_wheel(folder, root)
        return addresses(root)["Homepage"], wheel.name.split("-")[1], sha256(wheel)


def chapters(root=ROOT):
    return sorted((root / "chapters").glob("*.md"))


def pin(root=ROOT):
    """Write the address and the wheel's version and sha256 into every chapter's first cell."""
    website, version, digest = to_pin(root)
    changed = []
    for chapter in chapters(root):
        text = chapter.read_text()
        if pinned(text) is None:
            raise PublishError(f"{chapter.name}: no BOOK_WEBSITE or attnbook line in its first cell to pin")
        new = WEBSITE_LINE.sub(f"BOOK_WEBSITE = '{website}'", text, count=1)
        new = WHEEL_LINE.sub(f"'attnbook': ('{version}', '{digest}')", new, count=1)
        if new != text:
            chapter.write_text(new)
            changed.append(chapter.name)
    print(f"pinned attnbook {version} sha256 {digest[:12]}... and {website} in "
          f"{', '.join(changed) if changed else 'no chapter (all were already)'}"
          f"{': now run make notebooks' if changed else ''}")


def first_code_cell(notebook):
    """The source of a notebook's first code cell (nbformat 4 JSON: a string or a list of lines)."""
    source = next(c["source"] for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code")
    return "".join(source)


def check_address(root=ROOT):
    for key, url in addresses(root).items():
        if PLACEHOLDER in url:
            raise PublishError(f"the book's address is still a placeholder: set [project.urls] {key} = "
                               f"\"{url}\" in pyproject.toml to the real one, then run make notebooks site")


def check_pins(root=ROOT):
    """Every chapter and notebook pins the address and the wheel attnbook/ builds now: what pins."""
    website, version, digest = expected = to_pin(root)
    for chapter in chapters(root):
        if pinned(chapter.read_text()) != expected:
            raise PublishError(f"{chapter.name} does not pin {website} and attnbook {version} "
                               f"(sha256 {digest[:12]}..., the wheel attnbook/ builds now): run make pin")
    for notebook in sorted((root / "notebooks").glob("*.ipynb")):
        if pinned(first_code_cell(notebook)) != expected:
            raise PublishError(f"notebooks/{notebook.name} does not pin what its chapter pins: "
                               "run make notebooks")
    return expected


def check(root=ROOT):
    """Raise PublishError with the first thing that stops the book from being published."""
    check_address(root)
    website, version, digest = check_pins(root)
    served = root / "_build" / "html" / "_static" / f"attnbook-{version}-py3-none-any.whl"
    if not served.exists() or sha256(served) != digest:
        raise PublishError(f"_build/html/_static does not hold the pinned wheel (sha256 {digest[:12]}...): "
                           "run make site")


def main(argv):
    command = argv[1] if len(argv) > 1 else ""
    root = pathlib.Path(argv[2]) if len(argv) > 2 else ROOT  # another copy of the book (tests)
    try:
        if command == "pin":
            pin(root)
        elif command == "check":
            check(root)
            print(f"publish-check: ready to publish at {addresses(root)['Homepage']}")
        else:
            raise PublishError("usage: python site/publish.py pin | check [ROOT]")
    except PublishError as error:
        sys.exit(f"publish-check: {error}" if command == "check" else str(error))


if __name__ == "__main__":
    main(sys.argv)
