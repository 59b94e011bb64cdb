"""Section 5's exercises (rotary position embedding) and the mistakes each names.

* rope: its contract grew twice (issue 29): positions may be (b, n), one row per sequence (a left-padded
  batch, as position_ids makes), for x (b, ..., n, d_h); and x may be bfloat16 or float16, at positions
  far into a long cache (up to 65,000), returned in x's dtype with the angles position·ω computed in
  float32 (transformers casts cos and sin to x's dtype afterwards), so the chapter's rope_half_split
  answers neither; rope(x, positions (n,)) on float32 is what it was. Mistakes: interleaved pairing;
  frequencies 10000^(−l/d_h); positions ignored (arange(n)); rotation the wrong way; (b, n) positions
  broadcast against the heads axis; every sequence given the first row's positions; the angles, or
  the frequencies alone, rounded to x's dtype. An odd d_h must raise a ValueError (no half-split pairs).
  A third time: positions may be fractional floats (position interpolation divides them by s, section 6),
  which a cos/sin table read at each position, the way older models cached RoPE, cannot serve; mistake:
  positions cut to whole numbers.
  A fourth time (issue 29: the core is now what no cell of the chapter shows): rope(x, positions, grid=True)
  takes positions (..., n, 2), each patch's row μ and column ν, and turns pairs l < d_h/4 by μ and the
  others by ν, each half a RoPE of width d_h/2 (axial 2-D RoPE, as in RoPE-ViT, Heo et al. 2024, in the
  half-split layout of transformers' Qwen2-VL vision tower, the reference); d_h not divisible by 4 must
  raise a ValueError.
  Mistakes: both halves by μ, or both by ν; μ and ν swapped; the halves of the coordinates instead of the
  halves of the pairs; row and column alternating pair by pair; the width-d_h frequencies kept, or their
  first d_h/4 in each half. And for 1-D: cos and sin laid out by neighbours. The ValueErrors must say why
  (even; divisible by 4), as the docstring asks.
* position_ids: masks of int64 and of bool (True: a real token; `1 - mask` refuses a bool). Mistakes:
  padding ignored (arange); starts at 1; counted from the right (the last token 0); counted
  down the batch (dim 0) instead of along each row.
  The lines name the mistake, not the one-line answer.
"""
from functools import lru_cache

import torch

from attnbook.checks.machinery import Case, Exercise, randn


# ----------------------------------------------------------------------------------- rope
@lru_cache
def _llama_rope(d_h):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=d_h, num_attention_heads=1, head_dim=d_h,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    return LlamaRotaryEmbedding(config)


@lru_cache
def _qwen2_vl_rope(d_h):
    from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLVisionConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLVisionRotaryEmbedding

    config = Qwen2VLVisionConfig(embed_dim=d_h, num_heads=1,
                                 rope_parameters={"rope_type": "axial", "rope_theta": 10000.0})
    return Qwen2VLVisionRotaryEmbedding(config)


def _rope(x, positions, per_sequence=True, grid=False):
    if grid:  # transformers' Qwen2-VL vision RoPE: pairs l < d_h/4 by the row, the rest by the column
        cos, sin = _qwen2_vl_rope(x.shape[-1])(x, positions.reshape(-1, 2))
        cos, sin = (c.reshape(-1, positions.shape[-2], x.shape[-1]).to(x.dtype) for c in (cos, sin))
        return _turned(x, positions[..., 0], cos, sin, per_sequence)
    # transformers computes the angles in float32 and casts cos and sin to x's dtype
    cos, sin = _llama_rope(x.shape[-1])(x, positions if positions.dim() == 2 else positions[None])
    return _turned(x, positions, cos, sin, per_sequence)


def _turned(x, positions, cos, sin, per_sequence=True):
    """x cos + rotate_half(x) sin, cos and sin (1 or b, n, d_h) laid over x's sequences and heads."""
    from transformers.models.llama.modeling_llama import rotate_half

    if positions.dim() == 1:  # (1, n, d_h): the same positions for every sequence
        cos, sin = cos[0], sin[0]
    elif per_sequence:        # (b, n, d_h) -> (b, 1, ..., n, d_h): sequence b's row, every head
        cos, sin = (c.reshape(c.shape[0], *[1] * (x.dim() - 3), *c.shape[1:]) for c in (cos, sin))
    return x * cos + rotate_half(x) * sin  # transformers' apply_rotary_pos_emb, broadcast over the heads


