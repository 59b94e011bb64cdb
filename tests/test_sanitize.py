"""The nbval sanitizer (tests/nbval_sanitize.cfg) as nbval itself reads it.

nbval takes a pair only where 'regex: ...' is followed by 'replace: ...' with something after the
space, so a section with an empty replacement is dropped without a word. The first CUDA run of the book
(bench/results/) found exactly that: every tensor a cell printed carried device='cuda:0', which the CPU
outputs do not. Here every section must reach nbval, and what a GPU prints must sanitize to what the
CPU printed.
"""
import configparser
import pathlib
import re

import pytest
from nbval.plugin import get_sanitize_patterns

CFG = pathlib.Path(__file__).resolve().parent / "nbval_sanitize.cfg"
CFG_TEXT = CFG.read_text()


def sanitize(text):
    for regex, replace in get_sanitize_patterns(CFG_TEXT):
        text = re.sub(regex, replace, text)
    return text


def test_every_section_reaches_nbval():
    sections = configparser.ConfigParser(interpolation=None)
    sections.read_string(CFG_TEXT)
    assert len(get_sanitize_patterns(CFG_TEXT)) == len(sections.sections())


@pytest.mark.parametrize("cuda, cpu", [
    ("tensor([0.2245, 0.8348], device='cuda:0')", "tensor([0.2245, 0.8348])"),
    ("tensor([[1, 1, 0, 0]], device='cuda:0', dtype=torch.int32)",
     "tensor([[1, 1, 0, 0]], dtype=torch.int32)"),
    ("tensor(0.5000, device='cuda:1', grad_fn=<MulBackward0>)", "tensor(0.5000, grad_fn=<MulBackward0>)"),
    ("tensor([[ 0,  1],\n        [-1,  0]], device='cuda:0')", "tensor([[ 0,  1],\n        [-1,  0]])"),
    ("UserWarning: slow path (Triggered internally at /pytorch/aten/src/x.cpp:12.)",
     "UserWarning: slow path"),
    ("a tensor on cuda:0", "a tensor on cpu"),
])
def test_a_gpu_output_sanitizes_to_the_cpu_one(cuda, cpu):
    assert sanitize(cuda) == sanitize(cpu)


#: Training results as one machine printed them and as another did (an H200 on 2026-11-27, an AVX-512
#: Xeon's CPU on 2026-11-28), and some that must still differ: a verdict, a setting or an untrained
#: number is compared, only a trained model's digits are masked.
TRAINED = [
    ("tokens right 1.00; the best head's weight on key n-1-i: smallest 0.99",
     "tokens right 0.99; the best head's weight on key n-1-i: smallest 0.88", True),
    ("symbols right 1.000; the best head's weight on key n-1-i: smallest 1.00",
     "symbols right 0.998; the best head's weight on key n-1-i: smallest 0.97", True),
    ("symbols right 1.000; the best head's weight on key n-1-i: smallest 1.00",
     "symbols right 1.000; the worst head's weight on key n-1-i: smallest 1.00", False),
    ("       sinusoidal 0.941 solved          0.113 below the guess",
     "       sinusoidal 0.942 solved          0.113 below the guess", True),
    ("             RoPE 0.995 solved          0.983 solved",
     "             RoPE 0.997 solved          0.984 solved", True),
    ("RoPE                 1.00–1.00   0.84–0.96   0.53–0.63   0.33–0.36",
     "RoPE                 1.00–1.00   0.84–0.96   0.53–0.63   0.32–0.36", True),
    ("mean over the seeds, Δ = 0..6: [0.02, 0.14, 0.26, 0.33, 0.29, 0.15, 0.07]",
     "mean over the seeds, Δ = 0..6: [0.02, 0.14, 0.26, 0.33, 0.29, 0.16, 0.07]", True),
    ("reverser: vocab = 10, n = 8, d = 32, 2 heads; loss of the last batch 0.000",
     "reverser: vocab = 10, n = 8, d = 32, 2 heads; loss of the last batch 0.002", True),
    ("reverser: vocab = 10, n = 8, d = 32, 2 heads; loss of the last batch 0.000",
     "reverser: vocab = 10, n = 9, d = 32, 2 heads; loss of the last batch 0.002", False),
    ("       sinusoidal 0.941 solved", "       sinusoidal 0.941 near the guess", False),
    ("order-blind guess 0.326", "order-blind guess 0.327", False),
    ("mean over the seeds, Δ = 0..6: [0.02]", "mean over the seeds, Δ = 0..5: [0.02]", False),
]


@pytest.mark.parametrize("one, other, same", TRAINED)
def test_only_the_digits_of_training_results_are_masked(one, other, same):
    assert (sanitize(one) == sanitize(other)) == same


#: The masks of training results (the sections after "Training results" in the file).
TRAINING_MASKS = ["reversal_scores", "reversal_loss", "order_experiment_means", "stretch_accuracy_ranges",
                  "stretch_offset_means"]


@pytest.mark.parametrize("name", TRAINING_MASKS)
def test_each_training_mask_still_finds_its_output(name):
    """A reworded print would leave its digits unmasked, and another machine's run would fail nbval on
    them: each mask must match an output of the committed notebooks (seen: 'tokens right' became
    'symbols right')."""
    import json

    sections = configparser.ConfigParser(interpolation=None)
    sections.read_string(CFG_TEXT)
    regex = sections[name]["regex"]
    texts = ["".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
             for notebook in sorted((CFG.parents[1] / "notebooks").glob("*.ipynb"))
             for cell in json.loads(notebook.read_text())["cells"] for output in cell.get("outputs", [])]
    assert any(re.search(regex, text) for text in texts), f"[{name}] matches no output of the notebooks"
