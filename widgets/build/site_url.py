"""MkDocs hook: the book's `site_url`, which Material's instant navigation depends on.

Material follows a link without reloading the page only when the link's page is in
`sitemap.xml`, and MkDocs writes an empty sitemap without a `site_url`. The book is served at
addresses nobody knows at build time (`make serve`, a container on any port, a course's own
host under a path), so unless `BOOK_SITE_URL` names the address, the build writes the sitemap
under a placeholder origin (`PLACEHOLDER`) and the book's own server rewrites it, per request,
to the address the reader asked for (backend/app/site.py; nginx's `sub_filter`,
deploy/nginx/default.conf). Material takes the scheme and host of sitemap entries from the page
but their port and path as written, which is why the rewrite is needed at all. Pages carry no
canonical link to the placeholder, and MkDocs's `sitemap.xml.gz` (which no server rewrites) is
removed when it holds the placeholder.
"""

from __future__ import annotations

from pathlib import Path

from backend import settings
from backend.app.site import SITEMAP_PLACEHOLDER


def on_config(config):
    config["site_url"] = settings.get("BOOK_SITE_URL") or SITEMAP_PLACEHOLDER
    return config


def on_post_page(output: str, page, config) -> str:
    if config["site_url"] == SITEMAP_PLACEHOLDER and page.canonical_url:
        output = output.replace(f'<link rel="canonical" href="{page.canonical_url}">', "", 1)
    return output


def on_post_build(config) -> None:
    if config["site_url"] == SITEMAP_PLACEHOLDER:
        (Path(config["site_dir"]) / "sitemap.xml.gz").unlink(missing_ok=True)
