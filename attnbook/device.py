"""Which device the notebooks compute on (chosen by the kernel, not by the notebook), and the
settings that make the CUDA kernel compute what the CPU kernel computes."""
import contextlib
import os

import torch
from torch.overrides import TorchFunctionMode

#: The variable that chooses the device ("cpu" or "cuda"); unset means the GPU when torch sees one,
#: else the CPU. The two convenience kernelspecs (make kernels) set it; the standard python3 one does not.
DEVICE_VARIABLE = "BOOK_DEVICE"

#: Deterministic cuBLAS needs a fixed workspace (NVIDIA's cuBLAS docs, "Results reproducibility");
#: without it torch.use_deterministic_algorithms(True) makes every CUDA matmul raise. The CUDA
#: kernelspec sets it; `deterministic()` sets it too, before cuBLAS first reads it.
CUBLAS_VARIABLE, CUBLAS_WORKSPACE = "CUBLAS_WORKSPACE_CONFIG", ":4096:8"

#: The device the last pick_device() returned (setup() calls it); the CPU before that.
#: attnbook.check builds its cases there, as the notebook builds its tensors.
chosen_device = torch.device("cpu")


class DeviceChoiceError(ValueError):
    """$BOOK_DEVICE names no device the book knows."""


class NoGPUError(RuntimeError):
    """The CUDA kernel was started on a machine where torch sees no GPU."""


def pick_device(environ=None):
    """Return the torch.device named by $BOOK_DEVICE (unset or empty: CUDA when torch sees a GPU, else
    the CPU), failing with one clear line if the named one cannot work."""
    environ = os.environ if environ is None else environ
    name = environ.get(DEVICE_VARIABLE, "").strip().lower()
    if not name:
        return _remember(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    if name not in ("cpu", "cuda"):
        raise DeviceChoiceError(f"{DEVICE_VARIABLE}={name!r}: expected 'cpu' or 'cuda', or leave it unset")
    if name == "cuda" and not torch.cuda.is_available():
        raise NoGPUError(
            f"{DEVICE_VARIABLE}=cuda but torch sees no GPU (torch.cuda.is_available() is False); "
            f"unset {DEVICE_VARIABLE} or set it to cpu on this machine"
        )
    return _remember(torch.device(name))


def _remember(device):
    global chosen_device
    chosen_device = device
    return device


def deterministic(environ=None):
    """Make CUDA compute what the CPU computes, to the rounding of the printed digits.

    * TF32 off: on Ampere and later GPUs a float32 matmul or convolution may otherwise round its
      inputs to 10 mantissa bits (about 3 decimal digits), far outside assert_close's tolerance.
    * Deterministic algorithms on, on both devices: an op with no deterministic CUDA kernel raises
      (on the CPU kernel too where torch knows of one there), instead of changing the last digits
      from run to run; cuDNN picks no algorithm by benchmarking (benchmark=False).
    """
    environ = os.environ if environ is None else environ
    environ.setdefault(CUBLAS_VARIABLE, CUBLAS_WORKSPACE)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True)


class _SameNumbersOnTheDevice(TorchFunctionMode):
    """What torch's default device leaves to do on a device other than the CPU, so that a chapter
    written as for the CPU computes the CPU kernel's numbers there (see `place_tensors_on`)."""

    def __init__(self, device):
        super().__init__()
        self.device = device

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _RANDOM_FACTORIES or func in _RANDOM_LIKE:
            generator = kwargs.get("generator")
            if kwargs.get("device") is None and kwargs.get("out") is None and \
                    (generator is None or generator.device.type == "cpu"):
                target = args[0].device if func in _RANDOM_LIKE else torch.get_default_device()
                if target == self.device:
                    wants_grad = kwargs.pop("requires_grad", False)
                    drawn = func(*args, **{**kwargs, "device": "cpu"}).to(self.device)
                    return drawn.requires_grad_() if wants_grad else drawn
        elif func in _RANDOM_FILLS or func in _RANDOM_INITS:
            generator = kwargs.get("generator")
            filled = args[0] if args else kwargs["tensor"]  # nn.init passes everything by name
            if filled.device == self.device and (generator is None or generator.device.type == "cpu"):
                on_cpu = torch.empty_like(filled, device="cpu")
                drawn = func(on_cpu, *args[1:], **kwargs) if args else func(**{**kwargs, "tensor": on_cpu})
                with torch.no_grad() if func in _RANDOM_INITS else contextlib.nullcontext():
                    return filled.copy_(drawn)
        elif func in _TO_NUMPY and args[0].device == self.device:
            return func(args[0].cpu(), *args[1:], **kwargs)
        return func(*args, **kwargs)


