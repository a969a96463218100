"""The checked questions in Chromium (issue 31), with the API unreachable (the answers are in the
page): each chapter's first question refuses a wrong answer with a hint and takes the worked
answer's own number; garbage is refused with a reason; a choice is picked from the keyboard; the
progress survives a reload and a click to another page, shows in the nav and on the home page, and is
reset; the questions fit a phone. Every question of the book is checked in node
(tests/js/questions.test.mjs) on the same values."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import new_page

pytestmark = pytest.mark.browser


def _manifest(pg) -> dict:
    return json.loads(pg.locator("#tw-questions").text_content())


def _offline(pg) -> None:
    pg.route("**/api/**", lambda route: route.abort())


def _questions(pg) -> list[dict]:
    """The page's questions, once the runtime has mounted them."""
    pg.wait_for_function("""() => [...document.querySelectorAll('section.tw-q')]
                               .every(s => s.dataset.mounted)""")
    return pg.evaluate("""() => [...document.querySelectorAll('section.tw-q')]
                             .map(s => JSON.parse(s.dataset.question))""")


def _answer(pg, qid: str, typed: str) -> str:
    section = pg.locator(f"#q-{qid.replace('.', '-')}")
    section.locator("input[type=text]").fill(typed)
    section.locator("input[type=text]").press("Enter")
    result = section.locator(".tw-q-result")
    pg.wait_for_function("el => el.textContent.length > 0", arg=result.element_handle())
    return result.text_content()


def _wrong(q: dict) -> str:
    t, x = q["tolerance"], q["expected"]
    step = 1 if "integer" in t else 3 * t["abs"] if "abs" in t else 3 * t["rel"] * abs(x) or 1
    return repr(x + step)


def test_each_chapters_first_question_is_checked_in_the_page(server, page):
    _offline(page)
    page.goto(server + "/", wait_until="domcontentloaded")
    chapters = _manifest(page)["chapters"]
    assert len(chapters) >= 1
    for chapter in chapters:
        page.goto(f"{server}/{chapter['url']}", wait_until="domcontentloaded")
        qs = [q for q in _questions(page) if q["kind"] == "number"]
        if not qs:
            continue
        q = qs[0]
        section = page.locator(f"#q-{q['id'].replace('.', '-')}")
        assert section.locator(".tw-q-hint").is_hidden()        # offered after a wrong try
        said = _answer(page, q["id"], _wrong(q))
        assert said.startswith(("Not quite", "Off by")), (q["id"], said)
        assert section.locator(".tw-q-hint").is_visible()
        assert section.locator("input[type=text]").get_attribute("aria-invalid") is None
        said = _answer(page, q["id"], q["shown"])                 # the worked answer, as printed
        assert said.startswith("Right"), (q["id"], said)
        assert section.locator(".tw-q-worked").evaluate("d => d.open")
        assert section.locator(".tw-q-state").text_content() == "answered right"


def test_garbage_is_refused_with_a_reason_and_marked_for_screen_readers(server, page):
    _offline(page)
    page.goto(server + "/", wait_until="domcontentloaded")
    chapter = _manifest(page)["chapters"][0]
    page.goto(f"{server}/{chapter['url']}", wait_until="domcontentloaded")
    q = next(q for q in _questions(page) if q["kind"] == "number")
    section = page.locator(f"#q-{q['id'].replace('.', '-')}")
    said = _answer(page, q["id"], "twelve")
    assert "is not a number" in said
    box = section.locator("input[type=text]")
    assert box.get_attribute("aria-invalid") == "true"
    result = section.locator(".tw-q-result")
    assert result.get_attribute("role") == "status"
    assert box.get_attribute("aria-describedby") == result.get_attribute("id")
    label = section.locator(f"label[for='{box.get_attribute('id')}']")
    assert label.text_content() == "Your answer"


