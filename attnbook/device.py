"""Which device the notebooks compute on (chosen by the kernel, not by the notebook), and the
settings that make the CUDA kernel compute what the CPU kernel computes."""
import os

import torch

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


def describe(device, environ=None):
    """One line saying which device the notebook computes on, and why."""
    environ = os.environ if environ is None else environ
    chosen = environ.get(DEVICE_VARIABLE, "").strip()
    why = f"{DEVICE_VARIABLE}={chosen}" if chosen else f"{DEVICE_VARIABLE} unset: " + (
        "torch sees a GPU" if device.type == "cuda" else "torch sees no GPU")
    return f"computing on {device.type} ({why})"


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
