"""Section 3's exercise (positional encoding) and the mistakes it names.

* sinusoidal_encoding(positions, d): its contract grew (issue 29): `positions`, an int n at first, may
  also be an int64 tensor of positions, any shape (a batch's position ids, a cache continuing at 40,
  41, …), up to 100,000, the rows accurate to float32 (the angles computed in float64), so the
  chapter's sinusoidal_table (arange(n), float32 angles) no longer answers it; sinusoidal_encoding(n, d)
  with an int n is what it was. Mistakes: sin/cos halves instead of interleaved; exponent l/d; a
  frequency per column (j/d); sin and cos swapped; for odd d the exponent over d + 1 or d − 1 (d made
  even); the angles computed in float32; the positions replaced by 0..len − 1. An odd d that fails
  otherwise is diagnosed by where: the full pairs first (their frequencies), then the last column.
  Reported by position i and column.
  Its core since issue 29's seventh pass, which no cell of the chapter shows: `positions` may be a pair
  (n1, n2), an image's grid of patches, giving (n1, n2, d), d even (odd d: a ValueError): the first d/2
  entries encode the patch's row i1, the last d/2 its column i2, each half a complete encoding of width
  d/2 (ω_ℓ = 10000^(−2ℓ/(d/2))), interleaved as in 1-D. transformers' build_2d_sinusoidal_position_embedding
  is the same table with the sines before the cosines inside each half (tests/test_check.py checks the
  reference against it); ViT-MAE and AIMv2 then swap its halves, column first, as MAE's code does.
  Mistakes: each half cut from the width-d encoding; the halves swapped; the row's and the column's
  entries interleaved; transformers' layout (sines first inside each half); the 1-D encoding of the
  flattened index i1·n2 + i2. Reported by patch (i1, i2) and entry.
"""
import torch

from attnbook.checks.machinery import Case, Exercise


def _sinusoidal_encoding(n, d):
    if isinstance(n, tuple):  # an image's grid (H, W): a row half and a column half, each of width d/2
        return _grid(n, d)
    if isinstance(n, torch.Tensor):  # positions far out: the same formula, written out in float64
        return _sinusoid(n, d)        # (tests/test_check.py checks it against the table below)
    from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings

    return create_sinusoidal_embeddings(n, d, torch.empty(n, d, device="cpu"))  # it fills it from numpy


def _grid(n, d, half=lambda k, width: _sinusoidal_encoding(k, width), swap=False, mixed=False):
    """(H, W, d): [encoding of the row r, encoding of the column c], each from half(count, d/2); mixed: the
    two interleaved entry by entry (a mistake)."""
    (H, W), h = n, d // 2
    rows, columns = half(H, h)[:, None].expand(H, W, h), half(W, h)[None].expand(H, W, h)
    if mixed:
        return torch.stack([rows, columns], -1).flatten(-2)
    return torch.cat([columns, rows] if swap else [rows, columns], -1)


def _positions(n, dtype=torch.float64):
    return n.to("cpu", dtype) if isinstance(n, torch.Tensor) else torch.arange(n, dtype=dtype, device="cpu")


