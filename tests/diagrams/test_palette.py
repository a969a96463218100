"""Diagram text reads on every fill, in both colour schemes (WCAG AA, 4.5:1)."""

from __future__ import annotations

import re

import pytest

from backend.diagrams import palette
from backend.diagrams.svg import TONES

SCHEMES = ("light", "dark")


def test_contrast_matches_wcags_worked_values():
    assert palette.contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert palette.contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("tone", TONES)
def test_the_ink_reads_on_every_fill(scheme, tone):
    background = palette.PAGE_BG[scheme] if tone == "plain" else palette.fill(tone, scheme)
    assert palette.contrast(palette.INK[scheme], background) >= 4.5


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("tone", TONES)
def test_coloured_text_reads_on_the_page(scheme, tone):
    assert palette.contrast(palette.ink(tone, scheme), palette.PAGE_BG[scheme]) >= 4.5


def test_the_stylesheet_gives_both_schemes_every_class_the_pen_writes():
    css = palette.stylesheet()
    for tone in TONES:
        if tone != "plain":
            assert f".tw-d-box.tw-d-{tone}{{" in css
            assert f'[data-md-color-scheme="slate"] .tw-diagram-svg .tw-d-box.tw-d-{tone}{{' in css
    dark_text = re.search(r'slate"\] \.tw-diagram-svg \.tw-d-text\{fill:(#[0-9a-f]{6})', css)
    assert dark_text and dark_text.group(1) == palette.INK["dark"]
