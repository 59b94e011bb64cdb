"""Section 1's exercises (self-attention) and the mistakes each names.

* masked_softmax: its contract grew (issue 29): scores may be (b, ..., n_q, n_k), axes (heads) between the
  batch and the queries, sequence b's valid_lens holding for all of them (the chapter's key_mask makes
  (b, n_q, n_k) only); and `causal=True` also hides the keys after each query,
  the queries being the last n_q of the n_k positions (a KV cache; torch's causal_lower_right), so the
  chapter's two cells no longer answer it; called as masked_softmax(scores, valid_lens) it is what it
  was. Mistakes: softmax over the queries; masked scores set to 0; −1e6 fill (an empty row comes out
  uniform); key j = valid length kept (j ≤ len); masked keys zeroed after the softmax (not
  renormalised); valid_lens ignored; causal ignored; the causal diagonal top-left (query t at position
  t; the line does not say where SDPA's is_causal puts it, the exercise's question); valid_lens (b, n_q)
  not handled (the case's note); an empty row left NaN; valid_lens laid out as for (b, n_q, n_k), so the
  batch axis meets the heads axis (silent when b = h). Its gradients are checked too, once the weights
  agree: −inf added to the scores and the empty row's NaN replaced afterwards gives the right weights and
  NaN gradients.
* causal_mask: its contract grew (issue 29): `window=w` keeps only each query's last w keys, itself
  included (a sliding window, as Mistral's in transformers); and `chunk=c`, which the chapter never
  meets, keeps only the keys j ≤ i of query i's own chunk of c positions, chunks starting at 0, c, 2c, …
  (Llama 4's chunked attention, transformers' chunked_causal_mask_function); causal_mask(n) is what it
  was. And `documents=[n_1, n_2, ...]` (lengths summing to n; packed sequences, the core since issue 29):
  causal within each document, never across (block-diagonal causal, as FlashAttention's varlen and
  transformers' packed_sequence_mask_function), with a window too. Mistakes: documents ignored (attending
  across documents); no causality inside a document; each document starting one position late (the token
  at a boundary counted in the one before). Reported at query i, key j. Also: strict j < i; j ≤ i + 1;
  transposed (j ≥ i); inverted (True where blocked); the
  additive 0/−inf float mask instead of bool; a window of w + 1 or w − 1 keys; the window ignored; the
  window on both sides; a sliding window of c keys for chunks; chunks reaching both ways; chunks
  starting one position late.
* attention: its contract grew (issue 29), and its core is now the sinks (most cases have them): dim −3 holds
  the heads, and K, V may have fewer of them than
  Q (grouped-query attention, h_kv dividing h: query head g = 1..h reads key/value head ⌈g·h_kv/h⌉,
  as transformers' repeat_kv and SDPA's enable_gqa), with any leading dimensions
  and a mask broadcast to (..., h, n_q, n_k), so the chapter's attend no longer answers it;
  attention(Q, K, V) on (b, n, d_h) is what it was. And `sinks=s` (h,), which the chapter never meets:
  gpt-oss's learned sink, one more logit s_g per query head in each row's softmax whose weight goes to no
  value (the keys' weights sum to less than 1, and a row with every key masked gives zeros). Mistakes:
  the sinks changing nothing (ignored, added to every score, or their weight handed back to the keys);
  the sink divided by √d_h; the sink's column put in front of the keys (the weights slide one key along);
  the first sink s_1 for every query head; the sink's column kept (weights of n_k + 1 against n_k values:
  the cases' note says to drop it); a fully masked row NaN (the keys' softmax first, then scaled by the
  sink's share); the key/value heads tiled (query heads
  read 1, 2, …, h_kv, 1, 2, …); the first key/value head for every query head; softmax over the
  queries; no scaling; divided by d_h; divided by √d_v; divided by √n_k or √n_q (the lengths);
  multiplied by √d_h; mask read the other way; mask ignored. Reported by head g = 1..h, query, column.
"""
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import bias as attention_bias

