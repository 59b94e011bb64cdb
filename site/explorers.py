"""Each section's explorer as pictures precomputed for a grid of d and n values (the website's sliders).

For every notebook whose stored outputs show an `attnbook.LiveFigure` (text/plain "LiveFigure(..."),
the code cells that the cell showing it needs (found from the names each cell binds, changes and
reads; every cell up to it when that run errs or draws another picture at the defaults than the
notebook stores) are run in a kernel (nbclient, working directory notebooks/); then that
LiveFigure is driven through the grid in the same kernel:
`live.set(d=..., n=..., <other controls at their defaults>)`, and the picture it shows
(`live.image.value`, the JPEG the live widget sends, as WebP at quality 80: ~100 kB), its
readout and its words (`live.description`, from the section's describing function: the picture's
alt text) are written to `<out>/<section>/`: one file per distinct picture (named by its hash) and
`manifest.json`.

The grid: for d and for n, up to GRID_SIZE of the slider's own valid values, spread geometrically
around the default (the default included). When d does nothing at the defaults (its slider is
disabled there, as in section 4's first variant), the first option of a menu under which d
does something is chosen instead, and the manifest says so.

Cached: the manifest records a hash of the notebook, attnbook/*.py and this file; a section whose
hash is unchanged is not rendered again.
"""
import ast
import base64
import concurrent.futures
import hashlib
import io
import json
import os
import pathlib
import symtable
import sys
import time

import nbformat
from nbclient import NotebookClient
from PIL import Image, ImageChops, ImageStat

ROOT = pathlib.Path(__file__).resolve().parents[1]
GRID_SIZE = 7
MAX_MEAN_DIFFERENCE = 1  # grey levels over a 160 x 80 thumbnail: measured 0.1-0.3 for the same picture,
# >= 1.45 for the nearest other grid point (section 2)
KERNEL = os.environ.get("BOOK_SITE_KERNEL")  # default: the kernel the notebook names

# Runs in the kernel before the notebook: remember every LiveFigure made.
HOOK = """
import attnbook.widgets as _site_widgets
_site_figures = []
_site_init = _site_widgets.LiveFigure.__init__
def _site_record(self, *args, **kwargs):
    _site_figures.append(self)
    _site_init(self, *args, **kwargs)
_site_widgets.LiveFigure.__init__ = _site_record
"""

# Runs in the kernel after the explorer's cell: drive it through the grid, write pictures + manifest.
DRIVE = r'''
def _site_drive(out, grid_size):
    import hashlib, html, io, json, math, pathlib, re
    import PIL.Image
    picture_format = dict(format='webp', quality=80, method=4)
    import ipywidgets, traitlets
    live = _site_figures[-1]
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    defaults = live.values()
    controls = live.controls

    def valid(control):
        if isinstance(control, ipywidgets.SelectionSlider):  # its options, as the reader can set them
            return list(control.options)
        step = control.step or 1
        return list(range(control.min, control.max + 1, step))

    def grid(control, default):
        values = valid(control)
        if len(values) <= grid_size:
            return values
        near = lambda target: min(values, key=lambda v: (abs(math.log(max(v, 0.5) / max(target, 0.5))), v))
        chosen = {default}
        for factor in (2, 4, 8, 16, 32, 64, 128):
            for target in (default * factor, default / factor):
                if len(chosen) < grid_size and values[0] <= target <= values[-1]:
                    chosen.add(near(target))
            if len(chosen) >= grid_size:
                break
        return sorted(chosen)

    def setting(d, n):
        values = {'d': d, 'n': n}
        values.update((k, v) for k, v in base.items() if k not in values)
        return values

    def show(values):
        try:
            live.set(**values)
        except traitlets.TraitError:
            pass  # a follower control refused the default (the drawn picture is for what it holds)

    base, chosen_option = dict(defaults), None
    show(base)
    thumb = io.BytesIO()  # the picture at the defaults, small: checked against the stored one
    PIL.Image.open(io.BytesIO(live.image.value)).convert('L').resize((160, 80)).save(thumb, format='png')
    if controls['d'].disabled:  # d does nothing here: take the first menu option under which it does
        for name, control in controls.items():
            if isinstance(control, ipywidgets.Dropdown) and chosen_option is None:
                for option in control.options:
                    show({**base, name: option})
                    if not controls['d'].disabled:
                        base[name], chosen_option = option, (control.description or name, str(option))
                        break
        show(base)
    ds, ns = grid(controls['d'], defaults['d']), grid(controls['n'], defaults['n'])
    pictures = {}
    for d in ds:
        for n in ns:
            show(setting(d, n))
            buffer = io.BytesIO()  # WebP: a third of the live JPEG's bytes, text as sharp at this density
            PIL.Image.open(io.BytesIO(live.image.value)).convert('RGB').save(buffer, **picture_format)
            data = buffer.getvalue()
            name = hashlib.sha1(data).hexdigest()[:16] + '.webp'
            if not (out / name).exists():
                (out / name).write_bytes(data)
            text = html.unescape(re.sub(r'<[^>]+>', '', live.readout.value or ''))
            pictures[f'{d},{n}'] = {'src': name, 'readout': text, 'error': live.error,
                                    'alt': live.description,  # the section's describing function
                                    'shown': {k: str(v) for k, v in live.values().items()}}
    show(setting(defaults['d'], defaults['n']) if chosen_option is None else dict(defaults))
    labels = {name: (getattr(controls[name], 'description', '') or name) for name in ('d', 'n')}
    width, height = live.css_size
    return {'d': ds, 'n': ns, 'default': {'d': defaults['d'], 'n': defaults['n']}, 'labels': labels,
            'others': {k: str(v) for k, v in base.items() if k not in ('d', 'n')},
            'chosen_option': chosen_option, 'width': width, 'height': height, 'pictures': pictures,
            'check': __import__('base64').b64encode(thumb.getvalue()).decode()}
'''


