"""The machinery behind `attnbook.check(name, fn)`: run a reader's answer to an exercise against a torch
or transformers reference and print one line, `✓ name: N cases agree with <what was compared>
(<what was covered>)` or `✗ name: case <case>: <what differs, where> — <the known mistake it is>`;
True only when every case passes. The exercises themselves are in one module per section.

The cases come from a generator seeded by a constant (the line is the same run to run), are built on
the device `attnbook.setup()` chose (`attnbook.device.chosen_device`, the CPU before setup) and are
compared on the CPU. A failing case is run through the exercise's known mistakes; the line names the
one the answer agrees with, and says where it differs in the exercise's own terms (an offset δ, a
head g and positions (i, j), a pair ℓ). A case may instead ask for an error (an input the contract
rules out). A stub (its own `raise NotImplementedError`, not torch's for an operation it lacks) gets an
invitation to write it; any other error, a wrong type, dtype, shape or device, an unknown name or a
non-function gets one line, never a traceback.
"""
import contextlib
import difflib
import io
import linecache
import logging
import numbers
import re
import sys
import warnings
from dataclasses import dataclass, field

import torch

from attnbook import device as _device

SEED = 0
NOT_YET = "not yet"  # _run's answer for a stub (NotImplementedError)
MAX_MESSAGE = 160  # characters of a learner's exception message kept in the line
#: (rtol, atol): strict for the reference, loose for naming a mistake (the same wrong formula written
#: another way rounds differently)
#: bfloat16 and float16 (unit-norm inputs): a few units in the last place, as another honest order of
#: the same arithmetic (or float64 angles where the reference has float32 ones) rounds differently
TOLERANCE = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-9, 1e-15), torch.bfloat16: (1.6e-2, 2e-2),
             torch.float16: (2e-3, 8e-3)}
LOOSE = {torch.float32: (1e-3, 1e-3), torch.float64: (1e-5, 1e-15), torch.bfloat16: (5e-2, 5e-2),
         torch.float16: (1e-2, 2e-2)}
EXERCISES = {}  # name -> Exercise; filled by attnbook.checks from the section modules


@dataclass
class Case:
    label: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    note: object = ""  # what the line adds when fn fails this case with no known mistake (its edge case);
    # a function of what fn returned when that decides what to say
    raises: type = None  # the contract asks fn to raise this here (the note says why), not to return
    says: str = None  # a regular expression the raised error's message must match (the contract's words)


@dataclass
class Exercise:
    cases: object  # generator -> [Case]
    reference: object
    against: str  # "agree with ...": what was compared, in words
    covered: str
    mistakes: dict  # what the line says -> the mistaken implementation
    checked: object = None  # (*args, **kwargs) -> bool mask of the entries the contract defines
    where: object = None  # (case, index) -> the entry in the exercise's terms; default "at [i, j]"
    also: object = None  # (case, fn) -> None or what else is wrong, once the values agree (gradients)
    forbidden: tuple = None  # (function name, what to call it): a library function fn must not call (the
    # reference itself), e.g. ("_relative_position_bucket", "transformers' T5 ...")


# ----------------------------------------------------------------------------------- check()
def check(name, fn):
    """Run `fn` on the exercise `name`'s cases; print one line; True only when every case passes."""
    try:
        with _quiet():
            line = _verdict(name, fn)
    except Exception as error:  # a bug of ours must not become the reader's traceback
        line = f"✗ {one_line(name)}: the checker itself failed ({one_line(error)}); please report it"
    print(" ".join(line.split()))
    return line.startswith("✓")