from attnbook.checks.machinery import LOOSE, TOLERANCE, Case, Exercise, differs, moved, one_line, randn, tril


# ----------------------------------------------------------------------------------- masked_softmax
def _keep(scores, valid_lens, inclusive=False, causal=False, corner="lower_right", head_axes=True):
    """True where query t may see key j: j < its valid length (j ≤ with inclusive), and with causal j at
    or before the query's position (torch's causal_lower_right: the queries are the last n_q keys).
    scores (b, ..., n_q, n_k): sequence b's lengths hold for every head between (head_axes=False, the
    mistake: laid out as for (b, n_q, n_k), so b meets the heads axis)."""
    keep = torch.ones(scores.shape, dtype=torch.bool, device=scores.device)
    if valid_lens is not None:
        lens = valid_lens[..., None] if valid_lens.dim() == 2 else valid_lens[:, None, None]
        if head_axes:  # (b, 1, ..., n_q or 1, 1): a 1 for each axis between the batch and the queries
            lens = lens.reshape(lens.shape[0], *[1] * (scores.dim() - 3), *lens.shape[1:])
        keys = torch.arange(scores.shape[-1], device=scores.device)
        keep = keep & (keys <= lens if inclusive else keys < lens)
    if causal:
        diagonal = getattr(attention_bias, f"causal_{corner}")(*scores.shape[-2:])
        keep = keep & diagonal._materialize(scores.device)
    return keep


def _masked(scores, valid_lens, fill, dim=-1, inclusive=False, causal=False, corner="lower_right",
            head_axes=True, keep_nan=False):
    """Keys j < valid length kept (j ≤ with inclusive), the rest set to `fill`, softmax over `dim` (an empty
    row's NaN left as it is with keep_nan)."""
    if valid_lens is None and not causal:
        return scores.softmax(dim)
    keep = _keep(scores, valid_lens, inclusive, causal, corner, head_axes)
    weights = scores.masked_fill(~keep, fill).softmax(dim)
    return weights if keep_nan else weights.nan_to_num(0.0)


def _masked_softmax(scores, valid_lens=None, causal=False):
    # torch has no length-masked softmax: masked_fill with −inf, and an empty row's NaNs become 0
    # (masked_fill's backward gives the masked entries, so the whole empty row, a zero gradient)
    return _masked(scores, valid_lens, -math.inf, causal=causal)


def _added_then_replaced(scores, valid_lens=None, causal=False):
    """−inf *added* to the masked scores, the empty row's NaN replaced afterwards (for the mistake)."""
    if valid_lens is None and not causal:
        return scores.softmax(-1)
    minus_inf = torch.zeros_like(scores).masked_fill(~_keep(scores, valid_lens, causal=causal), -math.inf)
    return (scores + minus_inf).softmax(-1).nan_to_num(0.0)


GRADIENT_MISTAKES = {
    "this is −inf added to the scores with the empty row's NaN replaced afterwards: right weights, NaN "
    "gradients (section 1, the deeper part on padding and causal together: a query with no key)":
        _added_then_replaced}


def _gradient(fn, scores, valid_lens, **kwargs):
    """d(Σ weights · u)/d scores for a fixed u, or a string saying why there is none."""
    scores = moved(scores).requires_grad_(True)
    try:
        weights = fn(scores, moved(valid_lens), **kwargs)
        if not weights.requires_grad:
            return "your weights carry no gradient back to the scores (detached, or made outside autograd)"
        upstream = torch.linspace(-1, 1, weights.numel()).reshape(weights.shape).to(weights.device)
        (weights * upstream).sum().backward()
    except Exception as error:  # e.g. an in-place write into the scores, which autograd refuses
        return f"going backward, your function raises {type(error).__name__}: {one_line(error)}"
    return scores.grad.detach().cpu()