def explorer_cell(nb):
    """Index of the code cell whose stored output shows a LiveFigure (None: the notebook has none)."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("data", {}).get("text/plain", "").startswith("LiveFigure("):
                return index
    return None


def source_hash(notebook):
    digest = hashlib.sha256()
    for path in [notebook, pathlib.Path(__file__), *sorted((ROOT / "attnbook").glob("*.py"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def names(source):
    """(names a cell binds or changes at the top level, global names it reads anywhere, a
    function's body included); None when it is not plain Python (a magic)."""
    try:
        table = symtable.symtable(source, "<cell>", "exec")
    except SyntaxError:
        return None
    bound = {sym.get_name() for sym in table.get_symbols() if sym.is_assigned() or sym.is_imported()}
    read = {sym.get_name() for sym in table.get_symbols() if sym.is_referenced()}
    nested = list(table.get_children())
    while nested:
        scope = nested.pop()
        read |= {sym.get_name() for sym in scope.get_symbols() if sym.is_global() and sym.is_referenced()}
        nested += scope.get_children()
    return bound | changed(source), read


def changed(source):
    """Names whose objects a cell changes at the top level: `x.a = ...`, `x[i] = ...`, and the
    arguments of a decorator (d2l's `@d2l.add_to_class(C)` adds a method to C)."""
    found = set()
    for statement in ast.parse(source).body:
        targets = []
        if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = getattr(statement, "targets", None) or [statement.target]
        for target in targets:
            while isinstance(target, (ast.Attribute, ast.Subscript)):
                target = target.value
                if isinstance(target, ast.Name):
                    found.add(target.id)
        for decorator in getattr(statement, "decorator_list", []):
            if isinstance(decorator, ast.Call):
                found |= {node.id for arg in decorator.args for node in ast.walk(arg)
                          if isinstance(node, ast.Name)}
    return found


def needed(cells):
    """The cells the last one needs: walking back, each cell that binds a name a needed cell reads
    (and every cell that is not plain Python); then the cells that bind nothing (settings, seeds,
    checks) unless they read a name only a left-out cell binds."""
    found = {id(cell): names(cell.source) for cell in cells}
    wanted, keep = set(), set()
    for cell in reversed(cells):
        bound_read = found[id(cell)]
        if cell is cells[-1] or bound_read is None or bound_read[0] & wanted:
            keep.add(id(cell))
            if bound_read is not None:
                wanted |= bound_read[1]
    left_out = set().union(*(found[id(c)][0] for c in cells if id(c) not in keep))
    for cell in cells:
        bound_read = found[id(cell)]
        if id(cell) not in keep and not bound_read[0] and not bound_read[1] & left_out:
            keep.add(id(cell))
    return [cell for cell in cells if id(cell) in keep]


def matches_stored(nb, index, data):
    """Whether the picture drawn at the defaults is the one the notebook stores (grey 160 x 80)."""
    stored = next((o["data"]["image/png"] for o in nb.cells[index].outputs
                   if "image/png" in o.get("data", {})), None)
    if stored is None:
        return True
    mine = Image.open(io.BytesIO(base64.b64decode(data["check"]))).convert("L")
    theirs = Image.open(io.BytesIO(base64.b64decode(stored))).convert("L").resize(mine.size)
    return ImageStat.Stat(ImageChops.difference(mine, theirs)).mean[0] < MAX_MEAN_DIFFERENCE


def drive(nb, index, folder, skip):
    """Run the code cells up to the explorer's (with `skip`, only those it needs), then the grid.

    Returns the grid's description, or None (drive.error says why) when a cell raised: any cell
    when cells were skipped, else the explorer's or the grid's (a timing check may fail under
    load; nothing the explorer draws depends on one), or when the picture at the defaults is not
    the one the notebook stores."""
    for old in folder.glob("*"):
        old.unlink()
    cells = [cell for cell in nb.cells[:index + 1] if cell.cell_type == "code"]
    cells = [nbformat.v4.new_code_cell(HOOK), *(needed(cells) if skip else cells)]
    cells.append(nbformat.v4.new_code_cell(
        DRIVE + f"\nprint(__import__('json').dumps(_site_drive({str(folder)!r}, {GRID_SIZE})))"))
    run = nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)
    for cell in run.cells:
        cell.outputs = []
    client = NotebookClient(run, **({"kernel_name": KERNEL} if KERNEL else {}), timeout=900,
                            allow_errors=True, resources={"metadata": {"path": str(ROOT / "notebooks")}})
    client.execute()
    checked = run.cells if skip else run.cells[-2:]
    errors = [o for cell in checked for o in cell.outputs if o.get("output_type") == "error"]
    if errors:
        drive.error = f"{errors[0]['ename']}: {errors[0]['evalue']}"
        return None
    text = "".join(o.get("text", "") for o in run.cells[-1].outputs if o.get("name") == "stdout")
    data = json.loads(text.strip().splitlines()[-1])
    if not matches_stored(nb, index, data):
        drive.error = "a picture at the defaults unlike the stored one"
        return None
    data["cells_run"] = len(cells) - 1
    data.pop("check")
    return data


