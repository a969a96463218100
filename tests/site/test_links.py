"""Every internal link of the built book leads somewhere: the page exists and so does the
anchor (issue 9). Reads the built files; no server needed."""

from __future__ import annotations

import posixpath
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key) and (key == "id" or tag == "a"):
                self.ids.add(a[key])
        if tag == "a" and a.get("href") is not None:
            self.links.append(a["href"])


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def target_file(site: Path, page_path: Path, href: str) -> tuple[Path | None, str]:
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:", "data:")):
        return None, ""
    rel = page_path.relative_to(site).as_posix()
    base = posixpath.dirname(rel)
    path = unquote(parts.path)
    if not path:
        return page_path, parts.fragment
    joined = posixpath.normpath(path.lstrip("/") if path.startswith("/")
                                else posixpath.join(base, path))
    target = site / joined
    if path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target, parts.fragment


def test_no_dead_internal_links_or_missing_anchors(built_site):
    pages = {p: parse(p) for p in sorted(built_site.rglob("*.html"))}
    assert len(pages) > 3
    dead = []
    for path, page in pages.items():
        where = path.relative_to(built_site).as_posix()
        for href in page.links:
            target, fragment = target_file(built_site, path, href)
            if target is None:
                continue
            if not target.is_file():
                dead.append(f"{where}: {href} (no such file)")
                continue
            if fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(fragment) not in ids:
                    dead.append(f"{where}: {href} (no anchor #{fragment})")
    assert not dead, "dead internal links:\n" + "\n".join(sorted(set(dead)))
