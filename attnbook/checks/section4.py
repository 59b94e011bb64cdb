"""Section 4's exercises (relative positional encoding) and the mistakes each names.

* alibi_bias: its contract grew (issue 29): `heads=` a range of head numbers g (1..h) asks for those
  rows only, as one device of a tensor-parallel model holds (BLOOM's shards), which the chapter never
  meets; alibi_bias(n, h) is what it was. For h not a power of two the exercise states Press et al.'s
  rule as its idea (the extra heads' slopes halfway, on a log scale, between neighbours of 1, m_1, …,
  m_h'), which the chapter does not show. Mistakes: the shard given the slopes of a model of len(heads)
  heads; head numbers read as indices from 0 (head g gets m_(g+1)); sign flipped; the powers-of-two-only
  slopes 2^(−8g/h); the other half of the interleaved slopes (m₂, m₄, … of the 2h'-head sequence,
  repeats); arithmetic means of neighbours; the means started at (m_1, m_2), not (1, m_1); the gaps filled
  from the flat end, or the last h − h' gaps taken in order; the slopes started at 1 = 2⁰, one step early;
  heads in reverse order; no absolute value (either sign: m·(j − i) or −m·(j − i)); the causal version (−∞
  above the diagonal); slopes sorted steepest first. Reported by head g = 1..h and positions (i, j). An
  answer that takes its slopes (or its bias) from transformers' build_alibi_tensor, the reference, is told
  so in one line, as t5_bucket's is.
* t5_bucket: its contract grew (issue 29): relative_position may be a pair (n_q, n_k), asking for the
  (n_q, n_k) buckets of n_q queries that are the last of n_k positions (a decoder step after a KV cache,
  what T5's compute_bias needs past_seen_tokens for), which the chapter never meets; offsets in are
  what they were. The smallest settings with Δ0 = 1 are tried (Δ0 = 0 divides by zero in transformers
  too, so the docstring asks for Δ0 ≥ 1). Mistakes: the queries put at 0..n_q − 1; i − j (sign);
  bidirectional mixed up; δ = 0 on the side of the keys after the query (only δ > 0 goes there);
  one-sided buckets from |δ| (a future key in a bucket of its own); max_distance ignored (128); no
  clamp at the last bucket; the log part rounded to nearest (not down); one-sided Δ0 = B/4 (the
  bidirectional split's). Reported by offset δ. An answer that calls transformers'
  _relative_position_bucket (T5's or a copy in another model) is told so in one line.
* skew: its contract changed twice (issue 29): the queries are the *last* n_q of n_k positions, so the
  chapter's square causal skew (n_q = n_k) is one case of it; and with `n_k` given it is the two-way
  skew of such queries, (..., n_q, n_k + n_q − 1) → (..., n_q, n_k), every entry defined, offsets
  δ = −(n_k − 1)..n_q − 1, which the chapter does not show (it shows the causal skew only).
  skew(rel_logits) is what it was. Mistakes: the queries put at 0..n_q − 1; shifted by one (a pad on
  the wrong side, or a row start one entry off: the message names the symptom, not one cause); the
  last n_k columns kept (both ways); the first n_q entries of the padded memory kept (off by one row);
  the padded memory read from entry 1; offsets read in reverse (column −δ); the offset's sign flipped
  (i − j); the one-way result where both ways are asked (the keys after the query wrong); not skewed at all.
  Reported by query t and key j; with leading (batch, head) axes, the case's note says to pad, flatten and
  reshape only the last two. The skew is the exercise: right values read by an index (a gather, indexing
  with a tensor or a list, a scatter: the chapter's own lookup) are told that the exercise asks for none.
"""
import math

import torch
import torch.nn.functional as F

from attnbook.checks.machinery import Case, Exercise, moved, randn


# ----------------------------------------------------------------------------------- alibi_bias
def _alibi_slopes(h):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    # BLOOM's bias for keys 0, 1 is slope · (0, 1): column 1 holds each head's slope
    return build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), h, torch.float32)[:, 0, 1]


