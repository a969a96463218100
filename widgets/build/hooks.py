"""The book's one MkDocs hook (`mkdocs.yml` names this file alone).

MkDocs loads a hook by its file path, as a module of its own: a build module named there and
also imported by another (the widget blocks call the figures' macros) would run twice, as two
copies with two sets of state. So MkDocs loads only this file, which imports each build module
once, as a package module, and runs their events in this order:

- `site_url`: the sitemap's address, which instant navigation reads (a placeholder the server
  rewrites, unless `BOOK_SITE_URL` names it);
- `edition`: the edition, release and errata link every page's footer names;
- `references`: the reference list checked against the pages' citations (`cite()` macros);
- `glossary`: the first mention of a glossary term links to its entry;
- `figures`: diagram fences, figure numbers, the appendices gathered from the chapters;
- `assets`: the vendored libraries, the runtime and the print edition's files, under
  content-hashed folder names;
- `typeset`: the chapters' math set by KaTeX at build time (the pages load no KaTeX script);
- `print_edition`: `/print/`, the whole book on one page (before the widget blocks gzip it);
- `questions`: the chapters' checked questions, read and computed; each page's head lists them;
- `widget_blocks`: widget fences, every `{{ macro(...) }}` of a page, then the site gzipped.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from widgets.build import (  # noqa: E402
    assets,
    edition,
    figures,
    glossary,
    print_edition,
    questions,
    references,
    site_url,
    snapshots,
    typeset,
    widget_blocks,
)

# snapshots before widget_blocks: its post-build step edits the pages that widget_blocks' gzips.
MODULES = (site_url, edition, references, glossary, figures, assets, typeset, print_edition,
           questions, snapshots, widget_blocks)


def _handlers(event: str) -> list:
    return [getattr(module, event) for module in MODULES if hasattr(module, event)]


def _chain(event: str):
    """An event that hands an item along (config, files, nav, markdown, HTML): each module's
    handler gets the last one's result, and `None` keeps the item, as MkDocs itself does."""
    handlers = _handlers(event)

    def run(item, **context):
        for handler in handlers:
            result = handler(item, **context)
            if result is not None:
                item = result
        return item

    run.__name__ = event
    return run


def _each(event: str):
    """An event with no item (before and after the build): each module's handler in turn."""
    handlers = _handlers(event)

    def run(**context):
        for handler in handlers:
            handler(**context)

    run.__name__ = event
    return run


on_config = _chain("on_config")
on_files = _chain("on_files")
on_nav = _chain("on_nav")
on_page_markdown = _chain("on_page_markdown")
on_page_content = _chain("on_page_content")
on_post_page = _chain("on_post_page")
on_pre_build = _each("on_pre_build")
on_post_build = _each("on_post_build")

_unrun = {name for module in MODULES for name in vars(module)
          if name.startswith("on_") and name not in globals()}
if _unrun:  # an event listed in a module but not above would silently never run
    raise RuntimeError(f"widgets/build/hooks.py does not run {sorted(_unrun)}")