def _masked_softmax_gradients(case, fn):
    """After the weights agree: the gradients, finite, zero on an empty row, as the reference's."""
    expected, got = (_gradient(f, *case.args, **case.kwargs) for f in (_masked_softmax, fn))
    if isinstance(got, str):
        return got
    problem = differs(got, expected, None, TOLERANCE, lambda at: f"the scores' gradient at {list(at)}:")
    if not problem:
        return None
    for says, wrong in GRADIENT_MISTAKES.items():
        if differs(got, _gradient(wrong, *case.args, **case.kwargs), None, LOOSE) is None:
            return f"{problem} — {says}"
    return f"{problem} — the weights are right, their gradients are not (finite, and 0 on an empty row)"


def _masked_softmax_cases(g):
    lens = [None, [2, 4], [4, 1, 3], [[1, 3, 5], [2, 2, 4]], [0, 3], [[0, 2, 4], [1, 0, 3]], [1], [7]]
    shapes = [(2, 3, 5), (2, 3, 5), (3, 2, 4), (2, 3, 5), (2, 2, 4), (2, 3, 4), (1, 1, 1), (1, 2, 5)]
    cases = []
    for shape, valid in zip(shapes, lens, strict=True):
        valid_lens = None if valid is None else torch.tensor(valid)
        per_query = valid_lens is not None and valid_lens.dim() == 2
        empty = " (a valid length 0)" if valid_lens is not None and (valid_lens == 0).any() else ""
        cases.append(Case(f"scores {shape}, valid_lens {valid}{' (b, n_q)' if per_query else ''}{empty}",
                          (2 * randn(g, *shape), valid_lens),
                          note="valid_lens (b, n_q) must work too: one length per query" * per_query))
    causal = [((1, 4, 4), None), ((2, 3, 5), [2, 4]), ((2, 2, 6), [[0, 6], [3, 4]]), ((1, 1, 3), [3]),
              ((2, 5, 5), [5, 3])]
    for shape, valid in causal:
        n_q, n_k = shape[-2:]
        where = "n_q = n_k" if n_q == n_k else f"the {n_q} queries at positions {n_k - n_q}..{n_k - 1}"
        cases.append(Case(f"scores {shape}, valid_lens {valid}, causal ({where})",
                          (2 * randn(g, *shape), None if valid is None else torch.tensor(valid)),
                          {"causal": True}, note=(
                              "causal=True must work too: query t sits at position n_k − n_q + t and sees "
                              "the keys j ≤ n_k − n_q + t, within its valid length")))
    heads = [((2, 2, 3, 5), [1, 4], False), ((2, 2, 3, 4), [[0, 2, 4], [1, 3, 3]], False),
             ((2, 2, 2, 6), [0, 5], True), ((1, 3, 2, 2, 4), [[1, 3]], True)]
    for shape, valid, hide_later in heads:  # b = h: laid out as for (b, n_q, n_k), b meets the heads axis
        cases.append(Case(f"scores {shape} (b, heads, n_q, n_k), valid_lens {valid}{', causal' * hide_later}",
                          (2 * randn(g, *shape), torch.tensor(valid)), {"causal": True} if hide_later else {},
                          note="scores may have axes between the batch and the queries (heads): sequence b's "
                               "valid_lens hold for every one of its heads"))
    return cases


# ----------------------------------------------------------------------------------- causal_mask
def _causal_mask(n, window=None, chunk=None, documents=None):
    if window is None and chunk is None and documents is None:
        return torch.nn.Transformer.generate_square_subsequent_mask(n) == 0
    from transformers import masking_utils

    # transformers' mask functions take index tensors: query i down, key j across
    rules = [masking_utils.causal_mask_function]
    if window is not None:  # Mistral's sliding window
        rules.append(masking_utils.sliding_window_causal_mask_function(window))
    if chunk is not None:  # Llama 4's chunked attention (no left padding: offset 0)
        rules.append(masking_utils.chunked_causal_mask_function(chunk, torch.zeros(1, dtype=torch.long)))
    if documents is not None:  # packed sequences: the documents found where the positions restart
        positions = torch.cat([torch.arange(length) for length in documents])[None]
        found = masking_utils.find_packed_sequence_indices(positions)
        rules.append(masking_utils.packed_sequence_mask_function(
            torch.zeros_like(positions) if found is None else found))
    return masking_utils.and_masks(*rules)(0, 0, torch.arange(n)[:, None], torch.arange(n))


