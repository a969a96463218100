"""What every widget's figure shares: the palette, the base layout, the light and dark themes.

Figures are plain Plotly JSON built on the server. They never hard-code a background or a text
colour: the page's runtime lays the light or dark theme below over every figure when it draws
(and again on a live palette switch), so a widget only picks *meaningful* colours (which series
is which) from `COLORS`. The themes travel to the page once, in a `<script id="tw-theme">`
the build hook writes into every page's head; the runtime reads them from there.
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
# A model's parts, one colour each, shared by the parameter-count widget's bars and the diagrams
# that draw the same parts (backend.diagrams.param_share's tones: accent, query, good, purple).
PART_COLORS = {
    "embedding": COLORS["accent"],   # orange
    "attention": COLORS["scaled"],   # blue
    "mlp": COLORS["good"],           # green
    "norms": COLORS["guide"],        # grey
    "lm_head": COLORS["purple"],
}
# The attention bar's four matrices: shades of the attention blue, K and V each its own.
ATTENTION_SHADES = {"q_proj": "#1f77b4", "k_proj": "#17becf", "v_proj": "#9ecae1", "o_proj": "#08519c"}
SERIES = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#17becf", "#bcbd22", "#7f7f7f")
# Sequential colour scale for weights in [0, 1] (attention maps, masks): 0 is the background.
# A heatmap that names it (with or without plotly's `reversescale`) is drawn with the theme's
# `WEIGHT_SCALES` entry, whose zero end is the page's own background colour ("bg").
WEIGHT_SCALE = "Blues"

# Text, grid and axis colours per colour scheme (Material's "default" = light, "slate" = dark).
# Text colours meet WCAG AA (4.5:1) on the scheme's background; paper and plot stay transparent.
THEMES = {
    "light": {"font": "#1f2328", "muted": "#57606a", "grid": "#e1e4e8", "zeroline": "#afb8c1",
              "line": "#8c959f", "hover_bg": "#ffffff"},
    "dark": {"font": "#e6e8ee", "muted": "#b8bdc9", "grid": "#3b4050", "zeroline": "#5d6477",
             "line": "#737b8f", "hover_bg": "#2a2e3a"},
}
WEIGHT_SCALES = {
    "light": [[0.0, "bg"], [0.15, "#deebf7"], [0.4, "#9ecae1"], [0.7, "#3182bd"],
              [1.0, "#08306b"]],
    "dark": [[0.0, "bg"], [0.15, "#0b2a4f"], [0.4, "#1f5f9e"], [0.7, "#5aa0dc"],
             [1.0, "#d6e9fb"]],
}


def theme_payload() -> dict:
    """What the runtime needs to theme any figure (widgets and notebook figures alike)."""
    return {"themes": THEMES, "weight_scale": WEIGHT_SCALE, "weight_scales": WEIGHT_SCALES}


# The smallest tick label a figure asks for (px), the phone's floor too (widgets/runtime/theme.js
# MIN_TICK_PX raises anything smaller there): 9 px labels were hard to read (ux review P12).
TICK_PX = 11


def base_layout(height: int = 420, **extra) -> dict:
    """The layout every figure starts from; widgets add axes and annotations."""
    layout = {
        "margin": {"l": 55, "r": 10, "t": 40, "b": 50},
        "height": height,
        "legend": {"orientation": "h", "y": -0.2},
    }
    layout.update(extra)
    return layout


def duration(ms: float) -> str:
    """A time as the page writes it (the runtime's format.js `withUnit`): milliseconds to three
    figures under a second, seconds from 1,000 ms up ("10.1 s", never "1.01e+04 ms")."""
    if abs(ms) < 999.5:
        return f"{ms:.3g} ms"
    s = ms / 1000
    return f"{s:,.0f} s" if abs(s) >= 999.5 else f"{s:.3g} s"
