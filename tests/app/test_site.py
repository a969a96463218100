"""The built book served from the API's origin."""

from __future__ import annotations

import gzip
import posixpath
import re

import pytest

from backend.app import create_app


def test_unbuilt_site_says_how_to_build_it(client):
    r = client.get("/")
    assert r.status_code == 503
    assert b"make serve" in r.data


@pytest.fixture()
def site_client(built_site):
    return create_app({"TESTING": True, "SITE_DIR": str(built_site)}).test_client()


def test_pages_are_served_with_trailing_slash_redirects(site_client):
    assert site_client.get("/").status_code == 200
    r = site_client.get("/chapters/scaling")
    assert r.status_code == 308 and r.headers["Location"].endswith("/chapters/scaling/")
    page = site_client.get("/chapters/scaling/")
    assert page.status_code == 200 and b"data-widget" in page.data


def test_gzip_clients_get_precompressed_assets(site_client, built_site):
    (plotly,) = built_site.glob("assets/vendor/plotly-*/plotly.min.js")
    uri = "/" + plotly.relative_to(built_site).as_posix()
    plain = site_client.get(uri)
    packed = site_client.get(uri, headers={"Accept-Encoding": "gzip, br"})
    assert packed.headers["Content-Encoding"] == "gzip"
    assert len(packed.data) < len(plain.data) / 2
    assert gzip.decompress(packed.data) == plain.data
    assert plain.headers["Content-Type"].startswith(("application/javascript", "text/javascript"))


def test_missing_pages_get_the_book_404_and_traversal_is_refused(site_client):
    r = site_client.get("/no/such/page/")
    assert r.status_code == 404 and b"<html" in r.data.lower()
    assert site_client.get("/../backend/app/__init__.py").status_code == 404
    assert site_client.get("/%2e%2e/backend/app/__init__.py").status_code == 404


def _nginx_cache_map() -> tuple[str, list[tuple[str, str]]]:
    """deploy/nginx/default.conf's `map $uri $book_static_cache`, as (default, [(regex, value)])
    in the order nginx tries them (the map holds regexes only, so the first match wins)."""
    import re
    from pathlib import Path

    conf = (Path(__file__).resolve().parents[2] / "deploy/nginx/default.conf").read_text()
    body = re.search(r"map \$uri \$book_static_cache \{(.*?)\n\}", conf, re.S).group(1)
    default, rules = None, []
    for line in body.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r'("?)(\S+?)\1\s+"([^"]*)";', line)
        assert m, f"a map line this test cannot read: {line!r}"
        key, value = m.group(2), m.group(3)
        if key == "default":
            default = value
        else:
            assert key.startswith("~"), f"only regex entries are expected: {key}"
            rules.append((key[1:], value))
    return default, rules


def _nginx_says(uri: str) -> str:
    import re

    default, rules = _nginx_cache_map()
    return next((value for regex, value in rules if re.search(regex, uri)), default)


def test_flask_and_nginx_tell_browsers_the_same_about_every_file(site_client, built_site):
    """`make serve` (Flask) and the lecture hall (nginx) serve the same book: every file gets the
    same Cache-Control from both. Pages revalidate, so a redeploy never leaves a reader on a page
    that names bundles that are gone; Material's content-hashed bundles keep for a year."""
    uris = ["/", "/chapters/scaling/"]
    for file in sorted(built_site.rglob("*")):
        if file.is_file() and not file.name.endswith(".gz"):
            rel = file.relative_to(built_site).as_posix()
            uris.append("/" + rel)
    seen = set()
    for uri in uris:
        response = site_client.get(uri)
        assert response.status_code == 200, uri
        assert response.headers["Cache-Control"] == _nginx_says(uri), uri
        seen.add(response.headers["Cache-Control"])
    assert seen == {"no-cache", "public, max-age=600", "public, max-age=31536000, immutable"}
    page = site_client.get("/chapters/scaling/")
    assert page.headers.get("ETag")  # what a no-cache page revalidates against
    assert site_client.get("/chapters/scaling/", headers={"If-None-Match": page.headers["ETag"]}
                           ).status_code == 304


# What a page loads as a script: <script src>, and the modules and scripts it preloads.
SCRIPT = re.compile(r'<script\b[^>]*\bsrc="([^"]+)"|<link rel="(?:modulepreload|preload)"'
                    r'(?: as="script")? href="([^"]+)"')
IMMUTABLE = "public, max-age=31536000, immutable"


