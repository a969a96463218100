"""The book's references: one list (`docs/references.yml`), cited where each is used, gathered
on one page.

    {{ cite("vaswani2017") }}                 ->  [Vaswani et al., 2017](../references.md#vaswani2017)
    {{ cite("vaswani2017", "ainslie2023") }}  ->  two such links, joined by "; "
    {{ bibliography() }}                      ->  (on docs/references.md) every entry, by kind,
                                                  each with links back to the pages citing it

The build fails on a key the list does not have, on an entry no page cites, and on an entry
missing a field or with a link that is not https: a bibliography that names what the book
never uses, or a citation that leads nowhere, is a mistake a reader would find first.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache
from pathlib import Path

import yaml
from mkdocs.exceptions import PluginError

from widgets.build import macros

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LIST = DOCS / "references.yml"
PAGE = "references.md"
FIELDS = ("cite", "authors", "year", "title", "where", "url", "kind")
KINDS = {  # the bibliography's sections, in this order
    "paper": "Papers and reports",
    "model": "Models, their cards and configurations",
    "software": "Software and systems",
    "article": "Articles, courses and discussions",
}
KEY = re.compile(r"^[a-z][a-z0-9-]*\d{4}[a-z]?$")
TITLE = re.compile(r"^# (.+)$", re.M)
_PAGE = {"where": ""}


@lru_cache(maxsize=1)
def entries() -> dict[str, dict]:
    data = yaml.safe_load(LIST.read_text(encoding="utf-8")) or {}
    for key, entry in data.items():
        missing = [f for f in FIELDS if not entry.get(f)]
        if not KEY.match(key) or missing:
            raise PluginError(f"docs/references.yml: {key!r} needs a key like 'vaswani2017' and "
                              f"every field ({', '.join(FIELDS)}); missing {missing}")
        if not str(entry["url"]).startswith("https://") or entry["kind"] not in KINDS:
            raise PluginError(f"docs/references.yml: {key!r} needs an https link and a kind "
                              f"among {sorted(KINDS)}")
    return data


def citations(docs: Path = DOCS) -> dict[str, list[str]]:
    """Each key, the pages (docs-relative) that cite it, in path order."""
    out: dict[str, list[str]] = {}
    for path in sorted(docs.rglob("*.md")):
        rel = path.relative_to(docs).as_posix()
        if rel == PAGE:
            continue
        for _, _, call in macros.calls(path.read_text(encoding="utf-8"), rel):
            if call.name == "cite":
                for key in call.args:
                    pages = out.setdefault(key, [])
                    if rel not in pages:
                        pages.append(rel)
    return out


def _link(key: str, where: str) -> str:
    entry = entries().get(key)
    if entry is None:
        raise PluginError(f"no reference {key!r} in docs/references.yml")
    target = posixpath.relpath(PAGE, posixpath.dirname(where) or ".")
    return f"[{entry['cite']}, {entry['year']}]({target}#{key})"


def cite(call) -> str:
    if not call.args or not all(isinstance(a, str) for a in call.args) or call.kwargs:
        raise PluginError('cite() takes one or more reference keys: cite("vaswani2017")')
    return "; ".join(_link(key, _PAGE["where"]) for key in call.args)


def _title(rel: str) -> str:
    found = TITLE.search((DOCS / rel).read_text(encoding="utf-8"))
    return found.group(1).strip() if found else rel


def bibliography(call) -> str:
    if call.args or call.kwargs:
        raise PluginError("bibliography() takes no arguments")
    cited = citations()
    out = []
    for kind, heading in KINDS.items():
        keys = sorted((k for k, e in entries().items() if e["kind"] == kind),
                      key=lambda k: (entries()[k]["cite"].lower(), entries()[k]["year"], k))
        if not keys:
            continue
        out += [f"## {heading}", ""]
        for key in keys:
            e = entries()[key]
            back = ", ".join(f"[{_title(rel)}]({posixpath.relpath(rel, posixpath.dirname(PAGE) or '.')})"
                             for rel in cited[key])
            out.append(f'- <span id="{key}"></span>{e["authors"]} ({e["year"]}). '
                       f'*{e["title"]}*. {e["where"]}. <{e["url"]}>  \n'
                       f'  Cited in: {back}.')
        out.append("")
    return "\n".join(out)


MACROS = {"cite": cite, "bibliography": bibliography}


def on_config(config):
    """Check the list against the pages before any page is built."""
    entries.cache_clear()
    cited = citations(Path(config["docs_dir"]))
    unknown = sorted(set(cited) - set(entries()))
    if unknown:
        raise PluginError(f"cited but not in docs/references.yml: {unknown} "
                          f"(in {', '.join(p for k in unknown for p in cited[k])})")
    # an entry no page cites matters where the bibliography is built: a partial book (a test's
    # one-chapter build) cites only what its pages do
    unused = sorted(set(entries()) - set(cited))
    if unused and (Path(config["docs_dir"]) / PAGE).is_file():
        raise PluginError(f"docs/references.yml lists references no page cites: {unused}")
    return config


def on_page_markdown(markdown: str, page, config, files) -> None:
    _PAGE["where"] = page.file.src_uri
