"""Section 2's exercise (CNNs vs RNNs vs self-attention) and the mistakes it names.

* attention_flops: its contract grew (issue 29). `cached=m` counts a forward pass over n new tokens
  (n_new in the exercise and in the lines) whose m earlier keys and values are kept (a KV cache);
  attention_flops(n, d) is what it was. The keyword `window=w` (default None: no window) asks what the
  chapter does not count: a sliding window of w keys (the query's own and the w − 1 before it, as
  section 1's causal_mask), computed by a kernel that computes only those scores, so the query at
  position p = m + t scores min(p + 1, w) keys, where the dense product (no window) scores all m + n.
  Mistakes: projections forgotten (4n²d); multiply-add counted 1 (half); three projections; projections
  forgotten and multiply-add counted 1 (2n²d); only the causal pairs counted where the dense product is
  asked (p + 1 keys for the query at position p); QKᵀ alone in the core; the cached keys left out of the
  scores; an (m + n)² core; the cache projected again (its keys and values, or all four projections);
  the whole sequence recomputed; and with a window: the window ignored; w + 1 keys; the query's own key
  left out (min(p, w)); w − 1 keys; w keys for every query (the first positions have fewer); the window
  cutting only the cache, the new queries scored densely.
"""
import torch

from attnbook.checks.machinery import Case, Exercise


def _attention_flops(n, d, cached=0, window=None):
    from torch.utils.flop_counter import FlopCounterMode

    # meta tensors have shapes and no data: any n, d is counted at no cost
    x, wq, wk, wv, wo = (torch.empty(shape, device="meta") for shape in [(n, d)] + [(d, d)] * 4)
    past = torch.empty(cached, d, device="meta")  # the cache: keys and values, already projected
    with FlopCounterMode(display=False) as counter:
        q, k, v = x @ wq, torch.cat([past, x @ wk]), torch.cat([past, x @ wv])
        if window is None:  # the dense product: every new query scores all m + n keys
            out = (q @ k.T).softmax(-1) @ v
        else:  # only the window's scores: keys max(0, p − w + 1) .. p for the query at position p
            rows = []
            for t in range(n):
                p = cached + t
                keys = slice(max(0, p - window + 1), p + 1)
                rows.append((q[t:t + 1] @ k[keys].T).softmax(-1) @ v[keys])
            out = torch.cat(rows)
        out @ wo
    return counter.get_total_flops()


def _flops_cases(g):
    # sizes an answer that counts real tensors (not meta ones) also gets through in a second
    sizes = [(16, 64), (1, 1), (3, 1000), (1000, 512), (2048, 256), (1, 2000)]
    cache_note = ("cached=m must work too: the m cached keys and values are already projected, and each of "
                  "the n_new new queries scores all m + n_new keys")
    window_note = ("window=w must work too: the query at position p scores its own key and the w − 1 before "
                   "it, those that exist")
    return [Case(f"n_new={n}, d={d}", (n, d)) for n, d in sizes] + [
        Case(f"n_new={n}, d={d}, cached={m}{what}", (n, d), {"cached": m}, note=cache_note)
        for n, d, m, what in [(1, 64, 15, " (one step of generation)"), (4, 8, 12, ""), (16, 64, 0, ""),
                              (1, 4096, 8191, " (the 8192nd token)")]] + [
        Case(f"n_new={n}, d={d}, cached={m}, window={w}{what}", (n, d), {"cached": m, "window": w},
             note=window_note)
        for n, d, m, w, what in [(1, 64, 15, 8, " (one step of generation)"), (4, 8, 6, 3, ""),
                                 (6, 8, 2, 4, ""),
                                 (10, 16, 0, 4, " (a prompt longer than the window)"),
                                 (5, 8, 0, 100, " (a window longer than the sequence)"),
                                 (1, 4096, 8191, 4096, " (the 8192nd token)"),
                                 (4, 8, 3, 1, " (the query's own key only)"), (5, 8, 0, 2, "")]]


def _counted(n, d, m=0, window=None, projected=None, scored=None, queries=None, per_multiply_add=2,
             products=2):
    """2 · (projections + scores + weighted values) with what each counts chosen (for mistakes)."""
    projected = 4 * n if projected is None else projected  # rows through a d×d projection
    if scored is None and window is not None:  # (query, key) pairs inside the window
        scored = sum(min(m + t + 1, window) for t in range(n))
    elif scored is None:
        scored = (n if queries is None else queries) * (n + m)
    return per_multiply_add * (projected * d * d + products * scored * d)


