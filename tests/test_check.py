"""attnbook.check: a correct answer passes, every known mistake is rejected and named, a broken answer
gets one line (never a traceback), and the line is the same run to run.

The answers below are written as a reader would write them, not taken from the checker: each has
switches that turn it into one of the known mistakes.
"""
import functools
import logging
import math
import pathlib
import re
import sys
import warnings

import nbformat
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attnbook
from attnbook import device as book_device
from attnbook.checks import EXERCISES, check
from attnbook.checks.section1 import _attention
from attnbook.checks.section2 import _attention_flops
from attnbook.checks.section5 import _rope
from attnbook.checks.section6 import _ntk_frequencies

ROOT = pathlib.Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------------- answers
def masked_softmax(scores, valid_lens=None, causal=False, fill=-math.inf, dim=-1, inclusive=False,
                   per_query=True, additive=False, detach=False, top_left=False, zero_after=False,
                   head_axes=True, keep_nan=False):
    n_q, n_k = scores.shape[-2:]
    keep = torch.ones(n_q, n_k, dtype=torch.bool, device=scores.device)
    if causal:  # query t sits at position n_k - n_q + t (top_left: at t, as SDPA's is_causal)
        keep = keep.tril(0 if top_left else n_k - n_q)
    if valid_lens is None and not causal:
        return F.softmax(scores, dim=dim)
    if valid_lens is None:
        valid_lens = torch.full(scores.shape[:1], n_k, device=scores.device)
    if valid_lens.dim() == 1 or not per_query:  # without per_query, (b, q) lengths break the broadcast
        valid_lens = valid_lens[:, None]
    if head_axes:  # (b, 1, ..., n_q or 1): a 1 for each axis (heads) between the batch and the queries
        valid_lens = valid_lens.reshape(valid_lens.shape[0], *[1] * (scores.dim() - 3), valid_lens.shape[1])
    keys = torch.arange(n_k, device=scores.device)
    keep = keep & (keys <= valid_lens[..., None] if inclusive else keys < valid_lens[..., None])
    if zero_after:  # the softmax over every key, then the masked ones zeroed: rows no longer sum to 1
        return F.softmax(scores, dim=dim).masked_fill(~keep, 0.0)
    if additive:  # −inf added, not filled: the same weights, but autograd sees the NaN of an empty row
        masked = scores + torch.zeros_like(scores).masked_fill(~keep, fill)
    else:  # masked_fill's backward gives the masked entries (an empty row: all of them) zero gradient
        masked = scores.masked_fill(~keep, fill)
    weights = F.softmax(masked, dim=dim)  # keep_nan: an empty row left NaN
    weights = weights if keep_nan else weights.nan_to_num(0.0)
    return weights.detach() if detach else weights


def masked_softmax_unmasked_empty_rows(scores, valid_lens=None, causal=False):
    """The chapter's way: an empty row is un-masked, so its softmax is finite, then set to 0."""
    n_q, n_k = scores.shape[-2:]
    if valid_lens is None:
        valid_lens = torch.full(scores.shape[:1], n_k, device=scores.device)
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    lens = lens.reshape(lens.shape[0], *[1] * (scores.dim() - 3), lens.shape[1])  # every head of sequence b
    keep = torch.arange(n_k, device=scores.device) < lens[..., None]
    if causal:
        keep = keep & torch.ones(n_q, n_k, dtype=torch.bool, device=scores.device).tril(n_k - n_q)
    has_key = keep.any(-1, keepdim=True)
    weights = F.softmax(scores.masked_fill(~(keep | ~has_key), -math.inf), dim=-1)
    return torch.where(has_key, weights, 0.0)


def causal_mask(n, window=None, chunk=None, documents=None, diagonal=0, transpose=False, wider=0,
                both_ways=False, chunk_as_window=False, late=0, across=False, whole_documents=False,
                documents_late=False):
    mask = torch.ones(n, n, dtype=torch.bool).tril(diagonal)
    i, j = torch.arange(n)[:, None], torch.arange(n)
    if chunk is not None and chunk_as_window:  # the mistake: a sliding window of c keys
        window, chunk = chunk, None
    if window is not None:  # keys i - window + 1 .. i (wider: that many more keys back)
        mask = (i - j).abs() < window if both_ways else mask & (j > i - window - wider)
    if chunk is not None:  # chunks 0..c-1, c..2c-1, ... (late: each starting that many positions late)
        same = (i + late) // chunk == (j + late) // chunk
        mask = same if both_ways else mask & same
    if documents is not None and not across:  # document ids numbered by repeat_interleave
        document = torch.arange(len(documents)).repeat_interleave(torch.tensor(documents))
        if documents_late:  # the mistake: each boundary token counted in the document before
            document = torch.cat([document[:1], document[:-1]])
        same = document[:, None] == document
        mask = same if whole_documents else mask & same
    return mask.T if transpose else mask


def attention(q, k, v, mask=None, sinks=None, scale=lambda q, v: math.sqrt(q.shape[-1]), dim=-1, tiled=False,
              sink_scaled=False, sink_added=False, renormalised=False, sink_after=False, sink_first=False,
              sink_kept=False):
    group = q.shape[-3] // k.shape[-3]  # query heads per key/value head (dim −3)
    if tiled:  # heads (0, 1, 0, 1) where (0, 0, 1, 1) is asked
        k, v = (x.repeat(*[1] * (x.dim() - 3), group, 1, 1) for x in (k, v))
    else:
        k, v = k.repeat_interleave(group, -3), v.repeat_interleave(group, -3)
    scores = q @ k.transpose(-1, -2) / scale(q, v)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    if sinks is None:
        return torch.softmax(scores, dim=dim) @ v
    sinks = (sinks / scale(q, v) if sink_scaled else sinks)[:, None, None]
    if sink_added:  # the mistake: the sink added to every score
        return torch.softmax(scores + sinks, dim=dim) @ v
    if sink_after:  # the mistake: the keys' softmax, then the sink's share taken off (NaN on a masked row)
        return torch.softmax(scores, dim=-1) * (1 - torch.sigmoid(sinks - scores.logsumexp(-1, True))) @ v
    column = sinks.expand(*scores.shape[:-1], 1)
    if sink_first:  # the mistake: the sink's column in front, and the last column dropped
        return torch.cat([column, scores], -1).softmax(-1)[..., :-1] @ v
    weights = torch.cat([scores, column], -1).softmax(-1)
    if sink_kept:  # the mistake: the sink's column left in, so the weights have one column more than V rows
        return weights @ v
    weights = weights[..., :-1]
    if renormalised:  # the mistake: the sink's weight handed back to the keys
        weights = weights / weights.sum(-1, keepdim=True)
    return weights @ v


def attention_flops(n, d, cached=0, window=None, projections=4, per_multiply_add=2, cache_scored=True,
                    products=2, cache_queries=False, wider=0, full_windows=False, dense=False, own=True):
    keys = n + cached if cache_scored else n
    queries = n + cached if cache_queries else n  # cache_queries: the cached positions score again
    pairs = queries * keys
    if window is not None and dense:  # the window cuts the cache only; the new queries score densely
        pairs = n * (min(cached, window - 1) + n)
    elif window is not None:  # the query at position p scores keys p - w + 1 .. p that exist
        w = window + wider
        up_to = 1 if own else 0  # own=False: the query's own key left out (the mistake)
        pairs = n * w if full_windows else sum(min(p + up_to, w) for p in range(cached, cached + n))
    return per_multiply_add * (projections * n * d * d + products * pairs * d)


