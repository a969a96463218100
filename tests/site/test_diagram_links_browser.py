"""The clickable model maps (home Figure 1, model chapter Figure 11.1), in Chromium (issue 33,
item 5; the UX review's H2): a screen reader reaches each of their links by a name that says
where it leads, and a link that has the keyboard's focus shows it.

Before the fix (the book as built then), the map's `<svg role="img">` made its children
presentational: Chromium's accessibility tree held one image and no link, though Tab stopped
on all 15; and the "causal self-attention" link (text only, no box) showed no focus at all
(`outline: none`), the others only a thicker grey stroke."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser

MAP = 'figure.tw-diagram[data-diagram="model_map"]'
PAGES = ["/", "/chapters/model/"]


def accessibility_tree(page) -> list[dict]:
    """Chromium's own accessibility tree of the page (what a screen reader is given): each
    node's role, name, description and whether it is ignored (hidden from it)."""
    cdp = page.context.new_cdp_session(page)
    try:
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        cdp.detach()
    return [{"role": n.get("role", {}).get("value"), "name": n.get("name", {}).get("value", ""),
             "description": n.get("description", {}).get("value", ""),
             "ignored": n.get("ignored", False)} for n in nodes]


@pytest.mark.parametrize("path", PAGES)
def test_a_screen_reader_reaches_every_link_by_its_name(page, server, path):
    page.goto(server + path)
    count = page.locator(f"{MAP} svg a").count()
    assert count == 15
    tree = [n for n in accessibility_tree(page) if not n["ignored"]]
    # the map is a group with its own name, not one image whose children nobody hears
    assert [n["role"] for n in tree if n["name"].startswith("Map of the decoder-only model")] \
        == ["group"]
    # each link is there, named by its part and the chapter it opens, said once
    links = [n for n in tree if n["role"] == "link" and re.fullmatch(r".+: the .*chapter.*", n["name"])]
    assert len(links) == count, [n["name"] for n in tree if n["role"] == "link"]
    assert "causal mask: the masks chapter" in [n["name"] for n in links]
    assert [n for n in links if n["description"] == n["name"]] == []
    # the drawing between the links (arrows' shapes, "T × 128") is not read out piecemeal
    assert [n["name"] for n in tree if n["role"] == "StaticText" and n["name"].startswith("T ×")] == []


def clip(box: dict, pad: float = 8) -> dict:
    return {"x": box["x"] - pad, "y": box["y"] - pad, "width": box["width"] + 2 * pad,
            "height": box["height"] + 2 * pad}


@pytest.mark.parametrize("path", PAGES)
def test_each_link_shows_the_keyboards_focus(page, server, path):
    page.goto(server + path)
    links = page.locator(f"{MAP} svg a")
    unseen = []
    for i in range(links.count()):
        link = links.nth(i)
        link.scroll_into_view_if_needed()
        page.evaluate("document.activeElement && document.activeElement.blur()")
        area = clip(link.bounding_box())
        before = page.screenshot(clip=area)
        link.focus()                       # then back and forth by keyboard: a keyboard focus
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")
        assert link.evaluate("a => a === document.activeElement && a.matches(':focus-visible')")
        ring = link.evaluate("""a => { const s = getComputedStyle(a);
            return [s.outlineStyle, parseFloat(s.outlineWidth)]; }""")
        if ring[0] == "none" or ring[1] < 2 or page.screenshot(clip=area) == before:
            unseen.append((link.get_attribute("aria-label") or link.text_content(), ring))
    assert unseen == []
