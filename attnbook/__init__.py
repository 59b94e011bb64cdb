"""Small helpers the book's notebooks share: device choice, figures, live widgets, timing, memory.

The teaching code lives in the notebook cells; this package only holds the plumbing.
"""
import logging

# A CUDA build of torch on a machine without a GPU logs "No CUDA runtime is found" when d2l imports
# torch.utils.cpp_extension; that line would make the CPU kernel's outputs differ from the CUDA one's.
logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)

from attnbook.checks import check  # noqa: E402
from attnbook.device import (  # noqa: E402
    DeviceChoiceError,
    NoGPUError,
    deterministic,
    pick_device,
    place_tensors_on,
    show_setup_errors_in_one_line,
)
from attnbook.figures import png_bytes, use_png_figures  # noqa: E402
from attnbook.memory import NewStorage, cuda_peak_bytes  # noqa: E402
from attnbook.timing import mean_ms, median_ms, report  # noqa: E402
from attnbook.widgets import LiveFigure  # noqa: E402

__all__ = ["DeviceChoiceError", "LiveFigure", "NewStorage", "NoGPUError", "check", "cuda_peak_bytes",
           "deterministic", "mean_ms", "median_ms", "pick_device", "place_tensors_on",
           "png_bytes", "report", "setup", "use_png_figures"]


def setup():
    """One call at the top of every notebook: reproducible PNG figures, a fixed seed, the device, and
    CUDA settings that compute what the CPU computes (no TF32, deterministic algorithms).

    The device becomes torch's default (`place_tensors_on`): the chapters make tensors and layers with
    no `device=` and no `.to(device)`, and they land on it. On CUDA, random numbers given no device
    are still drawn on the CPU (from the CPU `torch.Generator` a cell passes, or torch's CPU
    generator: so the same numbers as on the CPU kernel, new layers' weights too), and `numpy()` /
    matplotlib read a CPU copy. `tests/test_devices.py` checks that nothing else is left on the CPU.

    On the CUDA kernel without a GPU this fails with one line (in Jupyter no traceback) and the
    cell fails, so Run All stops before anything runs on the wrong device.
    """
    import torch

    show_setup_errors_in_one_line()
    device = place_tensors_on(pick_device())
    deterministic()
    use_png_figures()
    torch.manual_seed(0)
    torch.set_printoptions(precision=4, sci_mode=False)
    return device  # not printed: the pages are about attention (the README says how a kernel chooses)
