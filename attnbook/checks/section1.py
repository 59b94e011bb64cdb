"""Section 1's exercises (self-attention) and the mistakes each names.

* masked_softmax: softmax over the queries; masked scores set to 0; −1e6 fill (an empty row comes
  out uniform); key j = valid length kept (j ≤ len); valid_lens ignored; valid_lens (b, q) not
  handled (the case's note). Its gradients are checked too, once the weights agree: −inf added to the
  scores and the empty row's NaN replaced afterwards gives the right weights and NaN gradients.
* causal_mask: strict j < i; j ≤ i + 1; transposed (j ≥ i); inverted (True where blocked); the
  additive 0/−inf float mask instead of bool.
* attention: softmax over the queries; no scaling; divided by d_h; divided by √d_v; mask read the
  other way; mask ignored.
"""
import math

import torch
import torch.nn.functional as F

from attnbook.checks.machinery import LOOSE, TOLERANCE, Case, Exercise, differs, moved, one_line, randn, tril


# ----------------------------------------------------------------------------------- masked_softmax
def _keep(scores, valid_lens, inclusive=False):
    lens = valid_lens[..., None] if valid_lens.dim() == 2 else valid_lens[:, None, None]
    keys = torch.arange(scores.shape[-1], device=scores.device)
    return keys <= lens if inclusive else keys < lens


def _masked(scores, valid_lens, fill, dim=-1, inclusive=False):
    """Keys j < valid length kept (j ≤ with inclusive), the rest set to `fill`, softmax over `dim`."""
    if valid_lens is None:
        return scores.softmax(dim)
    return scores.masked_fill(~_keep(scores, valid_lens, inclusive), fill).softmax(dim).nan_to_num(0.0)


def _masked_softmax(scores, valid_lens=None):
    # torch has no length-masked softmax: masked_fill with −inf, and an empty row's NaNs become 0
    # (masked_fill's backward gives the masked entries, so the whole empty row, a zero gradient)
    return _masked(scores, valid_lens, -math.inf)


def _added_then_replaced(scores, valid_lens=None):
    """−inf *added* to the masked scores, the empty row's NaN replaced afterwards (for the mistake)."""
    if valid_lens is None:
        return scores.softmax(-1)
    minus_inf = torch.zeros_like(scores).masked_fill(~_keep(scores, valid_lens), -math.inf)
    return (scores + minus_inf).softmax(-1).nan_to_num(0.0)


GRADIENT_MISTAKES = {
    "this is −inf added to the scores with the empty row's NaN replaced afterwards: right weights, NaN "
    "gradients (section 1, Deeper: a query with no key gets zeros, not NaN)": _added_then_replaced}


def _gradient(fn, scores, valid_lens):
    """d(Σ weights · u)/d scores for a fixed u, or a string saying why there is none."""
    scores = moved(scores).requires_grad_(True)
    try:
        weights = fn(scores, moved(valid_lens))
        if not weights.requires_grad:
            return "your weights carry no gradient back to the scores (detached, or made outside autograd)"
        upstream = torch.linspace(-1, 1, weights.numel()).reshape(weights.shape).to(weights.device)
        (weights * upstream).sum().backward()
    except Exception as error:  # e.g. an in-place write into the scores, which autograd refuses
        return f"going backward, your function raises {type(error).__name__}: {one_line(error)}"
    return scores.grad.detach().cpu()


def _masked_softmax_gradients(case, fn):
    """After the weights agree: the gradients, finite, zero on an empty row, as the reference's."""
    expected, got = (_gradient(f, *case.args) for f in (_masked_softmax, fn))
    if isinstance(got, str):
        return got
    problem = differs(got, expected, None, TOLERANCE, lambda at: f"the scores' gradient at {list(at)}:")
    if not problem:
        return None
    for says, wrong in GRADIENT_MISTAKES.items():
        if differs(got, _gradient(wrong, *case.args), None, LOOSE) is None:
            return f"{problem} — {says}"
    return f"{problem} — the weights are right, their gradients are not (finite, and 0 on an empty row)"


