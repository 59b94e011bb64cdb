"""`check(name, fn)`: run a reader's answer to an exercise against a torch or transformers reference
and print one line, `✓ name: N cases agree with <reference> (<what was covered>)` or
`✗ name: case <case>: <what differs> — <the known mistake it is>`; True only when every case passes.

The cases come from a generator seeded by a constant (the line is the same run to run), are built on
the device `attnbook.setup()` chose (`attnbook.device.chosen_device`, the CPU before setup) and are
compared on the CPU. A failing case is run through the exercise's known mistakes; the line names the
one the answer agrees with. A stub (NotImplementedError) gets "not yet"; any other error, a wrong
type, dtype, shape or device, an unknown name or a non-function gets one line, never a traceback.

Exercises and the mistakes each names:

* masked_softmax: softmax over the queries; masked scores set to 0; −1e6 fill (an empty row comes
  out uniform); key j = valid length kept (j ≤ len); valid_lens ignored; valid_lens (b, q) not
  handled (the case's note).
* causal_mask: strict j < i; j ≤ i + 1; transposed (j ≥ i); inverted (True where blocked); the
  additive 0/−inf float mask instead of bool.
* attention: softmax over the queries; no scaling; divided by d_h; divided by √d_v; mask read the
  other way; mask ignored.
* attention_flops: projections forgotten (4n²d); multiply-add counted 1 (half); three projections;
  projections forgotten and multiply-add counted 1 (2n²d).
* sinusoidal_encoding: sin/cos halves instead of interleaved; exponent l/d; a frequency per column
  (j/d); sin and cos swapped; odd d failing (the case's note).
* rope: interleaved pairing; frequencies 10000^(−l/d_h); positions ignored (arange(n)); rotation the
  wrong way.
* alibi_bias: sign flipped; the powers-of-two-only slopes 2^(−8(g+1)/h); heads in reverse order; no
  absolute value; slopes sorted steepest first (Press et al.'s order is asked).
* t5_bucket: i − j (sign); bidirectional mixed up; no clamp at num_buckets − 1.
* skew: pad on the wrong side (shifted by one); wrong n rows kept (off by one row); offsets read in
  reverse; not skewed at all.
* ntk_frequencies: base·scale (exponent missing); position interpolation (ω/scale); scale ignored;
  float32 result; float32 arithmetic cast to float64.
* position_ids: padding ignored (arange); starts at 1.
"""
import contextlib
import difflib
import io
import logging
import math
import numbers
import sys
import warnings
from dataclasses import dataclass, field
from functools import lru_cache

import torch
import torch.nn.functional as F

from attnbook import device as _device

SEED = 0
NOT_YET = "not yet"  # _run's answer for a stub (NotImplementedError)
MAX_MESSAGE = 160  # characters of a learner's exception message kept in the line
#: (rtol, atol): strict for the reference, loose for naming a mistake (the same wrong formula written
#: another way rounds differently)
TOLERANCE = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-9, 1e-15)}
LOOSE = {torch.float32: (1e-3, 1e-3), torch.float64: (1e-5, 1e-15)}


@dataclass
class Case:
    label: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    note: str = ""  # what the line adds when fn fails this case with no known mistake (its edge case)


@dataclass
class Exercise:
    cases: object  # generator -> [Case]
    reference: object
    against: str  # "agree with ..."
    covered: str
    mistakes: dict  # what the line says -> the mistaken implementation
    checked: object = None  # (*args) -> bool mask of the entries the contract defines


# ----------------------------------------------------------------------------------- machinery
def check(name, fn):
    """Run `fn` on the exercise `name`'s cases; print one line; True only when every case passes."""
    try:
        with _quiet():
            line = _verdict(name, fn)
    except Exception as error:  # a bug of ours must not become the reader's traceback
        line = f"✗ {_one_line(name)}: the checker itself failed ({_one_line(error)}); please report it"
    print(" ".join(line.split()))
    return line.startswith("✓")


def _verdict(name, fn):
    exercise = EXERCISES.get(name) if isinstance(name, str) else None
    if exercise is None:
        shown = _one_line(name)
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
            return (f"✗ {name}: not yet: your function raises NotImplementedError; "
                    "write it and run this cell again")
        if problem:
            return f"✗ {name}: case {case.label}: {problem}"
    return f"✓ {name}: {len(cases)} cases agree with {exercise.against} ({exercise.covered})"