def _windowed(n, window=None, keys=lambda i, j, w: (j <= i) & (j > i - w), chunk=None, chunked=None):
    """A sliding window or chunks written out (for mistakes): `keys` (`chunked`) says which key j query i
    sees with a window (chunks); None: the contract's."""
    i, j = torch.arange(n)[:, None], torch.arange(n)
    if chunk is not None:
        return _causal_mask(n, chunk=chunk) if chunked is None else chunked(i, j, chunk)
    return keys(i, j, window) if window is not None else tril(n, 0)


def _same_document(n, documents, late=False):
    """True where positions i and j share a document (documents: lengths summing to n), or None; late: each
    document starting one position late (the mistake: the token at a boundary counted in the one before)."""
    if documents is None:
        return None
    ends = torch.tensor(documents).cumsum(0)  # a document ends where the next starts
    document = torch.searchsorted(ends, torch.arange(n), right=not late)
    return document[:, None] == document


def _mask_mistake(fn, late=False):
    """fn(n, window, chunk) as an answer to causal_mask, kept within the documents (for mistakes; late:
    each document starting one position late)."""
    def mask(n, window=None, chunk=None, documents=None):
        made, same = fn(n, window, chunk), _same_document(n, documents, late)
        return made if same is None else made & same
    return mask


def _query_key(case, at):
    return f"at query i = {at[0]}, key j = {at[1]}:"


def _causal_cases(g):
    def packed(n, docs, more=None, note=""):
        window = f", window={more['window']}" if more else ""
        return Case(f"n={n}, documents={docs}{window}{note}", (n,), {"documents": docs, **(more or {})},
                    note="documents=[n_1, n_2, ...] must work too: query i sees the keys j ≤ i of its own "
                         "document" + ", within its window" * bool(more))

    return [Case(f"n={n}", (n,)) for n in (5, 1, 2, 8)] + [
        packed(10, [3, 5, 2]), packed(6, [1, 1, 4], note=" (documents of one token)"),
        packed(5, [5], note=" (one: causal)"), packed(7, [2, 5])] + [
        Case(f"n={n}, window={w}{note}", (n,), {"window": w},
             note="window=w must work too: query i sees keys i − w + 1..i, its own among them")
        for n, w, note in [(6, 3, ""), (5, 1, " (itself only)"), (4, 4, " (= n: causal)"), (3, 8, " (> n)"),
                           (9, 2, "")]] + [
        packed(8, [5, 3], {"window": 3}), packed(9, [2, 7], {"window": 4}),
        packed(7, [3, 3, 1], {"window": 8}, " (> n)")] + [
        Case(f"n={n}, chunk={c}{note}", (n,), {"chunk": c},
             note="chunk=c must work too: query i sees the keys j ≤ i of its own chunk of c positions")
        for n, c, note in [(7, 3, ""), (8, 4, ""), (5, 1, " (itself only)"), (4, 8, " (> n: causal)")]]


# ----------------------------------------------------------------------------------- attention
def _attention(q, k, v, mask=None, sinks=None):
    if sinks is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    return _attention_as(q, k, v, mask, sinks=sinks)  # as gpt-oss's eager attention in transformers


def _grouped(k, v, q, how="interleave"):
    """k and v with one head per query head (dim −3): key/value head j repeated for its h/h_kv query heads
    ("interleave", the contract), the heads tiled ("tile", a mistake) or head 0 for all ("first")."""
    group = q.shape[-3] // k.shape[-3]
    if how == "tile":
        return (x.repeat(*[1] * (x.dim() - 3), group, 1, 1) for x in (k, v))
    if how == "first":
        if q.dim() == 3:  # (b, n, d_h): dim −3 is the batch, not heads; this mistake is about heads
            raise ValueError("no heads to group")
        return (x[..., :1, :, :].expand(*x.shape[:-3], q.shape[-3], *x.shape[-2:]) for x in (k, v))
    return (x.repeat_interleave(group, -3) for x in (k, v))


