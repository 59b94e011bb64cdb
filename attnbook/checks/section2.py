"""Section 2's exercise (CNNs vs RNNs vs self-attention) and the mistakes it names.

* attention_flops: its contract grew (issue 29): `cached=m` counts a forward pass over n new tokens
  whose m earlier keys and values are kept (a KV cache), which the chapter does not count;
  attention_flops(n, d) is what it was. Mistakes: projections forgotten (4n²d); multiply-add counted 1
  (half); three projections; projections forgotten and multiply-add counted 1 (2n²d); QKᵀ alone in the
  core (the weights times V forgotten); the cached keys left out of the scores; an (m + n)² core (the
  cached positions scored again as queries); the cache projected again; the whole sequence recomputed.
"""
import torch

from attnbook.checks.machinery import Case, Exercise


def _attention_flops(n, d, cached=0):
    from torch.utils.flop_counter import FlopCounterMode

    # meta tensors have shapes and no data: any n, d is counted at no cost
    x, wq, wk, wv, wo = (torch.empty(shape, device="meta") for shape in [(n, d)] + [(d, d)] * 4)
    past = torch.empty(cached, d, device="meta")  # the cache: keys and values, already projected
    with FlopCounterMode(display=False) as counter:
        q, k, v = x @ wq, torch.cat([past, x @ wk]), torch.cat([past, x @ wv])
        ((q @ k.T).softmax(-1) @ v) @ wo
    return counter.get_total_flops()


def _flops_cases(g):
    # sizes an answer that counts real tensors (not meta ones) also gets through in a second
    sizes = [(16, 64), (1, 1), (3, 1000), (1000, 512), (2048, 256), (1, 2000)]
    return [Case(f"n={n}, d={d}", (n, d)) for n, d in sizes] + [
        Case(f"n={n}, d={d}, cached={m}{what}", (n, d), {"cached": m}, note=(
            "cached=m must work too: the m cached keys and values are already projected, and each of the n "
            "new queries scores all m + n keys"))
        for n, d, m, what in [(1, 64, 15, " (one step of generation)"), (4, 8, 12, ""), (16, 64, 0, ""),
                              (1, 4096, 8191, " (the 8192nd token)")]]


def _counted(n, d, m=0, projected=None, scored=None, queries=None, per_multiply_add=2, products=2):
    """2 · (projections + scores + weighted values) with what each counts chosen (for mistakes)."""
    projected = 4 * n if projected is None else projected  # rows through a d×d projection
    queries = n if queries is None else queries
    scored = n + m if scored is None else scored            # keys each query scores
    return per_multiply_add * (projected * d * d + products * queries * scored * d)


EXERCISES = {
    "attention_flops": Exercise(
        _flops_cases, _attention_flops,
        "torch.utils.flop_counter.FlopCounterMode's count of the layer's four projections and two matrix "
        "products on the meta device, the cached keys and values concatenated in front",
        "n 1..2048, d 1..4096, cached 0..8191", {
            "this is 4n²d: the four d×d projections (8nd²) are missing":
                lambda n, d, cached=0: _counted(n, d, cached, projected=0),
            "this is half: a multiply-add counts 2 FLOPs, as torch.utils.flop_counter counts":
                lambda n, d, cached=0: _counted(n, d, cached, per_multiply_add=1),
            "this counts three projections; the output projection W_o is a fourth":
                lambda n, d, cached=0: _counted(n, d, cached, projected=3 * n),
            "this is 2n²d: the projections are missing and a multiply-add counts 1, not 2":
                lambda n, d, cached=0: _counted(n, d, cached, projected=0, per_multiply_add=1),
            "the cached keys are left out: each new query scores all m + n keys, the cached ones too":
                lambda n, d, cached=0: _counted(n, d, cached, scored=n),
            "the core counts QKᵀ alone; the weights times V is a second product of the same size":
                lambda n, d, cached=0: _counted(n, d, cached, products=1),
            "this core scores (m + n)² pairs, as if the m cached positions asked again; only the n new "
            "queries score, each against every key":
                lambda n, d, cached=0: _counted(n, d, cached, queries=n + cached),
            "the cached keys and values were projected again; the cache keeps them projected, so only the n "
            "new tokens go through W_q, W_k, W_v and W_o":
                lambda n, d, cached=0: _counted(n, d, cached, projected=4 * n + 2 * cached),
            "this recomputes the whole sequence of m + n tokens; with a cache only the n new tokens are "
            "projected and only their n queries score":
                lambda n, d, cached=0: _counted(n + cached, d)}),
}
