"""Section 6's exercises (longer than trained) and the mistakes each names.

* ntk_frequencies: its contract grew (issue 29): `pair=ℓ*` chooses the pair the new base slows by
  exactly `scale` while pair 0 keeps its frequency (the chapter's rule is ℓ* = d/2 − 1, the default:
  base' = base·scale^(d/(2ℓ*))); and `wavelength=L`, given instead of scale, asks for the base that makes
  pair ℓ*'s wavelength 2π/ω exactly L (a derived quantity the chapter does not show: base' =
  (L/2π)^(d/(2ℓ*)), whatever the old base); ntk_frequencies(d, base, scale) is what it was. Mistakes,
  first the pair off by one (ℓ* + 1, which at the default pair is base·scale, and ℓ* − 1); the exponent
  upside down (scale^(2ℓ*/d)); base·scale (exponent missing); the last pair's exponent d/(d − 2)
  whatever the pair; the wavelength taken as 1/ω; the exponent l/d instead of 2l/d; position
  interpolation (ω/scale); scale ignored; float32 result; float32 arithmetic cast to float64. Reported
  by pair ℓ. No line gives the base for pair ℓ*, which the exercise asks to derive. d = 2 (no pair but
  pair 0) and pair = 0 must raise a ValueError whose message says d >= 4, and pair >= 1.
"""
import math

import torch

from attnbook.checks.machinery import Case, Exercise


# ----------------------------------------------------------------------------------- ntk_frequencies
def _ntk_frequencies(d, base, scale=None, pair=None, wavelength=None, dtype=torch.float64, pair_exponent=2,
                     upside_down=False, turn=2 * math.pi):
    # at the default pair: transformers' dynamic NTK at factor 1 and seq_len = scale · max_positions,
    # whose base is this one (tests/test_check.py checks they agree); transformers computes in float32,
    # the contract float64. Another pair ℓ*: the base that slows it by exactly scale, base·scale^(d/(2ℓ*)).
    # wavelength=L instead of scale: pair ℓ*'s wavelength 2π/ω made exactly L, so scale = L·ω_ℓ*/(2π)
    # (`turn`: the mistake's 1 for 2π).
    slowed = _slowed(d, pair)
    if wavelength is not None:
        scale = wavelength / turn * base ** (-2 * slowed / d)
    exponent = 2 * slowed / d if upside_down else d / (2 * slowed)
    scaled = base * scale ** exponent
    return (scaled ** (-pair_exponent * torch.arange(d // 2, dtype=torch.float64) / d)).to(dtype)


def _slowed(d, pair):
    """The pair slowed by exactly scale: ℓ*, by default the last one, d/2 − 1."""
    return d // 2 - 1 if pair is None else pair


def _ntk_cases(g):
    specs = [(8, 10000, 4), (128, 10000, 8), (64, 500000.0, 2.0), (6, 10000, 2.5), (4, 10000, 1),
             (16, 10000, 16)]
    cases = [Case(f"d={d}, base={base}, scale={scale}", (d, base, scale)) for d, base, scale in specs]
    cases += [Case(f"d={d}, base={base}, scale={scale}, pair={pair}", (d, base, scale), {"pair": pair},
                   note="pair=ℓ* must work too: the base that slows pair ℓ* by exactly scale, pair 0 kept")
              for d, base, scale, pair in [(128, 10000, 8, 32), (8, 10000, 4, 1), (64, 500000.0, 2.0, 31),
                                           (16, 10000, 16, 5)]]
    cases += [Case(f"d={d}, base={base}, wavelength={length:,}, pair={pair}", (d, base),
                   {"wavelength": length, "pair": pair},
                   note="wavelength=L must work too: the base that makes pair ℓ*'s wavelength exactly L")
              for d, base, length, pair in [(128, 10000, 32768, None), (64, 500000.0, 10**6, 20),
                                            (16, 10000, 500, 3)]]
    return cases + [
        Case("d=2, base=10000, scale=4 (one pair)", (2, 10000, 4), raises=ValueError,
             says=r"d\s*(>=|≥)\s*4", note="d = 2 is refused: raise a ValueError that says d >= 4"),
        Case("d=8, base=10000, scale=4, pair=0", (8, 10000, 4), {"pair": 0}, raises=ValueError,
             says=r"pair\s*(>=|≥)\s*1", note="pair = 0 is refused: raise a ValueError that says pair >= 1")]


def _mistake(**wrong):
    """The contract's function with one thing changed: `wrong` maps a name to a function of (d, the
    slowed pair) giving the wrong argument (pair, base, ...) or a fixed value."""
    def answer(d, base, scale=None, pair=None, wavelength=None):
        given = {"base": base, "scale": scale, "pair": pair, "wavelength": wavelength}
        for name, value in wrong.items():
            given[name] = value(d, _slowed(d, pair), given) if callable(value) else value
        return _ntk_frequencies(d, **given)
    return answer


EXERCISES = {
    "ntk_frequencies": Exercise(
        _ntk_cases, _ntk_frequencies,
        "NTK-aware frequencies (base raised to base·scale^(d/(d−2))), pair by pair in float64, and "
        "for another pair ℓ* the base that slows it by exactly scale, or makes its wavelength exactly L",
        "d 4..128, base 10⁴ and 5·10⁵, scale 1..16, pair ℓ* 1..d/2 − 1, wavelengths 500..10⁶; d = 2 and "
        "pair 0 refused", {
            "this base slows pair ℓ* + 1 by exactly scale, one pair too far (at the default ℓ* = d/2 − 1 "
            "there is no pair d/2: this is base·scale)": _mistake(pair=lambda d, slowed, given: slowed + 1),
            "this base slows pair ℓ* − 1 by exactly scale, one pair short of ℓ*":
                _mistake(pair=lambda d, slowed, given: slowed - 1),
            "the exponent of scale is upside down (base·scale^(2ℓ*/d)): that slows pair ℓ* by "
            "scale^(4ℓ*²/d²), not by scale": _mistake(upside_down=True),
            "this is base·scale: it slows the last pair by only scale^((d−2)/d); raise the base further":
                _mistake(base=lambda d, slowed, given: given["base"] * given["scale"], scale=1, pair=None),
            "this base slows the last pair, whatever pair= says; slow pair ℓ* by exactly scale instead":
                _mistake(pair=None),
            "the wavelength is taken as 1/ω; it is 2π/ω, the positions one full turn takes":
                _mistake(turn=1.0),
            "the exponent is ℓ/d; it is 2ℓ/d (ω_ℓ = base'^(−2ℓ/d), ℓ = 0..d/2 − 1)":
                _mistake(pair_exponent=1),
            "this is position interpolation (ω/scale), not NTK-aware scaling of the base":
                lambda d, b, s=None, pair=None, wavelength=None: _ntk_frequencies(d, b, 1) / s,
            "the scale is ignored: these are RoPE's unscaled frequencies":
                lambda d, b, s=None, pair=None, wavelength=None: _ntk_frequencies(d, b, 1),
            "the result is float32; the contract asks for float64": _mistake(dtype=torch.float32),
            "this was computed in float32 and then converted: do the arithmetic in float64":
                lambda *args, **kwargs: _mistake(dtype=torch.float32)(*args, **kwargs).double()},
        where=lambda case, at: f"at pair ℓ = {at[0]}:"),
}
