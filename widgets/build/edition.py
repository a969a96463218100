"""The edition every page names in its footer: the newest entry of the changelog
(`docs/changelog.md`, written by hand), the code's release (the same 12 hex digits
`/api/health` answers with, so a reader or an instructor can tell which code computed a page's
numbers) and where to report a mistake (`BOOK_ERRATA_URL`, else the changelog's own section)."""

from __future__ import annotations

import re
from pathlib import Path

from backend import settings
from backend.app.release import code_release

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = ROOT / "docs" / "changelog.md"
REPORT_ANCHOR = "changelog/#report-a-mistake"
# "## 2026-12-06 · The training chapter": an ISO date, then what the edition brought
ENTRY = re.compile(r"^## (\d{4}-\d{2}-\d{2}) · (.+)$", re.M)


def newest_entry(text: str) -> tuple[str, str]:
    entries = ENTRY.findall(text)
    if not entries:
        raise ValueError(f"{CHANGELOG.relative_to(ROOT)} has no entry '## YYYY-MM-DD · title'")
    dates = [date for date, _ in entries]
    if dates != sorted(dates, reverse=True):
        raise ValueError(f"{CHANGELOG.relative_to(ROOT)}'s entries are not newest first: {dates}")
    return entries[0]


def on_config(config):
    date, title = newest_entry(CHANGELOG.read_text(encoding="utf-8"))
    report = settings.get("BOOK_ERRATA_URL")
    config.extra["tw_edition"] = {
        "date": date, "title": title, "release": code_release(),
        # a site path goes through the theme's `url` filter (relative to each page); a URL as is
        "report": report or REPORT_ANCHOR, "report_is_url": bool(report),
    }
    return config
