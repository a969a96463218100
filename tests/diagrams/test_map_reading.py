"""The map-reading diagram: a T x T grid of the book's model's weights, rows adding up to 1."""

from __future__ import annotations

import re

import pytest

from backend.compute import attention_map as w
from backend.diagrams import map_reading

SHORT, LONGER = "The animal was there", "The animal was not there"


def numbers(c):
    return [float(t) for t in c.texts() if re.fullmatch(r"\d\.\d\d", t)]


def test_the_grid_follows_the_sentence():
    for text in (SHORT, LONGER):
        tokens, _ = map_reading.weights(text)
        T = len(tokens)
        c = map_reading.draw(text=text)
        assert len(numbers(c)) == T * (T + 1) // 2          # the past and the diagonal, not the future
        assert "".join(c.parts).count("<rect") == T * T     # every cell drawn, the future blank
    assert len(map_reading.weights(LONGER)[0]) == len(map_reading.weights(SHORT)[0]) + 1


def test_the_weights_are_the_widgets_and_every_row_adds_up_to_one():
    tokens, m = map_reading.weights(LONGER)
    v = w.compute(w.SPEC.resolve({**w.SPEC.defaults(), "text": LONGER}))["values"]
    assert tokens == v["tokens"]
    for row, wrow in zip(m, v["weights"]):
        assert abs(sum(row) - 1) < 1e-5
        assert all(abs(a - b) < 1e-4 for a, b in zip(row, wrow))
    for i, row in enumerate(m):  # causal: the future holds exactly 0
        assert all(x == 0 for x in row[i + 1:])
    c = map_reading.draw(text=LONGER)
    assert "Σ = 1.00" in c.texts()
    last = numbers(c)[-len(tokens):]                      # the highlighted (last) row as drawn
    assert abs(sum(last) - 1) <= 0.005 * len(tokens)


def test_a_sentence_too_long_for_a_phone_is_refused():
    with pytest.raises(ValueError):
        map_reading.draw(text="The animal was not there when the man came")
