"""Every page names its edition and the code's release in the footer (widgets/build/edition.py),
the same release a server running that code answers `/api/health` with, and a link to where a
reader reports a mistake."""

from __future__ import annotations

import json
import re
import urllib.request
from types import SimpleNamespace

import pytest

from backend.app.release import code_release, release
from backend.settings import SettingError
from widgets.build import edition

FOOTER = re.compile(r'<div class="md-copyright__highlight tw-edition">(.*?)</div>', re.S)


def _footer(html: str) -> str:
    found = FOOTER.findall(html)
    assert len(found) == 1, "one edition line in the footer"
    return found[0]


def test_the_newest_entry_is_the_first_and_entries_run_newest_first():
    text = "# x\n\n## 2026-12-06 · B\n\n- b\n\n## 2026-12-02 · A\n"
    assert edition.newest_entry(text) == ("2026-12-06", "B")
    with pytest.raises(ValueError, match="not newest first"):
        edition.newest_entry("## 2026-12-02 · A\n\n## 2026-12-06 · B\n")
    with pytest.raises(ValueError, match="no entry"):
        edition.newest_entry("# Editions\n\nnothing yet\n")


def test_the_report_link_is_the_hosts_when_set(monkeypatch):
    monkeypatch.delenv("BOOK_ERRATA_URL", raising=False)
    extra = edition.on_config(SimpleNamespace(extra={})).extra["tw_edition"]
    assert (extra["report"], extra["report_is_url"]) == (edition.REPORT_ANCHOR, False)
    monkeypatch.setenv("BOOK_ERRATA_URL", "https://git.example.edu/course/book/issues")
    extra = edition.on_config(SimpleNamespace(extra={})).extra["tw_edition"]
    assert (extra["report"], extra["report_is_url"]) == ("https://git.example.edu/course/book/issues", True)
    monkeypatch.setenv("BOOK_ERRATA_URL", "javascript:alert(1)")
    with pytest.raises(SettingError, match="BOOK_ERRATA_URL"):
        edition.on_config(SimpleNamespace(extra={}))


def test_the_release_ignores_the_device_and_the_cache_key_does_not(monkeypatch):
    from backend import device

    before = (code_release(), release())
    release.cache_clear()
    monkeypatch.setattr(device, "describe", lambda: "cuda (a card this host does not have)")
    try:
        assert code_release() == before[0]
        assert release() != before[1]
    finally:
        release.cache_clear()


@pytest.mark.parametrize("page", ["index.html", "chapters/scaling/index.html", "glossary/index.html"])
def test_every_page_names_the_edition_and_the_release(built_site, page):
    footer = _footer((built_site / page).read_text(encoding="utf-8"))
    date, title = edition.newest_entry(edition.CHANGELOG.read_text(encoding="utf-8"))
    assert f'datetime="{date}"' in footer
    assert f">{code_release()}</code>" in footer
    # the links resolve: the changelog page and its section on reporting (the default target)
    changelog = (built_site / "changelog" / "index.html").read_text(encoding="utf-8")
    assert 'id="report-a-mistake"' in changelog
    depth = page.count("/")
    assert f'href="{"../" * depth}changelog/#report-a-mistake"' in footer
    assert title in changelog


def test_a_server_running_this_code_names_the_pages_release(built_site, server):
    with urllib.request.urlopen(server + "/api/health", timeout=10) as r:
        served = json.load(r)["release"]
    with urllib.request.urlopen(server + "/chapters/masks/", timeout=10) as r:
        footer = _footer(r.read().decode())
    assert f">{served}</code>" in footer
