"""A small SVG canvas the book's diagrams are drawn on, at build time, by code.

A diagram is a function of a configuration (`draw(**config) -> Canvas`); this module is the
pen. It writes no colour: every shape and every text carries a class (`tw-d-…`), and
`widgets/runtime/runtime.css` maps the classes to the page's own colours, so one SVG reads on the light
and the dark scheme alike (text is the page's text colour on fills mixed mostly from the page's
background, 4.5:1 or better in both; `tests/diagrams/test_contrast.py` checks it).

Coordinates are SVG user units in a `viewBox`; the figure scales to the column's width. Draw
for a column about 360 units wide with 13-unit text when a diagram must read on a phone (390 px
CSS): then text stays at its drawn size or larger.

    c = Canvas(360, 200, title="A box", desc="One box labelled x.")
    c.box(20, 20, 120, 40, "x", tone="accent")
    c.arrow(80, 60, 80, 120, label="(T, d)")
    svg = c.render("fig-box")           # the figure id makes the SVG's ids unique on its page
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

# The tones a fill or a stroke may take. Each is a class; runtime.css gives it the colour of
# the same meaning as in the widgets (style.COLORS) mixed into the page's background.
TONES = ("plain", "accent", "query", "key", "value", "good", "bad", "muted", "purple", "brown")
TEXT_SIZES = {"normal": 13, "small": 11, "large": 15}


def _num(v: float) -> str:
    """A coordinate, short: 12, 12.5, never 12.000000001."""
    r = round(float(v), 2)
    return str(int(r)) if r == int(r) else f"{r:g}"


def _attrs(**kw) -> str:
    out = []
    for k, v in kw.items():
        if v is None:
            continue
        name = k.rstrip("_").replace("_", "-")
        val = _num(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)
        out.append(f'{name}="{html.escape(val, quote=True)}"')
    return " ".join(out)


@dataclass
class Canvas:
    """An SVG drawing of `width` × `height` units with an accessible name and description.

    `title` is the short accessible name; `desc` the text alternative a screen reader reads
    (and the page shows under "Text description"): say what the picture shows, in words and
    with its numbers, as if it were not there."""

    width: float
    height: float
    title: str
    desc: str
    max_scale: float = 1.6       # at most this many CSS px per unit on a wide screen
    parts: list[str] = field(default_factory=list)
    _links: int = 0
    _open: bool = False

    def __post_init__(self):
        if not self.title.strip() or not self.desc.strip():
            raise ValueError("a diagram needs a title and a text description")

    # ---------------------------------------------------------------- shapes

    def rect(self, x, y, w, h, tone="plain", rx=6, dashed=False, klass=""):
        cls = f"tw-d-box tw-d-{self._tone(tone)}" + (" tw-d-dashed" if dashed else "")
        self.parts.append(f"<rect {_attrs(x=x, y=y, width=w, height=h, rx=rx, class_=(cls + ' ' + klass).strip())}/>")

    def text(self, x, y, s, size="normal", anchor="middle", weight=None, mono=False,
             tone=None, italic=False):
        """Text whose *middle* sits at y (dominant-baseline: central)."""
        cls = ["tw-d-text", f"tw-d-{size}"]
        if mono:
            cls.append("tw-d-mono")
        if weight == "bold":
            cls.append("tw-d-bold")
        if italic:
            cls.append("tw-d-italic")
        if tone:
            cls.append(f"tw-d-ink-{self._tone(tone)}")
        if size not in TEXT_SIZES:
            raise ValueError(f"text size {size!r}: one of {sorted(TEXT_SIZES)}")
        self.parts.append(f"<text {_attrs(x=x, y=y, text_anchor=anchor, class_=' '.join(cls))}>"
                          f"{html.escape(str(s))}</text>")

    def box(self, x, y, w, h, label=None, tone="plain", sub=None, mono=False, rx=6,
            dashed=False, href=None, size="normal", link_name=None):
        """A rounded box with a centred label and an optional second, smaller line; with `href`,
        a link named `link_name` (default: the label)."""
        if href:
            self.open_link(href, link_name or label or "")
        self.rect(x, y, w, h, tone=tone, rx=rx, dashed=dashed)
        if label is not None and sub is not None:
            self.text(x + w / 2, y + h / 2 - 7, label, mono=mono)
            self.text(x + w / 2, y + h / 2 + 9, sub, size="small", mono=True)
        elif label is not None:
            self.text(x + w / 2, y + h / 2, label, mono=mono, size=size)
        if href:
            self.close_link()

    def line(self, x1, y1, x2, y2, tone="plain", dashed=False, width=1.5):
        cls = f"tw-d-line tw-d-stroke-{self._tone(tone)}" + (" tw-d-dashed" if dashed else "")
        self.parts.append(f"<line {_attrs(x1=x1, y1=y1, x2=x2, y2=y2, stroke_width=width, class_=cls)}/>")

    def path(self, d, tone="plain", dashed=False, width=1.5, fill=False):
        cls = (f"tw-d-line tw-d-stroke-{self._tone(tone)}" + (" tw-d-dashed" if dashed else "")
               + (f" tw-d-{self._tone(tone)}" if fill else ""))
        self.parts.append(f"<path {_attrs(d=d, stroke_width=width, class_=cls)}/>")

    def circle(self, cx, cy, r, tone="plain"):
        self.parts.append(f"<circle {_attrs(cx=cx, cy=cy, r=r, class_=f'tw-d-box tw-d-{self._tone(tone)}')}/>")

    def arrow(self, x1, y1, x2, y2, label=None, tone="plain", dashed=False, head=7, width=1.5,
              label_side="right"):
        """A straight arrow from (x1, y1) to (x2, y2), its head drawn as a triangle (no
        <marker>, so it takes the stroke's colour everywhere), and an optional label beside its
        middle (`label_side`: right, left, above, below)."""
        ang = math.atan2(y2 - y1, x2 - x1)
        bx, by = x2 - head * math.cos(ang), y2 - head * math.sin(ang)
        self.line(x1, y1, bx, by, tone=tone, dashed=dashed, width=width)
        px, py = -math.sin(ang), math.cos(ang)
        pts = [(x2, y2), (bx + px * head / 2, by + py * head / 2),
               (bx - px * head / 2, by - py * head / 2)]
        points = " ".join(f"{_num(a)},{_num(b)}" for a, b in pts)
        self.parts.append(
            f"<polygon {_attrs(points=points, class_=f'tw-d-head tw-d-fill-{self._tone(tone)}')}/>")
        if label is not None:
            mx, my = (x1 + x2) / 2, (y1 + y2) / 2
            dx, dy, anchor = {"right": (6, 0, "start"), "left": (-6, 0, "end"),
                              "above": (0, -9, "middle"), "below": (0, 10, "middle")}[label_side]
            self.text(mx + dx, my + dy, label, size="small", anchor=anchor, mono=True)

    def open_link(self, href: str, name: str):
        """What is drawn until close_link() is a link (a box that opens its chapter), named
        `name` (its `<title>`: the name a screen reader gives it, and its tooltip; say where it
        leads).

        `href` may name a page of the book as `doc:chapters/block.md#anchor`; the build hook
        turns it into a link relative to the page the diagram is drawn on."""
        if self._open:
            raise ValueError("a link inside a link")
        self._links += 1
        self._open = True
        name = html.escape(name)
        # xlink:href, not href: Material's instant navigation re-assigns el.href on every [href]
        # element, which throws on an SVG <a> (its href is a read-only SVGAnimatedString)
        self.parts.append(f'<a xlink:href="{html.escape(href, quote=True)}" class="tw-d-link">'
                          f"<title>{name}</title>")

    def close_link(self):
        self.parts.append("</a>")
        self._open = False

    # ---------------------------------------------------------------- output

    @staticmethod
    def _tone(tone: str) -> str:
        if tone not in TONES:
            raise ValueError(f"tone {tone!r}: one of {TONES}")
        return tone

    def render(self, fig_id: str) -> str:
        """The SVG element, its ids prefixed by `fig_id` (unique on the page).

        A picture is one image to a screen reader (`role="img"`, whose children it does not
        see). A picture with links is a group instead, so that its links are there to reach:
        the drawing between them is hidden from it (the description says it all)."""
        t, d = f"{fig_id}-title", f"{fig_id}-desc"
        if self._open:
            raise ValueError("a link was opened and not closed")
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
                f'class="tw-diagram-svg" role="{"group" if self._links else "img"}" '
                f'viewBox="0 0 {_num(self.width)} {_num(self.height)}" '
                f'style="max-width:{_num(self.width * self.max_scale)}px" '
                f'aria-labelledby="{t}" aria-describedby="{d}">'
                f'<title id="{t}">{html.escape(self.title)}</title>'
                f'<desc id="{d}">{html.escape(self.desc)}</desc>')
        return head + self._body() + "</svg>"

    def _body(self) -> str:
        if not self._links:
            return "".join(self.parts)
        out, run, depth = [], [], 0
        for part in self.parts:
            if part.startswith("<a "):
                depth += 1
            if depth:
                if run:
                    out.append('<g aria-hidden="true">' + "".join(run) + "</g>")
                    run = []
                out.append(part)
            else:
                run.append(part)
            if part == "</a>":
                depth -= 1
        if run:
            out.append('<g aria-hidden="true">' + "".join(run) + "</g>")
        return "".join(out)

    def texts(self) -> list[str]:
        """Every text drawn, in order (tests read a diagram's labels from here)."""
        import re
        return [html.unescape(m) for m in re.findall(r"<text [^>]*>([^<]*)</text>", "".join(self.parts))]