def _run(exercise, case, fn):
    """None when fn passes the case, else what went wrong (and which known mistake it is)."""
    expected = exercise.reference(*case.args, **case.kwargs)
    args, kwargs = [_moved(a) for a in case.args], {k: _moved(v) for k, v in case.kwargs.items()}
    try:
        got = fn(*args, **kwargs)
    except NotImplementedError:
        return NOT_YET
    except Exception as error:
        return f"your function raises {type(error).__name__}: {_one_line(error)}{_note(case)}"
    where = _device.chosen_device.type
    if isinstance(got, torch.Tensor) and got.device.type != where and _has_tensor(case.args):
        return f"returned a tensor on {got.device.type}; the inputs are on {where}: compute where they are"
    mask = exercise.checked(*case.args) if exercise.checked else None
    try:
        problem = _differs(got, expected, mask, TOLERANCE)
    except Exception as error:  # e.g. a sparse tensor or an int-like that fails to convert
        return f"returned a {type(got).__name__} that cannot be compared ({_one_line(error)})"
    return problem and problem + (_which_mistake(exercise, case, got, mask) or _note(case))


def _has_tensor(args):
    return any(isinstance(a, torch.Tensor) for a in args)


def _moved(value):
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


def _one_line(thing):
    """An error's message (or a name) on one line, cut at MAX_MESSAGE."""
    try:
        text = " ".join(str(thing).split()) or type(thing).__name__
    except Exception:  # an exception whose message itself fails
        text = type(thing).__name__
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 1] + "…"


def _note(case):
    return f" — {case.note}" if case.note else ""


def _which_mistake(exercise, case, got, mask):
    for says, wrong in exercise.mistakes.items():
        try:
            if _differs(got, wrong(*case.args, **case.kwargs), mask, LOOSE) is None:
                return f" — {says}"
        except Exception:  # a mistake that cannot run on this case is not the one made
            continue
    return ""


def _differs(got, expected, mask, tolerance):
    """None when `got` agrees with `expected`, else a short excerpt of the difference."""
    if isinstance(expected, int):
        if not isinstance(got, numbers.Integral) or isinstance(got, bool):
            return f"returned {type(got).__name__}, expected an int"
        return None if got == expected else f"expected {expected:,}, got {int(got):,}"
    if not isinstance(got, torch.Tensor):
        return f"returned {type(got).__name__}, expected a torch.Tensor"
    try:
        got = got.detach().cpu()
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
        bad &= mask
    if not bad.any():
        return None
    at = tuple(bad.nonzero()[0].tolist())
    return f"at {list(at)} expected {_value(expected[at])}, got {_value(got[at])}"


def _name(dtype):
    return str(dtype).removeprefix("torch.")


def _value(scalar):
    digits = 12 if scalar.dtype == torch.float64 else 6
    return f"{scalar.item():.{digits}g}" if scalar.is_floating_point() else str(scalar.item())


def _randn(g, *shape):
    return torch.randn(*shape, generator=g)


# ----------------------------------------------------------------------------------- masked_softmax
def _masked(scores, valid_lens, fill, dim=-1, inclusive=False):
    """Keys j < valid length kept (j ≤ with inclusive), the rest set to `fill`, softmax over `dim`."""
    if valid_lens is None:
        return scores.softmax(dim)
    lens = valid_lens[..., None] if valid_lens.dim() == 2 else valid_lens[:, None, None]
    keys = torch.arange(scores.shape[-1])
    keep = keys <= lens if inclusive else keys < lens
    return scores.masked_fill(~keep, fill).softmax(dim).nan_to_num(0.0)


def _masked_softmax(scores, valid_lens=None):
    # torch has no length-masked softmax: −inf on the masked keys, and an empty row's NaNs become 0
    return _masked(scores, valid_lens, -math.inf)


