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
#: make test-cuda reads the two files one after the other, as this does (Makefile, test-cuda).
CUDA_CFG_TEXT = CFG_TEXT + (CFG.parent / "nbval_sanitize_cuda.cfg").read_text()


def sanitize(text, cfg_text=CFG_TEXT):
    for regex, replace in get_sanitize_patterns(cfg_text):
        text = re.sub(regex, replace, text)
    return text


@pytest.mark.parametrize("text", [CFG_TEXT, CUDA_CFG_TEXT], ids=["make test", "make test-cuda"])
def test_every_section_reaches_nbval(text):
    sections = configparser.ConfigParser(interpolation=None)
    sections.read_string(text)
    assert len(get_sanitize_patterns(text)) == len(sections.sections())


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


#: Training results as the CPU printed them and as an H200 printed them (2026-11-27), and one that must
#: still differ on the GPU: a verdict is compared, only the digits are masked.
TRAINED = [
    ("tokens right 1.00; the best head's weight on key n-1-i: smallest 0.99",
     "tokens right 0.99; the best head's weight on key n-1-i: smallest 0.88", True),
    ("       sinusoidal 0.941 solved          0.113 below the guess",
     "       sinusoidal 0.942 solved          0.113 below the guess", True),
    ("             RoPE 0.995 solved          0.983 solved",
     "             RoPE 0.996 solved          0.985 solved", True),
    ("RoPE                 1.00–1.00   0.84–0.96   0.53–0.63   0.33–0.36",
     "RoPE                 1.00–1.00   0.84–0.96   0.53–0.63   0.32–0.36", True),
    ("reverser: vocab = 10, n = 8, d = 32, 2 heads; loss of the last batch 0.000",
     "reverser: vocab = 10, n = 8, d = 32, 2 heads; loss of the last batch 0.002", True),
    ("reverser: vocab = 10, n = 8, d = 32, 2 heads; loss of the last batch 0.000",
     "reverser: vocab = 10, n = 9, d = 32, 2 heads; loss of the last batch 0.002", False),
    ("       sinusoidal 0.941 solved", "       sinusoidal 0.941 near the guess", False),
    ("order-blind guess 0.326", "order-blind guess 0.327", False),
]


@pytest.mark.parametrize("cpu, gpu, same", TRAINED)
def test_only_the_gpu_run_masks_the_digits_of_training_results(cpu, gpu, same):
    assert (sanitize(gpu, CUDA_CFG_TEXT) == sanitize(cpu, CUDA_CFG_TEXT)) == same
    assert sanitize(gpu) != sanitize(cpu)  # make test (the CPU) still compares every digit
