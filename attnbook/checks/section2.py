"""Section 2's exercise (CNNs vs RNNs vs self-attention) and the mistakes it names.

* attention_flops: projections forgotten (4n²d); multiply-add counted 1 (half); three projections;
  projections forgotten and multiply-add counted 1 (2n²d).
"""
import torch

from attnbook.checks.machinery import Case, Exercise


def _attention_flops(n, d):
    from torch.utils.flop_counter import FlopCounterMode

    # meta tensors have shapes and no data: any n, d is counted at no cost
    x, wq, wk, wv, wo = (torch.empty(shape, device="meta") for shape in [(n, d)] + [(d, d)] * 4)
    with FlopCounterMode(display=False) as counter:
        q, k, v = x @ wq, x @ wk, x @ wv
        ((q @ k.T).softmax(-1) @ v) @ wo
    return counter.get_total_flops()


def _flops_cases(g):
    # sizes an answer that counts real tensors (not meta ones) also gets through in a second
    sizes = [(16, 64), (1, 1), (3, 1000), (1000, 512), (2048, 256), (1, 2000)]
    return [Case(f"n={n}, d={d}", (n, d)) for n, d in sizes]


EXERCISES = {
    "attention_flops": Exercise(
        _flops_cases, _attention_flops,
        "torch.utils.flop_counter.FlopCounterMode's count of the layer's four projections and two matrix "
        "products on the meta device", "n 1..2048, d 1..2000", {
            "this is 4n²d: the four d×d projections (8nd²) are missing":
                lambda n, d: 4 * n * n * d,
            "this is half: a multiply-add counts 2 FLOPs, as torch.utils.flop_counter counts":
                lambda n, d: 4 * n * d * d + 2 * n * n * d,
            "this counts three projections; the output projection W_o is a fourth":
                lambda n, d: 6 * n * d * d + 4 * n * n * d,
            "this is 2n²d: the projections are missing and a multiply-add counts 1, not 2":
                lambda n, d: 2 * n * n * d}),
}
