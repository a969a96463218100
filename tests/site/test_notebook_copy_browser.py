"""An executed notebook's copy button copies its cell, under the site's own policy (strict CSP):
the element is the runtime's (widgets/runtime/clipboard.js); mkdocs-jupyter's inline copy of it,
and its Mermaid loader that imported from a CDN, are dropped by the build."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_a_cells_copy_button_copies_its_code_and_says_so(server, strict_page):
    page = strict_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page.goto(server + "/exercises/01-variance/")
    # the runtime's element, defined: it makes itself a focusable button when connected
    page.wait_for_selector("clipboard-copy[for='cell-1'][role='button'][tabindex='0']")
    button = page.locator("clipboard-copy[for='cell-1']")
    notice = button.locator(".notice")
    assert notice.is_hidden()
    button.click()
    notice.wait_for(state="visible")
    code = page.locator("#cell-1").text_content()
    assert code.strip() and page.evaluate("() => navigator.clipboard.readText()") == code
    notice.wait_for(state="hidden")  # after a second
    page.evaluate("() => navigator.clipboard.writeText('')")
    button.focus()
    page.keyboard.press("Enter")
    notice.wait_for(state="visible")
    assert page.evaluate("() => navigator.clipboard.readText()") == code
    assert page.console_errors == []
