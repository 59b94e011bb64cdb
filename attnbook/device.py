"""Which device the notebooks compute on: chosen by the kernel, not by the notebook."""
import os

import torch

#: The variable the two kernelspecs set ("cpu" or "cuda"); unset means cpu.
DEVICE_VARIABLE = "BOOK_DEVICE"


class NoGPUError(RuntimeError):
    """The CUDA kernel was started on a machine where torch sees no GPU."""


def pick_device(environ=None):
    """Return the torch.device named by $BOOK_DEVICE, failing with one clear line if it cannot work."""
    environ = os.environ if environ is None else environ
    name = environ.get(DEVICE_VARIABLE, "cpu").strip().lower() or "cpu"
    if name not in ("cpu", "cuda"):
        raise ValueError(f"{DEVICE_VARIABLE}={name!r}: expected 'cpu' or 'cuda'")
    if name == "cuda" and not torch.cuda.is_available():
        raise NoGPUError(
            f"{DEVICE_VARIABLE}=cuda but torch sees no GPU (torch.cuda.is_available() is False); "
            "use the 'Python (book, CPU)' kernel on this machine"
        )
    return torch.device(name)
