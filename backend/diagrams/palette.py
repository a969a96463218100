"""The diagrams' colours, for the light and the dark scheme, and the stylesheet made from them.

One meaning, one colour, as in the widgets (`backend.compute.style.COLORS`): a query is the
same blue in a diagram as in a figure. A box's fill is its tone's colour mixed into the page's
background (a tint on white, a shade on slate), so the page's text colour stays readable on
every fill; `contrast()` measures it and the tests require 4.5:1 (WCAG AA) for every tone in
both schemes.
"""

from __future__ import annotations

from backend.compute.style import COLORS, THEMES

# Material's page backgrounds: "default" (light) is white, "slate" is this (the runtime reads
# the same colour back from the page when it composites heatmaps).
PAGE_BG = {"light": "#ffffff", "dark": "#1e2129"}
INK = {"light": THEMES["light"]["font"], "dark": THEMES["dark"]["font"]}
MUTED_INK = {"light": THEMES["light"]["muted"], "dark": THEMES["dark"]["muted"]}

TONE_COLORS = {
    "plain": THEMES["light"]["line"],
    "accent": COLORS["accent"],
    "query": COLORS["scaled"],        # blue
    "key": COLORS["good"],            # green
    "value": COLORS["purple"],
    "good": COLORS["good"],
    "bad": COLORS["unscaled"],        # red
    "muted": COLORS["guide"],
    "purple": COLORS["purple"],
    "brown": COLORS["brown"],
}
FILL_SHARE = {"light": 0.16, "dark": 0.30}     # how much of the tone goes into a fill
STROKE = {"light": None, "dark": None}          # strokes: the tone itself in both schemes


def _rgb(hex_: str) -> tuple[float, float, float]:
    h = hex_.lstrip("#")
    return tuple(int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))


def _hex(rgb) -> str:
    return "#" + "".join(f"{round(max(0.0, min(1.0, c)) * 255):02x}" for c in rgb)


def mix(color: str, share: float, base: str) -> str:
    """`share` of `color` over `base`, in sRGB (as CSS's color-mix(in srgb, …) would)."""
    a, b = _rgb(color), _rgb(base)
    return _hex(tuple(share * x + (1 - share) * y for x, y in zip(a, b)))


def fill(tone: str, scheme: str) -> str:
    return mix(TONE_COLORS[tone], FILL_SHARE[scheme], PAGE_BG[scheme])


def _luminance(hex_: str) -> float:
    def lin(c):
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in _rgb(hex_))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two opaque colours."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def ink(tone: str, scheme: str) -> str:
    """A tone used as a text colour: the tone itself where it reads 4.5:1 on the page, else
    the tone mixed toward the scheme's ink until it does."""
    color, share = TONE_COLORS[tone], 1.0
    while contrast(mix(color, share, INK[scheme]), PAGE_BG[scheme]) < 4.5 and share > 0:
        share = round(share - 0.05, 2)
    return mix(color, share, INK[scheme])


def stylesheet() -> str:
    """`assets/book/diagrams.css`: every class `backend.diagrams.svg` writes, in both schemes."""
    from backend.diagrams.svg import TEXT_SIZES, TONES

    def scheme_rules(scheme: str) -> list[str]:
        rules = [f".tw-diagram-svg .tw-d-text{{fill:{INK[scheme]}}}",
                 f".tw-diagram-svg .tw-d-head.tw-d-fill-plain{{fill:{INK[scheme]}}}",
                 f".tw-diagram-svg .tw-d-stroke-plain{{stroke:{MUTED_INK[scheme]}}}",
                 f".tw-diagram-svg .tw-d-box.tw-d-plain{{fill:{PAGE_BG[scheme]};stroke:{MUTED_INK[scheme]}}}"]
        for tone in TONES:
            if tone == "plain":
                continue
            rules += [f".tw-diagram-svg .tw-d-box.tw-d-{tone}{{fill:{fill(tone, scheme)};"
                      f"stroke:{TONE_COLORS[tone]}}}",
                      f".tw-diagram-svg path.tw-d-{tone}{{fill:{fill(tone, scheme)}}}",
                      f".tw-diagram-svg .tw-d-stroke-{tone}{{stroke:{TONE_COLORS[tone]}}}",
                      f".tw-diagram-svg .tw-d-fill-{tone}{{fill:{TONE_COLORS[tone]}}}",
                      f".tw-diagram-svg .tw-d-ink-{tone}{{fill:{ink(tone, scheme)}}}"]
        return rules

    common = [
        ".tw-diagram{margin:1.2em 0;text-align:center}",
        ".tw-diagram-svg{width:100%;height:auto;display:block;margin:0 auto;overflow:visible}",
        ".tw-diagram-svg .tw-d-text{font-family:var(--md-text-font-family,sans-serif);"
        "dominant-baseline:central}",
        *[f".tw-diagram-svg .tw-d-{name}{{font-size:{px}px}}" for name, px in TEXT_SIZES.items()],
        ".tw-diagram-svg .tw-d-mono{font-family:var(--md-code-font-family,monospace)}",
        ".tw-diagram-svg .tw-d-bold{font-weight:700}",
        ".tw-diagram-svg .tw-d-italic{font-style:italic}",
        ".tw-diagram-svg .tw-d-box{stroke-width:1.5}",
        ".tw-diagram-svg .tw-d-line{fill:none}",
        ".tw-diagram-svg .tw-d-dashed{stroke-dasharray:5 4}",
        ".tw-diagram-svg a.tw-d-link:hover .tw-d-box,.tw-diagram-svg a.tw-d-link:focus .tw-d-box"
        "{stroke-width:3}",
        # a link's focus is a ring in the widgets' focus colour (runtime.css), whatever it holds
        ".tw-diagram-svg a.tw-d-link:focus-visible{outline:3px solid var(--tw-focus,#1a4fd6);"
        "outline-offset:2px}",
        ".tw-diagram-svg a.tw-d-link .tw-d-text{text-decoration:underline}",
        ".tw-diagram figcaption,.tw-widget-caption{font-size:.8rem;margin:.4em auto 0;"
        "max-width:40rem;text-align:center}",
        ".tw-fignum{font-weight:700}",
        ".tw-diagram details.tw-alt{text-align:left;font-size:.75rem;margin:.3em auto 0;"
        "max-width:40rem}",
        ".tw-diagram details.tw-alt summary{cursor:pointer}",
    ]
    light = scheme_rules("light")
    dark = [f'[data-md-color-scheme="slate"] {r}' for r in scheme_rules("dark")]
    return "\n".join(common + light + dark) + "\n"
