"""`make bench` runs bench/<section>.py in the section's kernel after the notebook, so each script may use
the notebook's names; a renamed variable in a chapter breaks the bench, which `make test` does not run
(it happened: §5's q, k, v became q_heads, k_heads, v_heads). Here every name a script reads without
defining it must be defined at the top level of its chapter's code, or be a builtin."""
import ast
import builtins
import pathlib

import jupytext
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "bench").glob("[0-9]-*.py"))


def top_level_names(tree):
    """Names bound at module level: assignments (also in loops, with, if and try), defs, classes, imports;
    not what a function, class body or comprehension binds inside itself."""
    bound, todo = set(), list(ast.iter_child_nodes(tree))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        todo.extend(ast.iter_child_nodes(node))
    return bound


def free_names(tree):
    """Names the script loads and never binds anywhere (its own functions' parameters and locals count
    as bound: a deliberately loose reading, so that only a name from the notebook is reported)."""
    bound = top_level_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loaded - bound - set(dir(builtins))


def without_magics(source):
    """A cell's code without its IPython magics and shell lines, which ast cannot parse."""
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))


def chapter_names(section):
    notebook = jupytext.read(ROOT / "chapters" / f"{section}.md")
    code = "\n".join(without_magics(cell.source) for cell in notebook.cells if cell.cell_type == "code")
    return top_level_names(ast.parse(code)) | {"get_ipython", "display"}


def test_every_section_has_its_bench_script():
    assert [p.stem for p in SCRIPTS] == sorted(p.stem for p in (ROOT / "chapters").glob("*.md"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_a_bench_script_reads_only_names_its_notebook_defines(script):
    missing = free_names(ast.parse(script.read_text())) - chapter_names(script.stem)
    assert not missing, f"{script.name} reads {sorted(missing)}, not defined in chapters/{script.stem}.md"
