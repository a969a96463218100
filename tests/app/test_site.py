"""The built book served from the API's origin."""

from __future__ import annotations

import gzip

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


def test_gzip_clients_get_precompressed_assets(site_client):
    plain = site_client.get("/assets/vendor/plotly.min.js")
    packed = site_client.get("/assets/vendor/plotly.min.js",
                             headers={"Accept-Encoding": "gzip, br"})
    assert packed.headers["Content-Encoding"] == "gzip"
    assert len(packed.data) < len(plain.data) / 2
    assert gzip.decompress(packed.data) == plain.data
    assert plain.headers["Content-Type"].startswith(("application/javascript", "text/javascript"))


def test_missing_pages_get_the_book_404_and_traversal_is_refused(site_client):
    r = site_client.get("/no/such/page/")
    assert r.status_code == 404 and b"<html" in r.data.lower()
    assert site_client.get("/../backend/app/__init__.py").status_code == 404
    assert site_client.get("/%2e%2e/backend/app/__init__.py").status_code == 404