def _verdict(name, fn):
    exercise = EXERCISES.get(name) if isinstance(name, str) else None
    if exercise is None:
        shown = one_line(name)
        close = difflib.get_close_matches(shown, EXERCISES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"✗ {shown}: no exercise of that name; {hint}the exercises are {', '.join(EXERCISES)}"
    if not callable(fn):
        return (f"✗ {name}: expected a function, got {type(fn).__name__}; "
                f"pass the function itself: check({name!r}, {name})")
    cases = exercise.cases(torch.Generator().manual_seed(SEED))
    for case in cases:
        problem = _run(exercise, case, fn)
        if problem == NOT_YET:
            return (f"✎ {name}: not yet written: replace raise NotImplementedError with your code and run "
                    f"this cell; {len(cases)} cases are waiting ({exercise.covered})")
        if problem:
            return f"✗ {name}: case {case.label}: {problem}"
    return f"✓ {name}: {len(cases)} cases agree with {exercise.against} ({exercise.covered})"


def _run(exercise, case, fn):
    """None when fn passes the case, else what went wrong (and which known mistake it is)."""
    args, kwargs = [moved(a) for a in case.args], {k: moved(v) for k, v in case.kwargs.items()}
    try:
        with _watching(exercise.forbidden) as called:
            got = fn(*args, **kwargs)
    except NotImplementedError as error:
        if _is_stub(error):
            return NOT_YET
        return f"your function raises NotImplementedError: {one_line(error)}{_note(case)}"
    except Exception as error:
        if case.raises and isinstance(error, case.raises):
            if case.says is None or re.search(case.says, str(error)):
                return None
            return (f"your {type(error).__name__} says {one_line(error)!r}, which does not say what the "
                    f"contract asks{_note(case)}")
        return f"your function raises {type(error).__name__}: {one_line(error)}{_note(case)}"
    if called:
        return (f"your function calls {exercise.forbidden[1]}, the reference it is checked against: "
                "write the rule yourself")
    if case.raises:
        return f"returned {type(got).__name__}, expected a {case.raises.__name__}{_note(case)}"
    expected = exercise.reference(*case.args, **case.kwargs)
    where = _device.chosen_device.type
    if isinstance(got, torch.Tensor) and got.device.type != where and _has_tensor(case.args):
        return f"returned a tensor on {got.device.type}; the inputs are on {where}: compute where they are"
    mask = exercise.checked(*case.args, **case.kwargs) if exercise.checked else None
    place = (lambda at: exercise.where(case, at)) if exercise.where else _at
    try:
        problem = differs(got, expected, mask, TOLERANCE, place)
    except Exception as error:  # e.g. a sparse tensor or an int-like that fails to convert
        return f"returned a {type(got).__name__} that cannot be compared ({one_line(error)})"
    if problem:
        return problem + (_which_mistake(exercise.mistakes, case, got, mask) or _note(case, got))
    return exercise.also(case, fn) if exercise.also else None


def _is_stub(error):
    """A stub's own `raise NotImplementedError`, not one from inside torch (`1 - mask` on a bool mask
    raises NotImplementedError with a message, and the reader has written code)."""
    innermost = error.__traceback__
    while innermost.tb_next is not None:
        innermost = innermost.tb_next
    line = linecache.getline(innermost.tb_frame.f_code.co_filename, innermost.tb_lineno)
    return "raise NotImplementedError" in line if line else not error.args


def _has_tensor(args):
    return any(isinstance(a, torch.Tensor) for a in args)


def moved(value):
    """A tensor as the notebook has it: on setup()'s device, and a copy (fn may write into it)."""
    return value.clone().to(_device.chosen_device) if isinstance(value, torch.Tensor) else value


@contextlib.contextmanager
def _quiet():
    """Prints, warnings and log records (fn's, or a library's on first use) would add lines to the one."""
    disabled, swallowed = logging.root.manager.disable, (io.StringIO(), io.StringIO())
    try:
        with contextlib.redirect_stdout(swallowed[0]), contextlib.redirect_stderr(swallowed[1]), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logging.disable(logging.CRITICAL)
            yield
    finally:
        logging.disable(disabled)
        # a library imported in here (transformers) made its log handler on our stderr: give it the real one
        for logger in [logging.root, *logging.root.manager.loggerDict.values()]:
            for handler in getattr(logger, "handlers", []):
                if getattr(handler, "stream", None) in swallowed:
                    handler.setStream(sys.stderr)


def one_line(thing):
    """An error's message (or a name) on one line, cut at MAX_MESSAGE."""
    try:
        text = " ".join(str(thing).split()) or type(thing).__name__
    except Exception:  # an exception whose message itself fails
        text = type(thing).__name__
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 1] + "…"


@contextlib.contextmanager
def _watching(forbidden):
    """Yields a list that names the forbidden library function once fn has called it (a profile hook sees
    every Python call: copies of the function in other models' files count too)."""
    called = []
    if forbidden is None:
        yield called
        return

    def profile(frame, event, arg):
        code = frame.f_code
        if event == "call" and code.co_name == forbidden[0] and "transformers" in code.co_filename:
            called.append(code.co_filename)

    before = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield called
    finally:
        sys.setprofile(before)


def _note(case, got=None):
    note = case.note(got) if callable(case.note) else case.note
    return f" — {note}" if note else ""


def _which_mistake(mistakes, case, got, mask):
    """ — what the line says of the first known mistake that gives `got` on this case, or ""."""
    for says, wrong in mistakes.items():
        try:
            if differs(got, wrong(*case.args, **case.kwargs), mask, LOOSE) is None:
                return f" — {says}"
        except Exception:  # a mistake that cannot run on this case is not the one made
            continue
    return ""


def _at(at):
    return f"at {list(at)}"


def differs(got, expected, mask, tolerance, place=_at):
    """None when `got` agrees with `expected`, else a short excerpt of the difference (`place` names
    the first entry that differs)."""
    if isinstance(expected, int):
        if not isinstance(got, numbers.Integral) or isinstance(got, bool):
            return f"returned {type(got).__name__}, expected an int"
        return None if got == expected else f"expected {expected:,}, got {int(got):,}"
    if not isinstance(got, torch.Tensor):
        return f"returned {type(got).__name__}, expected a torch.Tensor"
    try:
        got = got.detach().cpu()
        expected = expected.cpu()  # references made after setup() are on the device
    except Exception:
        return f"returned a tensor on {got.device} that cannot be copied to the CPU"
    if got.dtype != expected.dtype:
        return f"returned {_name(got.dtype)}, expected {_name(expected.dtype)}"
    if got.shape != expected.shape:
        return f"returned shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if got.is_floating_point():
        bad = ~torch.isclose(got, expected, *tolerance[got.dtype], equal_nan=True)
    else:
        bad = got != expected
    if mask is not None:
        bad &= mask.cpu()
    if not bad.any():
        return None
    at = tuple(bad.nonzero()[0].tolist())
    return f"{place(at)} expected {_value(expected[at])}, got {_value(got[at])}"


def _name(dtype):
    return str(dtype).removeprefix("torch.")


def _value(scalar):
    digits = 12 if scalar.dtype == torch.float64 else 6
    return f"{scalar.item():.{digits}g}" if scalar.is_floating_point() else str(scalar.item())


def randn(g, *shape):
    return torch.randn(*shape, generator=g)


def tril(n, diagonal):
    return torch.ones(n, n, dtype=torch.bool).tril(diagonal)
