"""Timing with torch.utils.benchmark: warm-up, CUDA synchronisation and medians done for us."""
import torch.utils.benchmark as benchmark


def _timer(fn, args, kwargs):
    return benchmark.Timer(stmt="fn(*args, **kwargs)", globals={"fn": fn, "args": args, "kwargs": kwargs})


def median_ms(fn, *args, min_run_time=0.2, **kwargs):
    """Median wall time of fn(*args, **kwargs) in milliseconds."""
    return _timer(fn, args, kwargs).blocked_autorange(min_run_time=min_run_time).median * 1e3


def mean_ms(fn, *args, number=5, **kwargs):
    """Mean wall time of `number` calls (after two warm-up calls) in milliseconds: quick, for tables."""
    return _timer(fn, args, kwargs).timeit(number).mean * 1e3


def report(name, ratio, target=None, detail=""):
    """Print one measurement in the form `make bench` collects: 'measured: NAME = RATIO ...'."""
    if " = " in name:
        raise ValueError(f"a measurement's name cannot contain ' = ' (make bench splits there): {name!r}")
    verdict = "" if target is None else f" (target ≤ {target}: {'met' if ratio <= target else 'NOT met'})"
    extra = f"; {detail}" if detail else ""
    print(f"measured: {name} = {ratio:.3g}{verdict}{extra}")
