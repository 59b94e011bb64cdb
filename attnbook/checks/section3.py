"""Section 3's exercise (positional encoding) and the mistakes it names.

* sinusoidal_encoding: sin/cos halves instead of interleaved; exponent l/d; a frequency per column
  (j/d); sin and cos swapped; for odd d the exponent over d + 1 or d − 1 (d made even). An odd d that
  fails otherwise is diagnosed by where: the full pairs first (their frequencies), then the last column.
  Reported by position i and column.
"""
import torch

from attnbook.checks.machinery import Case, Exercise


def _sinusoidal_encoding(n, d):
    from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings

    return create_sinusoidal_embeddings(n, d, torch.empty(n, d, device="cpu"))  # it fills it from numpy


def _sinusoid(n, d, exponent=lambda j, d: 2 * (j // 2) / d, even=torch.sin, odd=torch.cos):
    """P[i, j] = even/odd(i · 10000^(−exponent(j))) at even/odd columns j (for mistakes)."""
    j = torch.arange(d)
    angles = torch.arange(n, dtype=torch.float64)[:, None] * 10000.0 ** -exponent(j, d)
    return torch.where(j % 2 == 0, even(angles), odd(angles)).float()


def _sin_cos_halves(n, d):
    angles = torch.arange(n, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, d, 2) / d)
    return torch.cat([angles.sin(), angles[:, :d // 2].cos()], -1).float()


def _odd_d(n, d):
    """What an odd-d case says when no known mistake fits: the full pairs' frequencies, then the last column
    (an answer that raised or returned another shape: the last column)."""
    def note(got):
        pairs_differ = isinstance(got, torch.Tensor) and got.shape == (n, d) and not torch.allclose(
            got.detach().cpu().float()[:, :d - 1], _sinusoidal_encoding(n, d)[:, :d - 1], 1e-4, 1e-4)
        if not pairs_differ:
            return "odd d must work too: the last column is a sin with no cos beside it"
        return (f"the full pairs (columns 0..{d - 2}) already differ: for odd d too, ω_l = 10000^(−2l/d) "
                f"with d = {d} itself")
    return note


def _sinusoidal_cases(g):
    sizes = [(6, 8), (50, 32), (1, 4), (10, 2), (7, 7), (4, 1), (9, 5)]
    return [Case(f"n={n}, d={d}{' (odd d)' if d % 2 else ''}", (n, d), note=_odd_d(n, d) if d % 2 else "")
            for n, d in sizes]


EXERCISES = {
    "sinusoidal_encoding": Exercise(
        _sinusoidal_cases, _sinusoidal_encoding,
        "transformers' sinusoidal table (DistilBERT), entry by entry",
        "n 1..50, d 1..32, odd d", {
            "these are sin and cos halves side by side; interleave them (sin at 2l, cos at 2l + 1)":
                _sin_cos_halves,
            "the exponent is l/d; it is 2l/d (ω_l = 10000^(−2l/d))":
                lambda n, d: _sinusoid(n, d, lambda j, d: (j // 2) / d),
            "each column has its own frequency (j/d); columns 2l and 2l+1 share ω_l = 10000^(−2l/d)":
                lambda n, d: _sinusoid(n, d, lambda j, d: j / d),
            "sin and cos are swapped: sin goes to the even columns 2l, cos to the odd ones":
                lambda n, d: _sinusoid(n, d, even=torch.cos, odd=torch.sin),
            "the exponent is 2l/(d + 1), d rounded up to even; for odd d too it is 2l/d":
                lambda n, d: _sinusoid(n, d, lambda j, d: 2 * (j // 2) / (d + d % 2)),
            "the exponent is 2l/(d − 1), d rounded down to even; for odd d too it is 2l/d":
                lambda n, d: _sinusoid(n, d, lambda j, d: 2 * (j // 2) / (d - d % 2))},
        where=lambda case, at: f"at position i = {at[0]}, column {at[1]}:"),
}