def _geometric(h):
    """m_g = 2^(−8g/h), g = 1..h: Press et al.'s slopes when h is a power of two."""
    return 2.0 ** (-8 * torch.arange(1, h + 1) / h)


def _other_half_slopes(h):
    """The 2^a geometric slopes, then m₂, m₄, … of the 2^(a+1)-head sequence (for the mistake)."""
    power = 2 ** math.floor(math.log2(h))
    return torch.cat([_geometric(power), _geometric(2 * power)[1::2][:h - power]])


def _filled(h, mean=lambda a, b: (a * b).sqrt(), first=0, flat_end=False, last_gaps=False):
    """The h' = 2^⌊log₂ h⌋ geometric slopes, then the means of neighbours of 1, m_1, …, m_h' from pair
    `first` on (flat_end: from the flattest pair back; last_gaps: the last h − h' pairs, steep to flat):
    Press et al.'s with the geometric mean from the pair (1, m_1) (for the mistakes)."""
    power = 2 ** math.floor(math.log2(h))
    ladder = torch.cat([torch.ones(1), _geometric(power)])
    means = mean(ladder[:-1], ladder[1:])
    if last_gaps:
        return torch.cat([_geometric(power), means[2 * power - h:]])
    return torch.cat([_geometric(power), (means.flip(0) if flat_end else means)[first:first + h - power]])


def _from_slope(slopes, first):
    """The h slopes read one place off (for the mistakes): from m_0 = 1 (first=0, the ladder's start) or
    from m_2 (first=2, head g given m_(g+1), the last repeated)."""
    ladder = torch.cat([slopes.new_ones(1), slopes, slopes[-1:]])
    return ladder[first:first + len(slopes)]


def _alibi_from(slopes, n, distance=lambda i, j: -(i - j).abs()):
    i, j = torch.arange(n)[:, None], torch.arange(n)
    return slopes[:, None, None] * distance(i, j).float()


def _shard(bias, heads):
    """The heads g (numbered 1..h) of a full (h, n, n) bias: a tensor-parallel shard's."""
    return bias if heads is None else bias[torch.tensor(list(heads)) - 1]


def _alibi_bias(n, h, heads=None):
    return _shard(_alibi_from(_alibi_slopes(h), n), heads)


def _alibi_causal(n, h, heads=None):
    causal = _alibi_bias(n, h).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
    return _shard(causal, heads)


def _alibi_mistake(full):
    """full(n, h) -> (h, n, n), a mistaken whole bias, as an answer to alibi_bias (its shard's heads)."""
    return lambda n, h, heads=None: _shard(full(n, h), heads)


def _alibi_cases(g):
    sizes = [(5, 4), (5, 6)] + [(1 + h % 7, h) for h in range(1, 25)]  # every head count up to 24
    cases = [Case(f"n={n}, h={h}{'' if h & (h - 1) == 0 else ' (h not a power of two)'}", (n, h))
             for n, h in sizes]
    return cases + [
        Case(f"n={n}, h={h}, heads={heads} (a shard)", (n, h), {"heads": heads},
             note="heads=… must work too: the rows of heads g in `heads` (numbered 1..h) of the h-head bias")
        for n, h, heads in [(4, 12, range(5, 9)), (5, 8, range(5, 9)), (3, 6, range(4, 7)),
                            (4, 8, range(1, 5)), (3, 24, range(17, 25)), (2, 5, [5])]]


def _head_and_positions(case, at):
    heads = case.kwargs.get("heads")
    g = at[0] + 1 if heads is None else list(heads)[at[0]]
    return f"at head g = {g}, query i = {at[1]}, key j = {at[2]}:"


# ----------------------------------------------------------------------------------- t5_bucket
def _last_queries(n_q, n_k, first=None):
    """(n_q, n_k) offsets δ = j − p of key j from query t at position p = n_k − n_q + t, the last n_q
    of n_k positions (first: the queries' first position, the mistake's 0)."""
    first = n_k - n_q if first is None else first
    return torch.arange(n_k)[None, :] - (first + torch.arange(n_q))[:, None]