_RANDOM_FACTORIES = {torch.rand, torch.randn, torch.randint, torch.randperm}
_RANDOM_LIKE = {torch.rand_like, torch.randn_like, torch.randint_like}
_RANDOM_FILLS = {torch.Tensor.uniform_, torch.Tensor.normal_, torch.Tensor.random_, torch.Tensor.exponential_,
                 torch.Tensor.cauchy_, torch.Tensor.log_normal_, torch.Tensor.geometric_}
#: nn.init's functions that hand themselves to the modes: the fills inside them reach no mode.
_RANDOM_INITS = {torch.nn.init.uniform_, torch.nn.init.normal_, torch.nn.init.trunc_normal_,
                 torch.nn.init.kaiming_uniform_, torch.nn.init.kaiming_normal_, torch.nn.init.xavier_uniform_,
                 torch.nn.init.xavier_normal_, torch.nn.init.orthogonal_, torch.nn.init.sparse_}
_TO_NUMPY = {torch.Tensor.numpy, torch.Tensor.__array__}
_placing = None  # the _SameNumbersOnTheDevice that place_tensors_on pushed, while it is on torch's mode stack


def place_tensors_on(device):
    """Make `device` where tensors go when the code names none, and return it (with its index).

    The CPU: nothing to do (torch's default). Another device (setup() passes CUDA):

    * `torch.set_default_device(device)`: every factory given no `device=` (torch.tensor, zeros,
      arange, randn, ..., and so every new nn.Module's parameters and buffers) makes its tensor there.
      Tensors and modules made before stay where they are; `*_like` and `new_*` follow their input;
      `torch.from_numpy`, `torch.Tensor(...)`, `torch.normal(mean, std, size)`, `torch.load`
      (map_location) and code in another thread (the setting is per thread) still give the CPU.
    * Random numbers given no device are drawn on the CPU, then moved: from a CPU `torch.Generator`
      passed as `generator=` (on CUDA a factory refuses a CPU generator), else from torch's CPU
      generator, and so are the random fills that initialise every new layer (`uniform_`, `normal_`,
      ... of nn.init, DataLoader's shuffling seed). The CUDA kernel then draws the numbers the CPU
      kernel draws. An explicit `device=` or a generator on the device is left to torch.
    * `numpy()` and `__array__` (np.asarray, matplotlib, d2l's figures) of a tensor on the device
      read a CPU copy (writing into that array does not change the tensor).

    This costs a few microseconds of Python per torch call on that device (torch's own warning in
    `torch.set_default_device`); the CPU kernel pays nothing.
    """
    global _placing
    device = torch.device(device)
    if device.type != "cpu" or device.index is not None:  # cpu:0 is the device tests/test_devices.py plays
        if device.index is None:  # cuda -> cuda:0, as its tensors report it
            device = torch.device(device.type, torch.get_device_module(device).current_device())
        torch.set_default_device(device)
        if _placing is None:
            _placing = _SameNumbersOnTheDevice(device)
            _placing.__enter__()  # stays on the stack, above the default device's mode
        _placing.device = device
    elif _placing is not None or torch.get_default_device() != device:  # back to the CPU (tests)
        if _placing is not None:
            _placing.__exit__(None, None, None)  # the top of the stack, as setup() left it
            _placing = None
        torch.set_default_device(None)
    return device


def _one_line(shell, etype, evalue, tb, tb_offset=None):
    """IPython handler for the book's setup errors: the message alone, no traceback."""
    shell._showtraceback(etype, evalue, shell.InteractiveTB.get_exception_only(etype, evalue))


def show_setup_errors_in_one_line():
    """In a Jupyter kernel, show DeviceChoiceError and NoGPUError as one line (the cell still fails,
    so Run All stops there and no later cell runs on the wrong device). Elsewhere: nothing."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the book always has IPython
        return
    shell = get_ipython()
    if shell is not None:
        shell.set_custom_exc((DeviceChoiceError, NoGPUError), _one_line)
