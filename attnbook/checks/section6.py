"""Section 6's exercises (longer than trained) and the mistakes each names.

* ntk_frequencies: base·scale (exponent missing); the exponent l/d instead of 2l/d; position
  interpolation (ω/scale); scale ignored; float32 result; float32 arithmetic cast to float64.
  Reported by pair ℓ. d = 2 must raise a ValueError (d/(d − 2) divides by zero).
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
}