def _t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    from transformers.models.t5.modeling_t5 import T5Attention

    if isinstance(relative_position, tuple):  # (n_q, n_k): the queries are the last n_q positions
        relative_position = _last_queries(*relative_position)
    return T5Attention._relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance)


def _t5_written_out(relative_position, bidirectional=True, num_buckets=32, max_distance=128,
                    clamp=True, one_sided_distance=None, rounding=None, one_sided_exact=None,
                    zero_after=False):
    """T5's bucketing written out (for mistakes): without the clamp at the last bucket, with the
    one-sided distance computed another way, the log part rounded another way, another number of
    exact buckets on the one-sided side, or δ = 0 on the side of the keys after the query."""
    half, exact, distance, log_part = _t5_geometry(
        relative_position, bidirectional, num_buckets, max_distance,
        one_sided_distance=one_sided_distance, one_sided_exact=one_sided_exact)
    after = relative_position >= 0 if zero_after else relative_position > 0  # zero_after: the mistake
    side = after.long() * half if bidirectional else 0
    far = exact + (rounding or torch.floor)(log_part).long()
    return side + torch.where(distance < exact, distance, far.clamp(max=half - 1) if clamp else far)


def _t5_geometry(offsets, bidirectional, num_buckets, max_distance, dtype=torch.float32,
                 one_sided_distance=None, one_sided_exact=None):
    """T5's bucketing taken apart: a side's buckets, the exact ones among them, each offset's distance, and
    the far formula's log part ln(Δ / Δ0) / ln(D / Δ0) · (B − Δ0), in T5's order, in `dtype`."""
    half = num_buckets // 2 if bidirectional else num_buckets
    exact = half // 2 if bidirectional or one_sided_exact is None else one_sided_exact(num_buckets)
    if bidirectional:
        distance = offsets.abs()
    else:
        distance = (one_sided_distance or (lambda r: (-r).clamp(min=0)))(offsets)
    log_ratio = torch.log(distance.to(dtype).clamp(min=1) / exact) / math.log(max_distance / exact)
    return half, exact, distance, log_ratio * (half - exact)


def _pair(relative_position):
    """Offsets, from a pair (n_q, n_k) of last queries too (for mistakes)."""
    return _last_queries(*relative_position) if isinstance(relative_position, tuple) else relative_position


def _on_a_bucket_edge(relative_position, kwargs, otherwise=""):
    """The note of a case: where an answer is one bucket low only where the far formula's log part is a
    whole number (a bucket's first distance, e.g. 8 of 16 buckets up to 64: exactly 1), rounding error in
    another honest order of the arithmetic put it just below, and rounding down took the bucket before."""
    def note(got):
        try:
            expected, got = _t5_bucket(relative_position, **kwargs), got.cpu()
            _, exact, distance, log_part = _t5_geometry(
                _pair(relative_position), kwargs.get("bidirectional", True), kwargs.get("num_buckets", 32),
                kwargs.get("max_distance", 128), dtype=torch.float64)
            edge = (distance >= exact) & ((log_part - log_part.round()).abs() < 1e-9)
            wrong = got != expected
            if wrong.any() and edge[wrong].all() and (got[wrong] == expected[wrong] - 1).all():
                return ("one bucket low only where the log part is exactly a whole number (a bucket's first "
                        "distance): your arithmetic's rounding error left it just below, and rounding down "
                        "took the bucket before; compute it as ln(Δ / Δ0) / ln(D / Δ0) · (B − Δ0) in "
                        "float32, in the order T5 does")
        except Exception:  # got is not a tensor of the right shape: the line has already said so
            pass
        return otherwise
    return note


