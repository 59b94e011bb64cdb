"""How robust is section 1's claim about the trained reversal model? (bench/results/cuda-2026-11-27.md)

Trains the chapter's `Reverser` (its own cells, run up to the training) from 8 seeds, each also with its
initial weights multiplied by 1 + 1e-6 and 1 + 1e-5 times Gaussian noise (a stand-in for another device's
rounding), at 100 and 200 steps, and prints the range over those 24 runs of: the share of tokens right,
each head's smallest weight on key n-1-i (the old claim), and the best head's (the claim now made).
    .venv/bin/python bench/reversal_seeds.py        (about 2 minutes on 2 cores)
"""
import contextlib
import io
import os
import pathlib
import sys

import jupytext

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.chdir(ROOT / "notebooks")
chapter = jupytext.read(ROOT / "chapters" / "1-self-attention.md")
book = {}
for cell in (c for c in chapter.cells if c.cell_type == "code"):
    if "reverser = Reverser(" in cell.source:  # the chapter's own training run: trained() below varies it
        break
    if "attention_explorer()" not in cell.source:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(cell.source, book)
torch, F, Reverser = book["torch"], book["F"], book["Reverser"]
VOCAB, N = (Reverser.__init__.__defaults__[k] for k in (0, 1))  # the chapter's vocabulary and length


def trained(seed, steps, noise, lr=0.02):
    torch.manual_seed(seed)
    model = Reverser(vocab=VOCAB, n=N)
    with torch.no_grad():
        draw = torch.Generator().manual_seed(99)
        for p in model.parameters():
            p.mul_(1 + noise * torch.randn(p.shape, generator=draw))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        tokens = torch.randint(VOCAB, (64, N))
        loss = F.cross_entropy(model(tokens)[0].flatten(0, 1), tokens.flip(1).flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    tokens = torch.randint(VOCAB, (256, N))
    logits, alpha = model(tokens)
    on_target = alpha.mean(0)[:, range(N), range(N - 1, -1, -1)].detach()  # (h, n)
    return ((logits.argmax(-1) == tokens.flip(1)).float().mean().item(), on_target.min().item(),
            on_target.amax(0).min().item())


print("steps  runs  tokens right  each head, smallest  best head, smallest")
for steps in (100, 200):
    runs = [trained(seed, steps, noise) for seed in range(8) for noise in (0, 1e-6, 1e-5)]
    right, each, best = ([r[k] for r in runs] for k in range(3))
    print(f"{steps:5} {len(runs):5}  {min(right):.3f}-{max(right):.3f}   {min(each):.3f}-{max(each):.3f}"
          f"          {min(best):.3f}-{max(best):.3f}", flush=True)
