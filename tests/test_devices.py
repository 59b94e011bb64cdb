"""Every tensor a chapter computes with is on the kernel's device: a CUDA run must not meet its first
mixed-device error on the GPU.

There is no GPU here, so each chapter's code cells run on the CPU under a TorchFunctionMode that
plays a second device. `attnbook.setup()` picks `cpu:0` (a CPU device torch accepts and computes
on) and makes it torch's default device, as it makes CUDA on a GPU (with the rest of
`attnbook.place_tensors_on`: random numbers drawn on the CPU then moved, numpy reading a CPU copy).
Every tensor carries a tag:

* "device": made by a factory given no device while the default device is the book's (after
  setup(): so every nn.Module made then), or given `device=...` naming it (or inside
  `with torch.device(device)`), moved with `.to(device)` / `.cuda()` (modules too: their parameters
  are moved by `.to`), or computed from a tagged tensor;
* "cpu": made with no device before setup(), `device='cpu'`, `.cpu()` / `.to('cpu')` (on purpose),
  from numpy (`torch.from_numpy`), by the factories the default device does not reach
  (`torch.normal(mean, std, size)`), or computed from cpu tensors only. A module whose parameters
  were never placed (made before setup()) is reported: make it after setup(), or say `.cpu()` where
  it stays on the CPU on purpose.

`x.device` answers `cpu:0` for a device tensor, so code that derives a device from a tensor
(`device=x.device`, `assert_close`'s device check) behaves as it will on CUDA. The mode flags what
CUDA would refuse: an op that mixes a device tensor with a cpu tensor of one or more dimensions
(0-dim cpu tensors mix fine, as on CUDA; `copy_` and cpu index tensors are allowed), a device
tensor given to numpy (`.numpy()`, matplotlib: setup() turns these into CPU copies), and a random
draw on the device from a cpu `torch.Generator`; and what CUDA would compute differently: a random
draw on the device from the device's own generator (setup() draws both on the CPU instead, layers'
initial weights too; so an explicit `device=` on a random factory is reported). Each violation names
the chapter, its line, the code there and the op. A cell that raises is reported too (it would
raise on CUDA: e.g. assert_close across devices).

Run one chapter by hand: `PYTHONPATH=. .venv/bin/python tests/test_devices.py chapters/1-self-attention.md`.
"""
import json
import os
import pathlib
import re
import sys
import traceback

import pytest
import torch
from shown_figures import chapter_run, check_text, run_cell

import attnbook

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))

#: Chapters with known violations today, and what they are (the chapter owners fix them; then the
#: entry goes). A chapter listed here that passes fails the test (strict xfail), so the list stays true.
KNOWN = {}

#: Cells that take long and only time or benchmark (their device use is the same as elsewhere).
SKIP_CELL = re.compile(r"^# NBVAL_IGNORE_OUTPUT", re.M)


# ----------------------------------------------------------------------------------- the runner
FOLDED_TAGS = re.compile(r"^tags:.*\b(deeper|answer)\b")  # a deeper part's cell or a worked answer


def cells_with_lines(path):
    """(first line in the .md, source, folded) of each code cell, in order (MyST code-cell fences);
    folded: tagged `deeper` or `answer`, so the website shows its figures in a fold's narrower column."""
    text = path.read_text().splitlines()
    cells, i = [], 0
    while i < len(text):
        if text[i].startswith("```{code-cell}"):
            i += 1
            folded = False
            if i < len(text) and text[i].strip() == "---":  # metadata block
                i += 1
                while text[i].strip() != "---":
                    folded = folded or bool(FOLDED_TAGS.match(text[i]))
                    i += 1
                i += 1
            start, body = i, []
            while not text[i].startswith("```"):
                body.append(text[i])
                i += 1
            cells.append((start + 1, "\n".join(body), folded))
        i += 1
    return cells


