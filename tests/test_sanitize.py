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


def sanitize(text):
    for regex, replace in get_sanitize_patterns(CFG.read_text()):
        text = re.sub(regex, replace, text)
    return text


def test_every_section_reaches_nbval():
    sections = configparser.ConfigParser(interpolation=None)
    sections.read(CFG)
    assert len(get_sanitize_patterns(CFG.read_text())) == len(sections.sections())


@pytest.mark.parametrize("cuda, cpu", [
    ("tensor([0.2245, 0.8348], device='cuda:0')", "tensor([0.2245, 0.8348])"),
    ("tensor([[1, 1, 0, 0]], device='cuda:0', dtype=torch.int32)",
     "tensor([[1, 1, 0, 0]], dtype=torch.int32)"),
    ("tensor(0.5000, device='cuda:1', grad_fn=<MulBackward0>)", "tensor(0.5000, grad_fn=<MulBackward0>)"),
    ("tensor([[ 0,  1],\n        [-1,  0]], device='cuda:0')", "tensor([[ 0,  1],\n        [-1,  0]])"),
    ("UserWarning: slow path (Triggered internally at /pytorch/aten/src/x.cpp:12.)",
     "UserWarning: slow path"),
    ("this notebook computes on cuda", "this notebook computes on cpu"),
])
def test_a_gpu_output_sanitizes_to_the_cpu_one(cuda, cpu):
    assert sanitize(cuda) == sanitize(cpu)
