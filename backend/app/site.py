"""Serves the built book (`mkdocs build` output) from the same origin as the API.

Text assets are precompressed at build time (`<file>.gz` beside `<file>`); a client that
accepts gzip gets those bytes, which matters for readers on slow phone connections.
"""

from __future__ import annotations

import mimetypes
import posixpath
import re
from pathlib import Path
from xml.sax.saxutils import escape

from flask import Blueprint, abort, current_app, request, send_file
from werkzeug.security import safe_join

from backend.app import metrics

bp = Blueprint("site", __name__)

CACHE_SECONDS = 600
# How long a reader's browser may keep each file, as nginx's `map $uri $book_static_cache` in
# deploy/nginx/default.conf says it (a test holds the two to one answer): pages revalidate
# (a redeploy shows at once, and never leaves a reader on a page naming deleted bundles);
# what carries a hash of its content in its name keeps for a year: Material's bundles, and the
# folders the build writes the runtime, plotly.js and KaTeX into (widgets/build/assets.py), and
# the pictures of the opening figures, each named after its content (widgets/build/snapshots.py).
HASHED = (re.compile(r"^/assets/.*\.[0-9a-f]{8}\.min\.(js|css)$"),
          re.compile(r"^/assets/(book|vendor)/[a-z]+-[0-9a-f]{10}/"),
          re.compile(r"^/assets/book/snaps/[0-9a-f]{20}\.svg$"))


def cache_control(uri: str) -> str:
    # the sitemap names the address each reader asked for (sitemap() below)
    if uri.endswith(".html") or uri.endswith("/") or uri == "/sitemap.xml":
        return "no-cache"
    if any(h.match(uri) for h in HASHED):
        return "public, max-age=31536000, immutable"
    return f"public, max-age={CACHE_SECONDS}"
# The origin the build writes the sitemap under when BOOK_SITE_URL is unset
# (widgets/build/site_url.py); served, it becomes the address the reader asked for.
SITEMAP_PLACEHOLDER = "http://book.invalid/"


# Notebooks are served for download (the link at the top of each exercise page).
mimetypes.add_type("application/x-ipynb+json", ".ipynb")


def _site_dir() -> Path:
    # absolute: Flask's send_file reads a relative path from the app's package, not the cwd
    return Path(current_app.config["SITE_DIR"]).resolve()


@bp.get("/sitemap.xml")
def sitemap():
    """The sitemap with the reader's own address for the build's placeholder: Material's instant
    navigation follows only links to pages it lists, port and path included."""
    file = _site_dir() / "sitemap.xml"
    if not file.is_file():
        abort(404)
    # url_root comes from the Host header a client sent: escaped, it cannot add markup
    text = file.read_text(encoding="utf-8").replace(SITEMAP_PLACEHOLDER, escape(request.url_root))
    return text, 200, {"Content-Type": "application/xml; charset=utf-8",
                       "Cache-Control": cache_control("/sitemap.xml")}


@bp.get("/", defaults={"path": ""})
@bp.get("/<path:path>")
def page(path: str):
    if path == "api" or path.startswith("api/"):
        abort(404, description=f"no API endpoint /{path}; see /api/openapi.json")
    root = _site_dir()
    if not (root / "index.html").is_file():
        metrics.refuse("no_site", f"no built book in {root}")
        return ("The book has not been built yet: run `make serve` (or `mkdocs build`).\n",
                503, {"Content-Type": "text/plain; charset=utf-8"})
    target = safe_join(str(root), path)
    if target is None:
        abort(404)
    file = Path(target)
    if file.is_dir():
        if path and not path.endswith("/"):
            # Relative links in the page only resolve with the trailing slash. The folder as
            # resolved, not as asked ('chapters/../chapters' was echoed back whole).
            folder = posixpath.normpath("/" + path.lstrip("/")).lstrip("/")
            return "", 308, {"Location": f"{request.root_path}/{folder}/".replace("//", "/")}
        file = file / "index.html"
    if not file.is_file():
        abort(404)
    resp = _send(file)
    resp.headers["Cache-Control"] = cache_control("/" + path)
    return resp


def _send(file: Path):
    gz = file.with_name(file.name + ".gz")
    if file.suffix == ".gz":  # a gzip file asked for by its name: that file, as gzip bytes (as
        # text/html with no Content-Encoding, /index.html.gz read as garbage in a browser)
        return send_file(file, mimetype="application/gzip", max_age=CACHE_SECONDS,
                         conditional=True)
    mime = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    if gz.is_file() and "gzip" in request.headers.get("Accept-Encoding", ""):
        resp = send_file(gz, mimetype=mime, max_age=CACHE_SECONDS, conditional=True,
                         etag=True)
        resp.headers["Content-Encoding"] = "gzip"
    else:
        resp = send_file(file, mimetype=mime, max_age=CACHE_SECONDS, conditional=True)
    resp.headers["Vary"] = "Accept-Encoding"
    if mime.startswith("text/") or mime in ("application/javascript", "application/json"):
        resp.headers["Content-Type"] = f"{mime}; charset=utf-8"
    return resp


def not_found_page():
    page_404 = _site_dir() / "404.html"
    if page_404.is_file():
        resp = send_file(page_404, mimetype="text/html")
        resp.status_code = 404
        return resp
    return "Not found\n", 404, {"Content-Type": "text/plain; charset=utf-8"}
