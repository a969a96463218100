"""The opening figures' pictures (widgets/build/snapshots.py) without a browser: plotly's random
names taken out, so the same figure is the same file from one build to the next. Drawing them
is tested in a browser (test_snapshots_browser.py); two real draws of all 124 pictures were
byte-identical after `steady` and rendered pixel-identical to plotly's own (checked once)."""

from __future__ import annotations

import re

from widgets.build.snapshots import steady

# Trimmed from a real picture: a clip path, a colour bar's gradient, a trace's class.
SVG = ('<svg><defs id="defs-{u}"><clipPath id="clip{u}xyplot"><rect/></clipPath>'
       '<linearGradient id="g{u}-cb{c}"/></defs><g clip-path="url(#clip{u}xyplot)">'
       '<g class="trace scatter trace{t}"/></g><g class="cb{c} colorbar">'
       '<rect fill="url(\'#g{u}-cb{c}\')"/><g class="ycb{c}tick"><text>123456</text></g></g></svg>')


def test_two_draws_of_one_figure_are_one_file():
    one = SVG.format(u="a1b2c3", c="d4e5f6", t="0a0b0c")
    two = SVG.format(u="f0f0f0", c="123abc", t="9e9e9e")
    assert one != two and steady(one) == steady(two)
    out = steady(one)
    assert not re.search(r"a1b2c3|d4e5f6|0a0b0c", out), out
    assert "<text>123456</text>" in out  # a number in the figure is not a name


def test_every_reference_still_names_an_element():
    out = steady(SVG.format(u="a1b2c3", c="d4e5f6", t="0a0b0c"))
    ids = set(re.findall(r'\bid="([^"]+)"', out))
    refs = re.findall(r"url\('?#([^)']+)'?\)", out)
    assert refs and set(refs) <= ids, (refs, ids)
