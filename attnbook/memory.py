"""Memory a computation allocates, counted from the tensors it makes: the same on every device."""
import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode


class NewStorage(TorchDispatchMode):
    """Inside a `with` block, sees every tensor operation and records the storage its outputs
    allocate: `bytes` in all, and the largest one (`largest_bytes`, `largest_shape`).

    An output is new unless it shares an input's storage (a view, an in-place or out= result). This
    is decided per operation only, since a freed buffer's address may be reused by a later one.
    """

    def __init__(self):
        super().__init__()
        self.bytes, self.largest_bytes, self.largest_shape = 0, 0, None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        known = {x.untyped_storage().data_ptr() for x in pytree.tree_leaves((args, kwargs))
                 if isinstance(x, torch.Tensor)}
        for x in pytree.tree_leaves(out):
            if isinstance(x, torch.Tensor) and x.untyped_storage().data_ptr() not in known:
                known.add(x.untyped_storage().data_ptr())
                size = x.untyped_storage().nbytes()
                self.bytes += size
                if size > self.largest_bytes:
                    self.largest_bytes, self.largest_shape = size, tuple(x.shape)
        return out


def cuda_peak_bytes(fn, *args, **kwargs):
    """Run `fn(*args, **kwargs)` on CUDA; return (the bytes it added to the allocator at its peak,
    above what was allocated before, its result included; its result). The CPU has no such counter."""
    import torch

    torch.cuda.synchronize()
    start = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    result = fn(*args, **kwargs)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - start, result