def _windowed(mistake):
    """A mistake of the window alone: the right count without a window, `mistake` with one. None: the
    mistake without a window, a causal count (the query at position p scores p + 1 keys) where the
    dense product is asked; right with one."""
    if mistake is None:
        return lambda n, d, cached=0, window=None: _counted(n, d, cached, window or cached + n)
    return lambda n, d, cached=0, window=None: _counted(
        n, d, cached, scored=None if window is None else mistake(n, cached, window))


EXERCISES = {
    "attention_flops": Exercise(
        _flops_cases, _attention_flops,
        "torch.utils.flop_counter.FlopCounterMode's count of the layer's four projections and two matrix "
        "products on the meta device, the cached keys and values concatenated in front; with a window, one "
        "query's window at a time",
        "n_new 1..2048, d 1..4096, cached 0..8191, window 1..4096", {
            "this is 4n²d: the four d×d projections (8nd²) are missing":
                lambda n, d, cached=0, window=None: _counted(n, d, cached, window, projected=0),
            "this is half: a multiply-add counts 2 FLOPs, as torch.utils.flop_counter counts":
                lambda n, d, cached=0, window=None: _counted(n, d, cached, window, per_multiply_add=1),
            "this counts three projections; the output projection W_o is a fourth":
                lambda n, d, cached=0, window=None: _counted(n, d, cached, window, projected=3 * n),
            "this is 2n²d: the projections are missing and a multiply-add counts 1, not 2":
                lambda n, d, cached=0, window=None: _counted(n, d, cached, window, projected=0,
                                                             per_multiply_add=1),
            "this counts only the causal pairs, p + 1 keys for the query at position p; without a window "
            "the dense product scores all m + n_new keys for every query (the future ones are masked after "
            "they are computed)":
                _windowed(None),
            "the cached keys are left out: each new query scores all m + n_new keys, the cached ones too":
                lambda n, d, cached=0, window=None: _counted(n, d, cached, scored=n * n),
            "the core counts QKᵀ alone; the weights times V is a second product of the same size":
                lambda n, d, cached=0, window=None: _counted(n, d, cached, window, products=1),
            "this core scores (m + n_new)² pairs, as if the m cached positions asked again; only the "
            "n_new new queries score, each against every key":
                lambda n, d, cached=0, window=None: _counted(n, d, cached, queries=n + cached),
            "the cached keys and values were projected again; the cache keeps them projected, so only the "
            "n_new new tokens go through W_q, W_k, W_v and W_o":
                lambda n, d, cached=0, window=None: _counted(n, d, cached, window,
                                                             projected=4 * n + 2 * cached),
            "the cached tokens went through all four projections again (W_q and W_o too); the cache keeps "
            "their keys and values projected, so only the n_new new tokens are projected":
                lambda n, d, cached=0, window=None: _counted(n, d, cached, window,
                                                             projected=4 * (n + cached)),
            "this recomputes the whole sequence of m + n_new tokens; with a cache only the n_new new tokens "
            "are projected and only their n_new queries score":
                lambda n, d, cached=0, window=None: _counted(n + cached, d),
            "the window is ignored: with window=w a query scores at most w keys":
                lambda n, d, cached=0, window=None: _counted(n, d, cached),
            "this window holds w + 1 keys; the query's own key and the w − 1 before it make w":
                _windowed(lambda n, m, w: sum(min(m + t + 1, w + 1) for t in range(n))),
            "the query's own key was left out of its window: the query at position p < w scores p + 1 "
            "keys, itself among them":
                _windowed(lambda n, m, w: sum(min(m + t, w) for t in range(n))),
            "this window holds w − 1 keys; the query's own key and the w − 1 before it make w":
                _windowed(lambda n, m, w: sum(min(m + t + 1, w - 1) for t in range(n))),
            "every query scored w keys; the query at position p < w − 1 has only p + 1 keys in its window":
                _windowed(lambda n, m, w: n * w),
            "the window only shortened the cache and the new queries scored densely; a windowed kernel "
            "scores no key after the query and none w or more positions before it":
                _windowed(lambda n, m, w: n * (min(m, w - 1) + n))}),
}