def _attention_as(q, k, v, mask=None, divide_by=None, dim=-1, keep=True, heads="interleave", sinks=None,
                  sink="logit"):
    """Written-out attention with the scaling, softmax axis, mask meaning and head grouping chosen (for
    mistakes). sinks (h,): one more logit per query head in each row's softmax, whose weight is dropped
    (gpt-oss); sink="scaled": the mistake of dividing it by √d_h too; sink="after": the keys' softmax scaled
    by the share the sink leaves them, right except on a fully masked row (NaN); sink="first": the sink's
    column put in front of the keys and the last column dropped (key j gets key j − 1's weight)."""
    k, v = _grouped(k, v, q, heads)
    scale = math.sqrt(q.shape[-1]) if divide_by is None else divide_by(q, v)
    scores = q @ k.transpose(-1, -2) / scale
    if mask is not None:
        scores = scores.masked_fill(mask != keep, -math.inf)
    if sinks is None:
        return scores.softmax(dim) @ v
    column = (sinks / scale if sink == "scaled" else sinks)[:, None, None].expand(*scores.shape[:-1], 1)
    if sink == "after":  # the keys' softmax, scaled by the share the sink leaves: NaN where all are masked
        return scores.softmax(-1) * torch.sigmoid(scores.logsumexp(-1, keepdim=True) - column) @ v
    parts = [column, scores] if sink == "first" else [scores, column]  # "first": the sink's column in front
    return torch.cat(parts, -1).softmax(-1)[..., :-1] @ v  # the last column dropped


def _attention_mistake(**how):
    """_attention_as with `how` (a scaling, softmax axis, mask meaning, head grouping or sink mistake)."""
    return lambda q, k, v, mask=None, sinks=None: _attention_as(q, k, v, mask, sinks=sinks, **how)


def _attention_cases(g):
    def qkv(lead, h, h_kv, n_q, n_k, d_h, d_v):
        return randn(g, *lead, h, n_q, d_h), randn(g, *lead, h_kv, n_k, d_h), randn(g, *lead, h_kv, n_k, d_v)

    random_mask = torch.rand(2, 4, 6, generator=g) < 0.5
    random_mask[..., 0] = True  # no fully masked row (the contract promises none)
    per_head = torch.rand(2, 4, 4, 6, generator=g) < 0.5
    per_head[..., -1] = True
    padding = torch.tensor([[True] * 4 + [False] * 2, [True] * 6])[:, None, :]
    empty_row = torch.rand(3, 5, generator=g) < 0.5
    empty_row[1], empty_row[[0, 2], 0] = False, True  # query 1 has no key: with sinks, allowed
    sinks_note = ("sinks=s: one more logit s_g per query head g in each row's softmax, weight going nowhere "
                  "(drop its column before V)")
    with_sinks = [((2,), 4, 2, 3, 5, 8, 6, None, "no mask"),
                  ((2,), 8, 2, 4, 6, 16, 4, padding[:, None], "padding mask (b, 1, 1, n_k)"),
                  ((2,), 6, 3, 5, 5, 8, 3, tril(5, 0), "causal mask (n, n)"),
                  ((2,), 4, 1, 3, 5, 8, 5, empty_row, "one key/value head, a row with every key masked"),
                  ((3, 2), 4, 2, 3, 4, 8, 2, tril(4, 0)[1:], "after 1 cached key, two leading dims"),
                  ((2,), 2, 2, 4, 6, 8, 8, random_mask, "a mask per head (h, n_q, n_k)"),
                  ((1,), 4, 4, 1, 1, 4, 4, None, "n = 1: the one key shares with the sink")]
    grouped = [((2,), 4, 2, 3, 5, 8, 6, None, "no mask"),
               ((2,), 4, 1, 4, 6, 8, 5, per_head, "one key/value head (multi-query), a mask per head")]
    specs = [(2, 4, 6, 16, 5, None, "no mask"), (2, 5, 5, 8, 3, tril(5, 0), "causal mask (n, n)"),
             (3, 2, 3, 1, 2, None, "d_h = 1")]
    return [
        Case(f"Q {(*lead, h, n_q, d_h)}, h_kv={h_kv}, n_k={n_k}, d_v={d_v}, sinks {h} logits, {what}",
             (*qkv(lead, h, h_kv, n_q, n_k, d_h, d_v), mask), {"sinks": 2 * randn(g, h)}, note=sinks_note)
        for lead, h, h_kv, n_q, n_k, d_h, d_v, mask, what in with_sinks] + [
        Case(f"Q {(*lead, h, n_q, d_h)}, K and V with h_kv={h_kv} of h={h} heads, n_k={n_k}, d_v={d_v}, "
             f"no sinks, {what}",
             (*qkv(lead, h, h_kv, n_q, n_k, d_h, d_v), mask),
             note="K and V may have fewer heads than Q (dim −3): each key/value head serves h/h_kv "
                  "consecutive query heads, query head g = 1..h reading key/value head ⌈g·h_kv/h⌉")
        for lead, h, h_kv, n_q, n_k, d_h, d_v, mask, what in grouped] + [
        Case(f"b={b}, n_q={n_q}, n_k={n_k}, d_h={d_h}, d_v={d_v}, no sinks, {what}",
             (*qkv((), b, b, n_q, n_k, d_h, d_v), mask))  # (b, n, d_h): dim −3 is the batch
        for b, n_q, n_k, d_h, d_v, mask, what in specs]