def _t5_cases(g):
    n = 12
    offsets = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    specs = [(offsets, {}, f"j − i for n={n}, defaults"),
             (torch.arange(-300, 301), {}, "−300..300, defaults"),
             (torch.arange(-300, 301), {"bidirectional": False}, "−300..300, bidirectional=False"),
             (torch.arange(-200, 201), {"num_buckets": 16, "max_distance": 64},
              "−200..200, 16 buckets, max_distance 64"),
             (torch.arange(-50, 51), {"bidirectional": False, "num_buckets": 8, "max_distance": 20},
              "−50..50, bidirectional=False, 8 buckets, max_distance 20"),
             (torch.tensor([0]), {}, "[0]"),
             (torch.arange(-20, 21), {"num_buckets": 6, "max_distance": 8},
              "−20..20, 6 buckets (Δ0 = 1), max_distance 8"),
             (torch.arange(-20, 21), {"bidirectional": False, "num_buckets": 3, "max_distance": 8},
              "−20..20, bidirectional=False, 3 buckets (Δ0 = 1), max_distance 8")]
    return [Case(f"relative_position {what}", (rel,), kwargs, note=_on_a_bucket_edge(rel, kwargs))
            for rel, kwargs, what in specs] + [
        Case(f"relative_position ({n_q}, {n_k}) (n_q, n_k){what}", ((n_q, n_k),), kwargs,
             note=_on_a_bucket_edge((n_q, n_k), kwargs, otherwise=(
                 "relative_position may be a pair (n_q, n_k) too: the (n_q, n_k) buckets of n_q queries "
                 "that are the last of n_k positions (query t at n_k − n_q + t)")))
        for n_q, n_k, kwargs, what in [(3, 200, {"bidirectional": False}, ", bidirectional=False"),
                                       (2, 150, {}, ""), (5, 5, {}, " (n_q = n_k)")]]


def _offset(case, at):
    rel = case.args[0]
    delta = int((_last_queries(*rel) if isinstance(rel, tuple) else rel)[at])
    return f"at δ = {delta:+d}{f' (query {at[0]}, key {at[1]})' if len(at) == 2 else ''}:"


# ----------------------------------------------------------------------------------- skew
def _columns(n_q, width, n_k=None, reverse=False, sign=1):
    """Column of rel_logits (`width` columns) that entry (t, j) reads: offset δ = j − p with p = n_k − n_q + t
    the query's position; column r holds δ = r − (n_k − 1). Without n_k (width = n_k) future keys
    (j > p) are clamped and not checked."""
    n_k = width if n_k is None else n_k
    t, j = torch.arange(n_q)[:, None], torch.arange(n_k)
    delta = sign * (j - (n_k - n_q + t))
    return (-delta if reverse else delta + n_k - 1).clamp(0, width - 1)


def _up_to_own_position(rel_logits, n_k=None):
    """True for the keys j ≤ n_k − n_q + t of query t: the entries the contract defines (all with n_k)."""
    n_q, width = rel_logits.shape[-2:]
    if n_k is not None:
        return torch.ones(n_q, n_k, dtype=torch.bool)
    return torch.arange(width) <= width - n_q + torch.arange(n_q)[:, None]


def _gathered(rel_logits, columns):
    return rel_logits.gather(-1, columns.expand(*rel_logits.shape[:-1], columns.shape[-1]))


def _skew(rel_logits, n_k=None):
    # no library has this shift: gather the column of each entry's offset
    return _gathered(rel_logits, _columns(*rel_logits.shape[-2:], n_k))


def _pad_skew(rel_logits, n_k=None, pad=(1, 0), drop=None):
    """The skew by memory: pad a column, drop the first `drop` entries (n_q), read rows of the width,
    keep n_k columns."""
    n_q, width = rel_logits.shape[-2:]
    flat = F.pad(rel_logits, pad).flatten(-2)[..., n_q if drop is None else drop:]
    return flat[..., :n_q * width].reshape(rel_logits.shape)[..., :width if n_k is None else n_k]


def _skew_at_start(rel_logits, n_k=None):
    """Query t taken to sit at position t, as if there were no earlier keys (for the mistake)."""
    n_q, width = rel_logits.shape[-2:]
    n_k = width if n_k is None else n_k
    t, j = torch.arange(n_q)[:, None], torch.arange(n_k)
    return _gathered(rel_logits, (j - t + n_k - 1).clamp(0, width - 1))


