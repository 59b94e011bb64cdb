"""The figure files in img/ are what img/draw.py draws now (as `make check` does for notebooks), and
their words can be read where a page shows them (tests/figure_text.py)."""
import importlib.util
import pathlib

from figure_text import problems

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_draw():
    spec = importlib.util.spec_from_file_location("draw", ROOT / "img" / "draw.py")
    draw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(draw)
    return draw


def test_figures_are_up_to_date(tmp_path):
    draw = load_draw()
    draw.main(tmp_path)
    for name in draw.FIGURES:
        fresh, committed = (tmp_path / name).read_bytes(), (ROOT / "img" / name).read_bytes()
        assert fresh == committed, f"img/{name} is out of date: run `make img` and commit it"
        assert b"<dc:date>" not in fresh  # no date: the same drawing gives the same bytes


def test_figures_text_is_large_and_dark_enough_on_a_page():
    """At the SVG's own size (its width in points, 96/72 CSS pixels each), shrunk to the page's column
    when wider."""
    for name, make in load_draw().FIGURES.items():
        fig = make()
        assert problems(fig, fig.get_figwidth() * 96) == [], f"img/{name}"
