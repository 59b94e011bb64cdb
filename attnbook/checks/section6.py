"""Section 6's exercises (longer than trained) and the mistakes each names.

* ntk_frequencies: its contract changed (issue 29). ntk_frequencies(d, base, scale) is what it was,
  NTK-aware scaling (base raised to base·scale^(d/(d − 2))); d = 2 must raise a ValueError whose message
  says d >= 4. New, and the core of most cases: factors=(short, long) with n_train and seq_len, LongRoPE's
  per-pair rescale factors (Ding et al. 2024; transformers' `longrope` rope type, Phi-3): ω′_ℓ = ω_ℓ/κ_ℓ
  with κ the short list for an input of at most n_train tokens (seq_len None counts as short) and the
  long list once it is longer; a list that does not hold d/2 factors, the one the input uses or the
  other, must raise a ValueError that says d/2. (`pair=` and `wavelength=` are gone: one exponent
  changed from the chapter's NTK cell.) Mistakes: the long list at seq_len = n_train (≥ for >), the long
  or the short list whatever the length, the factors multiplying ω, the factors scaling the base; for
  the NTK form base·scale, scale's exponent inverted ((d−2)/d), the exponent l/d, position
  interpolation, scale ignored; float32, and float32 arithmetic cast to float64. Reported by
  pair ℓ. Exactly one of scale and factors: both, or neither, must raise a ValueError.
"""
import torch

from attnbook.checks.machinery import Case, Exercise


