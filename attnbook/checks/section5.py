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
* position_ids: padding ignored (arange); starts at 1; counted from the right (the last token 0).
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


def _rope(x, positions, per_sequence=True):
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
        angles = positions[..., None].to(x.dtype) * omega.to(x.dtype)
    else:
        angles = positions[..., None].float() * omega.to(x.dtype).float()
    angles = torch.cat([angles, angles], -1)
    angles = angles if positions.dim() == 2 else angles[None]
    return _turned(x, positions, angles.cos().to(x.dtype), angles.sin().to(x.dtype))


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
    for shape in [(2, 3, 5), (4, 1)]:
        cases.append(Case(f"x {shape} (odd d_h = {shape[-1]})", (randn(g, *shape), torch.arange(shape[-2])),
                          raises=ValueError, note=f"d_h = {shape[-1]} is odd, so coordinate l has no partner "
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
    return [Case(f"attention_mask {mask}", (torch.tensor(mask),)) for mask in masks]


# ----------------------------------------------------------------------------------- the table
EXERCISES = {
    "rope": Exercise(
        _rope_cases, _rope,
        "transformers' Llama RoPE (apply_rotary_pos_emb, base 10,000; in bfloat16 and float16 its float32 "
        "angles, cos and sin cast to x's dtype, to a few units in the last place)",
        "d_h 2..64, batch and head dims, positions not 0..n-1, negative and fractional positions, positions "
        "(b, n) per sequence, bfloat16 and float16 at positions up to 65,000; odd d_h refused", {
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
                lambda x, p: _rope(x, p[0] if p.dim() == 2 else p)}),
    "position_ids": Exercise(
        _position_ids_cases, _position_ids,
        "transformers' generate() position ids on the real tokens",
        "left padding of 0..3, no padding, n = 1; the padded entries are not checked", {
            "the padding is ignored (arange(n)): count from each row's first real token":
                lambda m: torch.arange(m.shape[-1]).expand(m.shape),
            "this starts at 1: the first real token has position 0":
                lambda m: m.cumsum(-1),
            "the positions count from the right (the last token got 0); they count from each row's first "
            "real token":
                lambda m: m.flip(-1).cumsum(-1).flip(-1) - 1},
        checked=lambda m: m == 1),
}