def _masked_softmax_cases(g):
    lens = [None, [2, 4], [4, 1, 3], [[1, 3, 5], [2, 2, 4]], [0, 3], [[0, 2, 4], [1, 0, 3]], [1], [7]]
    shapes = [(2, 3, 5), (2, 3, 5), (3, 2, 4), (2, 3, 5), (2, 2, 4), (2, 3, 4), (1, 1, 1), (1, 2, 5)]
    cases = []
    for shape, valid in zip(shapes, lens, strict=True):
        valid_lens = None if valid is None else torch.tensor(valid)
        per_query = valid_lens is not None and valid_lens.dim() == 2
        empty = " (a valid length 0)" if valid_lens is not None and (valid_lens == 0).any() else ""
        cases.append(Case(f"scores {shape}, valid_lens {valid}{' (b, q)' if per_query else ''}{empty}",
                          (2 * randn(g, *shape), valid_lens),
                          note="valid_lens (b, q) must work too: one length per query" * per_query))
    return cases


# ----------------------------------------------------------------------------------- causal_mask
def _causal_mask(n):
    return torch.nn.Transformer.generate_square_subsequent_mask(n) == 0


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
        return randn(g, b, n_q, d_h), randn(g, b, n_k, d_h), randn(g, b, n_k, d_v)

    random_mask = torch.rand(2, 4, 6, generator=g) < 0.5
    random_mask[..., 0] = True  # no fully masked row (the contract promises none)
    padding = torch.tensor([[True] * 4 + [False] * 2, [True] * 6])[:, None, :]
    specs = [((2, 4, 6, 16, 4), None, "no mask"), ((2, 4, 6, 16, 4), padding, "padding mask (b, 1, n_k)"),
             ((2, 5, 5, 8, 3), tril(5, 0), "causal mask (n, n)"),
             ((2, 4, 6, 8, 8), random_mask, "random mask (b, n_q, n_k)"),
             ((1, 1, 1, 8, 2), None, "n = 1"), ((3, 2, 3, 1, 2), None, "d_h = 1")]
    return [Case(f"b={b}, n_q={n_q}, n_k={n_k}, d_h={d_h}, d_v={d_v}, {what}",
                 (*qkv(b, n_q, n_k, d_h, d_v), mask))
            for (b, n_q, n_k, d_h, d_v), mask, what in specs]


EXERCISES = {
    "masked_softmax": Exercise(
        _masked_softmax_cases, _masked_softmax,
        "softmax over each row's valid keys, an empty row all zeros (softmax with the masked keys at −inf "
        "gives NaN there), and their gradients (finite, 0 on an empty row)",
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
                lambda s, v=None: s.softmax(-1)},
        also=_masked_softmax_gradients),
    "causal_mask": Exercise(
        lambda g: [Case(f"n={n}", (n,)) for n in (5, 1, 2, 8)], _causal_mask,
        "torch.nn.Transformer.generate_square_subsequent_mask(n) == 0, True on and below the diagonal",
        "n 1..8", {
            "this is j < i: query i may also attend to itself (j ≤ i)":
                lambda n: tril(n, -1),
            "this is j ≤ i + 1, one key too many: query i would see token i + 1":
                lambda n: tril(n, 1),
            "this is the mask transposed (j ≥ i): True must be where j ≤ i":
                lambda n: tril(n, 0).T,
            "this is the inverse (True where j > i, blocked); True must mean 'may attend'":
                lambda n: ~tril(n, 0),
            "this is the additive float mask (0 and −inf); the exercise asks for a bool mask":
                lambda n: torch.nn.Transformer.generate_square_subsequent_mask(n)}),
    "attention": Exercise(
        _attention_cases, _attention, "F.scaled_dot_product_attention with the boolean mask as attn_mask",
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
}
