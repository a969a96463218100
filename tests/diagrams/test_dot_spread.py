"""The dot_spread diagram (scaling chapter): its shape follows its configuration, and its labels
say what the book's own code measures."""

from __future__ import annotations

import math
import re

import pytest

from backend.diagrams import dot_spread, registry
from backend.reference import scaling


def _bars(svg: str, tone: str) -> list[float]:
    """Widths of the bars of one tone (the spreads), in drawing order."""
    return [float(w) for w in re.findall(
        rf'<rect [^>]*width="([0-9.]+)" height="10" [^>]*class="tw-d-box tw-d-{tone}"', svg)]


def _cells(svg: str) -> int:
    return len(re.findall(r'class="tw-d-box tw-d-muted"', svg))


def test_registered_and_renders():
    assert registry()["dot_spread"] is dot_spread
    svg = dot_spread.draw().render("fig-dot-spread")
    assert svg.startswith("<svg") and "fig-dot-spread-desc" in svg


def test_one_row_per_head_size_and_one_cell_per_product():
    small = dot_spread.draw(sizes=(2, 8))
    big = dot_spread.draw(sizes=(4, 16, 64))
    assert [t for t in small.texts() if t.startswith("d_k =")] == ["d_k = 2", "d_k = 8"]
    assert [t for t in big.texts() if t.startswith("d_k =")] == ["d_k = 4", "d_k = 16", "d_k = 64"]
    assert big.height > small.height
    # every product drawn up to max_cells; past it, max_cells - 1 and an ellipsis
    assert _cells(small.render("a")) == 2 + 8
    assert _cells(big.render("b")) == 4 + 16 + 15 and big.texts().count("…") == 1
    assert _cells(dot_spread.draw(sizes=(64,), max_cells=8).render("c")) == 7
    assert "64 products, summed" in big.texts()


def test_bars_are_drawn_to_one_scale_root_d_k_against_one():
    sizes = (4, 16, 64)
    svg = dot_spread.draw(sizes=sizes).render("d")
    red, blue = _bars(svg, "bad"), _bars(svg, "query")
    assert len(red) == len(blue) == len(sizes)
    # the unscaled spreads stand in the ratio sqrt(d_k), the scaled ones are all one unit
    for d, r, b in zip(sizes, red, blue):
        assert r / b == pytest.approx(math.sqrt(d), rel=0.01)
    assert len(set(blue)) == 1
    # a different configuration changes the picture the way it says
    svg2 = dot_spread.draw(sizes=(1, 256)).render("e")
    r2, b2 = _bars(svg2, "bad"), _bars(svg2, "query")
    assert r2[1] / r2[0] == pytest.approx(16, rel=0.01) and b2[0] == b2[1]


@pytest.mark.parametrize("d_k", [4, 16, 64])
def test_labels_agree_with_the_reference_code(d_k):
    """"q·k: sd √d_k = s" is the square root of the variance the book's code measures (within
    4 standard errors), and the scaled score's variance is 1."""
    c = dot_spread.draw(sizes=(d_k,))
    label = next(t for t in c.texts() if t.startswith("q·k: sd"))
    sd = float(label.rsplit("= ", 1)[1])
    assert sd == pytest.approx(math.sqrt(d_k))
    n = 10_000
    var_u, var_s = scaling.dot_product_variance(d_k, n, scaling.make_generator(0, "cpu"), "cpu")
    se = scaling.variance_standard_error(d_k, n)
    assert abs(var_u - sd ** 2) < 4 * se
    assert abs(var_s - 1) < 4 * se / d_k
    assert "q·k/√d_k: sd 1" in c.texts()
    assert f"{d_k}," in c.desc or f"{d_k} " in c.desc


def test_the_text_description_carries_the_numbers():
    c = dot_spread.draw(sizes=(4, 16, 64))
    assert "4, 16, 64" in c.desc and "2, 4, 8" in c.desc and "standard deviation 1" in c.desc


def test_bad_configurations_are_refused():
    for bad in ({"sizes": ()}, {"sizes": (0, 4)}, {"max_cells": 1}):
        with pytest.raises(ValueError):
            dot_spread.draw(**bad)