def sinusoidal_encoding(n, d, pair=2, swap=False, halves=False, odd_ok=True, even_d=False,
                        dtype=torch.float64, from_0=False, cut_halves=False, rows_last=False, flattened=False,
                        odd_grid_ok=False, mixed=False, sines_first=False):
    if isinstance(n, tuple):  # an image's grid (H, W): row half, then column half, each of width d/2
        (H, W), half = n, d // 2
        if d % 2 and not odd_grid_ok:
            raise ValueError(f"a grid splits d in two halves: d = {d} is odd")
        if flattened:  # the mistake: the 1-D encoding of r·W + c
            return sinusoidal_encoding(H * W, d).reshape(H, W, d)
        encode = (lambda k: sinusoidal_encoding(k, d)[:, :half]) if cut_halves else (
            lambda k: sinusoidal_encoding(k, half, halves=sines_first))
        rows, columns = encode(H)[:, None].expand(H, W, half), encode(W)[None].expand(H, W, half)
        if mixed:  # the mistake: row, column, row, … entry by entry
            return torch.stack([rows, columns], -1).flatten(-2)
        return torch.cat([columns, rows] if rows_last else [rows, columns], -1)
    over = d + d % 2 if even_d else d  # even_d: the exponent over d rounded up to even
    exponents = -pair * torch.arange((d + 1) // 2, dtype=dtype) / over
    positions = n if isinstance(n, torch.Tensor) else torch.arange(n)
    if from_0:  # the rows of 0..len − 1, whatever the positions
        positions = torch.arange(positions.shape[-1]).expand(positions.shape)
    angles = positions.to(dtype)[..., None] / 10000 ** -exponents  # dtype float32: the mistake far out
    sin, cos = (angles.cos(), angles.sin()) if swap else (angles.sin(), angles.cos())
    cos = cos[..., :d // 2] if odd_ok else cos
    if halves:
        return torch.cat([sin, cos], -1).float()
    P = torch.zeros(*positions.shape, d)
    P[..., 0::2], P[..., 1::2] = sin.float(), cos.float()
    return P


def per_column_frequency(n, d):
    j = torch.arange(d)
    angles = torch.arange(n)[:, None] * 10000 ** (-j / d)
    return torch.where(j % 2 == 0, angles.sin(), angles.cos())


def rope(x, positions, grid=False, interleaved=False, ignore_positions=False, direction=1, pair=2,
         odd_refused=True, head_axis=True, angles_in=None, float32_out=False, whole=False, neighbours=False,
         grid_by=(0, 1), grid_split="pairs", grid_width=2, quarter_refused=True, refusal=None,
         alternate=False):
    d = x.shape[-1]
    if whole:  # positions cut to whole numbers, as a cos/sin table read at each position would need
        positions = positions.long()
    if d % 2 and odd_refused:
        raise ValueError(refusal or f"RoPE rotates pairs: d_h = {d} must be even")
    if grid and d % 4 and quarter_refused:
        raise ValueError(refusal or f"half the pairs to rows, half to columns: d_h = {d} must divide by 4")
    if grid and grid_split == "coordinates":  # the mistake: each half of the coordinates its own RoPE
        halves = (rope(x[..., :d // 2], positions[..., 0]), rope(x[..., d // 2:], positions[..., 1]))
        return torch.cat(halves, -1)
    if ignore_positions:
        positions = torch.arange(x.shape[-2], device=x.device)
    omega = 10000 ** (-pair * torch.arange(d // 2, device=x.device) / d)
    # float32 angles whatever x's dtype (angles_in: x's dtype, the mistake); the products in float32
    angle_dtype = angles_in or torch.float32
    if grid:  # pairs l < d/4 by the row, the others by the column, each half at the width-d/2 frequencies
        half = 10000 ** (-4 * torch.arange(d // 4, device=x.device) / d)  # a width-d/2 RoPE's frequencies
        upper = {2: half, 1: omega[d // 4:], "quarter": omega[:d // 4]}[grid_width]  # 1, quarter: mistakes
        rows, cols = (positions[..., i, None].to(angle_dtype) for i in grid_by)
        theta = torch.cat([rows * (half if grid_width == 2 else omega[:d // 4]), cols * upper], -1)
        if alternate:  # the mistake: row and column take turns, pair by pair
            pair = torch.arange(d // 2, device=x.device)
            theta = torch.where(pair % 2 == 0, rows, cols) * half[pair // 2]
        positions = positions[..., 0]
    else:
        theta = direction * positions[..., None].to(angle_dtype) * omega.to(angle_dtype)
    if positions.dim() == 2 and head_axis:  # (b, 1, ..., n, d/2): sequence b's row, every head
        theta = theta.reshape(theta.shape[0], *[1] * (x.dim() - 3), *theta.shape[1:])
    cos, sin = theta.cos().float(), theta.sin().float()
    out_dtype, x = (torch.float32 if float32_out else x.dtype), x.float()
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2).to(out_dtype)
    if neighbours:  # the mistake: cos, sin laid out ω0, ω0, ω1, ω1, … for rotate_half's (l, l + d/2) pairs
        cos, sin = cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)
        return (x * cos + torch.cat([-x[..., d // 2:], x[..., :d // 2]], -1) * sin).to(out_dtype)
    x1, x2 = x[..., :d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).to(out_dtype)


def rope_from_table(x, positions, longest=70000):
    """cos and sin tabled once per whole position, then read at each position (older models did so)."""
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"RoPE rotates pairs: d_h = {d} must be even")
    start = int(positions.min().clamp(max=0))  # negative positions: the table starts there
    angles = torch.arange(start, longest, device=x.device)[:, None].float() * 10000 ** (
        -2 * torch.arange(d // 2, device=x.device) / d)
    theta = angles[positions - start]
    if positions.dim() == 2:
        theta = theta.reshape(theta.shape[0], *[1] * (x.dim() - 3), *theta.shape[1:])
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., :d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def press_slopes(h):
    if math.log2(h).is_integer():
        return [2 ** (-8 / h * (g + 1)) for g in range(h)]
    c = 2 ** math.floor(math.log2(h))
    return press_slopes(c) + press_slopes(2 * c)[0::2][:h - c]


def other_half_slopes(h):  # m2, m4, ... of the next power of two where m1, m3, ... are asked
    c = 2 ** math.floor(math.log2(h))
    return press_slopes(c) + press_slopes(2 * c)[1::2][:h - c]


def filled_slopes(h, fill):  # the extra heads' slopes from a mistaken fill of the gaps of 1, m_1, …, m_h'
    c = 2 ** math.floor(math.log2(h))
    ladder = [1.0] + press_slopes(c)
    means = [(a + b) / 2 if fill == "arithmetic" else math.sqrt(a * b)
             for a, b in zip(ladder[:-1], ladder[1:], strict=True)]
    if fill == "last gaps":  # the last h − c gaps, steep to flat
        return press_slopes(c) + means[2 * c - h:]
    means = means[::-1] if fill == "flat end" else means[1:] if fill == "from m_1" else means
    return press_slopes(c) + means[:h - c]


def alibi_bias(n, h, heads=None, sign=-1, naive=False, reverse=False, other_half=False, causal=False,
               shard_model=False, from_0=False, fill=None, from_1=False, j_minus_i=False):
    if heads is not None and shard_model:  # the mistake: the slopes of a model of len(heads) heads
        h, heads = len(heads), None
    slopes = [2 ** (-8 * (g + 1) / h) for g in range(h)] if naive else press_slopes(h)
    slopes = filled_slopes(h, fill) if fill else slopes
    slopes = torch.tensor(other_half_slopes(h) if other_half else slopes)
    slopes = torch.cat([slopes.new_ones(1), slopes[:-1]]) if from_1 else slopes  # the ladder from 2⁰
    slopes = slopes.flip(0) if reverse else slopes
    if heads is not None:  # head g is row g − 1 (from_0: row g, the mistake)
        slopes = slopes[torch.tensor(list(heads)) - (0 if from_0 else 1)]
    i = torch.arange(n)
    distance = i[None, :] - i[:, None] if j_minus_i else (i[:, None] - i[None, :]).abs()  # j − i: a mistake
    bias = sign * slopes[:, None, None] * distance
    return bias.masked_fill(i[None, :] > i[:, None], -math.inf) if causal else bias


def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128, flip_sign=False,
              one_sided_abs=False, rounded=False, a0_quarter=False, queries_first=False, logs_apart=False,
              zero_after=False, fixed_distance=False):
    max_distance = 128 if fixed_distance else max_distance  # fixed_distance: max_distance ignored
    if isinstance(relative_position, tuple):  # the last n_q of n_k positions (queries_first: at 0..n_q − 1)
        n_q, n_k = relative_position
        relative_position = torch.arange(n_k)[None] - (torch.arange(n_q)[:, None] + (0 if queries_first else
                                                                                      n_k - n_q))
    if flip_sign:
        relative_position = -relative_position
    buckets = 0
    if bidirectional:
        num_buckets //= 2
        buckets = (relative_position >= 0 if zero_after else relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    elif one_sided_abs:  # the decoder's distance from |δ|: the future is not sent to bucket 0
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    exact = num_buckets // 4 if a0_quarter and not bidirectional else num_buckets // 2
    log_ratio = torch.log(distance.float().clamp(min=1) / exact) / math.log(max_distance / exact)
    if logs_apart:  # right on paper: ln a − ln a0 in float64 lands just below a whole number
        log_ratio = (distance.double().clamp(min=1).log() - math.log(exact)) / math.log(max_distance / exact)
    log_part = log_ratio * (num_buckets - exact)
    large = (exact + (log_part.round() if rounded else log_part).long()).clamp(max=num_buckets - 1)
    return buckets + torch.where(distance < exact, distance, large)


def skew(rel_logits, n_k=None, pad=(1, 0), keep_first=False, start=None, keep_last=False):
    n_q, width = rel_logits.shape[-2:]  # width: n_k, or n_k + n_q - 1 offsets with n_k given (both ways)
    flat = F.pad(rel_logits, pad).flatten(-2)  # n_q rows of width + 1, one after another
    start = 0 if keep_first else n_q if start is None else start  # start=1: read from entry 1
    flat = flat[..., start:start + n_q * width]
    rows = flat.reshape(rel_logits.shape)
    return rows[..., width - n_k:] if keep_last and n_k else rows[..., :width if n_k is None else n_k]


def skew_square_only(rel_logits):  # the chapter's skew_by_pad: right for n_q = n_k, a shape error otherwise
    n = rel_logits.shape[-1]
    return F.pad(rel_logits, (1, 0)).reshape(*rel_logits.shape[:-2], n + 1, n)[..., 1:, :]


def skew_full(rel):  # a two-way skew written for n_q = n_k (rows of 2n − 1 from n entries in): square only
    n = rel.shape[-2]
    flat = F.pad(rel, (1, 0)).flatten(-2)[..., n:]
    return flat.reshape(*rel.shape[:-2], n, 2 * n - 1)[..., :n]


def t5_reference(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    from transformers.models.t5.modeling_t5 import T5Attention

    return T5Attention._relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance)


def mt5_reference(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    from transformers.models.mt5.modeling_mt5 import MT5Attention  # a copy of T5's, in another file

    return MT5Attention._relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance)


def bloom_slopes_alibi(n, h):  # the slopes taken from the reference, BLOOM's build_alibi_tensor
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    slopes = build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), h, torch.float32)[:, 0, 1]
    i = torch.arange(n)
    return -slopes[:, None, None] * (i[:, None] - i[None, :]).abs()


def skew_by_gather(rel_logits, n_k=None, sign=1, gather=True):  # each entry read from its column by index
    n_q, width = rel_logits.shape[-2:]  # sign=-1: the column of offset i − j; gather=False: indexing
    n_k = width if n_k is None else n_k
    t, j = torch.arange(n_q)[:, None], torch.arange(n_k)
    columns = (sign * (j - (n_k - n_q + t)) + n_k - 1).clamp(0, width - 1).to(rel_logits.device)
    if gather:
        return rel_logits.gather(-1, columns.expand(*rel_logits.shape[:-1], n_k))
    return rel_logits[..., t.to(rel_logits.device), columns]


def skew_one_way(rel_logits, n_k=None):  # the causal skew of the first n_k columns, where both ways are asked
    return skew(rel_logits if n_k is None else rel_logits[..., :n_k])


def skew_from_position_0(rel_logits):  # query t taken to sit at position t; slices only (an index is named)
    n_q, n_k = rel_logits.shape[-2:]
    lead = rel_logits.shape[:-2]
    rows = [torch.cat([rel_logits[..., t, n_k - 1 - t:], rel_logits[..., t, -1:].expand(*lead, n_k - 1 - t)],
                      -1) for t in range(n_q)]  # row t: offsets -t..0, then offset 0 for the keys after it
    return torch.stack(rows, -2)


def ntk_frequencies(d, base, scale=None, factors=None, n_train=None, seq_len=None, exponent=True,
                    interpolate=False, dtype=torch.float64, pair_exponent=2, refuse_2=True, says_half=True,
                    at_n_train=False, always=None, multiply=False, into_base=False, one_of=True,
                    both_lengths=True, inverted=False):
    if one_of and (scale is None) == (factors is None):
        raise ValueError("exactly one of scale and factors")
    omega = base ** (-pair_exponent * torch.arange(d // 2, dtype=torch.float64) / d)
    if factors is not None:  # LongRoPE: one factor per pair, the long list once the input is longer
        short, long = (torch.tensor(f, dtype=torch.float64) for f in factors)
        longer = seq_len is not None and (seq_len >= n_train if at_n_train else seq_len > n_train)
        chosen = long if (longer if always is None else always == "long") else short
        # says_half=False: the right error, other words; both_lengths=False: only the list in use is counted
        if any(len(f) != d // 2 for f in ((short, long) if both_lengths else (chosen,))):
            raise ValueError(f"{'d/2' if says_half else 'one per pair'} = {d // 2} factors, got {len(short)}")
        if into_base:
            exponents = pair_exponent * torch.arange(d // 2, dtype=torch.float64) / d
            return ((base * chosen) ** -exponents).to(dtype)
        return (omega * chosen if multiply else omega / chosen).to(dtype)
    if d < 4 and refuse_2:
        raise ValueError(f"NTK-aware scaling needs d >= 4, got d = {d}")
    if interpolate:
        return (omega / scale).to(dtype)
    base = base * scale ** (((d - 2) / d if inverted else d / (d - 2)) if exponent else 1)
    return (base ** (-pair_exponent * torch.arange(d // 2, dtype=torch.float64) / d)).to(dtype)


def position_ids(attention_mask, start=0, ignore_padding=False, from_right=False, dim=-1, padding_from=False):
    if padding_from:  # the pads counted, then taken away: right on 0/1, but `1 - mask` refuses a bool
        pads = (1 - attention_mask).sum(-1, keepdim=True)
        return (torch.arange(attention_mask.shape[-1]) - pads).clamp(min=0)
    if ignore_padding:
        columns = torch.arange(attention_mask.shape[1], device=attention_mask.device)
        return columns.expand(attention_mask.shape)
    if from_right:
        return attention_mask.flip(-1).cumsum(-1).flip(-1) - 1
    return attention_mask.cumsum(dim) - 1 + start  # dim=0: down the batch, the mistake


ANSWERS = (masked_softmax, causal_mask, attention, attention_flops, sinusoidal_encoding, rope, alibi_bias,
           t5_bucket, skew, ntk_frequencies, position_ids)
CORRECT = {fn.__name__: fn for fn in ANSWERS}
P = functools.partial
MISTAKES = [  # (exercise, answer with the mistake, what the line must say)
    ("masked_softmax", P(masked_softmax, dim=-2), "over the queries"),
    ("masked_softmax", P(masked_softmax, fill=-1e6), "−1e6 fill"),
    ("masked_softmax", P(masked_softmax, keep_nan=True), "a row of valid length 0 comes out NaN"),
    ("masked_softmax", P(masked_softmax, fill=0.0), "set to 0"),
    ("masked_softmax", P(masked_softmax, inclusive=True), "j ≤ len"),
    ("masked_softmax", P(masked_softmax, per_query=False), "valid_lens (b, n_q) must work too"),
    ("masked_softmax", lambda scores, valid_lens: masked_softmax(scores), "valid_lens is ignored"),
    ("masked_softmax", P(masked_softmax, additive=True),
     "−inf added to the scores with the empty row's NaN replaced afterwards: right weights, NaN gradients "
     "(section 1, the deeper part on padding and causal together: a query with no key)"),
    ("masked_softmax", P(masked_softmax, detach=True), "carry no gradient back to the scores"),
    ("masked_softmax", P(masked_softmax, head_axes=False), "case scores (2, 2, 3, 5) (b, heads, n_q, n_k), "
     "valid_lens [1, 4]: at [0, 1, 0, 0] expected 1, got 0.0396237 — valid_lens was laid out as for (b, n_q, "
     "n_k)"),
    ("masked_softmax", P(masked_softmax, head_axes=False), "valid_lens was laid out as for (b, n_q, n_k), so "
     "the batch axis met the heads axis"),
    ("masked_softmax", P(masked_softmax, top_left=True), "the causal diagonal starts top left"),
    ("masked_softmax", P(masked_softmax, zero_after=True), "the masked keys were zeroed after the softmax, "
     "so the row no longer sums to 1"),
    ("masked_softmax", lambda scores, valid_lens=None, causal=False: masked_softmax(scores, valid_lens),
     "causal=True is ignored"),
    ("masked_softmax", lambda scores, valid_lens=None: masked_softmax(scores, valid_lens),
     "causal=True must work too"),
    ("causal_mask", P(causal_mask, chunk_as_window=True), "case n=7, chunk=3: at query i = 3, key j = 1: "
     "expected False, got True — this is a sliding window of c keys, not chunks"),
    ("causal_mask", lambda n, window=None, chunk=None, documents=None:
     causal_mask(n, window, chunk, documents, both_ways=chunk is not None), "the chunk reaches both ways"),
    ("causal_mask", P(causal_mask, late=1), "the chunks start one position late"),
    ("causal_mask", lambda n, window=None, chunk=None, documents=None:
     causal_mask(n, window, None, documents), "chunk=c is ignored"),
    ("causal_mask", lambda n, window=None, documents=None: causal_mask(n, window, None, documents),
     "chunk=c must work too"),
    ("causal_mask", P(causal_mask, across=True), "case n=10, documents=[3, 5, 2]: at query i = 3, key j = 0: "
     "expected False, got True — documents is ignored: query i attends across documents"),
    ("causal_mask", P(causal_mask, whole_documents=True), "no causality inside a document"),
    ("causal_mask", P(causal_mask, documents_late=True), "each document starts one position late"),
    ("causal_mask", lambda n, window=None, chunk=None: causal_mask(n, window, chunk), "documents=[n_1, n_2, "
     "...] must work too"),
    ("causal_mask", P(causal_mask, diagonal=-1), "j < i"),
    ("causal_mask", P(causal_mask, diagonal=1), "j ≤ i + 1"),
    ("causal_mask", P(causal_mask, transpose=True), "transposed"),
    ("causal_mask", lambda n, window=None, **more: ~causal_mask(n, window, **more), "inverse"),
    ("causal_mask", P(causal_mask, wider=1),
     "case n=6, window=3: at query i = 3, key j = 0: expected False, got True — this window holds w + 1 "
     "keys"),
    ("causal_mask", P(causal_mask, wider=-1), "this window holds w − 1 keys"),
    ("causal_mask", P(causal_mask, both_ways=True), "the window reaches both ways"),
    ("causal_mask", lambda n, window=None, chunk=None, documents=None: causal_mask(n, None, chunk, documents),
     "the window is ignored"),
    ("causal_mask", lambda n, chunk=None, documents=None: causal_mask(n, None, chunk, documents),
     "window=w must work too"),
    ("attention", P(attention, dim=-2), "over the queries"),
    ("attention", P(attention, scale=lambda q, v: 1), "not divided by √d_h"),
    ("attention", P(attention, scale=lambda q, v: q.shape[-1]), "divided by d_h"),
    ("attention", P(attention, scale=lambda q, v: math.sqrt(v.shape[-1])), "divided by √d_v"),
    ("attention", lambda q, k, v, mask=None, sinks=None: attention(q, k, v, sinks=sinks), "mask is ignored"),
    ("attention", P(attention, scale=lambda q, v: math.sqrt(v.shape[-2])),
     "divided by √n_k, the number of keys"),
    ("attention", P(attention, scale=lambda q, v: math.sqrt(q.shape[-2])), "divided by √n_q"),
    ("attention", P(attention, scale=lambda q, v: 1 / math.sqrt(q.shape[-1])), "multiplied by √d_h"),
    ("attention", P(attention, sink_scaled=True), "case Q (2, 4, 3, 8), h_kv=2, n_k=5, d_v=6, sinks 4 "
     "logits, no mask: at head g = 1, query 0, column 0: expected 0.0930434, got 0.118819 — the sink logit"),
    ("attention", P(attention, sink_scaled=True), "the sink logit was divided by √d_h with the scores"),
    ("attention", P(attention, sink_added=True), "the sinks change nothing: ignored, added to every score"),
    ("attention", P(attention, renormalised=True), "weight handed back to the keys"),
    ("attention", P(attention, sink_after=True), "a row with every key masked gives NaN"),
    ("attention", P(attention, sink_kept=True), "your function raises RuntimeError"),
    ("attention", P(attention, sink_kept=True), "weight going nowhere (drop its column before V)"),
    ("attention", lambda q, k, v, mask=None, sinks=None: attention(
        q, k, v, mask, None if sinks is None else sinks[0].expand(sinks.shape)), "every query head got the "
     "first sink, s_1"),
    ("attention", P(attention, sink_first=True), "the sink's column was put in front of the keys, and the "
     "last column dropped"),
    ("attention", lambda q, k, v, mask=None: attention(q, k, v, mask), "sinks=s: one more logit s_g per "
     "query head g in each row's softmax"),
    ("attention", P(attention, tiled=True), "case Q (2, 4, 3, 8), h_kv=2, n_k=5, d_v=6, sinks 4 logits, no "
     "mask: at head g = 2, query 0, column 0: expected -0.104535, got 0.51338 — the key/value heads were "
     "tiled (k.repeat), not repeated head by head"),
    ("attention", lambda q, k, v, mask=None, sinks=None:
     attention(q, k[..., :1, :, :], v[..., :1, :, :], mask, sinks) if q.dim() > 3
     else attention(q, k, v, mask, sinks), "every query head read the first key/value head"),
    ("attention_flops", P(attention_flops, projections=0), "projections (8nd²) are missing"),
    ("attention_flops", P(attention_flops, per_multiply_add=1), "counts 2 FLOPs"),
    ("attention_flops", P(attention_flops, projections=3), "three projections"),
    ("attention_flops", lambda n, d, cached=0, window=None: attention_flops(n, d, cached,
                                                                            window or cached + n),
     "case n_new=16, d=64: expected 589,824, got 559,104 — this counts only the causal pairs, p + 1 keys for "
     "the query at position p"),
    ("attention_flops", P(attention_flops, cache_scored=False),
     "case n_new=1, d=64, cached=15 (one step of generation): expected 36,864, got 33,024 — the cached keys "
     "are left out"),
    ("attention_flops", lambda n, d, cached=0: attention_flops(n + cached, d),
     "recomputes the whole sequence"),
    ("attention_flops", lambda n, d, cached=0: attention_flops(n, d, cached) + 4 * cached * d * d,
     "the cached keys and values were projected again"),
    ("attention_flops", lambda n, d: attention_flops(n, d), "cached=m must work too"),
    ("attention_flops", P(attention_flops, products=1), "case n_new=16, d=64: expected 589,824, got "
     "557,056 — the core counts QKᵀ alone"),
    ("attention_flops", P(attention_flops, cache_queries=True), "this core scores (m + n_new)² pairs, as if "
     "the m cached positions asked again"),
    ("attention_flops", lambda n, d, cached=0, window=None: attention_flops(n, d, cached),
     "case n_new=1, d=64, cached=15, window=8 (one step of generation): expected 34,816, got 36,864 — the "
     "window is ignored"),
    ("attention_flops", lambda n, d, cached=0: attention_flops(n, d, cached), "window=w must work too"),
    ("attention_flops", P(attention_flops, wider=1), "this window holds w + 1 keys"),
    ("attention_flops", P(attention_flops, wider=-1), "this window holds w − 1 keys"),
    ("attention_flops", P(attention_flops, own=False), "the query's own key was left out of its window"),
    ("attention_flops", lambda n, d, cached=0, window=None: attention_flops(n, d, cached, window)
     + 8 * cached * d * d, "the cached tokens went through all four projections again"),
    ("attention_flops", P(attention_flops, full_windows=True), "case n_new=6, d=8, cached=2, window=4: "
     "expected 3,808, got 3,840 — every query scored w keys"),
    ("attention_flops", P(attention_flops, dense=True), "the window only shortened the cache and the new "
     "queries scored densely"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, halves=True), "halves"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, pair=1), "exponent is l/d"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, swap=True), "swapped"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, odd_ok=False), "odd d must work too"),
    ("sinusoidal_encoding", per_column_frequency, "its own frequency"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, even_d=True), "case n=7, d=7 (odd d): at position i = 1, "
     "column 2: expected 0.0719065, got 0.0998334 — the exponent is 2l/(d + 1)"),
    ("sinusoidal_encoding", lambda n, d: sinusoidal_encoding(n, d) * (1.01 if d % 2 else 1),
     "the full pairs (columns 0..5) already differ"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, dtype=torch.float32), "case positions [[0, 1, 2], [99997, "
     "99998, 99999]] ((b, n), up to 99,999), d=16: at position i = 99,997, column 3: expected 0.126722, got "
     "0.126927 — the angles i·ω_ℓ were computed in float32, which keeps 24 significant bits"),
    ("sinusoidal_encoding", lambda n, d: sinusoidal_encoding(n, d, dtype=torch.float32) * 1.0001,
     "the angles i·ω_ℓ were computed in float32"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, from_0=True), "case positions [40, 41, 42] (a cache "
     "continuing at 40), d=16: at position i = 40, column 0: expected 0.745113, got 0 — these are the rows "
     "of positions 0..len − 1"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, cut_halves=True), "case grid (n1, n2) = (3, 4), d=8: at "
     "patch (i1, i2) = (0, 1), entry 6: expected 0.00999983, got 0.0998334 — each half was cut from the "
     "width-d encoding"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, rows_last=True), "the halves are swapped"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, flattened=True),
     "the 1-D encoding of the flattened index"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, mixed=True), "case grid (n1, n2) = (3, 4), d=8: at patch "
     "(i1, i2) = (0, 0), entry 1: expected 1, got 0 — the row's and the column's entries are interleaved"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, sines_first=True), "inside each half the sines come "
     "first, then the cosines (transformers' 2-D layout)"),
    ("sinusoidal_encoding", lambda n, d: sinusoidal_encoding(n, d) * (1.01 if isinstance(n, tuple) else 1),
     "entries 0..3 of each patch must be the row i1's encoding of width d/2 = 4"),
    ("sinusoidal_encoding", P(sinusoidal_encoding, odd_grid_ok=True), "case grid (n1, n2) = (2, 2), d=7 (odd "
     "d): returned Tensor, expected a ValueError — a grid splits d into two halves"),
    ("sinusoidal_encoding", lambda n, d: sinusoidal_encoding(n, d) if not isinstance(n, tuple) else
     sinusoidal_encoding(n[0] * n[1], d),
     "returned shape (12, 8), expected (3, 4, 8) — positions may be a pair (n1, n2) too"),
    ("rope", P(rope, interleaved=True), "interleaved pairing (2l, 2l+1)"),
    ("rope", P(rope, ignore_positions=True), "positions are ignored"),
    ("rope", P(rope, direction=-1), "wrong way"),
    ("rope", P(rope, pair=1), "10000^(−l/d_h)"),
    ("rope", P(rope, head_axis=False), "broadcast against the heads axis"),
    ("rope", lambda x, positions: rope(x, positions[0] if positions.dim() == 2 else positions),
     "the first row's positions"),
    ("rope", lambda x, positions: rope(x, positions, angles_in=x.dtype), "case x (2, 3, 4, 64) in bfloat16, "
     "positions [40000, 40001, 40002, 40003] (continuing after 40,000 cached): at [0, 0, 0, 0] expected "
     "0.359375, got 1.10938 — the angles position·ω were computed in x's dtype, whose few significant bits"),
    ("rope", P(rope, float32_out=True), "returned float32, expected bfloat16 — x in bfloat16 must work too: "
     "return bfloat16, with the angles position·ω computed in float32"),
    ("rope", P(rope, whole=True), "case x (2, 5, 8), positions (n,) [0.0, 0.25, 0.5, 0.75, 1.0] (fractional, "
     "as position interpolation makes them): at [0, 1, 0] expected"),
    ("rope", P(rope, whole=True), "the positions were cut to whole numbers (.long(), or a cos/sin table read "
     "at each position): position interpolation gives fractional ones"),
    ("rope", rope_from_table, "your function raises IndexError"),
    ("rope", rope_from_table, "float positions must work too: the angle is position·ω"),
    ("rope", P(rope, neighbours=True), "cos and sin were laid out by neighbours (ω₀, ω₀, ω₁, ω₁, …"),
    ("rope", P(rope, grid_by=(0, 0)), "both halves of the pairs turned by the row μ"),
    ("rope", P(rope, grid_by=(1, 1)), "both halves of the pairs turned by the column ν"),
    ("rope", P(rope, grid_by=(1, 0)), "the row and the column are swapped"),
    ("rope", P(rope, grid_split="coordinates"), "each half of the coordinates (x[..., :d_h/2], "
     "x[..., d_h/2:]) got its own RoPE; the exercise splits the pairs"),
    ("rope", P(rope, grid_width=1), "the pairs kept the width-d_h frequencies"),
    ("rope", P(rope, grid_width="quarter"), "the grid was built from full-width frequencies"),
    ("rope", P(rope, alternate=True), "the pairs alternate between the row and the column"),
    ("rope", P(rope, refusal="nope"), "your ValueError says 'nope', which does not say what the contract"),
    ("rope", lambda x, positions: rope(x, positions), "grid=True must work too: positions (..., n, 2)"),
    ("rope", P(rope, quarter_refused=False), "d_h = 6 has 3 pairs, which a row half and a column half cannot "
     "share: on a grid, raise a ValueError"),
    ("rope", P(rope, odd_refused=False), "d_h = 5 is odd, so coordinate l has no partner l + d_h/2: raise a "
     "ValueError"),
    ("alibi_bias", P(alibi_bias, shard_model=True), "case n=4, h=12, heads=range(5, 9) (a shard): at head "
     "g = 5, query i = 0, key j = 1: expected -0.03125, got -0.25 — this shard got the slopes of a model"),
    ("alibi_bias", P(alibi_bias, from_0=True), "head g got m_(g+1); heads are numbered 1..h"),
    ("alibi_bias", lambda n, h: alibi_bias(n, h), "heads=… must work too"),
    ("alibi_bias", P(alibi_bias, sign=1), "sign is flipped"),
    ("alibi_bias", P(alibi_bias, j_minus_i=True), "there is no absolute value: −m·(j − i) is right only for "
     "j ≥ i"),
    ("alibi_bias", P(alibi_bias, naive=True), "only for h a power of two"),
    ("alibi_bias", P(alibi_bias, reverse=True), "reverse order"),
    ("alibi_bias", P(alibi_bias, from_1=True), "the slopes start at 1 = 2⁰, one step early"),
    ("alibi_bias", P(alibi_bias, other_half=True), "at head g = 5, query i = 0, key j = 1: expected -0.5, "
     "got -0.25 — the extra heads repeat slopes the first h' heads already have"),
    ("alibi_bias", P(alibi_bias, fill="arithmetic"), "case n=5, h=6 (h not a power of two): at head g = 5, "
     "query i = 0, key j = 1: expected -0.5, got -0.625 — the extra slopes are the arithmetic means"),
    ("alibi_bias", P(alibi_bias, fill="from m_1"), "the extra slopes start halfway between m_1 and m_2"),
    ("alibi_bias", P(alibi_bias, fill="flat end"), "the gaps were filled from the flat end"),
    ("alibi_bias", P(alibi_bias, fill="last gaps"), "the extra heads took the means of the last h − h' gaps"),
    ("alibi_bias", P(alibi_bias, causal=True), "at head g = 1, query i = 0, key j = 1: expected -0.25, got "
     "-inf — this is the causal bias"),
    ("t5_bucket", P(t5_bucket, queries_first=True), "case relative_position (3, 200) (n_q, n_k), "
     "bidirectional=False: at δ = -197 (query 0, key 0): expected 31, got 0 — the queries were put at "
     "positions 0..n_q − 1"),
    ("t5_bucket", lambda r, bidirectional=True, num_buckets=32, max_distance=128: t5_bucket(
        r if isinstance(r, torch.Tensor) else torch.tensor(r), bidirectional, num_buckets, max_distance),
     "relative_position may be a pair (n_q, n_k) too"),
    ("t5_bucket", P(t5_bucket, flip_sign=True), "i − j"),
    ("t5_bucket", P(t5_bucket, zero_after=True), "δ = 0 went to the side of the keys after the query"),
    ("t5_bucket", lambda r, bidirectional=True, **kw: t5_bucket(r, not bidirectional, **kw), "mixed up"),
    ("t5_bucket", t5_reference, "case relative_position j − i for n=12, defaults: your function calls "
     "transformers' _relative_position_bucket, the reference it is checked against"),
    ("t5_bucket", mt5_reference, "calls transformers' _relative_position_bucket"),
    ("alibi_bias", bloom_slopes_alibi, "case n=5, h=4: your function calls transformers' build_alibi_tensor"),
    ("t5_bucket", P(t5_bucket, rounded=True), "the log part was rounded to the nearest bucket"),
    ("t5_bucket", P(t5_bucket, logs_apart=True), "case relative_position −200..200, 16 buckets, max_distance "
     "64: at δ = -8: expected 5, got 4 — one bucket low only where the log part is exactly a whole number"),
    ("t5_bucket", P(t5_bucket, a0_quarter=True), "one-sided, Δ0 was taken as in the bidirectional split"),
    ("t5_bucket", P(t5_bucket, fixed_distance=True), "case relative_position −200..200, 16 buckets, "
     "max_distance 64: at δ = -53: expected 7, got 6 — max_distance is ignored (128 is used)"),
    ("t5_bucket", P(t5_bucket, one_sided_abs=True), "case relative_position −300..300, bidirectional=False: "
     "at δ = +1: expected 0, got 1 — one-sided buckets were taken from |δ|"),
    ("skew", P(skew, pad=(0, 1)), "every entry is shifted by one: it holds offset δ + 1"),  # start 1 late
    ("skew", P(skew, keep_last=True), "the last n_k columns were kept"),
    ("skew", P(skew, start=1), "the padded memory was read from entry 1"),
    ("skew", lambda r, n_k=None: skew(r, n_k, start=r.shape[-2] - 1), "read from entry n_q − 1"),
    ("skew", P(skew_by_gather, sign=-1), "the offset's sign is flipped (i − j, query minus key)"),
    ("skew", P(skew, keep_first=True), "the first n_q numbers of the padded memory were kept"),
    ("skew", lambda r: r, "unskewed"),
    ("skew", skew_by_gather, "the values are right, but read by an index (torch.gather)"),
    ("skew", P(skew_by_gather, gather=False), "read by an index (indexing with a tensor or a list)"),
    ("skew", lambda r, n_k=None: F.pad(r, (1, 0)).flatten(-2)[..., r.shape[-2]:][..., :r.numel()]
     .reshape(r.shape[-2:])[..., :n_k], "case rel_logits (2, 3, 5, 5) (n_q = n_k): your function raises "
     "RuntimeError: shape '[5, 5]' is invalid for input of size 150 — rel_logits has leading axes here: "
     "pad, flatten and reshape only its last two"),
    ("skew", skew_from_position_0, "case rel_logits (2, 7) (n_q < n_k): at query t = 0, key j = 0: expected"),
    ("skew", skew_from_position_0, "the queries were put at positions 0..n_q − 1"),
    ("skew", skew_square_only, "n_q < n_k: query t sits at position n_k − n_q + t, not t"),
    ("skew", lambda rel_logits, n_k=None: skew(rel_logits) if n_k is None else skew_full(rel_logits),
     "with n_k given, rel_logits has n_k + n_q − 1 = 7 columns"),
    ("skew", lambda rel_logits, n_k=None: skew(rel_logits, n_k, keep_first=True), "the first n_q numbers"),
    ("skew", skew_one_way, "case rel_logits (4, 7), n_k=4, both directions (n_q = n_k): at query t = 0, "
     "key j = 1: expected"),
    ("skew", skew_one_way, "this is the one-way skew: the keys after the query (δ > 0) got the causal skew's "
     "leftovers"),
    ("ntk_frequencies", P(ntk_frequencies, exponent=False), "base·scale"),
    ("ntk_frequencies", P(ntk_frequencies, pair_exponent=1), "at pair ℓ = 1: expected"),
    ("ntk_frequencies", P(ntk_frequencies, pair_exponent=1), "the exponent is ℓ/d; it is 2ℓ/d"),
    ("ntk_frequencies", P(ntk_frequencies, refuse_2=False),
     "d = 2 is refused: raise a ValueError that says d >= 4"),
    ("ntk_frequencies", P(ntk_frequencies, says_half=False), "case d=8, base=10000, factors of 3 (not d/2 "
     "= 4), n_train=16, seq_len=32: your ValueError says 'one per pair = 4 factors, got 3', which does not "
     "say"),
    ("ntk_frequencies", P(ntk_frequencies, at_n_train=True), "case d=8, base=10000, factors=([1, 1, 1.5, 2], "
     "[1, 2, 4, 8]), n_train=16, seq_len=16: at pair ℓ = 1: expected 0.1, got 0.05 — the long list was used "
     "at seq_len = n_train"),
    ("ntk_frequencies", P(ntk_frequencies, always="long"), "seq_len=None: at pair ℓ = 1: expected 0.1, got "
     "0.05 — the long list was used for an input of at most n_train tokens"),
    ("ntk_frequencies", P(ntk_frequencies, always="short"), "seq_len=17: at pair ℓ = 1: expected 0.05, got "
     "0.1 — the short list was used for an input longer than n_train"),
    ("ntk_frequencies", P(ntk_frequencies, both_lengths=False), "a long list of 3 (not d/2 = 4), n_train=16, "
     "seq_len=8: returned"),
    ("ntk_frequencies", P(ntk_frequencies, inverted=True), "the exponent of scale is inverted"),
    ("ntk_frequencies", P(ntk_frequencies, multiply=True), "ω_ℓ was multiplied by the factors"),
    ("ntk_frequencies", P(ntk_frequencies, into_base=True), "the factors scaled the base"),
    ("ntk_frequencies", lambda d, base, scale: ntk_frequencies(d, base, scale),
     "factors=(short, long) must work too"),
    ("ntk_frequencies", P(ntk_frequencies, interpolate=True), "position interpolation"),
    ("ntk_frequencies", P(ntk_frequencies, one_of=False), "scale=4 and factors (both), n_train=16: returned "
     "Tensor, expected a ValueError — scale and factors together are refused"),
    ("ntk_frequencies", P(ntk_frequencies, dtype=torch.float32), "float32"),
    ("position_ids", P(position_ids, ignore_padding=True), "padding is ignored"),
    ("position_ids", P(position_ids, start=1), "starts at 1"),
    ("position_ids", P(position_ids, from_right=True), "the positions count from the right"),
    ("position_ids", P(position_ids, dim=0), "the count ran down the batch"),
    ("position_ids", P(position_ids, padding_from=True), "case attention_mask [[False, False, True, True], "
     "[True, True, True, True]] (bool): your function raises NotImplementedError: Subtraction"),
    ("position_ids", P(position_ids, padding_from=True), "a bool mask (True: a real token) must work too"),
]


# ----------------------------------------------------------------------------------- helpers
@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The cases are tiny: a second OpenMP thread only waits (seconds in all on a busy machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def line_of(capsys, name, fn):
    """check() twice: the same result and the same single line on stdout, nothing on stderr."""
    results = [check(name, fn) for _ in range(2)]
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 2 and out.endswith("\n") and err == "", out + err
    assert lines[0] == lines[1] and results[0] == results[1]
    return results[0], lines[0]


# ----------------------------------------------------------------------------------- tests
def test_every_exercise_has_an_answer_and_a_mistake_here():
    assert set(CORRECT) == set(EXERCISES) == {name for name, _, _ in MISTAKES}


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_a_correct_answer_passes(capsys, name):
    passed, line = line_of(capsys, name, CORRECT[name])
    assert passed and line.startswith(f"✓ {name}: ") and " cases agree with " in line, line


@pytest.mark.parametrize("name, fn, says", MISTAKES, ids=[f"{n}-{s}" for n, _, s in MISTAKES])
def test_a_known_mistake_is_rejected_and_named(capsys, name, fn, says):
    passed, line = line_of(capsys, name, fn)
    assert not passed and line.startswith(f"✗ {name}: case ") and says in line, line


def stub(*args, **kwargs):
    raise NotImplementedError


def raises(*args, **kwargs):
    raise ValueError("a message\nover two lines" + " and long" * 100)


def noisy(*args, **kwargs):
    print("debugging\nprint")
    warnings.warn("a warning", stacklevel=1)
    logging.getLogger("answer").error("a log record")
    return torch.zeros(3)


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message")


def unprintable(*args, **kwargs):
    raise Unprintable


BROKEN = {  # answer -> what the line says
    "raises": (raises, "your function raises ValueError: a message over two lines"),
    "returns None": (lambda *a, **k: None, "returned NoneType"),
    "returns a tuple": (lambda *a, **k: (torch.zeros(3), torch.zeros(3)), "returned tuple"),
    "prints, warns, wrong shape": (noisy, "returned"),
    "wrong dtype": (lambda *a, **k: torch.zeros(1, dtype=torch.complex64), "returned"),
    "unprintable error": (unprintable, "your function raises Unprintable: Unprintable"),
    "a numpy array": (lambda *a, **k: np.zeros(3), "returned ndarray"),
    "a float": (lambda *a, **k: 1.5, "returned float"),
    "torch's NotImplementedError": (lambda *a, **k: 1 - torch.tensor([True]),  # not a stub: code was written
                                    "your function raises NotImplementedError: Subtraction"),
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
@pytest.mark.parametrize("name", sorted(CORRECT))
def test_a_broken_answer_gets_one_line(capsys, name, broken):
    fn, says = BROKEN[broken]
    passed, line = line_of(capsys, name, fn)
    assert not passed and line.startswith(f"✗ {name}: ") and says in line and len(line) < 400, line


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_a_stub_is_invited_not_failed(capsys, name):
    passed, line = line_of(capsys, name, stub)
    invitation = f"✎ {name}: not yet written: replace raise NotImplementedError with your code and run"
    assert not passed and line.startswith(invitation) and "✗" not in line, line
    assert f" cases are waiting ({EXERCISES[name].covered})" in line, line


def test_the_masked_softmax_that_un_masks_empty_rows_passes_with_its_gradients(capsys):
    passed, line = line_of(capsys, "masked_softmax", masked_softmax_unmasked_empty_rows)
    assert passed and "an empty row all zeros" in line and "gradients (finite, 0 on an empty row)" in line


def answer_outputs():
    """(notebook, exercise, what the cell printed) for each answer cell (tag `answer`) of the executed
    notebooks, and the same for each stub (a cell that still raises NotImplementedError)."""
    answers, stubs = [], []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            called = re.search(r"attnbook\.check\('(\w+)'", cell.source) if cell.cell_type == "code" else None
            if called:
                text = "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")
                if "answer" in cell.metadata.get("tags", []):
                    answers.append((path.name, called.group(1), text))
                elif "raise NotImplementedError" in cell.source:
                    stubs.append((path.name, called.group(1), text))
    return answers, stubs


def test_every_worked_answer_passed_its_check_in_the_executed_notebooks():
    """nbval re-runs the notebooks and compares these outputs; here: each stored answer printed ✓ and each
    stub the invitation, for every exercise."""
    answers, stubs = answer_outputs()
    assert {name for _, name, _ in answers} == {name for _, name, _ in stubs} == set(EXERCISES)
    for notebook, name, text in answers:
        assert f"✓ {name}: " in text and "✗" not in text, (notebook, name, text)
    for notebook, name, text in stubs:
        assert text.startswith(f"✎ {name}: not yet") and text.count("\n") == 1, (notebook, name, text)


@pytest.mark.parametrize("name, fn, says", [
    ("rpoe", rope, "did you mean 'rope'"), (None, rope, "no exercise of that name"),
    (["rope"], rope, "no exercise of that name"), ("rope", "rope", "expected a function, got str"),
    ("rope", None, "expected a function, got NoneType"), (Unprintable(), rope, "✗ Unprintable: no exercise")])
def test_an_unknown_name_or_a_non_function_gets_one_line(capsys, name, fn, says):
    passed, line = line_of(capsys, name, fn)
    assert not passed and line.startswith("✗ ") and says in line, line


def test_cases_are_built_on_the_chosen_device_and_compared_on_the_cpu(capsys, monkeypatch):
    assert attnbook.pick_device({"BOOK_DEVICE": "cpu"}) == book_device.chosen_device == torch.device("cpu")
    seen = []

    def on_meta(x, positions):  # meta tensors hold no data: copying the answer to the CPU fails
        seen.append((x.device.type, positions.device.type))
        return x

    monkeypatch.setattr(book_device, "chosen_device", torch.device("meta"))
    passed, line = line_of(capsys, "rope", on_meta)
    assert seen[0] == ("meta", "meta") and not passed and "cannot be copied to the CPU" in line, line
    passed, line = line_of(capsys, "rope", lambda x, positions: torch.zeros(x.shape))
    assert not passed and "returned a tensor on cpu; the inputs are on meta" in line, line


@pytest.mark.parametrize("d_h", [4, 8, 64])
def test_the_grid_rope_reference_is_two_one_d_ropes_on_the_halves_of_the_pairs_and_sees_only_offsets(d_h):
    """Qwen2-VL's vision RoPE (the grid reference) is 1-D RoPE of width d_h/2 at the rows on pairs l < d_h/4
    and at the columns on the others, so a score depends on the patches' (Δμ, Δν) alone."""
    g = torch.Generator().manual_seed(d_h)
    patches = torch.tensor([[r, c] for r in range(3) for c in range(4)])
    q, k = (torch.randn(len(patches), d_h, generator=g) for _ in range(2))
    turned = _rope(q, patches, grid=True)
    pairs = torch.arange(d_h).remainder(d_h // 2) < d_h // 4  # coordinates of pairs l < d_h/4
    torch.testing.assert_close(turned[:, pairs], _rope(q[:, pairs], patches[:, 0]))
    torch.testing.assert_close(turned[:, ~pairs], _rope(q[:, ~pairs], patches[:, 1]))
    scores = _rope(q[:1].expand_as(q), patches, grid=True) @ _rope(k[:1].expand_as(k), patches, grid=True).T
    for offset in [(1, 2), (-2, 1), (0, -3)]:
        same = [scores[i, j] for i in range(len(patches)) for j in range(len(patches))
                if (patches[j] - patches[i]).tolist() == list(offset)]
        assert len(same) > 1 and torch.allclose(torch.stack(same), same[0], atol=1e-5), offset


@pytest.mark.parametrize("d, base, scale", [(8, 10000, 4), (128, 10000, 8), (64, 5e5, 2), (6, 10000, 2.5)])
def test_the_ntk_reference_is_transformers_dynamic_ntk_at_factor_1(d, base, scale):
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    max_positions = 1024
    rope_parameters = {"rope_type": "dynamic", "rope_theta": base, "factor": 1.0}
    config = LlamaConfig(hidden_size=d, num_attention_heads=1, head_dim=d,
                         max_position_embeddings=max_positions, rope_parameters=rope_parameters)
    inv_freq, _ = ROPE_INIT_FUNCTIONS["dynamic"](config, seq_len=int(scale * max_positions))
    torch.testing.assert_close(_ntk_frequencies(d, base, scale).float(), inv_freq, rtol=1e-5, atol=0)


@pytest.mark.parametrize("n", [None, 4096, 4097, 131072])
def test_the_longrope_reference_is_transformers_longrope(n):
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    case = next(c for c in EXERCISES["ntk_frequencies"].cases(torch.Generator().manual_seed(0))
                if "Phi-3" in c.label)
    short, long = case.kwargs["factors"]
    rope_parameters = {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": short,
                       "long_factor": long, "original_max_position_embeddings": 4096}
    config = LlamaConfig(hidden_size=96, num_attention_heads=1, head_dim=96, max_position_embeddings=131072,
                         rope_parameters=rope_parameters)
    inv_freq, _ = ROPE_INIT_FUNCTIONS["longrope"](config, seq_len=n)
    ours = _ntk_frequencies(96, 10000.0, factors=(short, long), n_train=4096, seq_len=n)
    torch.testing.assert_close(ours.float(), inv_freq, rtol=1e-5, atol=0)


def test_the_attention_reference_with_sinks_is_gpt_oss_eager_attention():
    from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward

    g = torch.Generator().manual_seed(0)
    shapes = [(2, 4, 3, 8), (2, 2, 5, 8), (2, 2, 5, 6), (4,)]
    q, k, v, sinks = (torch.randn(*shape, generator=g) for shape in shapes)
    module = torch.nn.Module().eval()
    module.sinks, module.num_key_value_groups = sinks, 2
    mask = torch.rand(3, 5, generator=g) < 0.5
    mask[1] = False  # a row with no key: the sink takes it all
    additive = torch.zeros(3, 5).masked_fill(~mask, -math.inf)
    expected = eager_attention_forward(module, q, k, v, additive, scaling=8 ** -0.5)[0].transpose(1, 2)
    torch.testing.assert_close(_attention(q, k, v, mask, sinks=sinks), expected)


def test_the_sinusoidal_reference_for_positions_is_transformers_table():
    from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings

    positions = torch.tensor([[0, 5, 1999], [7, 1000, 3]])
    for d in (1, 7, 16):
        table = create_sinusoidal_embeddings(2000, d, torch.empty(2000, d))
        torch.testing.assert_close(EXERCISES["sinusoidal_encoding"].reference(positions, d), table[positions])


@pytest.mark.parametrize("height, width, d", [(3, 4, 8), (14, 14, 64), (1, 5, 16)])
def test_the_grid_reference_is_transformers_2d_table_interleaved(height, width, d):
    """transformers' build_2d_sinusoidal_position_embedding lays each patch out as [sin_row | cos_row |
    sin_col | cos_col] (ViT-MAE then swaps the halves, column first); the check's grid interleaves each
    half (sin at 2l, cos at 2l + 1), as its 1-D encoding does."""
    from transformers.models.vit_mae.modeling_vit_mae import build_2d_sinusoidal_position_embedding

    table = build_2d_sinusoidal_position_embedding(height, width, d).reshape(height, width, d)
    quarter = torch.arange(d // 4)
    order = torch.cat([torch.stack([half + quarter, half + d // 4 + quarter], -1).flatten()
                       for half in (0, d // 2)])  # [sin_0, cos_0, sin_1, cos_1, ...] within each half
    reference = EXERCISES["sinusoidal_encoding"].reference((height, width), d)
    torch.testing.assert_close(reference, table[..., order])


def test_the_flop_reference_counts_four_projections_and_two_matmuls():
    for n, d in [(1, 1), (16, 64), (100_000, 128)]:
        assert _attention_flops(n, d) == 8 * n * d * d + 4 * n * n * d
    for n, d, m in [(1, 8, 0), (7, 16, 5), (12, 4, 30)]:  # a window: 1 key each, or wide enough to be causal
        assert _attention_flops(n, d, m, window=1) == 8 * n * d * d + 4 * n * d
        causal_pairs = n * (m + n) - n * (n - 1) // 2  # the dense product less the keys after each query
        assert _attention_flops(n, d, m, window=m + n) == 8 * n * d * d + 4 * causal_pairs * d


def test_a_log_handler_made_during_a_check_writes_to_the_real_stderr(capsys):
    logger = logging.getLogger("made during a check")

    def answer(n):
        logger.addHandler(logging.StreamHandler())  # as transformers does when a check first imports it
        return causal_mask(n)

    check("causal_mask", answer)
    streams = [handler.stream for handler in logger.handlers]
    logger.handlers.clear()
    assert streams and all(stream is sys.stderr for stream in streams)


# ------------------------------------------------------------------ the chapters' own cells do not pass
def chapter_masked_softmax(scores, valid_lens):
    """Section 1's key_mask and softmax_with_mask, put together: valid lengths only, no causal."""
    if valid_lens is None:
        return F.softmax(scores, dim=-1)
    lens = valid_lens[:, None].expand(-1, scores.shape[1]) if valid_lens.dim() == 1 else valid_lens
    allowed = torch.arange(scores.shape[-1], device=scores.device) < lens[..., None]
    has_key = allowed.any(-1, keepdim=True)
    minus_inf = torch.zeros(allowed.shape, device=scores.device).masked_fill(~(allowed | ~has_key), -math.inf)
    return torch.where(has_key, F.softmax(scores + minus_inf, dim=-1), 0.0)


def chapter_sinusoidal_table(n, d):
    """Section 3's sinusoidal_table: even d only (sin, cos stacked and flattened)."""
    angles = torch.arange(n, dtype=torch.float32)[:, None] / 10000 ** (torch.arange(0, d, 2) / d)
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)


def chapter_alibi_causal_bias(n, h):
    """Section 4's alibi_causal_bias: the slopes for a power of two heads, −inf after the query."""
    slopes = 2.0 ** (-8 * torch.arange(1, h + 1) / h)
    delta = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    return (slopes[:, None, None] * delta).masked_fill(delta > 0, -math.inf)


def chapter_rope(x, positions):
    """Section 5's rotate, on the half-split pairs: positions (n,) shared by every sequence."""
    half = x.shape[-1] // 2
    angles = positions[:, None] * 10000.0 ** (-torch.arange(0, half, dtype=torch.float64) / half)
    cos, sin = angles.cos().float(), angles.sin().float()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def chapter_attend(Q, K, V, mask=None):
    """Section 1's attend (its heads and MultiHeadSelfAttention call it), without the weights:
    every head its own keys and values."""
    scores = Q @ K.transpose(-1, -2) / math.sqrt(K.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ V


def chapter_ntk(d, base, scale):
    """Section 6's stretched(..., 'NTK'): the base raised by scale^(d/(d−2))."""
    return (base * scale ** (d / (d - 2))) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)


CHAPTER_CELLS = [  # (exercise, the chapter's cell as a reader would copy it, what the line says)
    ("masked_softmax", chapter_masked_softmax, "causal=True must work too"),
    ("causal_mask", lambda n: torch.ones(n, n, dtype=torch.bool).tril(),
     "documents=[n_1, n_2, ...] must work too"),
    ("causal_mask", lambda n, documents=None: causal_mask(n, documents=documents), "window=w must work too"),
    ("attention", chapter_attend, "sinks=s: one more logit s_g per query head g"),
    ("attention_flops", lambda n, d: 8 * n * d**2 + 4 * n**2 * d, "cached=m must work too"),
    ("sinusoidal_encoding", chapter_sinusoidal_table, "odd d must work too"),
    ("sinusoidal_encoding", lambda n, d: chapter_sinusoidal_table(n, d)[:, :d],  # its PositionalEncoding
     "positions may be a tensor too"),
    ("sinusoidal_encoding",  # the answer for positions alone: the pair read as two positions
     lambda n, d: sinusoidal_encoding(torch.tensor(n) if isinstance(n, tuple) else n, d),
     "returned shape (2, 8), expected (3, 4, 8) — positions may be a pair (n1, n2) too"),
    ("attention_flops", lambda n, d, cached=0: 8 * n * d**2 + 4 * n * (n + cached) * d,  # no window
     "window=w must work too"),
    ("alibi_bias", chapter_alibi_causal_bias, "this is the causal bias"),
    ("skew", lambda rel_logits: F.pad(rel_logits, (1, 0)).reshape(
        *rel_logits.shape[:-2], rel_logits.shape[-1] + 1, rel_logits.shape[-1])[..., 1:, :], "n_q < n_k"),
    ("t5_bucket", t5_reference, "calls transformers' _relative_position_bucket"),
    ("rope", chapter_rope, "positions (b, n) must work too"),
    ("rope", lambda x, positions: chapter_rope(x, positions) if positions.dim() == 1 else rope(x, positions),
     "x in bfloat16 must work too"),
    ("rope", lambda x, positions: rope(x, positions), "grid=True must work too"),  # all of the 1-D contract
    ("ntk_frequencies", chapter_ntk, "factors=(short, long) must work too"),
]


@pytest.mark.parametrize("name, fn, says", CHAPTER_CELLS, ids=[f"{n}-{s}" for n, _, s in CHAPTER_CELLS])
def test_the_chapters_own_cell_does_not_pass(capsys, name, fn, says):
    """An exercise asks for more than a cell the chapter shows: that cell, copied, fails, and the line
    says what more is asked."""
    passed, line = line_of(capsys, name, fn)
    assert not passed and says in line, line


GIVEAWAYS = [  # (exercise, what the exercise asks the reader to find, which no line of its check may print)
    ("position_ids", "cumsum"), ("ntk_frequencies", "^(2ℓ/(d"),
    ("sinusoidal_encoding", "0.001"),
    ("sinusoidal_encoding", "30,000"), ("masked_softmax", "is_causal"), ("masked_softmax", "lower_right"),
    ("attention", "1, 2, …"), ("rope", "128"), ("rope", "256"),
    ("attention_flops", "min("), ("sinusoidal_encoding", "(d/2))")]


@pytest.mark.parametrize("name, answer", GIVEAWAYS)
def test_no_line_of_a_check_gives_the_answer_away(name, answer):
    """The ✓ line, the named mistakes and the case notes point to the idea; the formula or the number
    the exercise asks for is the reader's to find."""
    exercise = EXERCISES[name]
    notes = [case.note for case in exercise.cases(torch.Generator().manual_seed(0))]
    texts = [exercise.against, exercise.covered, *exercise.mistakes, *notes]
    for text in texts:
        text = text(None) if callable(text) else text
        assert answer not in text, text
