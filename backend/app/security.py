"""Security headers on every response, from the kept `secure` library (secure.py), with a
Content-Security-Policy that allows only the site's own origin, plus the configured API origin
(`BOOK_API_URL`) for the runtime's requests.

One policy for every page: Material's instant navigation swaps a page's content in without
loading it, so the page keeps the policy of the first page the reader opened, and whatever the
new page runs must be allowed there too. Inline scripts (mkdocs-material's few lines of
bootstrap, which read the reader's saved palette before first paint; the theme's own) are
allowed by their SHA-256 hashes, the union over the built site, computed when it is first
served; nothing else inline runs, and no page needs `'unsafe-eval'`. Data blocks
(`<script type="application/json">`) are not scripts and need nothing; an executed notebook's
figures are such data (widgets/build/widget_blocks.py), drawn by the runtime.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from urllib.parse import urlsplit

import secure
from flask import Flask, request

# <script> elements without src whose type is JavaScript (no type, or a JS MIME type).
INLINE_SCRIPT = re.compile(r"<script(?P<attrs>(?:\s[^>]*)?)>(?P<body>.*?)</script>", re.S | re.I)
JS_TYPES = {"", "text/javascript", "application/javascript", "module"}
TYPE_ATTR = re.compile(r"""\stype\s*=\s*["']?([^"'\s>]+)""", re.I)


def inline_script_hashes(html: str) -> set[str]:
    out = set()
    for m in INLINE_SCRIPT.finditer(html):
        attrs = m.group("attrs") or ""
        if re.search(r"\ssrc\s*=", attrs, re.I):
            continue
        kind = TYPE_ATTR.search(attrs)
        if (kind.group(1).lower() if kind else "") not in JS_TYPES:
            continue
        out.add(_sha256(m.group("body")))
    return out


def _sha256(body: str) -> str:
    return f"'sha256-{base64.b64encode(hashlib.sha256(body.encode('utf-8')).digest()).decode()}'"


def site_script_hashes(site_dir: str | Path) -> list[str]:
    """The hashes of every inline script of every page of the built site."""
    hashes: set[str] = set()
    for page in Path(site_dir).rglob("*.html"):
        hashes |= inline_script_hashes(page.read_text(encoding="utf-8", errors="replace"))
    return sorted(hashes)


def api_origin(api_url: str) -> str | None:
    if not api_url or api_url.startswith("/"):
        return None
    parts = urlsplit(api_url)
    return f"{parts.scheme}://{parts.netloc}"


def policy(script_hashes: list[str], api_url: str) -> secure.ContentSecurityPolicy:
    connect = ["'self'"] + ([api_origin(api_url)] if api_origin(api_url) else [])
    return (secure.ContentSecurityPolicy()
            .default_src("'self'")
            .script_src("'self'", *script_hashes)
            # plotly.js and KaTeX set element styles, and mkdocs-material writes style
            # attributes into its HTML: styles may be inline, scripts may not.
            .style_src("'self'", "'unsafe-inline'")
            .img_src("'self'", "data:", "blob:")
            .font_src("'self'", "data:")
            .connect_src(*connect)
            .object_src("'none'")
            .base_uri("'self'")
            .form_action("'self'")
            .frame_ancestors("'self'"))


def headers(script_hashes: list[str], api_url: str) -> dict[str, str]:
    return dict(secure.Secure(
        csp=policy(script_hashes, api_url),
        xcto=secure.XContentTypeOptions(),
        xfo=secure.XFrameOptions().sameorigin(),
        referrer=secure.ReferrerPolicy().strict_origin_when_cross_origin(),
        coop=secure.CrossOriginOpenerPolicy().same_origin(),
        permissions=secure.PermissionsPolicy().geolocation().microphone().camera(),
        hsts=secure.StrictTransportSecurity().max_age(31536000),
    ).headers)


def init_app(app: Flask) -> None:
    state: dict = {}

    def current(path: str = "/api/") -> dict[str, str]:
        """The headers of every response: one policy, whatever the path (see the docstring)."""
        site = Path(app.config["SITE_DIR"])
        stamp = (site / "index.html").stat().st_mtime if (site / "index.html").is_file() else None
        if state.get("stamp", "unset") != stamp:  # scanned once per build of the site
            hashes = site_script_hashes(site) if stamp is not None else []
            state.update(stamp=stamp, headers=headers(hashes, app.config["API_URL"]))
        return state["headers"]

    @app.after_request
    def add_headers(resp):
        for name, value in current(request.path).items():
            resp.headers.setdefault(name, value)
        resp.headers.pop("Server", None)
        return resp

    app.extensions["book_security"] = current

