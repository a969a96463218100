"""What every widget's figure shares: the palette, the base layout, the phone patch.

Figures are plain Plotly JSON built on the server. They never hard-code a background or a text
colour: the page's runtime lays the light or dark theme over every figure when it draws, so a
widget only picks *meaningful* colours (which series is which) from `COLORS` below.
"""

from __future__ import annotations

# One meaning, one colour, across the whole book. Chosen to read on white and on slate.
COLORS = {
    "unscaled": "#d62728",   # the naive / raw / without-the-trick series
    "scaled": "#1f77b4",     # the book's / with-the-trick series
    "guide": "#7f7f7f",      # theory lines, uniform baselines, reference levels
    "accent": "#ff7f0e",     # the reader's current point, a highlighted row
    "good": "#2ca02c",
    "purple": "#9467bd",
    "brown": "#8c564b",
    "pink": "#e377c2",
}
SERIES = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#17becf", "#bcbd22", "#7f7f7f")
# Sequential colour scale for weights in [0, 1] (attention maps, masks): 0 is the background.
WEIGHT_SCALE = "Blues"


def base_layout(height: int = 420, **extra) -> dict:
    """The layout every figure starts from; widgets add axes and annotations."""
    layout = {
        "margin": {"l": 55, "r": 10, "t": 40, "b": 50},
        "height": height,
        "legend": {"orientation": "h", "y": -0.2},
    }
    layout.update(extra)
    return layout