def _skew_cases(g):
    shapes = [(4, 4), (2, 3, 5, 5), (1, 1), (2, 7), (2, 3, 4, 9), (1, 5), (3, 3, 6), (2, 1, 6)]
    cases = []
    for shape in shapes:
        n_q, n_k = shape[-2:]
        what = " (n_q = n_k = 1)" if n_k == 1 else " (n_q = n_k)" if n_q == n_k else " (n_q < n_k)"
        note = ("n_q < n_k: query t sits at position n_k − n_q + t, not t, and the padded memory, n_q rows "
                "of n_k + 1, no longer splits into n_k + 1 rows of n_k" if n_q < n_k else "")
        cases.append(Case(f"rel_logits {shape}{what}", (randn(g, *shape),), note=_with_batch(note, shape)))
    for *lead, n_q, n_k in [(4, 4), (2, 3, 5), (1, 1), (3, 6), (2, 1, 4, 4), (1, 5), (2, 2, 3, 7)]:
        what = " (n_q = n_k)" if n_q == n_k else " (n_q < n_k)"
        cases.append(Case(f"rel_logits {(*lead, n_q, n_k + n_q - 1)}, n_k={n_k}, both directions{what}",
                          (randn(g, *lead, n_q, n_k + n_q - 1),), {"n_k": n_k}, note=_with_batch(
                              f"with n_k given, rel_logits has n_k + n_q − 1 = {n_k + n_q - 1} columns, "
                              f"offsets −(n_k − 1)..n_q − 1, and query t sits at position n_k − n_q + t",
                              (*lead, n_q, n_k))))
    return cases


INDEXING = {torch.gather, torch.Tensor.gather, torch.take, torch.Tensor.take, torch.take_along_dim,
            torch.Tensor.take_along_dim, torch.index_select, torch.Tensor.index_select, torch.scatter,
            torch.Tensor.scatter, torch.Tensor.scatter_, torch.Tensor.index_put, torch.Tensor.index_put_,
            torch.index_put}


class _Lookups(torch.overrides.TorchFunctionMode):
    """Records the first lookup by an index: a gather-like call, or indexing (or writing) with a tensor or a
    list."""

    def __init__(self):
        super().__init__()
        self.seen = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.seen is None:
            if func in INDEXING:
                self.seen = f"torch.{func.__name__}"
            elif func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__) and _is_index(args[1]):
                self.seen = "indexing with a tensor or a list"
        return func(*args, **(kwargs or {}))


def _is_index(key):
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (torch.Tensor, list)) for k in keys)


def _skew_without_index(case, fn):
    """After the values agree: the skew itself, not a lookup of each entry's column."""
    with _Lookups() as lookups:
        fn(*[moved(a) for a in case.args], **case.kwargs)
    if lookups.seen:
        return (f"the values are right, but read by an index ({lookups.seen}), as the chapter's lookup is; "
                "the exercise is the skew without one: pad, flatten, slice, reshape, cut")
    return None


def _with_batch(note, shape):
    """A case's note, and for rel_logits with leading (batch, head) axes the edge those bring."""
    if len(shape) <= 2:
        return note
    batch = ("rel_logits has leading axes here: pad, flatten and reshape only its last two, and keep the "
             "leading ones as they are")
    return f"{note}; {batch}" if note else batch


def _query_and_key(case, at):
    batch = f" of batch entry {list(at[:-2])}" if len(at) > 2 else ""
    return f"at query t = {at[-2]}, key j = {at[-1]}{batch}:"