def test_a_choice_is_answered_from_the_keyboard(server, page):
    _offline(page)
    page.goto(server + "/", wait_until="domcontentloaded")
    for chapter in _manifest(page)["chapters"]:
        page.goto(f"{server}/{chapter['url']}", wait_until="domcontentloaded")
        choice = next((q for q in _questions(page) if q["kind"] == "choice"), None)
        if choice:
            break
    else:
        pytest.fail("no choice question in the book")
    section = page.locator(f"#q-{choice['id'].replace('.', '-')}")
    radios = section.locator("input[type=radio]")
    assert radios.count() >= 2
    keys = [radios.nth(i).get_attribute("value") for i in range(radios.count())]
    radios.nth(0).focus()
    page.keyboard.press("Space")
    for _ in range(keys.index(choice["expected"])):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")                                   # submits the form
    page.wait_for_function("el => el.textContent.startsWith('Right')",
                           arg=section.locator(".tw-q-result").element_handle())


@pytest.fixture()
def wide(browser):
    """A desktop wide enough (≥ 1220 px) for Material to show the nav beside the text."""
    with new_page(browser, viewport={"width": 1400, "height": 900}) as pg:
        yield pg


def test_progress_survives_reload_and_navigation_and_is_reset(server, wide):
    page = wide
    _offline(page)
    page.goto(server + "/", wait_until="domcontentloaded")
    chapter = _manifest(page)["chapters"][0]
    total = len(chapter["questions"])
    page.goto(f"{server}/{chapter['url']}", wait_until="domcontentloaded")
    q = next(q for q in _questions(page) if q["kind"] == "number")
    assert _answer(page, q["id"], q["shown"]).startswith("Right")
    mark = page.locator(".tw-nav-q:visible").first
    assert mark.text_content().startswith(f"1/{total}") or total == 1
    # one mark, on the chapter's link: none on the table of contents' section links
    assert page.locator(".md-nav--primary .tw-nav-q").count() == 1
    assert page.locator(".md-nav--secondary .tw-nav-q").count() == 0
    # a wrong try after a right one: the badge says the right answer was earlier
    said = _answer(page, q["id"], _wrong(q))
    assert not said.startswith("Right")
    section = page.locator(f"#q-{q['id'].replace('.', '-')}")
    assert section.locator(".tw-q-state").text_content() == "answered right earlier"
    page.reload(wait_until="domcontentloaded")
    section = page.locator(f"#q-{q['id'].replace('.', '-')}")
    page.wait_for_function("el => el.textContent === 'answered right'",
                           arg=section.locator(".tw-q-state").element_handle())
    # the last answer typed is back in its box
    assert section.locator("input[type=text]").input_value() == _wrong(q)
    # to the home page by the site's navigation
    page.locator(".md-sidebar--primary a.md-nav__link:visible", has_text="Home").first.click()
    page.wait_for_selector("[data-progress] table")
    row = page.locator("[data-progress] tr", has_text=chapter["title"])
    assert f"1 of {total}" in row.text_content()
    page.on("dialog", lambda dialog: dialog.accept())
    page.locator("[data-progress] button", has_text="Reset my progress").click()
    page.wait_for_function("() => !document.querySelector('.tw-nav-q')")
    assert f"0 of {total}" in page.locator("[data-progress] tr", has_text=chapter["title"]).text_content()
    page.reload(wait_until="domcontentloaded")
    assert page.evaluate("localStorage.getItem('tw-questions-v1')") is None


def test_the_questions_fit_a_phone(server, phone):
    _offline(phone)
    phone.goto(server + "/", wait_until="domcontentloaded")
    chapter = _manifest(phone)["chapters"][0]
    phone.goto(f"{server}/{chapter['url']}", wait_until="domcontentloaded")
    first = phone.locator("section.tw-q").first
    first.scroll_into_view_if_needed()
    phone.wait_for_selector("section.tw-q .tw-q-check")
    assert phone.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    box = first.locator(".tw-q-check").bounding_box()
    assert box["height"] >= 44 and box["x"] + box["width"] <= phone.viewport_size["width"]
