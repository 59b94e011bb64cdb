"""Draws the book's figure files into img/ (`make img`); tests/test_img.py checks they are up to date.

The drawings themselves are in attnbook/figures.py, so that a notebook shows the same picture without
needing this folder (a notebook downloaded alone has no ../img/). SVG output is made reproducible: a
fixed hash salt for matplotlib's ids and no date in the metadata.
"""
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # attnbook, from the checkout
from attnbook import figures  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
FIGURES = {"cnn-rnn-self-attention.svg": figures.cnn_rnn_self_attention}


def main(out_dir=HERE):
    matplotlib.rcParams["svg.hashsalt"] = "attnbook"  # stable ids instead of random ones
    for name, draw in FIGURES.items():
        draw().savefig(pathlib.Path(out_dir) / name, format="svg", metadata={"Date": None})


if __name__ == "__main__":
    main(*sys.argv[1:])