def _rounded(x, positions, what="angles"):
    """RoPE with the angles (or the frequencies alone) rounded to x's dtype (for the mistakes)."""
    d = x.shape[-1]
    omega = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    if what == "angles":
        return _from_angles(x, positions, positions[..., None].to(x.dtype) * omega.to(x.dtype))
    return _from_angles(x, positions, positions[..., None].float() * omega.to(x.dtype).float())


def _from_angles(x, positions, angles, neighbours=False):
    """x turned by angles (..., n, d_h/2), pair l = (l, l + d_h/2); neighbours (a mistake): cos and sin laid
    out ω₀, ω₀, ω₁, ω₁, … as for the interleaved pairs, where rotate_half wants ω₀, ω₁, …, ω₀, ω₁, …"""
    angles = angles.repeat_interleave(2, -1) if neighbours else torch.cat([angles, angles], -1)
    angles = angles if positions.dim() == 2 else angles[None]
    return _turned(x, positions, angles.cos().to(x.dtype), angles.sin().to(x.dtype))


def _grid_wrong(x, positions, how):
    """The grid mistakes: the halves of the coordinates each a RoPE of width d_h/2, the pairs turned by
    their row or column at the width-d_h frequencies (all of them, or the first d_h/4 in each half), or
    row and column alternating pair by pair."""
    half, rows, cols = x.shape[-1] // 2, positions[..., 0], positions[..., 1]
    pair = torch.arange(half)  # pair l = (l, l + d_h/2)
    if how == "coordinates":
        return torch.cat([_rope(x[..., :half], rows), _rope(x[..., half:], cols)], -1)
    if how == "alternating":  # pairs alternate row and column: μ for even l, ν for odd l
        omega = 10000.0 ** (-2 * (pair // 2) / half)  # width d_h/2's frequencies, each twice
        return _from_angles(x, rows, torch.where(pair % 2 == 0, rows[..., None], cols[..., None]) * omega)
    if how == "first quarter":  # each half at the first d_h/4 of the width-d_h frequencies
        omega = 10000.0 ** (-torch.arange(half // 2) / half)
        return _from_angles(x, rows, torch.cat([rows[..., None] * omega, cols[..., None] * omega], -1))
    angles = torch.where(pair < half // 2, rows[..., None], cols[..., None]) * 10000.0 ** (-pair / half)
    return _from_angles(x, rows, angles)


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
        return Case(f"x {shape}, positions {positions}{what}", (randn(g, *shape), torch.tensor(positions)))

    cases = [case((2, 3, 5, 8), [7, 3, 100, -2, 0], " (batch and head dims, out of order, negative)")]
    leading = [(), (3,), (2, 3)]
    for index, d_h in enumerate((2, 4, 8, 16, 64)):
        lead = leading[index % 3]
        cases += [case((*lead, 4, d_h), [0, 1, 2, 3], ""),
                  case((*lead, 5, d_h), [7, 3, 100, -2, 0], " (out of order, negative)"),
                  case((*leading[(index + 1) % 3], 3, d_h), [40, 41, 42], " (continuing after 40 cached)")]
    cases += [case((1, 6), [5], " (n = 1)"), case((2, 4, 6), [-1, -5, -9, -3], " (all negative)")]
    per_sequence = [((2, 2, 5, 8), [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]], "x (b, h, n, d_h), h = b"),
                    ((3, 4, 6), [[0, 1, 2, 3], [0, 0, 1, 2], [5, 6, 7, 8]], "x (b, n, d_h)"),
                    ((2, 3, 4, 16), [[0, 0, 1, 2], [7, 8, 9, 10]], "x (b, h, n, d_h), h = 3")]
    for shape, positions, what in per_sequence:
        cases.append(Case(f"x {shape}, positions (b, n) {positions} ({what})",
                          (randn(g, *shape), torch.tensor(positions)),
                          note="positions (b, n) must work too: row b turns sequence b, all its heads alike"))
    low = [((2, 3, 4, 64), torch.bfloat16, [40000, 40001, 40002, 40003], "continuing after 40,000 cached"),
           ((3, 4, 32), torch.float16, [65000, 20, 3000, 12345], "out of order, up to 65,000"),
           ((2, 2, 5, 16), torch.bfloat16, [[0, 0, 0, 1, 2], [30000, 30001, 30002, 30003, 30004]],
            "positions (b, n)"),
           ((4, 8), torch.bfloat16, [0, 1, 2, 3], "small positions")]
    for shape, dtype, positions, what in low:
        name = str(dtype).removeprefix("torch.")
        cases.append(Case(f"x {shape} in {name}, positions {positions} ({what})",
                          (randn(g, *shape).to(dtype), torch.tensor(positions)),
                          note=f"x in {name} must work too: return {name}, with the angles position·ω "
                               "computed in float32, then cos and sin cast to x's dtype"))
    fractional = [((2, 5, 8), [0.0, 0.25, 0.5, 0.75, 1.0], "(n,)"),
                  ((2, 3, 4, 16), [[0.0, 0.0, 0.5, 1.0], [10.5, 11.0, 11.5, 12.0]], "(b, n)")]
    for shape, positions, what in fractional:  # position interpolation: positions / s
        cases.append(Case(f"x {shape}, positions {what} {positions} (fractional, as position interpolation "
                          "makes them)", (randn(g, *shape), torch.tensor(positions)),
                          note="float positions must work too: the angle is position·ω, whatever the "
                               "position"))
    patches = [[r, c] for r in range(2) for c in range(3)]  # a 2 × 3 grid of patches, row by row
    grids = [((6, 8), patches, "a 2 × 3 grid"), ((2, 3, 6, 16), patches[::-1], "the patches in reverse"),
             ((4, 4), [[0, 0], [5, 2], [1.5, 7], [-3, 0]], "fractional and negative"),
             ((2, 2, 3, 16), [[[0, 0], [0, 1], [1, 0]], [[4, 4], [4, 5], [5, 4]]],
              "(b, n, 2): one grid per sequence")]
    for shape, positions, what in grids:
        cases.append(Case(f"x {shape}, grid=True, positions (μ, ν) {positions} ({what})",
                          (randn(g, *shape), torch.tensor(positions)), {"grid": True},
                          note="grid=True must work too: positions (..., n, 2) hold each patch's row μ "
                               "and column ν; pairs l < d_h/4 turn by μ, the others by ν, each half a RoPE "
                               "of width d_h/2"))
    cases.append(Case("x (4, 6), grid=True (d_h = 6)", (randn(g, 4, 6), torch.tensor(patches[:4])),
                      {"grid": True}, raises=ValueError, says=r"by 4|of 4|[%/]\s*4",
                      note="d_h = 6 has 3 pairs, which a row half and a "
                      "column half cannot share: on a grid, raise a ValueError that says d_h must be "
                      "divisible by 4"))
    for shape in [(2, 3, 5), (4, 1)]:
        cases.append(Case(f"x {shape} (odd d_h = {shape[-1]})", (randn(g, *shape), torch.arange(shape[-2])),
                          raises=ValueError, says=r"even|odd|by 2|of 2|%\s*2",
                          note=f"d_h = {shape[-1]} is odd, so coordinate l has no partner "
                          "l + d_h/2: raise a ValueError that says d_h must be even"))
    return cases


# ----------------------------------------------------------------------------------- position_ids
def _position_ids(attention_mask):
    from transformers.generation.utils import GenerationMixin

    # generate()'s own position ids from the mask (its `self` is not used on this path)
    prepare = GenerationMixin._prepare_position_ids_for_generation
    return prepare(None, attention_mask, {"attention_mask": attention_mask})


def _position_ids_cases(g):
    masks = [[[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 1, 1, 1, 1]], [[1, 1, 1]], [[0, 0, 0, 1]], [[1]],
             [[0, 1], [1, 1]], [[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1]]]
    bools = [[[False, False, True, True], [True, True, True, True]], [[False, True, True]]]
    return [Case(f"attention_mask {mask}", (torch.tensor(mask),)) for mask in masks] + [
        Case(f"attention_mask {mask} (bool)", (torch.tensor(mask),),
             note="a bool mask (True: a real token) must work too, as torch masks often come")
        for mask in bools]


# ----------------------------------------------------------------------------------- the table
EXERCISES = {
    "rope": Exercise(
        _rope_cases, _rope,
        "transformers' Llama RoPE (apply_rotary_pos_emb, base 10,000; in bfloat16 and float16 its float32 "
        "angles, cos and sin cast to x's dtype, to a few units in the last place) and, on a grid, its "
        "Qwen2-VL vision RoPE",
        "d_h 2..64, batch and head dims, positions not 0..n-1, negative and fractional positions, positions "
        "(b, n) per sequence, bfloat16 and float16 at positions up to 65,000; grids (μ, ν) of patches, one "
        "per sequence too; odd d_h, and d_h = 6 on a grid, refused", {
            "the angles position·ω were computed in x's dtype, whose few significant bits (8 in bfloat16, "
            "11 in float16) cannot hold a position near 40,000 exactly; compute them in float32":
                lambda x, p: _rounded(x, p, "angles"),
            "the frequencies ω were rounded to x's dtype: a relative error of 2⁻⁹ (bfloat16) times a "
            "position near 40,000 is tens of radians; keep ω in float32":
                lambda x, p: _rounded(x, p, "frequencies"),
            "this is the interleaved pairing (2l, 2l+1); the exercise asks for the half-split one "
            "(l, l + d_h/2), as Llama in transformers":
                lambda x, p: _rotated(x, p, interleaved=True),
            "the frequencies are 10000^(−l/d_h); they are ω_l = 10000^(−2l/d_h)":
                lambda x, p: _rotated(x, p, exponent=1),
            "the positions are ignored (arange(n) is used); rotate row t by positions[t]":
                lambda x, p: _rope(x, torch.arange(x.shape[-2])),
            "the rotation goes the wrong way (by −θ): x·cos + rotate_half(x)·sin, rotate_half(x) = (−x₂, x₁)":
                lambda x, p: _rope(x, -p),
            "positions (b, n) were broadcast against the heads axis (b, h, n, d_h): give them a head axis "
            "of 1, so that row b turns sequence b":
                lambda x, p: _rope(x, p, per_sequence=False),
            "the positions were cut to whole numbers (.long(), or a cos/sin table read at each position): "
            "position interpolation gives fractional ones; compute the angles from them":
                lambda x, p: _rope(x, p.long()),
            "every sequence got the first row's positions; row b of positions belongs to sequence b":
                lambda x, p: _rope(x, p[0] if p.dim() == 2 else p),
            "cos and sin were laid out by neighbours (ω₀, ω₀, ω₁, ω₁, …, repeat_interleave), which fits the "
            "interleaved pairs; rotate_half's pair l is (l, l + d_h/2), so lay them out by halves":
                lambda x, p: _from_angles(x, p, p[..., None].float() * _llama_rope(x.shape[-1]).inv_freq,
                                          neighbours=True),
            "both halves of the pairs turned by the row μ; pairs l ≥ d_h/4 turn by the column ν":
                lambda x, p, grid: _rope(x, p[..., [0, 0]], grid=True),
            "both halves of the pairs turned by the column ν; pairs l < d_h/4 turn by the row μ":
                lambda x, p, grid: _rope(x, p[..., [1, 1]], grid=True),
            "the row and the column are swapped: pairs l < d_h/4 turn by the row μ = positions[..., 0]":
                lambda x, p, grid: _rope(x, p.flip(-1), grid=True),
            "each half of the coordinates (x[..., :d_h/2], x[..., d_h/2:]) got its own RoPE; the exercise "
            "splits the pairs (l, l + d_h/2) instead: l < d_h/4 by μ, the rest by ν":
                lambda x, p, grid: _grid_wrong(x, p, "coordinates"),
            "the pairs kept the width-d_h frequencies 10000^(−2l/d_h); each half is a RoPE of width d_h/2, "
            "so pair l and pair l + d_h/4 share one frequency":
                lambda x, p, grid: _grid_wrong(x, p, "frequencies"),
            "the pairs alternate between the row and the column (μ for even l, ν for odd l); the first d_h/4 "
            "pairs turn by the row μ, the next d_h/4 by the column ν":
                lambda x, p, grid: _grid_wrong(x, p, "alternating"),
            "the grid was built from full-width frequencies: each half took the first d_h/4 of "
            "10000^(−2l/d_h); a RoPE of width d_h/2 has 10000^(−4l/d_h), every other one of them":
                lambda x, p, grid: _grid_wrong(x, p, "first quarter")}),
    "position_ids": Exercise(
        _position_ids_cases, _position_ids,
        "transformers' generate() position ids on the real tokens",
        "left padding of 0..3, no padding, n = 1, int64 and bool masks; the padded entries are not checked", {
            "the padding is ignored (arange(n)): count from each row's first real token":
                lambda m: torch.arange(m.shape[-1]).expand(m.shape),
            "this starts at 1: the first real token has position 0":
                lambda m: m.cumsum(-1),
            "the positions count from the right (the last token got 0); they count from each row's first "
            "real token":
                lambda m: m.flip(-1).cumsum(-1).flip(-1) - 1,
            "the count ran down the batch (over the rows, dim 0); count along each row, over its tokens":
                lambda m: m.cumsum(0) - 1},
        checked=lambda m: m == 1),
}
