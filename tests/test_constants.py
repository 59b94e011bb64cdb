"""A section's constants are set in one cell: the explorers read them when a slider moves, after Run All.

Round 47's reader found §6's explorer relabelled after Run All: a folded cell further down assigned `SHOWN_AS`
again, for the toy's legend, and the explorer's callback read the new map. A constant (a name in capitals, two
characters or more; single capitals are matrices, as Z in §3) assigned at the top level of two cells is that
defect waiting to happen.
"""
import ast
import collections
import pathlib
import re

import jupytext
import pytest
from test_bench_names import top_level_names, without_magics

CHAPTERS = sorted(pathlib.Path(__file__).resolve().parents[1].glob("chapters/*.md"))


def constants_assigned(source):
    """The capitalised names a cell binds at its top level (test_bench_names's reading: assignments, also in
    loops, with, if and try; defs, classes, imports)."""
    return {name for name in top_level_names(ast.parse(without_magics(source)))
            if re.fullmatch(r"[A-Z][A-Z0-9_]+", name)}


def test_a_reassigned_constant_is_found():
    source = "SHOWN_AS = {}\nZ = 1\nA, (B_2, c) = 1, (2, 3)\nN_MAX += 1\n%matplotlib inline"
    assert constants_assigned(source) == {"SHOWN_AS", "B_2", "N_MAX"}
    assert constants_assigned("if True:\n    TOY = 1\ndef f():\n    LOCAL = 2") == {"TOY"}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_each_constant_is_set_in_one_cell(chapter):
    cells = collections.defaultdict(list)
    for index, cell in enumerate(jupytext.read(chapter).cells):
        if cell.cell_type == "code":
            for name in constants_assigned(cell.source):
                cells[name].append(index)
    twice = {name: where for name, where in cells.items() if len(where) > 1}
    assert not twice, f"{chapter.name}: constants assigned in more than one cell (cell indices): {twice}"