def test_every_script_a_page_loads_is_content_hashed_and_kept_a_year(site_client, built_site):
    """Every script a built page loads, and plotly.js and KaTeX, which the runtime loads itself,
    sit under a name that carries a hash of its content (Material's bundles, and the folders
    widgets/build/assets.py writes), served immutable by Flask and nginx alike: a deploy that
    changes a module changes its URL, so no page runs one deploy's modules beside another's.
    The pages themselves revalidate."""
    scripts: dict[str, str] = {}
    for page in sorted(built_site.rglob("*.html")):
        folder = "/" + page.parent.relative_to(built_site).as_posix()
        for m in SCRIPT.finditer(page.read_text(encoding="utf-8")):
            src = m.group(1) or m.group(2)
            if src and not src.startswith("data:"):
                scripts[posixpath.normpath(posixpath.join(folder, src))] = page.name
    runtimes = {uri.rsplit("/", 1)[0] for uri in scripts if "/assets/book/runtime-" in uri}
    assert len(runtimes) == 1, runtimes  # one runtime: every page names the same folder
    (runtime,) = runtimes
    vendor = site_client.get(runtime + "/vendor.js").get_data(as_text=True)
    for path in re.findall(r'"([^"]+)"', vendor):  # plotly.js, and KaTeX for notebooks' math
        scripts[posixpath.normpath(posixpath.join(runtime, path))] = "vendor.js"
    assert any("/assets/vendor/katex-" in uri for uri in scripts)
    assert any("/assets/vendor/plotly-" in uri for uri in scripts)
    for uri in sorted(scripts):
        assert uri.startswith("/assets/"), uri  # nothing from outside the book
        response = site_client.get(uri)
        assert response.status_code == 200, uri
        assert response.headers["Cache-Control"] == IMMUTABLE == _nginx_says(uri), uri
    # no copy of them under an unhashed name that a stale page could still reach
    assert not (built_site / "assets/book/runtime").exists()
    assert not list((built_site / "assets/vendor").glob("*.js"))
    page = site_client.get("/chapters/scaling/")
    assert page.headers["Cache-Control"] == "no-cache" == _nginx_says("/chapters/scaling/")


PICTURE = re.compile(r'background-image:url\(([^)]+\.svg)\)')


def test_the_opening_figures_pictures_are_kept_a_year(site_client, built_site):
    """The pictures a page shows before plotly.js draws (widgets/build/snapshots.py) are named
    after their content, so Flask and nginx both let a browser keep them a year: a page that
    is revisited shows its pictures from the browser's cache, without asking again."""
    pictures = set()
    for page in sorted(built_site.rglob("index.html")):
        folder = "/" + page.parent.relative_to(built_site).as_posix()
        for src in PICTURE.findall(page.read_text(encoding="utf-8")):
            pictures.add(posixpath.normpath(posixpath.join(folder, src)))
    assert len(pictures) > 50, len(pictures)  # four per widget with a figure
    for uri in sorted(pictures):
        assert uri.startswith("/assets/book/snaps/"), uri
        response = site_client.get(uri)
        assert response.status_code == 200 and response.mimetype == "image/svg+xml", uri
        assert response.headers["Cache-Control"] == IMMUTABLE == _nginx_says(uri), uri


def test_the_sitemap_names_the_address_the_reader_asked_for(site_client, built_site):
    """Material's instant navigation follows only links to pages the sitemap lists, port and
    path included: the build's placeholder becomes the reader's own address, and pages carry
    no canonical link to the placeholder (widgets/build/site_url.py)."""
    from backend.app.site import SITEMAP_PLACEHOLDER

    assert SITEMAP_PLACEHOLDER in (built_site / "sitemap.xml").read_text(encoding="utf-8")
    r = site_client.get("/sitemap.xml", base_url="http://127.0.0.1:8123")
    text = r.get_data(as_text=True)
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-cache"
    assert SITEMAP_PLACEHOLDER not in text
    assert "<loc>http://127.0.0.1:8123/chapters/scaling/</loc>" in text
    page = site_client.get("/chapters/scaling/").get_data(as_text=True)
    assert 'rel="canonical"' not in page and "book.invalid" not in page
    # MkDocs's gzipped copy held the placeholder, served as it was: no file has it now
    assert not (built_site / "sitemap.xml.gz").exists()
    assert site_client.get("/sitemap.xml.gz").status_code == 404


def test_behind_a_trusted_proxy_the_sitemap_names_the_proxys_address(built_site):
    app = create_app({"TESTING": True, "SITE_DIR": str(built_site), "TRUSTED_PROXIES": 1})
    r = app.test_client().get("/sitemap.xml", headers={"X-Forwarded-Host": "book.example.edu",
                                                       "X-Forwarded-Proto": "https"})
    assert "<loc>https://book.example.edu/chapters/scaling/</loc>" in r.get_data(as_text=True)


def test_a_gzip_file_asked_for_by_name_is_gzip_and_a_redirect_names_the_folder_resolved(
        site_client):
    """Review L16: /index.html.gz was served as text/html with gzip bytes and no
    Content-Encoding (garbage in a browser), and the trailing-slash redirect echoed the path as
    asked ('/chapters/../chapters' -> '/chapters/../chapters/')."""
    r = site_client.get("/index.html.gz")
    assert r.status_code == 200 and r.mimetype == "application/gzip"
    assert "Content-Encoding" not in r.headers and r.data[:2] == b"\x1f\x8b"
    for asked in ("/chapters/../chapters", "/chapters/%2e%2e/chapters", "/chapters/./scaling"):
        r = site_client.get(asked)
        assert r.status_code == 308 and ".." not in r.headers["Location"], asked
        assert r.headers["Location"] in ("/chapters/", "/chapters/scaling/"), asked
    page = site_client.get("/", headers={"Accept-Encoding": "gzip"})  # the page itself as before
    assert page.headers["Content-Encoding"] == "gzip" and page.mimetype == "text/html"