def _head_query_column(case, at):
    head = f"head g = {at[-3] + 1}, " if case.args[0].dim() > 3 else f"sequence {at[-3]}, "
    return f"at {head}query {at[-2]}, column {at[-1]}:"


EXERCISES = {
    "masked_softmax": Exercise(
        _masked_softmax_cases, _masked_softmax,
        "softmax over each row's valid keys (causal: the keys up to each query's position too), an empty "
        "row all zeros (softmax with the masked keys at −inf gives NaN there), and their gradients (finite, "
        "0 on an empty row)",
        "valid_lens None, (b,) and (b, n_q), valid length 0, lengths beyond n_k, head axes, causal with "
        "n_q = n_k and n_q < n_k",
        {
            "the softmax runs over the queries (dim −2); it must run over the keys (dim −1)":
                lambda s, v=None, causal=False: _masked(s, v, -math.inf, dim=-2, causal=causal),
            "the masked scores are set to 0, so masked keys still get weight; set them to −inf":
                lambda s, v=None, causal=False: _masked(s, v, 0.0, causal=causal),
            "a row of valid length 0 comes out NaN (the softmax of a row all −inf): it must be all zeros":
                lambda s, v=None, causal=False: _masked(s, v, -math.inf, causal=causal, keep_nan=True),
            "this is the −1e6 fill: a row of valid length 0 comes out uniform instead of all zeros":
                lambda s, v=None, causal=False: _masked(s, v, -1e6, causal=causal),
            "key j = valid length is kept too (j ≤ len); only keys j < len count":
                lambda s, v=None, causal=False: _masked(s, v, -math.inf, inclusive=True, causal=causal),
            "the masked keys were zeroed after the softmax, so the row no longer sums to 1: mask the scores, "
            "then take the softmax":
                lambda s, v=None, causal=False: s.softmax(-1).masked_fill(~_keep(s, v, causal=causal), 0.0),
            "valid_lens is ignored: keys at or past the valid length must get weight 0":
                lambda s, v=None, causal=False: _masked(s, None, -math.inf, causal=causal),
            "valid_lens was laid out as for (b, n_q, n_k), so the batch axis met the heads axis: give it a "
            "1 for each axis between the batch and the queries":
                lambda s, v=None, causal=False: _masked(s, v, -math.inf, causal=causal, head_axes=False),
            "causal=True is ignored: keys after each query's position must get weight 0 too":
                lambda s, v=None, causal=False: _masked(s, v, -math.inf),
            "the causal diagonal starts top left (query t at position t); with n_q < n_k the queries are "
            "the last n_q of the n_k positions, after the cached ones":
                lambda s, v=None, causal=False: _masked(s, v, -math.inf, causal=causal, corner="upper_left")},
        also=_masked_softmax_gradients),
    "causal_mask": Exercise(
        _causal_cases, _causal_mask,
        "torch.nn.Transformer.generate_square_subsequent_mask(n) == 0, True on and below the diagonal, and "
        "transformers' causal_mask_function and-ed with sliding_window_causal_mask_function (Mistral's "
        "window), chunked_causal_mask_function (Llama 4's chunks) and packed_sequence_mask_function (the "
        "documents found where the positions restart)",
        "n 1..10, documents of 1..7 tokens alone and with windows, windows 1..8 and chunks 1..8", {
            "documents is ignored: query i attends across documents, to the keys of the ones before its own; "
            "it sees only the keys j ≤ i of its own document":
                lambda n, window=None, chunk=None, documents=None: _causal_mask(n, window, chunk),
            "no causality inside a document: query i sees its whole document, keys after it too; only its "
            "own document's keys j ≤ i":
                _mask_mistake(lambda n, w, c: torch.ones(n, n, dtype=torch.bool)),
            "each document starts one position late: the token at a boundary was counted in the document "
            "before it (search the ends with right=True, or number the tokens by repeat_interleave)":
                _mask_mistake(_causal_mask, late=True),
            "this is j < i: query i may also attend to itself (j ≤ i)":
                _mask_mistake(lambda n, w, c: _windowed(n, w, lambda i, j, w: (j < i) & (j >= i - w)) if w
                              else tril(n, -1)),
            "this is j ≤ i + 1, one key too many: query i would see token i + 1":
                _mask_mistake(lambda n, w, c: tril(n, 1)),
            "this is the mask transposed (j ≥ i): True must be where j ≤ i":
                _mask_mistake(lambda n, w, c: _causal_mask(n, w, c).T),
            "this is the inverse (True where j > i, blocked); True must mean 'may attend'":
                _mask_mistake(lambda n, w, c: ~_causal_mask(n, w, c)),
            "this is the additive float mask (0 and −inf); the exercise asks for a bool mask":
                _mask_mistake(lambda n, w, c: torch.nn.Transformer.generate_square_subsequent_mask(n)),
            "this window holds w + 1 keys (j ≥ i − w); it holds w, the query's own among them (j > i − w)":
                _mask_mistake(lambda n, w, c: _windowed(n, w, lambda i, j, w: (j <= i) & (j >= i - w)) if w
                              else None),
            "this window holds w − 1 keys (j > i − w + 1); it holds w, the query's own key among them":
                _mask_mistake(lambda n, w, c: _windowed(n, w, lambda i, j, w: (j <= i) & (j > i - w + 1)) if w
                              else None),
            "the window is ignored: with window=w query i sees only keys i − w + 1..i":
                _mask_mistake(lambda n, w, c: tril(n, 0) if w else None),
            "chunk=c is ignored: query i sees only the keys j ≤ i of its own chunk":
                _mask_mistake(lambda n, w, c: tril(n, 0) if c else None),
            "the window reaches both ways (|i − j| < w); it is causal too: no key after the query":
                _mask_mistake(lambda n, w, c: _windowed(n, w, lambda i, j, w: (i - j).abs() < w) if w
                              else None),
            "this is a sliding window of c keys, not chunks: a chunk starts at a multiple of c, so query i "
            "sees only the keys since the start of its own chunk":
                _mask_mistake(lambda n, w, c: _windowed(n, c) if c else None),
            "the chunk reaches both ways: within its chunk, query i sees no key after itself either":
                _mask_mistake(lambda n, w, c: _windowed(n, w, chunk=c,
                                                        chunked=lambda i, j, c: i // c == j // c)),
            "the chunks start one position late (at c − 1, 2c − 1, …: (i + 1) // c): the first chunk is "
            "positions 0..c − 1":
                _mask_mistake(lambda n, w, c: _windowed(n, w, chunk=c, chunked=lambda i, j, c:
                                                        ((i + 1) // c == (j + 1) // c) & (j <= i)))},
        where=_query_key),
    "attention": Exercise(
        _attention_cases, _attention,
        "F.scaled_dot_product_attention with the boolean mask as attn_mask and enable_gqa=True (key/value "
        "head ⌈g·h_kv/h⌉ serving query head g = 1..h), output by output; with sinks, gpt-oss's softmax with "
        "one more logit per query head",
        "sinks with h_kv = 1..4 of h = 2..8 heads, leading dims, n_q ≠ n_k, d_v ≠ d_h, no mask, padding, "
        "causal and per-head masks, a fully masked row, n = 1; grouped heads without sinks; (b, n, d_h), "
        "its b read as heads", {
            "the key/value heads were tiled (k.repeat), not repeated head by head: query head g reads the "
            "key/value head of its group, ⌈g·h_kv/h⌉": _attention_mistake(heads="tile"),
            "every query head read the first key/value head; query head g reads head ⌈g·h_kv/h⌉":
                _attention_mistake(heads="first"),
            "the sink logit was divided by √d_h with the scores; it joins the scaled scores as it is":
                _attention_mistake(sink="scaled"),
            "the sink's column was put in front of the keys, and the last column dropped: the weights slid "
            "one key along (the sink's share went to key 0, the last key's was lost); drop the sink's own "
            "column":
                _attention_mistake(sink="first"),
            "every query head got the first sink, s_1; query head g has its own logit s_g":
                lambda q, k, v, mask=None, sinks=None: None if sinks is None else _attention_as(
                    q, k, v, mask, sinks=sinks[:1].expand_as(sinks)),
            "a row with every key masked gives NaN (the keys' softmax taken first, then scaled by the sink's "
            "share): the sink's logit joins the row before the softmax, so that row gives zeros":
                _attention_mistake(sink="after"),
            "the sinks change nothing: ignored, added to every score (the softmax cannot see that) or their "
            "weight handed back to the keys; the sink keeps its share, the keys' weights sum to less than 1":
                lambda q, k, v, mask=None, sinks=None: _attention_as(q, k, v, mask),
            "the softmax runs over the queries (dim −2); it must run over the keys (dim −1)":
                _attention_mistake(dim=-2),
            "the scores are not divided by √d_h": _attention_mistake(divide_by=lambda q, v: 1.0),
            "the scores are divided by d_h; divide by √d_h":
                _attention_mistake(divide_by=lambda q, v: q.shape[-1]),
            "the scores are divided by √d_v; divide by √d_h, the width of Q and K":
                _attention_mistake(divide_by=lambda q, v: math.sqrt(v.shape[-1])),
            "the scores are divided by √n_k, the number of keys; divide by √d_h, the width of Q and K":
                _attention_mistake(divide_by=lambda q, v: math.sqrt(v.shape[-2])),
            "the scores are divided by √n_q, the number of queries; divide by √d_h, the width of Q and K":
                _attention_mistake(divide_by=lambda q, v: math.sqrt(q.shape[-2])),
            "the scores are multiplied by √d_h; divide by it":
                _attention_mistake(divide_by=lambda q, v: 1 / math.sqrt(q.shape[-1])),
            "the mask is read the other way: True means 'may attend'": _attention_mistake(keep=False),
            "the mask is ignored":
                lambda q, k, v, mask=None, sinks=None: _attention_as(q, k, v, sinks=sinks)},
        where=_head_query_column),
}