def _sinusoid(n, d, exponent=lambda j, d: 2 * (j // 2) / d, even=torch.sin, odd=torch.cos,
              dtype=torch.float64):
    """P[..., i, j] = even/odd(i · 10000^(−exponent(j))) at even/odd columns j, for the positions 0..n − 1
    or a tensor of them, the angles in `dtype` (float32 for a mistake)."""
    j = torch.arange(d, dtype=torch.float64, device="cpu")  # the reference is computed on the CPU
    angles = _positions(n, dtype)[..., None] * (10000.0 ** -exponent(j, d)).to(dtype)
    return torch.where(j % 2 == 0, even(angles), odd(angles)).float()


def _sin_cos_halves(n, d):
    pairs = torch.arange(0, d, 2, dtype=torch.float64, device="cpu")
    angles = _positions(n)[..., None] * 10000.0 ** (-pairs / d)
    return torch.cat([angles.sin(), angles[..., :d // 2].cos()], -1).float()


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
    sizes = [(50, 32), (10, 2), (7, 7), (4, 1), (9, 5)]  # the grid's halves are these tables again
    cases = [Case(f"n={n}, d={d}{' (odd d)' if d % 2 else ''}", (n, d), note=_odd_d(n, d) if d % 2 else "")
             for n, d in sizes]
    positions = [([40, 41, 42], 16, "a cache continuing at 40"), ([[0, 0, 1, 2], [3, 4, 5, 6]], 8, "(b, n)"),
                 ([[0, 1, 2], [99_997, 99_998, 99_999]], 16, "(b, n), up to 99,999"),
                 ([70_001, 3, 12_345], 7, "out of order, odd d")]
    grids = [Case(f"grid (n1, n2) = {hw}, d={d}{what}", (hw, d), note=_grid_note(hw, d))
             for hw, d, what in [((3, 4), 8, ""), ((2, 5), 12, ""), ((4, 3), 6, " (d/2 odd)"),
                                 ((1, 1), 2, ""), ((1, 6), 16, " (one row)"),
                                 ((5, 1), 10, " (one column, d/2 odd)"), ((8, 8), 32, "")]]
    odd_grid = Case("grid (n1, n2) = (2, 2), d=7 (odd d)", ((2, 2), 7), raises=ValueError,
                    note="a grid splits d into two halves of d/2: raise a ValueError for odd d")
    return cases + [Case(f"positions {p} ({what}), d={d}", (torch.tensor(p), d),
                         note=_far(torch.tensor(p), d)) for p, d, what in positions] + grids + [odd_grid]


def _grid_note(hw, d):
    """What a grid case says when no known mistake fits: the shape, or which entries hold what."""
    def note(got):
        if isinstance(got, torch.Tensor) and got.shape == (*hw, d):
            return (f"entries 0..{d // 2 - 1} of each patch must be the row i1's encoding of width d/2 = "
                    f"{d // 2}, entries {d // 2}..{d - 1} the column i2's")
        return "positions may be a pair (n1, n2) too: (n1, n2, d), one row of d for each patch"
    return note


def _far(positions, d):
    """What a tensor-of-positions case says when no known mistake fits: rows that are nearly right (within
    0.05) and still fail have lost digits in float32 angles, whatever order the float32 arithmetic took."""
    def note(got):
        expected = _sinusoid(positions, d)
        if isinstance(got, torch.Tensor) and got.shape == expected.shape and torch.allclose(
                got.detach().cpu().float(), expected, rtol=0, atol=0.05):
            return FLOAT32_ANGLES
        return "positions may be a tensor too: one row of d for each entry, at that position"
    return note


FLOAT32_ANGLES = ("the angles i·ω_ℓ were computed in float32, which keeps 24 significant bits: far from 0 an "
                  "angle loses its last digits; compute them in float64, then return float32")


def _over_even(d, odd_d):
    """2l/odd_d for odd d (a mistake there); for even d it is the right exponent, so no mistake."""
    if d % 2 == 0:
        raise ValueError("only odd d")
    return lambda j, d: 2 * (j // 2) / odd_d


def _position_and_column(case, at):
    n = case.args[0]
    if isinstance(n, tuple):
        return f"at patch (i1, i2) = ({at[0]}, {at[1]}), entry {at[2]}:"
    position = int(n[at[:-1]]) if isinstance(n, torch.Tensor) else at[0]
    return f"at position i = {position:,}, column {at[-1]}:"


EXERCISES = {
    "sinusoidal_encoding": Exercise(
        _sinusoidal_cases, _sinusoidal_encoding,
        "transformers' sinusoidal table (DistilBERT), entry by entry; for a tensor of positions the same "
        "formula in float64, rounded once to float32; for a grid, two halves of that table at width d/2, "
        "row first, each interleaved (transformers' build_2d_sinusoidal_position_embedding puts each half's "
        "sines first; ViT-MAE then swaps the halves, column first)",
        "n 1..50, d 1..32, odd d; positions (n,) and (b, n) up to 99,999; grids (n1, n2) up to 8, d/2 odd", {
            "these are sin and cos halves side by side; interleave them (sin at 2l, cos at 2l + 1)":
                _sin_cos_halves,
            "the exponent is l/d; it is 2l/d (ω_l = 10000^(−2l/d))":
                lambda n, d: _sinusoid(n, d, lambda j, d: (j // 2) / d),
            "each column has its own frequency (j/d); columns 2l and 2l+1 share ω_l = 10000^(−2l/d)":
                lambda n, d: _sinusoid(n, d, lambda j, d: j / d),
            "sin and cos are swapped: sin goes to the even columns 2l, cos to the odd ones":
                lambda n, d: _sinusoid(n, d, even=torch.cos, odd=torch.sin),
            "the exponent is 2l/(d + 1), d rounded up to even; for odd d too it is 2l/d":
                lambda n, d: _sinusoid(n, d, _over_even(d, d + 1)),
            "the exponent is 2l/(d − 1), d rounded down to even; for odd d too it is 2l/d":
                lambda n, d: _sinusoid(n, d, _over_even(d, d - 1)),
            FLOAT32_ANGLES: lambda n, d: _sinusoid(n, d, dtype=torch.float32),
            "these are the rows of positions 0..len − 1; each row is the encoding of its entry of the "
            "positions tensor":
                lambda n, d: _sinusoid(torch.arange(n.shape[-1]).expand(n.shape), d),
            "each half was cut from the width-d encoding, so its slow pairs are missing; each half is a "
            "complete encoding of width d/2 in its own right":
                lambda n, d: _grid(n, d, half=lambda k, width: _sinusoidal_encoding(k, 2 * width)[:, :width]),
            "the halves are swapped: the first d/2 entries encode the patch's row i1, the last d/2 its "
            "column i2":
                lambda n, d: _grid(n, d, swap=True),
            "the row's and the column's entries are interleaved (row, column, row, …); the first d/2 "
            "entries are the row i1's whole encoding, the last d/2 the column i2's":
                lambda n, d: _grid(n, d, mixed=True),
            "inside each half the sines come first, then the cosines (transformers' 2-D layout); "
            "interleave them as in 1-D, sin at 2l and cos at 2l + 1 of each half":
                lambda n, d: _grid(n, d, half=_sin_cos_halves),
            "this is the 1-D encoding of the flattened index i1·n2 + i2; a grid encodes the row and the "
            "column each in its own half":
                lambda n, d: _sinusoidal_encoding(n[0] * n[1], d).reshape(*n, d)},
        where=_position_and_column),
}