def run_chapter(path, on_figure=None):
    """Execute the chapter's cells under the device tagger; return a list of violation dicts.

    The environment is put back afterwards: the pytest process goes on to start the notebooks'
    kernels, which inherit it (MPLBACKEND=Agg there would make every plt.show() draw nothing)."""
    environ_before = dict(os.environ)
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ["BOOK_DEVICE"] = "cpu"
    import torch
    import torch.utils._device
    from torch.overrides import TorchFunctionMode
    from torch.utils import _pytree as pytree

    import attnbook

    book_device = torch.device("cpu", 0)  # "the device": computes on the CPU, tells itself apart
    real_pick, chosen_before = attnbook.pick_device, attnbook.device.chosen_device

    def pick_device():  # what setup() calls: the kernel's device is "the device" here
        attnbook.device.chosen_device = book_device  # attnbook.check puts its cases on "the device" too
        return book_device

    attnbook.pick_device = pick_device
    deterministic_before = torch.are_deterministic_algorithms_enabled()
    violations, seen = [], set()
    cells = cells_with_lines(path)

    def where():
        """(md line, code) of the innermost frame in a chapter cell."""
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith("<cell "):
                start, source, _ = cells[int(name[6:-1])]
                line = frame.f_lineno
                return start + line - 1, source.splitlines()[line - 1].strip()
            frame = frame.f_back
        return None, ""

    package = pathlib.Path(torch.__file__).parent
    internal = tuple(str(package / part) for part in (
        "_dynamo", "_higher_order_ops", "_inductor", "_functorch", "_prims", "_refs", "_decomp",
        "_subclasses", "fx", "nn/attention"))
    passing_on = (str(package / "overrides.py"), str(package / "utils" / "_device.py"),
                  attnbook.device.__file__)  # setup()'s own mode passes calls on too

    def torch_inside():
        """True when torch's own machinery (compiler, flex attention, decompositions) made the call:
        it places its helper tensors itself."""
        frame = sys._getframe(3)  # torch_inside <- flag <- __torch_function__ <- the caller
        while frame is not None and frame.f_code.co_filename.startswith(passing_on):
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename.startswith(internal)

    def flag(op, what):
        if torch_inside():
            return
        line, code = where()
        key = (line, op, what)
        if key not in seen:
            seen.add(key)
            violations.append({"chapter": path.name, "line": line, "code": code, "op": op, "what": what})

    def placed(spec):
        """'device' for the book's device, 'cpu' for an explicit CPU."""
        spec = torch.device(spec)
        return "device" if spec.type != "cpu" or spec.index == 0 else "cpu"

    def tag(x):  # True on the book's device; False on the CPU, by default or on purpose
        return getattr(x, "_book_placed", None) == "device"

    def set_tag(x, value):
        if isinstance(x, torch.Tensor):
            if isinstance(value, bool):
                value = "device" if value else None
            x._book_placed = value

    def describe(x):
        return f"{'device' if tag(x) else 'cpu'} tensor {tuple(x.shape)}"

    constructors = torch.utils._device._device_constructors()
    like = {torch.zeros_like, torch.ones_like, torch.empty_like, torch.full_like, torch.rand_like,
            torch.randn_like, torch.randint_like}
    new = {torch.Tensor.new_zeros, torch.Tensor.new_ones, torch.Tensor.new_empty, torch.Tensor.new_full,
           torch.Tensor.new_tensor}
    to_numpy = {torch.Tensor.numpy, torch.Tensor.__array__}
    random = {torch.rand, torch.randn, torch.randint, torch.randperm, torch.rand_like, torch.randn_like,
              torch.randint_like, torch.normal, torch.bernoulli, torch.multinomial, torch.poisson,
              torch.Tensor.uniform_, torch.Tensor.normal_, torch.Tensor.random_, torch.Tensor.exponential_,
              torch.Tensor.cauchy_, torch.Tensor.log_normal_, torch.Tensor.geometric_,
              torch.Tensor.bernoulli_, torch.Tensor.bernoulli, torch.Tensor.multinomial,
              # nn.init's own: they hand themselves to the modes, and the fills inside them reach none
              *(getattr(torch.nn.init, name) for name in ("uniform_", "normal_", "trunc_normal_",
                "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_", "orthogonal_"))}
    def is_slot(func, attribute, method):  # torch.Tensor.device.__get__ etc.: a new wrapper each time
        return getattr(func, "__self__", None) is getattr(torch._C.TensorBase, attribute) and \
            getattr(func, "__name__", None) == method

    no_compute = {"_has_compatible_shallow_copy_type", "copy_"}  # checks, and cross-device copies
    getitem, setitem = torch.Tensor.__getitem__, torch.Tensor.__setitem__

    class DeviceTags(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", None) or str(func)
            if is_slot(func, "device", "__get__"):
                return book_device if tag(args[0]) else func(*args)
            if is_slot(func, "data", "__set__"):
                func(*args)
                set_tag(args[0], getattr(args[1], "_book_placed", None))
                return None
            if func in to_numpy and tag(args[0]):
                flag(name, f"{describe(args[0])} to numpy: CUDA tensors need .cpu() first")
            out = func(*args, **kwargs)
            tensors = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
            if func in constructors or func in like or func in new:
                if "device" in kwargs and kwargs["device"] is not None:
                    result = placed(kwargs["device"])
                elif func in constructors:  # torch's default device fills in the device
                    default = torch.get_default_device()
                    result = False if default == torch.device("cpu") else placed(default)
                else:
                    result = tag(args[0])
            elif func is torch.Tensor.to:
                rest = args[1:]
                if rest and isinstance(rest[0], torch.Tensor):
                    result = tag(rest[0])
                else:
                    target = torch._C._nn._parse_to(*rest, **kwargs)[0]
                    result = tag(args[0]) if target is None else placed(target)
            elif func is torch.Tensor.cpu:
                result = "cpu"
            elif func is torch.Tensor.cuda:
                result = "device"
            else:
                result = any(tag(x) for x in tensors)
                check = tensors
                if name == "flex_attention":  # its block mask is built by torch, for the queries' device
                    check = [x for x in args[:3] if isinstance(x, torch.Tensor)]
                if func in (getitem, setitem):  # cpu index tensors into a device tensor are fine
                    indexed = [args[0]] + ([args[2]] if func is setitem and len(args) > 2 else [])
                    check = [x for x in indexed if isinstance(x, torch.Tensor)]
                    if not tag(args[0]):  # device index tensors into a cpu tensor are not
                        check = tensors
                if name not in no_compute and result:
                    strays = [x for x in check if not tag(x) and x.dim() > 0]
                    if strays:
                        on = next(x for x in check if tag(x))
                        flag(name, f"{describe(strays[0])} with {describe(on)}")
            if func in random and result in (True, "device"):
                generator = kwargs.get("generator")
                if generator is None:
                    flag(name, "random numbers drawn by the device's own generator (CUDA's differ from the "
                               "CPU kernel's: give no device=, and setup() draws them on the CPU)")
                elif generator.device.type == "cpu":
                    flag(name, "random numbers drawn on the device from a CPU torch.Generator (CUDA "
                               "refuses: give no device=, and setup() draws them on the CPU)")
            moves = func in (torch.Tensor.to, torch.Tensor.cpu, torch.Tensor.cuda)
            if moves and out is args[0] and getattr(out, "_book_placed", None) != result:
                out = out.view_as(out)  # on CUDA a move is a new tensor; the original stays where it was
            inputs = {id(x) for x in tensors}
            for x in pytree.tree_leaves(out):
                if isinstance(x, torch.Tensor) and id(x) not in inputs:
                    set_tag(x, result)
            return out

    wrap = torch.nn.Parameter.__new__  # nn.Parameter(t) is a new object: it keeps t's place

    def parameter(cls, data=None, requires_grad=True):
        made = wrap(cls, data, requires_grad)
        set_tag(made, getattr(data, "_book_placed", None))
        return made

    torch.nn.Parameter.__new__ = parameter
    compile_ = torch.compile  # the compiler does not trace under a TorchFunctionMode: run eagerly
    torch.compile = lambda model=None, **options: model if model is not None else (lambda fn: fn)
    try:
        return run_cells(path, cells, DeviceTags, violations, on_figure)
    finally:  # the test process goes on: put back what was patched
        torch.nn.Parameter.__new__ = wrap
        torch.compile = compile_
        attnbook.pick_device, attnbook.device.chosen_device = real_pick, chosen_before
        torch.use_deterministic_algorithms(deterministic_before)
        os.environ.clear()
        os.environ.update(environ_before)


def run_cells(path, cells, DeviceTags, violations, on_figure=None):
    import torch

    import attnbook

    namespace = {"__name__": "__main__"}
    with DeviceTags():
        try:
            for index, (start, source, folded) in enumerate(cells):
                if SKIP_CELL.search(source):
                    continue
                try:
                    run_cell(source, f"<cell {index}>", namespace,  # what it shows: to on_figure
                             on_figure and (lambda *shown, start=start, folded=folded:
                                            on_figure(start, folded, *shown)))
                except Exception as error:  # it would fail on CUDA as well: report where, go on
                    frames = [f for f in traceback.extract_tb(error.__traceback__)
                              if f.filename == f"<cell {index}>"]
                    line = start + frames[-1].lineno - 1 if frames else start
                    code = source.splitlines()[frames[-1].lineno - 1].strip() if frames else ""
                    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
                    violations.append({"chapter": path.name, "line": line, "code": code,
                                       "op": type(error).__name__, "what": f"the cell raised: {message}"})
        finally:  # setup()'s mode sits above this one: it leaves first, with the default device
            attnbook.place_tensors_on("cpu")
    for name, value in namespace.items():  # modules left on the CPU
        if isinstance(value, torch.nn.Module):
            stray = [p for p, t in value.named_parameters() if getattr(t, "_book_placed", None) is None]
            if stray:
                violations.append({"chapter": path.name, "line": None, "code": name, "op": "module",
                                   "what": f"module {name!r} was made on the CPU (before setup()?): make it "
                                           f"after, or .cpu() to keep it there on purpose "
                                           f"({', '.join(stray[:3])})"})
    return violations


def format_violations(violations):
    return "\n".join(f"{v['chapter']}:{v['line']}: {v['op']}: {v['what']}\n    {v['code']}"
                     for v in violations)


# ------------------------------------------------------------------------------------ the tests
@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_every_tensor_is_on_the_kernels_device(chapter, request):
    if chapter.stem in KNOWN:
        request.applymarker(pytest.mark.xfail(reason=KNOWN[chapter.stem], strict=True))
    violations = chapter_run(chapter)["violations"]  # the run test_figure_text reads figures from
    assert not violations, "mixed devices (a CUDA run would fail here):\n" + format_violations(violations)


def cells(*sources):
    """A chapter of code cells (MyST), one per source."""
    return "".join(f"```{{code-cell}} ipython3\n{source}```\n" for source in sources)


def test_after_setup_code_written_for_the_cpu_runs_on_the_device(tmp_path):
    """The book's way: no device= and no .to(device). What is left on the CPU is still found."""
    chapter = tmp_path / "9-example.md"
    chapter.write_text(cells(
        "import attnbook\nimport numpy as np\nimport torch\nfrom torch import nn\n"
        "torch.manual_seed(0)\n"
        "early = nn.Linear(4, 2)\n"               # made before setup(): on the CPU
        "reference = nn.Linear(4, 2)\n",
        "device = attnbook.setup()\n"
        "x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))\n"  # drawn on the CPU, moved
        "y = x + torch.ones(3, 4)\n"             # fine: both made on the device
        "torch.manual_seed(0)\n"
        "layer = nn.Linear(4, 2)\n"              # made on the device, drawn from the CPU's generator:
        "torch.manual_seed(0)\n"
        "assert torch.equal(nn.Linear(4, 2).weight, layer.weight)\n"
        "seed = torch.empty((), dtype=torch.int64).random_()\n"  # as DataLoader's shuffling draws one
        "layer(x + torch.arange(4))\n"           # fine
        "early(x)\n"                              # 20: a CPU module meets a device tensor
        "x + torch.from_numpy(np.ones((3, 4), dtype=np.float32))\n"  # 21: from numpy: the CPU
        "x + torch.normal(0.0, 1.0, (3, 4))\n"  # 22: torch.normal ignores the default device
        "np.asarray(x), x.numpy(), x.sum().item()\n"  # fine: a CPU copy
        "torch.randn(3, device=device, generator=torch.Generator())\n"  # 24: explicit device, CPU generator
        "torch.rand(3, device=device)\n"          # 25: the device's generator: other numbers than the CPU's
        "x * torch.tensor(2.0, device='cpu')\n"  # 0-dim cpu tensor: fine
        "x[torch.tensor([0, 2], device='cpu')]\n"  # cpu index into a device tensor: fine
        "kept = nn.Embedding(4, 2).cpu()\n"       # on the CPU on purpose: fine
        "kept(torch.tensor([1], device='cpu'))\n"
        "with torch.device('meta'):\n"
        "    shapes_only = nn.Linear(4096, 4096)\n"  # no memory, no CPU draws
        "assert shapes_only.weight.is_meta and x.device == device\n"))
    found = run_chapter(chapter)
    assert [(v["line"], v["op"]) for v in found] == [
        (20, "linear"), (21, "add"), (22, "add"), (24, "randn"), (25, "rand"),
        (None, "module"), (None, "module")
    ], format_violations(found)
    assert {v["code"] for v in found if v["op"] == "module"} == {"early", "reference"}
    assert torch.get_default_device() == torch.device("cpu")  # the test process is left as it was


def test_the_tagger_finds_what_cuda_would_refuse(tmp_path):
    """Without the book's setup(): the device named in each call, then torch's default device."""
    chapter = tmp_path / "9-example.md"
    chapter.write_text(cells(
        "import torch\n"
        "device = torch.device('cpu', 0)\n"       # the played device
        "x = torch.ones(3, 4, device=device)\n"
        "x + torch.ones(3, 4)\n"                   # 5: a cpu tensor with a device tensor
        "x.numpy()\n"                              # 6: CUDA tensors need .cpu() first
        "torch.randn(3, generator=torch.Generator(), device=device)\n"  # 7: CUDA refuses a CPU generator
        "torch.set_default_device(device)\n"
        "x + torch.zeros(3, 4)\n"                  # fine: made on the default device
        "x + torch.zeros(3, 4, device='cpu')\n"    # 10
        "torch.randn(3, generator=torch.Generator())\n"))  # 11: on the default device, a CPU generator
    found = run_chapter(chapter)
    assert [(v["line"], v["op"]) for v in found] == [(5, "add"), (6, "numpy"), (7, "randn"), (10, "add"),
                                                     (11, "randn")], format_violations(found)
    assert torch.get_default_device() == torch.device("cpu")


# ------------------------------------------------------------- the settings that make CUDA = CPU
def test_setup_turns_off_tf32_and_turns_on_deterministic_algorithms(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setenv("BOOK_DEVICE", "cpu")
    before = torch.are_deterministic_algorithms_enabled()
    try:
        assert attnbook.setup() == torch.device("cpu")
        assert torch.are_deterministic_algorithms_enabled()
        assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
        assert torch.get_float32_matmul_precision() == "highest" and not torch.backends.cudnn.benchmark
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    finally:
        torch.use_deterministic_algorithms(before)


def test_the_cuda_kernelspec_sets_the_cublas_workspace():
    makefile = (ROOT / "Makefile").read_text()
    cuda_line = next(line for line in makefile.splitlines() if "--name book-cuda" in line)
    assert "--env BOOK_DEVICE cuda" in cuda_line and "--env CUBLAS_WORKSPACE_CONFIG :4096:8" in cuda_line


def test_cuda_kernel_without_gpu_stops_the_notebook_with_one_line(monkeypatch, capsys):
    """In Jupyter, setup() on a machine with no GPU: the message alone, and the cell fails (Run All stops)."""
    from IPython.core.interactiveshell import InteractiveShell

    from attnbook.device import NoGPUError

    monkeypatch.setenv("BOOK_DEVICE", "cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    shell = InteractiveShell.instance(colors="nocolor")
    try:
        result = shell.run_cell("import attnbook\ndevice = attnbook.setup()\n")
        shown = capsys.readouterr()
        assert isinstance(result.error_in_exec, NoGPUError) and not result.success
        lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in (shown.out + shown.err).splitlines()
                 if line.strip()]
        assert len(lines) == 1, lines
        assert lines[0].startswith("NoGPUError: BOOK_DEVICE=cuda but torch sees no GPU"), lines
        assert "device" not in shell.user_ns  # nothing after the failing line ran
        other = shell.run_cell("raise KeyError('other errors keep their traceback')")
        assert "Traceback" in capsys.readouterr().out and not other.success
    finally:
        shell.set_custom_exc((), None)
        InteractiveShell.clear_instance()


if __name__ == "__main__":
    figures = []  # what tests/test_figure_text.py checks: each figure the chapter shows
    found = run_chapter(pathlib.Path(sys.argv[1]), on_figure=lambda *shown: check_text(figures, *shown))
    print(format_violations(found), file=sys.stderr)
    print(json.dumps({"violations": found, "figures": figures}))
    sys.exit(1 if found else 0)
