"""The search index is fetched when the reader first goes to the search box, not on every first
visit (issue 33, item 7: it was a sixth of a chapter's first load on a slow link): a chapter
loads and draws without asking for it; focusing the search box asks for it once, and a search
then finds a chapter."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

INDEX = "/search/search_index.json"


def test_the_index_waits_for_the_search_box(server, page):
    asked = []
    page.on("request", lambda req: asked.append(req.url) if req.url.endswith(INDEX) else None)
    page.goto(server + "/chapters/scaling/", wait_until="networkidle")
    page.wait_for_selector('[data-widget="attention_scaling"] .tw-plot .main-svg')
    assert asked == []  # the page is idle: the request is held, not slow
    with page.expect_response(lambda resp: resp.url.endswith(INDEX)) as answer:
        page.keyboard.press("/")  # Material's shortcut focuses the search box
    assert answer.value.ok
    page.locator("input.md-search__input").fill("grouped-query")
    page.wait_for_selector(".md-search-result__item a[href*='chapters/']", timeout=15_000)
    assert len(asked) == 1


def test_the_phone_search_button_asks_for_it_too(server, phone):
    phone.goto(server + "/chapters/scaling/", wait_until="networkidle")
    with phone.expect_response(lambda resp: resp.url.endswith(INDEX)):
        phone.locator("label.md-header__button[for='__search']").click()
    phone.locator("input.md-search__input").fill("rotary")
    phone.wait_for_selector(".md-search-result__item a", timeout=15_000)
