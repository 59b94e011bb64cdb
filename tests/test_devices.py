"""Every tensor a chapter computes with is on the kernel's device: a CUDA run must not meet its first
mixed-device error on the GPU.

There is no GPU here, so each chapter's code cells run on the CPU under a TorchFunctionMode that
plays a second device. `attnbook.setup()` returns `cpu:0` (a CPU device torch accepts and computes
on) and every tensor carries a tag:

* "device": made by a factory given `device=...` naming the book's device (or inside
  `with torch.device(device)`), moved with `.to(device)` / `.cuda()` (modules too: their parameters
  are moved by `.to`), or computed from a tagged tensor;
* "cpu": made with no device (the default), `.cpu()` / `.to('cpu')` (on purpose), from numpy, or
  computed from cpu tensors only. A module whose parameters were never placed is reported: move it
  with `.to(device)`, or say `.cpu()` where it stays on the CPU on purpose.

`x.device` answers `cpu:0` for a device tensor, so code that derives a device from a tensor
(`device=x.device`, `assert_close`'s device check) behaves as it will on CUDA. The mode flags what
CUDA would refuse: an op that mixes a device tensor with a cpu tensor of one or more dimensions
(0-dim cpu tensors mix fine, as on CUDA; `copy_` and cpu index tensors are allowed), a device
tensor given to numpy (`.numpy()`, matplotlib), and a factory drawing on the device from a cpu
`torch.Generator`. Each violation names the chapter, its line, the code there and the op. A cell
that raises is reported too (it would raise on CUDA: e.g. assert_close across devices).

Run one chapter by hand: `PYTHONPATH=. .venv/bin/python tests/test_devices.py chapters/1-self-attention.md`.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import traceback

import pytest
import torch

import attnbook

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))

#: Chapters with known violations today, and what they are (the chapter owners fix them; then the
#: entry goes). A chapter listed here that passes fails the test (strict xfail), so the list stays true.
KNOWN = {}

#: Cells that take long and only time or benchmark (their device use is the same as elsewhere).
SKIP_CELL = re.compile(r"^# NBVAL_IGNORE_OUTPUT", re.M)


# ----------------------------------------------------------------------------------- the runner
def cells_with_lines(path):
    """(first line in the .md, source) of each code cell, in order (MyST code-cell fences)."""
    text = path.read_text().splitlines()
    cells, i = [], 0
    while i < len(text):
        if text[i].startswith("```{code-cell}"):
            i += 1
            if i < len(text) and text[i].strip() == "---":  # metadata block
                i += 1
                while text[i].strip() != "---":
                    i += 1
                i += 1
            start, body = i, []
            while not text[i].startswith("```"):
                body.append(text[i])
                i += 1
            cells.append((start + 1, "\n".join(body)))
        i += 1
    return cells


def run_chapter(path):
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
    real_setup, chosen_before = attnbook.setup, attnbook.device.chosen_device

    def setup():
        real_setup()
        attnbook.device.chosen_device = book_device  # attnbook.check puts its cases on "the device" too
        return book_device

    attnbook.setup = setup
    deterministic_before = torch.are_deterministic_algorithms_enabled()
    violations, seen = [], set()
    cells = cells_with_lines(path)

    def where():
        """(md line, code) of the innermost frame in a chapter cell."""
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith("<cell "):
                start, source = cells[int(name[6:-1])]
                line = frame.f_lineno
                return start + line - 1, source.splitlines()[line - 1].strip()
            frame = frame.f_back
        return None, ""

    package = pathlib.Path(torch.__file__).parent
    internal = tuple(str(package / part) for part in (
        "_dynamo", "_higher_order_ops", "_inductor", "_functorch", "_prims", "_refs", "_decomp",
        "_subclasses", "fx", "nn/attention"))
    passing_on = (str(package / "overrides.py"), str(package / "utils" / "_device.py"))

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
                elif func in constructors:
                    result = False
                else:
                    result = tag(args[0])
                generator = kwargs.get("generator")
                if result == "device" and generator is not None and generator.device.type == "cpu":
                    flag(name, "random numbers drawn on the device from a CPU torch.Generator "
                               "(CUDA needs a CUDA generator: draw on the CPU, then .to(device))")
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
        return run_cells(path, cells, DeviceTags, violations)
    finally:  # the test process goes on: put back what was patched
        torch.nn.Parameter.__new__ = wrap
        torch.compile = compile_
        attnbook.setup, attnbook.device.chosen_device = real_setup, chosen_before
        torch.use_deterministic_algorithms(deterministic_before)
        os.environ.clear()
        os.environ.update(environ_before)


def run_cells(path, cells, DeviceTags, violations):
    import torch

    namespace = {"__name__": "__main__"}
    with DeviceTags():
        for index, (start, source) in enumerate(cells):
            if SKIP_CELL.search(source):
                continue
            try:
                exec(compile(source, f"<cell {index}>", "exec"), namespace)
            except Exception as error:  # it would fail on CUDA as well: report where, go on
                frames = [f for f in traceback.extract_tb(error.__traceback__)
                          if f.filename == f"<cell {index}>"]
                line = start + frames[-1].lineno - 1 if frames else start
                code = source.splitlines()[frames[-1].lineno - 1].strip() if frames else ""
                message = str(error).strip().splitlines()[0] if str(error).strip() else ""
                violations.append({"chapter": path.name, "line": line, "code": code,
                                   "op": type(error).__name__, "what": f"the cell raised: {message}"})
    for name, value in namespace.items():  # modules left on the CPU
        if isinstance(value, torch.nn.Module):
            stray = [p for p, t in value.named_parameters() if getattr(t, "_book_placed", None) is None]
            if stray:
                violations.append({"chapter": path.name, "line": None, "code": name, "op": "module",
                                   "what": f"module {name!r} was never moved: .to(device), or .cpu() to "
                                           f"keep it on the CPU on purpose ({', '.join(stray[:3])})"})
    return violations


def format_violations(violations):
    return "\n".join(f"{v['chapter']}:{v['line']}: {v['op']}: {v['what']}\n    {v['code']}"
                     for v in violations)


# ------------------------------------------------------------------------------------ the tests
@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_every_tensor_is_on_the_kernels_device(chapter, request):
    if chapter.stem in KNOWN:
        request.applymarker(pytest.mark.xfail(reason=KNOWN[chapter.stem], strict=True))
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, __file__, str(chapter)], capture_output=True, text=True,
                          cwd=ROOT, timeout=600, env=env)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    violations = json.loads(done.stdout.strip().splitlines()[-1])
    assert not violations, "mixed devices (a CUDA run would fail here):\n" + format_violations(violations)


def test_the_tagger_finds_what_cuda_would_refuse(tmp_path):
    chapter = tmp_path / "9-example.md"
    chapter.write_text(
        "```{code-cell} ipython3\n"
        "import attnbook\nimport torch\nfrom torch import nn\n"
        "device = attnbook.setup()\n"
        "x = torch.randn(3, 4).to(device)\n"
        "y = x + torch.ones(3, 4)\n"            # cpu tensor with a device tensor
        "z = x * torch.tensor(2.0)\n"            # 0-dim cpu tensor: fine
        "w = x[torch.tensor([0, 2])]\n"          # cpu index into a device tensor: fine
        "m = nn.Linear(4, 2)\n"
        "m(x)\n"                                  # module not moved
        "k = torch.arange(3, device=x.device)\n"  # the device, derived from a tensor: fine
        "moved = nn.Linear(4, 2).to(device)\n"
        "moved(x + k[:, None])\n"                 # fine
        "x.numpy()\n"
        "with torch.device(device):\n"
        "    made_there = nn.Linear(4, 2)\n"
        "made_there(x)\n"                       # fine: made on the device
        "kept = nn.Embedding(4, 2).cpu()\n"       # on the CPU on purpose: fine
        "kept(torch.tensor([1]))\n"
        "x.cpu().numpy()\n"                     # fine, and x stays on the device:
        "x + torch.ones(1, 4, device=x.device)\n"
        "```\n")
    found = run_chapter(chapter)
    assert [(v["line"], v["op"]) for v in found] == [(7, "add"), (11, "linear"), (15, "numpy"),
                                                     (None, "module")], format_violations(found)




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
    found = run_chapter(pathlib.Path(sys.argv[1]))
    print(format_violations(found), file=sys.stderr)
    print(json.dumps(found))
    sys.exit(1 if found else 0)
