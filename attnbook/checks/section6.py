"""Section 6's exercises (longer than trained) and the mistakes each names.

* ntk_frequencies: base·scale (exponent missing); the exponent l/d instead of 2l/d; position
  interpolation (ω/scale); scale ignored; float32 result; float32 arithmetic cast to float64.
  Reported by pair ℓ. d = 2 must raise a ValueError (d/(d − 2) divides by zero).
* position_ids: padding ignored (arange); starts at 1.
"""
import torch

from attnbook.checks.machinery import Case, Exercise


# ----------------------------------------------------------------------------------- ntk_frequencies
def _ntk_frequencies(d, base, scale, dtype=torch.float64, pair_exponent=2):
    # transformers' dynamic NTK at factor 1 and seq_len = scale · max_position_embeddings, whose base is
    # this one (tests/test_check.py checks they agree); transformers computes in float32, the contract float64
    scaled = base * scale ** (d / (d - 2))
    return (scaled ** (-pair_exponent * torch.arange(d // 2, dtype=torch.float64) / d)).to(dtype)


def _ntk_cases(g):
    specs = [(8, 10000, 4), (128, 10000, 8), (64, 500000.0, 2.0), (6, 10000, 2.5), (4, 10000, 1),
             (16, 10000, 16)]
    cases = [Case(f"d={d}, base={base}, scale={scale}", (d, base, scale)) for d, base, scale in specs]
    return cases + [Case("d=2, base=10000, scale=4 (one pair)", (2, 10000, 4), raises=ValueError, note=(
        "with d = 2 the exponent d/(d − 2) divides by zero (the one pair is both pair 0, which keeps its "
        "frequency, and the last pair, which is slowed by the scale): raise a ValueError that says d ≥ 4"))]


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


EXERCISES = {
    "ntk_frequencies": Exercise(
        _ntk_cases, _ntk_frequencies,
        "transformers' dynamic NTK frequencies at factor 1 (its static form), pair by pair in float64",
        "d 4..128, base 10⁴ and 5·10⁵, scale 1..16; d = 2 refused", {
            "this is base·scale: the exponent d/(d−2) is missing (base' = base·scale^(d/(d−2)))":
                lambda d, b, s: _ntk_frequencies(d, b * s, 1),
            "the exponent is ℓ/d; it is 2ℓ/d (ω_ℓ = base'^(−2ℓ/d), ℓ = 0..d/2 − 1)":
                lambda d, b, s: _ntk_frequencies(d, b, s, pair_exponent=1),
            "this is position interpolation (ω/scale), not NTK-aware scaling of the base":
                lambda d, b, s: _ntk_frequencies(d, b, 1) / s,
            "the scale is ignored: these are RoPE's unscaled frequencies":
                lambda d, b, s: _ntk_frequencies(d, b, 1),
            "the result is float32; the contract asks for float64":
                lambda d, b, s: _ntk_frequencies(d, b, s, torch.float32),
            "this was computed in float32 and then converted: do the arithmetic in float64":
                lambda d, b, s: _ntk_frequencies(d, b, s, torch.float32).double()},
        where=lambda case, at: f"at pair ℓ = {at[0]}:"),
    "position_ids": Exercise(
        _position_ids_cases, _position_ids,
        "transformers' generate() position ids (cumsum − 1) on the real tokens",
        "left padding of 0..3, no padding, n = 1; the padded entries are not checked", {
            "the padding is ignored (arange(n)): count from each row's first real token":
                lambda m: torch.arange(m.shape[-1]).expand(m.shape),
            "this starts at 1: the first real token has position 0 (cumsum − 1)":
                lambda m: m.cumsum(-1)},
        checked=lambda m: m == 1),
}
