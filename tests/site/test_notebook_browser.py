"""The "Open as notebook" button beside "Copy link" (widgets/runtime/actions.js `notebookLink`): after a
slider moves, a click downloads the notebook of exactly that setting; on a phone the control
bar still fits the screen."""

from __future__ import annotations

import ast
import json

import pytest

pytestmark = pytest.mark.browser

SCALING = "/chapters/scaling/"
W = '[data-widget="attention_scaling"]'


def _params(notebook: dict) -> dict:
    cell = next("".join(c["source"]) for c in notebook["cells"]
                if c["cell_type"] == "code" and "params = {" in "".join(c["source"]))
    assign = next(n for n in ast.parse(cell).body if isinstance(n, ast.Assign)
                  and n.targets[0].id == "params")
    return ast.literal_eval(assign.value)


def _open(pg, server):
    pg.goto(server + SCALING)
    pg.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=30_000)


def test_the_button_downloads_the_setting_on_the_page(browser, server, tmp_path):
    context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    page = context.new_page()
    try:
        _open(page, server)
        link = page.locator(f"{W} .tw-actions a.tw-notebook")
        # beside Copy link, in the same control bar
        assert page.evaluate(f"""() => {{
            const a = document.querySelector('{W} a.tw-notebook');
            return a.previousElementSibling.classList.contains('tw-copy') && a.hasAttribute('download');
        }}""")
        box = page.locator(f'{W} input[name="d_k-value"]')
        box.fill("256")
        box.dispatch_event("change")
        page.wait_for_function(f"""() => document.querySelector('{W}').dataset.source === 'live'
            && document.querySelector('{W}').widget.shown.params.d_k === 256""")
        with page.expect_download() as info:
            link.click()
        download = info.value
        assert download.suggested_filename == "attention_scaling_d_k-256.ipynb"
        path = tmp_path / download.suggested_filename
        download.save_as(path)
        notebook = json.loads(path.read_text())
        shown = page.evaluate(f"document.querySelector('{W}').widget.shown.params")
        assert _params(notebook) == shown
        assert shown["d_k"] == 256
    finally:
        context.close()


def test_the_control_bar_fits_a_phone(phone, server, fits_the_screen):
    _open(phone, server)
    fits_the_screen(phone, W)
    boxes = phone.evaluate(f"""() => [...document.querySelectorAll('{W} .tw-actions > *')]
        .map(e => {{ const r = e.getBoundingClientRect(); return [r.left, r.right]; }})""")
    assert len(boxes) == 3 and all(0 <= left and right <= 390 for left, right in boxes)


def test_with_the_server_unreachable_the_button_says_why(page, server):
    """UX review H7: offline (the API blocked), "Open as notebook" downloads nothing and says
    that the notebook is made by the book's server; it works again once the server answers."""
    page.route("**/api/**", lambda route: route.abort())
    _open(page, server)
    link = page.locator(f"{W} a.tw-notebook")
    page.wait_for_function(f"""() => document.querySelector('{W} a.tw-notebook')
        .getAttribute('aria-disabled') === 'true'""")
    downloads = []
    page.on("download", lambda d: downloads.append(d))
    link.click(force=True)  # aria-disabled: Playwright would wait; a reader can still click
    notice = page.locator(f"{W} .tw-notice")
    notice.wait_for(state="visible")
    assert "needs the book's server" in notice.inner_text()
    assert downloads == []
    page.unroute("**/api/**")
    box = page.locator(f'{W} input[name="d_k-value"]')
    box.fill("128")
    box.dispatch_event("change")
    page.wait_for_function(f"""() => document.querySelector('{W}').dataset.source === 'live'
        && document.querySelector('{W} a.tw-notebook').getAttribute('aria-disabled') === 'false'""")