# ----------------------------------------------------------------------------------- the table
EXERCISES = {
    "alibi_bias": Exercise(
        _alibi_cases, _alibi_bias,
        "−m_g|i − j| with the slopes of transformers' BLOOM ALiBi (Press et al.'s), and a shard's rows of it",
        "every h from 1 to 24, n 1..7, shards of 1..8 heads of h = 5..24", {
            "this shard got the slopes of a model with len(heads) heads; head g keeps the slope m_g it has "
            "among all h heads":
                lambda n, h, heads=None: _alibi_bias(n, len(heads)) if heads is not None else None,
            "the head numbers were read as indices from 0: head g got m_(g+1); heads are numbered 1..h":
                lambda n, h, heads=None: _alibi_from(_from_slope(_alibi_slopes(h), 2), n)[
                    torch.tensor(list(heads)) - 1] if heads is not None else None,
            "the sign is flipped: the bias is −m·|i − j|, a penalty":
                _alibi_mistake(lambda n, h: -_alibi_bias(n, h)),
            "these slopes 2^(−8g/h) hold only for h a power of two; for other h the first h' heads keep "
            "the slopes of h' heads and the others fill the gaps between them":
                _alibi_mistake(lambda n, h: _alibi_from(_geometric(h), n)),
            "the extra heads repeat slopes the first h' heads already have (m₂, m₄, … of the 2h'-head "
            "sequence); theirs lie halfway between neighbours of 1, m_1, …, m_h'":
                _alibi_mistake(lambda n, h: _alibi_from(_other_half_slopes(h), n)),
            "the extra slopes are the arithmetic means of neighbours; halfway on a log scale is the "
            "geometric mean, √(m_g·m_(g+1))":
                _alibi_mistake(lambda n, h: _alibi_from(_filled(h, mean=lambda a, b: (a + b) / 2), n)),
            "the extra slopes start halfway between m_1 and m_2; the first lies between 1 and m_1, √m_1":
                _alibi_mistake(lambda n, h: _alibi_from(_filled(h, first=1), n)),
            "the gaps were filled from the flat end; the extra heads start at the steep end, √m_1 first":
                _alibi_mistake(lambda n, h: _alibi_from(_filled(h, flat_end=True), n)),
            "the extra heads took the means of the last h − h' gaps (the flat end); they take the first "
            "h − h', from the steep end: √m_1, then √(m_1·m_2), …":
                _alibi_mistake(lambda n, h: _alibi_from(_filled(h, last_gaps=True), n)),
            "the slopes start at 1 = 2⁰, one step early: head g = 1 has the first slope below 1, "
            "2^(−8/h) for h a power of two":
                _alibi_mistake(lambda n, h: _alibi_from(_from_slope(_alibi_slopes(h), 0), n)),
            "there is no absolute value: −m·(j − i) is right only for j ≥ i; the bias is −m·|i − j|":
                _alibi_mistake(lambda n, h: _alibi_from(_alibi_slopes(h), n, lambda i, j: i - j)),
            "the heads are in reverse order: head g = 1 is the steepest":
                _alibi_mistake(lambda n, h: _alibi_bias(n, h).flip(0)),
            "this is the causal bias, −∞ for keys after the query; the exercise asks for both "
            "directions, −m_g|i − j| for j > i too":
                _alibi_causal,
            "there is no absolute value: m·(j − i) is right only for j ≤ i; the bias is −m·|i − j|":
                _alibi_mistake(lambda n, h: _alibi_from(_alibi_slopes(h), n, lambda i, j: j - i)),
            "the slopes are sorted steepest first; Press et al. (and transformers) put the "
            "2^⌊log₂ h⌋ geometric ones first":
                _alibi_mistake(lambda n, h: _alibi_from(_alibi_slopes(h).sort(descending=True).values, n))},
        where=_head_and_positions,
        forbidden=("build_alibi_tensor", "transformers' build_alibi_tensor (BLOOM's ALiBi)")),
    "t5_bucket": Exercise(
        _t5_cases, _t5_bucket, "transformers' T5Attention._relative_position_bucket",
        "δ −300..300, bidirectional and not, other bucket counts and distances, pairs (n_q, n_k) of last "
        "queries", {
            "the queries were put at positions 0..n_q − 1; they are the last n_q of the n_k positions "
            "(query t at n_k − n_q + t), after the cached ones":
                lambda r, bidirectional=True, **kw: _t5_bucket(_last_queries(*r, first=0), bidirectional,
                                                               **kw) if isinstance(r, tuple) else None,
            "this is i − j: the sign is flipped; relative_position is δ = j − i":
                lambda r, bidirectional=True, **kw: _t5_bucket(-_pair(r), bidirectional, **kw),
            "bidirectional and unidirectional are mixed up":
                lambda r, bidirectional=True, **kw: _t5_bucket(_pair(r), not bidirectional, **kw),
            "one-sided buckets were taken from |δ|, so a future key (δ > 0) gets a bucket of its own; "
            "with bidirectional=False every δ > 0 goes to bucket 0 (distance max(−δ, 0))":
                lambda r, bidirectional=True, **kw: _t5_written_out(_pair(r), bidirectional, **kw,
                                                                    one_sided_distance=torch.abs),
            "the log part was rounded to the nearest bucket; T5 rounds it down":
                lambda r, bidirectional=True, **kw: _t5_written_out(_pair(r), bidirectional, **kw,
                                                                    rounding=torch.round),
            "one-sided, Δ0 was taken as in the bidirectional split (B/4); one-sided there is one side, with "
            "all B buckets, and Δ0 is half of them":
                lambda r, bidirectional=True, **kw: _t5_written_out(_pair(r), bidirectional, **kw,
                                                                    one_sided_exact=lambda b: b // 4),
            "δ = 0 went to the side of the keys after the query (δ ≥ 0): only δ > 0 takes the second B/2 "
            "buckets; the query's own key is bucket 0":
                lambda r, bidirectional=True, **kw: _t5_written_out(_pair(r), bidirectional, **kw,
                                                                    zero_after=True),
            "max_distance is ignored (128 is used): D = max_distance sets where the log part reaches the "
            "last bucket":
                lambda r, bidirectional=True, **kw: _t5_bucket(_pair(r), bidirectional,
                                                               **{**kw, "max_distance": 128}),
            "distances at or beyond max_distance are not clamped to the last bucket of their side":
                lambda r, bidirectional=True, **kw: _t5_written_out(_pair(r), bidirectional, **kw,
                                                                    clamp=False)},
        where=_offset, forbidden=("_relative_position_bucket", "transformers' _relative_position_bucket")),
    "skew": Exercise(
        _skew_cases, _skew, "a direct gather of column j − t + n_q − 1 (offset j − (n_k − n_q + t))",
        "n_q = n_k and n_q < n_k, n 1..9, batch dims, the keys up to each query's position; with n_k: both "
        "directions, every entry", {
            "the queries were put at positions 0..n_q − 1; they are the last n_q of the n_k positions "
            "(query t at n_k − n_q + t)":
                _skew_at_start,
            "every entry is shifted by one: it holds offset δ + 1, not δ; check on which side the pad goes "
            "and at which entry of the padded memory the first row starts":
                lambda r, n_k=None: _pad_skew(r, n_k, pad=(0, 1)),
            "the first n_q numbers of the padded memory were kept; drop them (for n_q = n_k: drop the "
            "first row, not the last)":
                lambda r, n_k=None: _pad_skew(r, n_k, drop=0),
            "the offsets are read in reverse (column −δ); column r holds offset δ = r − (n_k − 1)":
                lambda r, n_k=None: _gathered(r, _columns(*r.shape[-2:], n_k, reverse=True)),
            "the padded memory was read from entry 1, not from where the first query's row begins":
                lambda r, n_k=None: _pad_skew(r, n_k, drop=1),
            "the padded memory was read from entry n_q − 1, one before the first query's row: skip n_q "
            "numbers":
                lambda r, n_k=None: _pad_skew(r, n_k, drop=r.shape[-2] - 1),
            "the last n_k columns were kept; after the skew, key j is column j: keep the first n_k":
                lambda r, n_k=None: None if n_k is None else _pad_skew(r)[..., r.shape[-1] - n_k:],
            "the offset's sign is flipped (i − j, query minus key); the columns hold δ = j − i, key minus "
            "query":
                lambda r, n_k=None: _gathered(r, _columns(*r.shape[-2:], n_k, sign=-1)),
            "this is the one-way skew: the keys after the query (δ > 0) got the causal skew's leftovers; "
            "with n_k given, the last n_q − 1 columns hold δ = 1..n_q − 1, and every entry must read its own":
                lambda r, n_k=None: None if n_k is None else _pad_skew(r[..., :n_k]),
            "rel_logits came back unskewed":
                lambda r, n_k=None: r[..., :r.shape[-1] if n_k is None else n_k].clone()},
        checked=_up_to_own_position,
        where=_query_and_key, also=_skew_without_index),
}
