"""Every setting the spec allows reaches the server (issue 35, item 2; code review M1), in
Chromium against gunicorn as `make serve` runs it: the longest legal passage in each free-text
parameter (ASCII, and Devanagari, nine bytes a character once escaped in a URL) is computed
live, sent as a POST where a GET's request line would be too long; and what gunicorn itself
refuses (a request line past its limit, headers too large) is the API's JSON, not HTML."""

from __future__ import annotations

import http.client
import json
import re

import pytest
from widget_page import wait_source

from backend.compute import REGISTRY
from tests.support.browser import DESKTOP, new_page

pytestmark = pytest.mark.browser

TEXTS = [(name, p.name, p.max_length) for name, m in sorted(REGISTRY.items())
         for p in m.SPEC.params if p.type == "text"]
HINDI = "नदी पहाड़ों से होकर बहती है और समुद्र में मिल जाती है। "


def longest(kind: str, n: int) -> str:
    """A passage of exactly n characters (code points, as the spec counts them)."""
    unit = HINDI if kind == "hindi" else "The river flows through the valley to the sea. "
    text = (unit * (n // len(unit) + 1))[:n]
    return text[:-1] + "." if text.endswith(" ") else text


def page_of(site, name):
    for html in sorted(site.rglob("index.html")):
        rel = html.parent.relative_to(site).as_posix()
        if not rel.startswith("print") and f'data-widget="{name}"' in html.read_text("utf-8"):
            return "/" + rel + "/"
    return None


def enable(page, w, name, param) -> None:
    """Set the checkboxes that enable `param` (a Depends on a bool with a disabling case)."""
    for dep in REGISTRY[name].SPEC.param(param).depends:
        on = REGISTRY[name].SPEC.param(dep.on)
        free = [v for v in (True, False) if not dep.patch_for(v).get("disabled")]
        if on.type == "bool" and free:
            box = page.locator(f'{w} input[type=checkbox][name="{dep.on}"]').first
            if box.is_checked() != free[0]:
                with page.expect_response(lambda r: f"/widgets/{name}" in r.url):
                    box.click()


@pytest.mark.parametrize("kind", ["ascii", "hindi"])
@pytest.mark.parametrize("name, param, n", TEXTS, ids=[f"{w}.{p}" for w, p, _ in TEXTS])
def test_the_longest_legal_passage_reaches_the_server(browser, server, built_site, name, param,
                                                      n, kind):
    """The passage at the spec's character limit: computed live, or refused by the API itself
    (JSON naming the param: the attention and sampling widgets also bound a passage's tokens),
    never a transport error and a figure left behind."""
    path = page_of(built_site, name)
    if path is None:
        pytest.skip(f"no page shows {name}")
    text = longest(kind, n)
    assert len(text) == n
    w = f'[data-widget="{name}"]'
    with new_page(browser, **DESKTOP) as page:
        page.goto(server + path)
        page.wait_for_function(f"() => document.querySelector('{w}').dataset.spec === 'server'")
        enable(page, w, name, param)
        with page.expect_response(lambda r: f"/widgets/{name}" in r.url and r.request.method
                                  in ("GET", "POST") and "/notebook" not in r.url,
                                  timeout=120_000) as info:
            box = page.locator(f'{w} textarea[name="{param}"]').first
            box.fill(text)
            box.dispatch_event("change")
        resp = info.value
        if resp.request.method == "GET":  # never a request line a server may refuse
            assert len(resp.request.url.split("//", 1)[1].split("/", 1)[1]) + 1 <= 2000
        else:
            assert json.loads(resp.request.post_data)[param] == text
        if kind == "hindi" and n >= 300:  # nine bytes a character once escaped
            assert resp.request.method == "POST"
        body = resp.json()  # the API's JSON, whatever the status
        if resp.status == 200:
            wait_source(page, w, f"w.widget.shown.params['{param}'] === {json.dumps(text)}",
                        timeout=120_000)
            assert not page.locator(f"{w} .tw-error").first.is_visible()
        else:
            assert resp.status == 400 and body["param"] == param, body
            error = page.locator(f"{w} .tw-error").first
            error.wait_for(state="visible")
            assert body["error"] in error.inner_text()


def _raw(port: int, request: bytes) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.connect()
    conn.sock.sendall(request)
    resp = http.client.HTTPResponse(conn.sock, method="GET")
    resp.begin()
    body = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), body


@pytest.mark.parametrize("request_bytes, status", [
    (b"GET /api/widgets/training_signal/result?text=" + b"x" * 5000 + b" HTTP/1.1\r\n"
     b"Host: x\r\n\r\n", 414),
    (b"GET /api/health HTTP/1.1\r\nHost: x\r\n" + b"".join(
        b"X-Filler-%d: %s\r\n" % (i, b"y" * 100) for i in range(120)) + b"\r\n", 431),
    (b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"z" * 9000 + b"\r\n\r\n", 431),
])
def test_what_gunicorn_refuses_is_the_apis_json(server, request_bytes, status):
    port = int(server.rsplit(":", 1)[1])
    got, headers, body = _raw(port, request_bytes)
    assert got == status
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body)["error"]


def test_the_longest_passage_opens_as_a_notebook(browser, server, built_site):
    """"Open as notebook" for a passage too long for a link: the page POSTs the setting and saves
    the notebook the server makes, named as the server names it (as a link it was a 414:
    4,000 Devanagari characters are 36 kB once escaped)."""
    name, param = "training_signal", "text"  # its passage is bounded by characters alone
    n = REGISTRY[name].SPEC.param(param).max_length
    text = longest("hindi", n)
    w = f'[data-widget="{name}"]'
    with new_page(browser, **DESKTOP, accept_downloads=True) as page:
        page.goto(server + page_of(built_site, name))
        page.wait_for_function(f"() => document.querySelector('{w}').dataset.spec === 'server'")
        enable(page, w, name, param)
        box = page.locator(f'{w} textarea[name="{param}"]').first
        box.fill(text)
        box.dispatch_event("change")
        wait_source(page, w, f"w.widget.params['{param}'] === {json.dumps(text)}",
                    timeout=120_000)
        with page.expect_request(lambda r: r.url.endswith(f"/widgets/{name}/notebook")) as sent, \
                page.expect_download(timeout=60_000) as got:
            page.locator(f"{w} .tw-notebook").first.click()
        assert sent.value.method == "POST"
        assert json.loads(sent.value.post_data)[param] == text
        download = got.value
        # the server's name: the widget, what differs, a digest of the setting
        assert re.fullmatch(rf"{name}_[\w.-]+_[0-9a-f]{{10}}\.ipynb", download.suggested_filename)
        notebook = json.loads(open(download.path(), encoding="utf-8").read())
        assert any(json.dumps(text)[1:-1] in "".join(c["source"]) or text in "".join(c["source"])
                   for c in notebook["cells"])
        assert page.console_errors == []