def render(notebook, out):
    """Render one notebook's explorer grid into out/<section>/ unless its cache is current.

    Returns (section, seconds, 'cached' | 'rendered' | 'no explorer')."""
    notebook = pathlib.Path(notebook)
    # absolute: the kernel runs in notebooks/
    section, folder = notebook.stem, pathlib.Path(out).resolve() / notebook.stem
    manifest, key = folder / "manifest.json", source_hash(notebook)
    if manifest.exists():
        cached = json.loads(manifest.read_text())
        if cached.get("hash") == key and all((folder / picture["src"]).exists()
                                             for picture in cached["pictures"].values()):
            return section, 0.0, "cached"
    start = time.perf_counter()
    nb = nbformat.read(notebook, as_version=4)
    index = explorer_cell(nb)
    if index is None:
        return section, 0.0, "no explorer"
    folder.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONPATH", str(ROOT))  # the kernel imports attnbook from the checkout
    os.environ.setdefault("BOOK_DEVICE", "cpu")  # the pictures the stored outputs show
    # First the main line only (deeper parts hold the proofs, trainings and timings: most of the
    # time); when that leaves any error, the whole notebook up to the explorer.
    data = drive(nb, index, folder, skip=True)
    if data is None:
        print(f"explorer pictures: {section}: the cells the explorer needs left {drive.error}; "
              "running every cell")
        data = drive(nb, index, folder, skip=False)
    if data is None:
        raise RuntimeError(f"{section}: the explorer could not be driven: {drive.error}")
    data.update(section=section, hash=key, seconds=round(time.perf_counter() - start, 1))
    manifest.write_text(json.dumps(data, indent=1, ensure_ascii=False))
    return section, time.perf_counter() - start, "rendered"


def render_all(out, notebooks=None, workers=2):
    notebooks = sorted(notebooks or (ROOT / "notebooks").glob("*.ipynb"))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for section, seconds, what in pool.map(lambda nb: render(nb, out), notebooks):
            print(f"explorer pictures: {section}: {what}" + (f" in {seconds:.1f} s" if seconds else ""))


if __name__ == "__main__":
    render_all(sys.argv[1] if len(sys.argv) > 1 else ROOT / "_build" / "explorers",
               notebooks=sys.argv[2:] or None)