# ----------------------------------------------------------------------------------- ntk_frequencies
def _ntk_frequencies(d, base, scale=None, factors=None, n_train=None, seq_len=None, dtype=torch.float64,
                     pair_exponent=2, switch=None, apply="divide"):
    # scale: transformers' dynamic NTK at factor 1 and seq_len = scale · max_positions, whose base is this
    # one; factors: transformers' longrope (`_compute_longrope_parameters`), ω_ℓ / κ_ℓ, the long list κ only
    # once seq_len > original_max_position_embeddings (tests/test_check.py checks both agree). transformers
    # computes in float32, the contract float64. `switch` and `apply` ("multiply", or "base": put into
    # the base): the mistakes' other choices.
    exponents = pair_exponent * torch.arange(d // 2, dtype=torch.float64) / d
    if factors is None:
        return ((base * scale ** (d / (d - 2))) ** -exponents).to(dtype)
    longer = (switch or _past)(seq_len, n_train)
    chosen = torch.tensor(factors[1] if longer else factors[0], dtype=torch.float64)
    if apply == "base":
        return ((base * chosen) ** -exponents).to(dtype)
    return (base ** -exponents / chosen if apply == "divide" else base ** -exponents * chosen).to(dtype)


def _factors(g, d, s):
    """A short list near 1 and a long list rising from 1 to about s, as a search might leave them (Phi-3's
    lists look so): one factor per pair, Python floats as a configuration stores them."""
    ramp = torch.linspace(0, 1, d // 2, dtype=torch.float64) ** 2
    short = 1 + 0.2 * ramp * torch.rand(d // 2, generator=g, dtype=torch.float64)
    long = s ** ramp * (1 + 0.1 * torch.rand(d // 2, generator=g, dtype=torch.float64))
    return short.tolist(), long.tolist()


def _ntk_cases(g):
    cases = [Case(f"d={d}, base={base}, scale={scale}", (d, base, scale))
             for d, base, scale in [(8, 10000, 4), (128, 10000, 8), (6, 10000, 2.5)]]
    hand = ([1.0, 1.0, 1.5, 2.0], [1.0, 2.0, 4.0, 8.0])   # d = 8: one factor per pair, by hand
    phi = _factors(g, 96, 32.0)                             # Phi-3-like: 4,096 → 131,072
    for d, base, factors, n_train, lengths, name in [
            (8, 10000, hand, 16, [None, 16, 17, 64], "([1, 1, 1.5, 2], [1, 2, 4, 8])"),
            (96, 10000.0, phi, 4096, [4096, 4097, 131072], "(Phi-3-like lists of 48)"),
            (128, 500000.0, _factors(g, 128, 8.0), 8192, [8192, 65536], "(two lists of 64)")]:
        cases += [Case(f"d={d}, base={base}, factors={name}, n_train={n_train}, seq_len={n}", (d, base),
                       {"factors": factors, "n_train": n_train, "seq_len": n},
                       note="factors=(short, long) must work too: LongRoPE divides ω_ℓ by the short "
                            "list's κ_ℓ up to n_train tokens, by the long list's past it"
                            + ("; seq_len=None (no length given) takes the short list" if n is None else ""))
                  for n in lengths]
    both = "both lists must hold d/2 factors, the one this input does not use too"
    return cases + [
        Case("d=2, base=10000, scale=4 (one pair)", (2, 10000, 4), raises=ValueError,
             says=r"d\s*(>=|≥)\s*4", note="d = 2 is refused: raise a ValueError that says d >= 4"),
    ] + [
        Case(f"d=8, base=10000, {lists} (not d/2 = 4), n_train=16, seq_len={n}", (8, 10000),
             {"factors": ([1.0] * short, [2.0] * long), "n_train": 16, "seq_len": n}, raises=ValueError,
             says=r"d\s*/\s*2", note=f"{which}: raise a ValueError that says d/2")
        for short, long, n, lists, which in [
            (3, 3, 32, "factors of 3", "a list without one factor per pair is refused"),
            (4, 3, 8, "a short list of 4, a long list of 3", both),
            (3, 4, 32, "a short list of 3, a long list of 4", both)]
    ] + [
        Case("d=8, base=10000, scale=4 and factors (both), n_train=16", (8, 10000, 4),
             {"factors": hand, "n_train": 16, "seq_len": 32}, raises=ValueError,
             note="scale and factors together are refused: raise a ValueError (exactly one of the two)"),
        Case("d=8, base=10000 (neither scale nor factors)", (8, 10000), raises=ValueError,
             note="with neither scale nor factors there is nothing to compute: raise a ValueError")]


def _mistake(**wrong):
    """The contract's function with one thing changed (a keyword of _ntk_frequencies)."""
    return lambda *args, **kwargs: _ntk_frequencies(*args, **kwargs, **wrong)


def _ntk_form(wrong):
    """A mistake of the scale form, wrong(d, base, scale); on the factors form it cannot run (not made)."""
    return lambda d, base, scale=None, **_: wrong(d, base, scale)


def _past(n, n_train):
    """LongRoPE's switch: the long list once the input is longer than n_train (None: a short input)."""
    return n is not None and n > n_train


EXERCISES = {
    "ntk_frequencies": Exercise(
        _ntk_cases, _ntk_frequencies,
        "NTK-aware frequencies (base raised to base·scale^(d/(d−2))) and LongRoPE's (transformers' "
        "longrope: ω_ℓ divided by the short list's factor up to n_train tokens, the long list's past it), "
        "in float64",
        "d 6..128, base 10⁴ and 5·10⁵, scale 2.5..8; factor lists of 4 to 64 at seq_len None, n_train, "
        "n_train + 1 and longer; d = 2, lists of the wrong length, both or neither form refused", {
            "the long list was used at seq_len = n_train: LongRoPE keeps the short list up to n_train tokens "
            "and switches only once the input is longer":
                _mistake(switch=lambda n, n_train: n is not None and n >= n_train),
            "the long list was used for an input of at most n_train tokens: the short list applies there":
                _mistake(switch=lambda n, n_train: True),
            "the short list was used for an input longer than n_train: the long list applies there":
                _mistake(switch=lambda n, n_train: False),
            "ω_ℓ was multiplied by the factors; LongRoPE divides, ω′_ℓ = ω_ℓ / κ_ℓ, "
            "so a factor above 1 slows pair ℓ":
                _mistake(apply="multiply"),
            "the factors scaled the base, (base·κ_ℓ)^(−2ℓ/d); they divide pair ℓ's frequency itself":
                _mistake(apply="base"),
            "this is base·scale: it slows the last pair by only scale^((d−2)/d); raise the base further":
                _ntk_form(lambda d, base, scale: _ntk_frequencies(d, base * scale, 1)),
            "the exponent of scale is inverted: NTK-aware raises the base to base·scale^(d/(d−2)), "
            "not base·scale^((d−2)/d)":
                _ntk_form(lambda d, base, scale: _ntk_frequencies(d, base * scale ** ((d - 2) / d), 1)),
            "the exponent is ℓ/d; it is 2ℓ/d (ω_ℓ = base^(−2ℓ/d), ℓ = 0..d/2 − 1)": _mistake(pair_exponent=1),
            "this is position interpolation (ω/scale), not NTK-aware scaling of the base":
                _ntk_form(lambda d, base, scale: _ntk_frequencies(d, base, 1) / scale),
            "the scale is ignored: these are RoPE's unscaled frequencies":
                _ntk_form(lambda d, base, scale: _ntk_frequencies(d, base, 1)),
            "the result is float32; the contract asks for float64": _mistake(dtype=torch.float32),
            "this was computed in float32 and then converted: do the arithmetic in float64":
                lambda *args, **kwargs: _mistake(dtype=torch.float32)(*args, **kwargs).double()},
        where=lambda case, at: f"at pair ℓ = {at[0]}:"),
}
