"""The figure files in img/ are what img/draw.py draws now (as `make check` does for notebooks)."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_figures_are_up_to_date(tmp_path):
    spec = importlib.util.spec_from_file_location("draw", ROOT / "img" / "draw.py")
    draw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(draw)
    draw.main(tmp_path)
    for name in draw.FIGURES:
        fresh, committed = (tmp_path / name).read_bytes(), (ROOT / "img" / name).read_bytes()
        assert fresh == committed, f"img/{name} is out of date: run `make img` and commit it"
        assert b"<dc:date>" not in fresh  # no date: the same drawing gives the same bytes