def _masked_softmax_cases(g):
    lens = [None, [2, 4], [4, 1, 3], [[1, 3, 5], [2, 2, 4]], [0, 3], [[0, 2, 4], [1, 0, 3]], [1], [7]]
    shapes = [(2, 3, 5), (2, 3, 5), (3, 2, 4), (2, 3, 5), (2, 2, 4), (2, 3, 4), (1, 1, 1), (1, 2, 5)]
    cases = []
    for shape, valid in zip(shapes, lens, strict=True):
        valid_lens = None if valid is None else torch.tensor(valid)
        per_query = valid_lens is not None and valid_lens.dim() == 2
        empty = " (a valid length 0)" if valid_lens is not None and (valid_lens == 0).any() else ""
        cases.append(Case(f"scores {shape}, valid_lens {valid}{' (b, q)' if per_query else ''}{empty}",
                          (2 * _randn(g, *shape), valid_lens),
                          note="valid_lens (b, q) must work too: one length per query" * per_query))
    return cases


# ----------------------------------------------------------------------------------- causal_mask
def _causal_mask(n):
    return torch.nn.Transformer.generate_square_subsequent_mask(n) == 0


def _tril(n, diagonal):
    return torch.ones(n, n, dtype=torch.bool).tril(diagonal)


# ----------------------------------------------------------------------------------- attention
def _attention(q, k, v, mask=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _attention_as(q, k, v, mask=None, divide_by=None, dim=-1, keep=True):
    """Written-out attention with the scaling, softmax axis and mask meaning chosen (for mistakes)."""
    scores = q @ k.transpose(-1, -2) / (math.sqrt(q.shape[-1]) if divide_by is None else divide_by(q, v))
    if mask is not None:
        scores = scores.masked_fill(mask != keep, -math.inf)
    return scores.softmax(dim) @ v


def _attention_cases(g):
    def qkv(b, n_q, n_k, d_h, d_v):
        return _randn(g, b, n_q, d_h), _randn(g, b, n_k, d_h), _randn(g, b, n_k, d_v)

    random_mask = torch.rand(2, 4, 6, generator=g) < 0.5
    random_mask[..., 0] = True  # no fully masked row (the contract promises none)
    padding = torch.tensor([[True] * 4 + [False] * 2, [True] * 6])[:, None, :]
    specs = [((2, 4, 6, 16, 4), None, "no mask"), ((2, 4, 6, 16, 4), padding, "padding mask (b, 1, n_k)"),
             ((2, 5, 5, 8, 3), _tril(5, 0), "causal mask (n, n)"),
             ((2, 4, 6, 8, 8), random_mask, "random mask (b, n_q, n_k)"),
             ((1, 1, 1, 8, 2), None, "n = 1"), ((3, 2, 3, 1, 2), None, "d_h = 1")]
    return [Case(f"b={b}, n_q={n_q}, n_k={n_k}, d_h={d_h}, d_v={d_v}, {what}",
                 (*qkv(b, n_q, n_k, d_h, d_v), mask))
            for (b, n_q, n_k, d_h, d_v), mask, what in specs]


# ----------------------------------------------------------------------------------- attention_flops
def _attention_flops(n, d):
    from torch.utils.flop_counter import FlopCounterMode

    # meta tensors have shapes and no data: any n, d is counted at no cost
    x, wq, wk, wv, wo = (torch.empty(shape, device="meta") for shape in [(n, d)] + [(d, d)] * 4)
    with FlopCounterMode(display=False) as counter:
        q, k, v = x @ wq, x @ wk, x @ wv
        ((q @ k.T).softmax(-1) @ v) @ wo
    return counter.get_total_flops()


def _flops_cases(g):
    # sizes an answer that counts real tensors (not meta ones) also gets through in a second
    sizes = [(16, 64), (1, 1), (3, 1000), (1000, 512), (2048, 256), (1, 2000)]
    return [Case(f"n={n}, d={d}", (n, d)) for n, d in sizes]


# ----------------------------------------------------------------------------------- sinusoidal_encoding
def _sinusoidal_encoding(n, d):
    from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings

    return create_sinusoidal_embeddings(n, d, torch.empty(n, d))


def _sinusoid(n, d, exponent=lambda j, d: 2 * (j // 2) / d, even=torch.sin, odd=torch.cos):
    """P[i, j] = even/odd(i · 10000^(−exponent(j))) at even/odd columns j (for mistakes)."""
    j = torch.arange(d)
    angles = torch.arange(n, dtype=torch.float64)[:, None] * 10000.0 ** -exponent(j, d)
    return torch.where(j % 2 == 0, even(angles), odd(angles)).float()


def _sin_cos_halves(n, d):
    angles = torch.arange(n, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, d, 2) / d)
    return torch.cat([angles.sin(), angles[:, :d // 2].cos()], -1).float()


def _sinusoidal_cases(g):
    sizes = [(6, 8), (50, 32), (1, 4), (10, 2), (7, 7), (4, 1), (9, 5)]
    return [Case(f"n={n}, d={d}{' (odd d)' if d % 2 else ''}", (n, d),
                 note="odd d must work too: the last column is a sin with no cos beside it" * (d % 2))
            for n, d in sizes]


# ----------------------------------------------------------------------------------- rope
@lru_cache
def _llama_rope(d_h):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=d_h, num_attention_heads=1, head_dim=d_h,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    return LlamaRotaryEmbedding(config)


def _rope(x, positions):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    cos, sin = _llama_rope(x.shape[-1])(x, positions[None])
    return apply_rotary_pos_emb(x, x, cos[0], sin[0], unsqueeze_dim=0)[0].reshape(x.shape)


def _rotated(x, positions, interleaved=False, exponent=2):
    """RoPE written out (for mistakes): pairs (2l, 2l+1) or (l, l + d_h/2), ω_l = 10000^(−exponent·l/d_h)."""
    d = x.shape[-1]
    angles = positions[:, None] * 10000.0 ** (-exponent * torch.arange(d // 2) / d)
    cos, sin = angles.cos(), angles.sin()
    a, b = (x[..., 0::2], x[..., 1::2]) if interleaved else (x[..., :d // 2], x[..., d // 2:])
    turned = (a * cos - b * sin, a * sin + b * cos)
    return torch.stack(turned, -1).flatten(-2) if interleaved else torch.cat(turned, -1)


def _rope_cases(g):
    def case(shape, positions, what):
        return Case(f"x {shape}, positions {positions}{what}", (_randn(g, *shape), torch.tensor(positions)))

    cases = [case((2, 3, 5, 8), [7, 3, 100, -2, 0], " (batch and head dims, out of order, negative)")]
    leading = [(), (3,), (2, 3)]
    for index, d_h in enumerate((2, 4, 8, 16, 64)):
        lead = leading[index % 3]
        cases += [case((*lead, 4, d_h), [0, 1, 2, 3], ""),
                  case((*lead, 5, d_h), [7, 3, 100, -2, 0], " (out of order, negative)"),
                  case((*leading[(index + 1) % 3], 3, d_h), [40, 41, 42], " (continuing after 40 cached)")]
    cases += [case((1, 6), [5], " (n = 1)"), case((2, 4, 6), [-1, -5, -9, -3], " (all negative)")]
    return cases


# ----------------------------------------------------------------------------------- alibi_bias
def _alibi_slopes(h):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    # BLOOM's bias for keys 0, 1 is slope · (0, 1): column 1 holds each head's slope
    return build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), h, torch.float32)[:, 0, 1]


def _alibi_from(slopes, n, distance=lambda i, j: -(i - j).abs()):
    i, j = torch.arange(n)[:, None], torch.arange(n)
    return slopes[:, None, None] * distance(i, j).float()


def _alibi_bias(n, h):
    return _alibi_from(_alibi_slopes(h), n)


def _alibi_cases(g):
    sizes = [(5, 4), (5, 6)] + [(1 + h % 7, h) for h in range(1, 25)]  # every head count up to 24
    return [Case(f"n={n}, h={h}{'' if h & (h - 1) == 0 else ' (h not a power of two)'}", (n, h))
            for n, h in sizes]


# ----------------------------------------------------------------------------------- t5_bucket
def _t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    from transformers.models.t5.modeling_t5 import T5Attention

    return T5Attention._relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance)


def _t5_unclamped(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's bucketing without the clamp at the last bucket (for the mistake)."""
    half = num_buckets // 2 if bidirectional else num_buckets
    exact = half // 2
    side = (relative_position > 0).long() * half if bidirectional else 0
    distance = relative_position.abs() if bidirectional else (-relative_position).clamp(min=0)
    log_ratio = torch.log(distance.float() / exact) / math.log(max_distance / exact)
    far = exact + (log_ratio * (half - exact)).long()
    return side + torch.where(distance < exact, distance, far)


def _t5_cases(g):
    n = 12
    offsets = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    specs = [(offsets, {}, f"j − i for n={n}, defaults"),
             (torch.arange(-300, 301), {}, "−300..300, defaults"),
             (torch.arange(-300, 301), {"bidirectional": False}, "−300..300, bidirectional=False"),
             (torch.arange(-200, 201), {"num_buckets": 16, "max_distance": 64},
              "−200..200, 16 buckets, max_distance 64"),
             (torch.arange(-50, 51), {"bidirectional": False, "num_buckets": 8, "max_distance": 20},
              "−50..50, bidirectional=False, 8 buckets, max_distance 20"),
             (torch.tensor([0]), {}, "[0]")]
    return [Case(f"relative_position {what}", (rel,), kwargs) for rel, kwargs, what in specs]


# ----------------------------------------------------------------------------------- skew
def _skew(rel_logits):
    # no library has this shift: gather column j − i + n − 1 of row i (j > i is clamped and unchecked)
    n = rel_logits.shape[-1]
    column = (torch.arange(n) - torch.arange(n)[:, None] + n - 1).clamp(max=n - 1)
    return rel_logits.gather(-1, column.expand(rel_logits.shape))


def _pad_skew(rel_logits, pad=(1, 0), rows=slice(1, None)):
    """Music Transformer's skew: pad a column, reshape to n + 1 rows of n, keep n of them."""
    n = rel_logits.shape[-1]
    return F.pad(rel_logits, pad).reshape(*rel_logits.shape[:-2], n + 1, n)[..., rows, :]


def _skew_reversed(rel_logits):
    n = rel_logits.shape[-1]
    column = (torch.arange(n)[:, None] - torch.arange(n)).clamp(min=0)
    return rel_logits.gather(-1, column.expand(rel_logits.shape))


def _skew_cases(g):
    shapes = [(4, 4), (2, 3, 5, 5), (1, 1), (2, 6, 6), (3, 2, 2)]
    return [Case(f"rel_logits {shape}{' (n = 1)' if shape[-1] == 1 else ''}", (_randn(g, *shape),))
            for shape in shapes]


# ----------------------------------------------------------------------------------- ntk_frequencies
def _ntk_frequencies(d, base, scale, dtype=torch.float64):
    # transformers' dynamic NTK at factor 1 and seq_len = scale · max_position_embeddings, whose base is
    # this one (tests/test_check.py checks they agree); transformers computes in float32, the contract float64
    scaled = base * scale ** (d / (d - 2))
    return (scaled ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)).to(dtype)


def _ntk_cases(g):
    specs = [(8, 10000, 4), (128, 10000, 8), (64, 500000.0, 2.0), (6, 10000, 2.5), (4, 10000, 1),
             (16, 10000, 16)]
    return [Case(f"d={d}, base={base}, scale={scale}", (d, base, scale)) for d, base, scale in specs]


# ----------------------------------------------------------------------------------- position_ids
def _position_ids(attention_mask):
    from transformers.generation.utils import GenerationMixin

    # generate()'s own position ids from the mask (its `self` is not used on this path)
    prepare = GenerationMixin._prepare_position_ids_for_generation
    return prepare(None, attention_mask, {"attention_mask": attention_mask})


def _position_ids_cases(g):
    masks = [[[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 1, 1, 1, 1]], [[1, 1, 1]], [[0, 0, 0, 1]], [[1]],
             [[0, 1], [1, 1]], [[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1]]]
    return [Case(f"attention_mask {mask}", (torch.tensor(mask),)) for mask in masks]


# ----------------------------------------------------------------------------------- the table
EXERCISES = {
    "masked_softmax": Exercise(
        _masked_softmax_cases, _masked_softmax, "torch's softmax with the masked keys at −inf",
        "valid_lens None, (b,) and (b, q), valid length 0, lengths beyond k", {
            "the softmax runs over the queries (dim −2); it must run over the keys (dim −1)":
                lambda s, v=None: _masked(s, v, -math.inf, dim=-2),
            "the masked scores are set to 0, so masked keys still get weight; set them to −inf":
                lambda s, v=None: _masked(s, v, 0.0),
            "this is the −1e6 fill: a row of valid length 0 comes out uniform instead of all zeros":
                lambda s, v=None: _masked(s, v, -1e6),
            "key j = valid length is kept too (j ≤ len); only keys j < len count":
                lambda s, v=None: _masked(s, v, -math.inf, inclusive=True),
            "valid_lens is ignored: keys at or past the valid length must get weight 0":
                lambda s, v=None: s.softmax(-1)}),
    "causal_mask": Exercise(
        lambda g: [Case(f"n={n}", (n,)) for n in (5, 1, 2, 8)], _causal_mask,
        "torch.nn.Transformer.generate_square_subsequent_mask", "n 1..8", {
            "this is j < i: query i may also attend to itself (j ≤ i)":
                lambda n: _tril(n, -1),
            "this is j ≤ i + 1, one key too many: query i would see token i + 1":
                lambda n: _tril(n, 1),
            "this is the mask transposed (j ≥ i): True must be where j ≤ i":
                lambda n: _tril(n, 0).T,
            "this is the inverse (True where j > i, blocked); True must mean 'may attend'":
                lambda n: ~_tril(n, 0),
            "this is the additive float mask (0 and −inf); the exercise asks for a bool mask":
                lambda n: torch.nn.Transformer.generate_square_subsequent_mask(n)}),
    "attention": Exercise(
        _attention_cases, _attention, "F.scaled_dot_product_attention",
        "n_q ≠ n_k, d_v ≠ d_h, no mask, padding, causal and random masks, n = 1, d_h = 1", {
            "the softmax runs over the queries (dim −2); it must run over the keys (dim −1)":
                lambda q, k, v, m=None: _attention_as(q, k, v, m, dim=-2),
            "the scores are not divided by √d_h":
                lambda q, k, v, m=None: _attention_as(q, k, v, m, lambda q, v: 1.0),
            "the scores are divided by d_h; divide by √d_h":
                lambda q, k, v, m=None: _attention_as(q, k, v, m, lambda q, v: q.shape[-1]),
            "the scores are divided by √d_v; divide by √d_h, the width of q and k":
                lambda q, k, v, m=None: _attention_as(q, k, v, m, lambda q, v: math.sqrt(v.shape[-1])),
            "the mask is read the other way: True means 'may attend'":
                lambda q, k, v, m=None: _attention_as(q, k, v, m, keep=False),
            "the mask is ignored":
                lambda q, k, v, m=None: _attention_as(q, k, v)}),
    "attention_flops": Exercise(
        _flops_cases, _attention_flops, "torch.utils.flop_counter.FlopCounterMode on the meta device",
        "n 1..2048, d 1..2000", {
            "this is 4n²d: the four d×d projections (8nd²) are missing":
                lambda n, d: 4 * n * n * d,
            "this is half: a multiply-add counts 2 FLOPs, as torch.utils.flop_counter counts":
                lambda n, d: 4 * n * d * d + 2 * n * n * d,
            "this counts three projections; the output projection W_o is a fourth":
                lambda n, d: 6 * n * d * d + 4 * n * n * d,
            "this is 2n²d: the projections are missing and a multiply-add counts 1, not 2":
                lambda n, d: 2 * n * n * d}),
    "sinusoidal_encoding": Exercise(
        _sinusoidal_cases, _sinusoidal_encoding, "transformers' sinusoidal table (DistilBERT)",
        "n 1..50, d 1..32, odd d", {
            "these are sin and cos halves side by side; interleave them (sin at 2l, cos at 2l + 1)":
                _sin_cos_halves,
            "the exponent is l/d; it is 2l/d (ω_l = 10000^(−2l/d))":
                lambda n, d: _sinusoid(n, d, lambda j, d: (j // 2) / d),
            "each column has its own frequency (j/d); columns 2l and 2l+1 share ω_l = 10000^(−2l/d)":
                lambda n, d: _sinusoid(n, d, lambda j, d: j / d),
            "sin and cos are swapped: sin goes to the even columns 2l, cos to the odd ones":
                lambda n, d: _sinusoid(n, d, even=torch.cos, odd=torch.sin)}),
    "rope": Exercise(
        _rope_cases, _rope, "transformers' Llama RoPE",
        "d_h 2..64, batch and head dims, positions not 0..n-1, negative positions", {
            "this is the interleaved pairing (2l, 2l+1); the exercise asks for the half-split one "
            "(l, l + d_h/2), as Llama in transformers":
                lambda x, p: _rotated(x, p, interleaved=True),
            "the frequencies are 10000^(−l/d_h); they are ω_l = 10000^(−2l/d_h)":
                lambda x, p: _rotated(x, p, exponent=1),
            "the positions are ignored (arange(n) is used); rotate row t by positions[t]":
                lambda x, p: _rope(x, torch.arange(x.shape[-2])),
            "the rotation goes the wrong way (by −θ): x·cos + rotate_half(x)·sin, rotate_half(x) = (−x₂, x₁)":
                lambda x, p: _rope(x, -p)}),
    "alibi_bias": Exercise(
        _alibi_cases, _alibi_bias, "transformers' BLOOM ALiBi slopes",
        "every h from 1 to 24, n 1..7", {
            "the sign is flipped: the bias is −m·|i − j|, a penalty":
                lambda n, h: -_alibi_bias(n, h),
            "these slopes 2^(−8(g+1)/h) hold only for h a power of two; Press et al. add "
            "interleaved slopes from the next power of two for other h":
                lambda n, h: _alibi_from(2.0 ** (-8 * torch.arange(1, h + 1) / h), n),
            "the heads are in reverse order: head 0 is the steepest":
                lambda n, h: _alibi_bias(n, h).flip(0),
            "there is no absolute value: m·(j − i) is right only for j ≤ i; the bias is −m·|i − j|":
                lambda n, h: _alibi_from(_alibi_slopes(h), n, lambda i, j: j - i),
            "the slopes are sorted steepest first; Press et al. (and transformers) put the "
            "2^⌊log₂ h⌋ geometric ones first":
                lambda n, h: _alibi_from(_alibi_slopes(h).sort(descending=True).values, n)}),
    "t5_bucket": Exercise(
        _t5_cases, _t5_bucket, "transformers' T5 bucketing",
        "δ −300..300, bidirectional and not, other bucket counts and distances", {
            "this is i − j: the sign is flipped; relative_position is δ = j − i":
                lambda r, bidirectional=True, **kw: _t5_bucket(-r, bidirectional, **kw),
            "bidirectional and unidirectional are mixed up":
                lambda r, bidirectional=True, **kw: _t5_bucket(r, not bidirectional, **kw),
            "distances at or beyond max_distance are not clamped to the last bucket (num_buckets − 1)":
                _t5_unclamped}),
    "skew": Exercise(
        _skew_cases, _skew, "a direct gather of column j − i + n − 1",
        "n 1..6, batch dims, the entries j ≤ i", {
            "the pad column went on the wrong side: this is shifted by one (rel_logits[i, j − i + n])":
                lambda r: _pad_skew(r, pad=(0, 1)),
            "the wrong n rows are kept after the reshape (off by one row): drop the first, not the last":
                lambda r: _pad_skew(r, rows=slice(None, -1)),
            "the offsets are read in reverse (rel_logits[i, i − j]); column r is offset r − (n − 1)":
                _skew_reversed,
            "rel_logits came back unskewed":
                lambda r: r.clone()},
        checked=lambda r: _tril(r.shape[-1], 0)),
    "ntk_frequencies": Exercise(
        _ntk_cases, _ntk_frequencies, "transformers' dynamic NTK at factor 1 (its static form), in float64",
        "d 4..128, base 10⁴ and 5·10⁵, scale 1..16", {
            "this is base·scale: the exponent d/(d−2) is missing (base' = base·scale^(d/(d−2)))":
                lambda d, b, s: _ntk_frequencies(d, b * s, 1),
            "this is position interpolation (ω/scale), not NTK-aware scaling of the base":
                lambda d, b, s: _ntk_frequencies(d, b, 1) / s,
            "the scale is ignored: these are RoPE's unscaled frequencies":
                lambda d, b, s: _ntk_frequencies(d, b, 1),
            "the result is float32; the contract asks for float64":
                lambda d, b, s: _ntk_frequencies(d, b, s, torch.float32),
            "this was computed in float32 and then converted: do the arithmetic in float64":
                lambda d, b, s: _ntk_frequencies(d, b, s, torch.float32).double()}),
    "position_ids": Exercise(
        _position_ids_cases, _position_ids, "transformers' generate position ids (cumsum − 1)",
        "left padding of 0..3, no padding, n = 1; the padded entries are not checked", {
            "the padding is ignored (arange(n)): count from each row's first real token":
                lambda m: torch.arange(m.shape[-1]).expand(m.shape),
            "this starts at 1: the first real token has position 0 (cumsum − 1)":
                lambda m: m.cumsum(-1)},
        checked=lambda m: m == 1),
}
