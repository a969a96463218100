"""The self-attention chapter in Chromium: the river_bank widget baked, moved live, offline,
shared through the URL, and on a phone."""

from __future__ import annotations

import pytest
from widget_page import value_text

from backend.compute import river_bank
from tests.support.browser import PHONE, new_page, next_frames

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/self-attention/"
WIDGET = '[data-widget="river_bank"]'


def plotted_weights(page):
    return page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').data[0].y")


def open_chapter(page, server, query=""):
    page.goto(server + CHAPTER + query)
    page.wait_for_selector(".katex", timeout=15_000)
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=15_000)
    return page.locator(WIDGET)


def wait_live_value(page, name, text):
    page.wait_for_function(
        """([w, name, text]) => {
            const root = document.querySelector(w);
            const dd = root.querySelector(`.tw-value[data-name="${name}"] dd`);
            return root.dataset.source === 'live' && dd && dd.textContent.trim() === text;
        }""", arg=[WIDGET, name, text], timeout=15_000)


def test_baked_then_live_neighbour_scaling_and_custom_word(page, server):
    widget = open_chapter(page, server)
    assert widget.get_attribute("data-source") == "precomputed"
    assert (value_text(page, WIDGET, "weight_the"), value_text(page, WIDGET, "weight_neighbour"),
            value_text(page, WIDGET, "weight_bank")) == ("0.137", "0.306", "0.557")
    assert (value_text(page, WIDGET, "water_after"), value_text(page, WIDGET, "money_after")) == ("1.73", "0.93")
    assert [round(x, 3) for x in plotted_weights(page)] == [0.137, 0.306, 0.557]

    widget.locator('select[name="neighbour"]').select_option("savings")
    wait_live_value(page, "water_after", "0.93")
    assert value_text(page, WIDGET, "money_after") == "1.73" and value_text(page, WIDGET, "leans") == "money"

    widget.locator('input[type=checkbox][name="scaled"]').uncheck()
    wait_live_value(page, "weight_bank", "0.734")
    assert [round(x, 3) for x in plotted_weights(page)] == [0.045, 0.221, 0.734]

    widget.locator('input[type=checkbox][name="scaled"]').check()
    widget.locator('select[name="neighbour"]').select_option("custom")
    for name, number in (("water", "1.6"), ("money", "1.6"), ("generic", "0.8")):
        box = widget.locator(f'input[name="{name}-value"]')
        box.fill(number)
        box.dispatch_event("change")
    # Every answer from the second box on is a tie (water = money), each with its own values:
    # wait for the last setting's, then read both from that one answer.
    final = river_bank.compute({**river_bank.SPEC.defaults(), "neighbour": "custom",
                                "water": 1.6, "money": 1.6, "generic": 0.8})["values"]
    wait_live_value(page, "water_after", f"{final['water_after']:.2f}")
    assert value_text(page, WIDGET, "leans") == "neither (a tie)"
    assert value_text(page, WIDGET, "water_after") == value_text(page, WIDGET, "money_after")
    assert page.console_errors == []


def test_a_slider_drag_moves_the_plot(page, server):
    widget = open_chapter(page, server)
    widget.locator('select[name="neighbour"]').select_option("custom")
    page.evaluate("""(w) => {
        const s = document.querySelector(`${w} input[type=range][name=water]`);
        s.value = 3;
        s.dispatchEvent(new Event('input', {bubbles: true}));
    }""", WIDGET)
    page.wait_for_function(
        f"""() => document.querySelector('{WIDGET}').dataset.source === 'live'
             && document.querySelector('{WIDGET} .tw-plot').data[0].y[1] > 0.37""", timeout=15_000)
    assert widget.locator('input[name="water-value"]').input_value() == "3"
    assert value_text(page, WIDGET, "leans") == "water"

    # Slider-to-plot latency: each move must redraw the neighbour's bar with its new weight.
    page.evaluate(f"""() => document.querySelector('{WIDGET} .tw-plot')
        .on('plotly_afterplot', () => {{ window.__plotted = performance.now(); }})""")
    latencies = []
    for water in (2.0, -1.0, 0.5, 2.5, -2.5, 1.0, 0.0, 1.5, -0.5, 2.2, 3.0, -3.0):
        page.evaluate("""([w, v]) => {
            const s = document.querySelector(`${w} input[type=range][name=water]`);
            window.__plotted = 0;
            window.__moved = performance.now();
            s.value = v;
            s.dispatchEvent(new Event('input', {bubbles: true}));
        }""", [WIDGET, water])
        page.wait_for_function(
            """([w, v]) => window.__plotted > window.__moved
                && document.querySelector(`${w} input[name=water-value]`).value == String(v)
                && document.querySelector(`${w} .tw-plot`).data[2].x[1] === v""",
            arg=[WIDGET, water], timeout=15_000)
        latencies.append(page.evaluate("window.__plotted - window.__moved"))
    latencies.sort()
    print(f"\nriver_bank slider-to-plot latency: median {latencies[len(latencies) // 2]:.0f} ms, "
          f"p95 {latencies[int(0.95 * (len(latencies) - 1))]:.0f} ms over {len(latencies)} moves")
    assert page.console_errors == []


def test_with_the_api_blocked_the_savings_flip_is_baked(page, server):
    page.route("**/api/**", lambda route: route.abort())
    widget = open_chapter(page, server)
    widget.locator('select[name="neighbour"]').select_option("savings")
    page.wait_for_function(
        f"""() => document.querySelector('{WIDGET} .tw-value[data-name="water_after"] dd')
             .textContent.trim() === '0.93'""", timeout=15_000)
    assert widget.get_attribute("data-source") == "precomputed"
    assert value_text(page, WIDGET, "money_after") == "1.73"


def test_a_shared_url_opens_on_its_setting(page, server):
    widget = open_chapter(page, server, "?river_bank.scaled=false")
    wait_live_value(page, "weight_bank", "0.734")
    assert not widget.locator('input[type=checkbox][name="scaled"]').is_checked()


def test_phone_layout_stacks_the_panels(browser, server):
    with new_page(browser, **PHONE) as page:
        open_chapter(page, server)
        layout = page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').layout")
        assert layout["xaxis"]["domain"] == [0, 1] and layout["xaxis2"]["domain"] == [0, 1]
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0


# ------------------------------------------------------------ the built pages themselves

def test_built_chapter_has_computed_numbers_and_real_source(built_site):
    from backend.compute import river_bank

    html = (built_site / "chapters/self-attention/index.html").read_text(encoding="utf-8")
    v = river_bank.compute(river_bank.SPEC.defaults())["values"]
    assert "{{" not in html, "an unexpanded value() call reached the page"
    for cell in (f"{v['weights'][0]:.3f}", f"{v['exp_sum']:.2f}", f"{v['exps'][2]:.2f}"):
        assert f"<td>{cell}</td>" in html
    assert "bank_in_context" in html and "every_word_in_context" in html and "--8&lt;--" not in html
    assert 'data-widget="river_bank"' in html


def test_notebook_ran_standalone_and_links_to_its_chapter(built_site):
    import json
    import re

    from tests.conftest import ROOT

    page = built_site / "exercises/llm101-03-self-attention/index.html"
    html = page.read_text(encoding="utf-8")
    assert "built-in attention gives bank" in html and "bank after : water 1.73" in html  # cells ran
    assert html.count('class="tw-notebook-figure"') >= 1  # its figure, handed to the runtime
    for href in re.findall(r'href="(\.\./\.\./chapters/[^"#]+)"', html):
        assert (page.parent / href / "index.html").resolve().is_file(), href
    nb = json.loads((ROOT / "docs/exercises/llm101-03-self-attention.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    imported = set(re.findall(r"^(?:from|import) (\w+)", code, re.M))
    assert imported <= {"math", "os", "torch", "plotly", "IPython", "numpy"}, imported
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")


# ------------------------------------------------------------ the fresh reader's findings

def test_the_data_table_is_on_the_page_and_follows_the_controls(page, server):
    """'Under the figure, ... the **Data table** (closed until you open it) redoes steps 1 to 3
    with the live numbers ... the four products weight × number whose column sums are bank's new
    vector.'"""
    widget = open_chapter(page, server)
    table = widget.locator("details.tw-table")
    assert table.is_visible() and table.get_attribute("open") is None
    assert table.locator("summary").inner_text().startswith("Data table")
    table.locator("summary").click()
    heads = table.locator("th[scope=col]").all_inner_texts()
    assert heads[-4:] == ["weight × water", "weight × money", "weight × generic", "weight × fourth"]
    assert table.locator("tbody tr").nth(3).locator("td").nth(5).inner_text() == "1.727"
    widget.locator('select[name="neighbour"]').select_option("custom")
    box = widget.locator('input[name="fourth-value"]')
    box.fill("3")
    box.dispatch_event("change")
    wait_live_value(page, "fourth_after", "0.92")
    assert table.locator("tbody tr").nth(3).locator("td").last.inner_text() == "0.917"
    # the table sits under the figure
    assert (table.bounding_box()["y"] > widget.locator(".tw-plot").bounding_box()["y"])
    assert page.console_errors == []


def test_custom_sliders_are_greyed_out_unless_the_neighbour_is_custom(page, server):
    widget = open_chapter(page, server)
    slider = widget.locator('input[type=range][name="water"]')
    assert slider.is_disabled()
    widget.locator('select[name="neighbour"]').select_option("custom")
    page.wait_for_function(
        f"() => !document.querySelector('{WIDGET} input[type=range][name=water]').disabled",
        timeout=5_000)
    widget.locator('select[name="neighbour"]').select_option("savings")
    page.wait_for_function(
        f"() => document.querySelector('{WIDGET} input[type=range][name=water]').disabled",
        timeout=5_000)


def _labels_outside_panel(page):
    """Word labels of the water/money panel whose drawn box leaves the panel's plot area."""
    return page.evaluate(f"""() => {{
        const root = document.querySelector('{WIDGET} .tw-plot');
        const area = root.querySelector('.draglayer .x2y2 .nsewdrag').getBoundingClientRect();
        const out = [];
        root.querySelectorAll('.scatterlayer .trace text').forEach(t => {{
            const b = t.getBoundingClientRect();
            if (!t.textContent) return;
            if (b.left < area.left - 1 || b.right > area.right + 1 || b.top < area.top - 1
                || b.bottom > area.bottom + 1) out.push(t.textContent);
        }});
        return out;
    }}""")


@pytest.mark.parametrize("width", [1280, 390])
def test_word_labels_stay_inside_the_panel_at_the_slider_extremes(browser, server, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        for corner in ("-3", "3"):
            widget = open_chapter(page, server, f"?river_bank.neighbour=custom&river_bank.water={corner}"
                                                f"&river_bank.money={corner}&river_bank.generic={corner}"
                                                f"&river_bank.fourth=3&river_bank.scaled=false")
            page.wait_for_function(
                f"""() => document.querySelector('{WIDGET}').dataset.source === 'live'
                     && document.querySelector('{WIDGET} .tw-plot').data[3].x[1] === {corner}""",
                timeout=15_000)
            next_frames(page)  # plotly has placed the new figure's labels
            texts = page.evaluate(f"""() => Array.from(document.querySelectorAll(
                '{WIDGET} .tw-plot .scatterlayer .trace text')).map(t => t.textContent)""")
            assert "custom word" in texts
            assert _labels_outside_panel(page) == [], (width, corner)
            assert widget.is_visible()
    finally:
        context.close()


def test_display_equations_fit_a_phone(browser, server):
    """Every display equation of the chapter fits a 390 px screen without hidden overflow."""
    with new_page(browser, **PHONE) as page:
        open_chapter(page, server)
        wide = page.evaluate("""() => Array.from(document.querySelectorAll('.katex-display'))
            .map(e => [e.scrollWidth, e.clientWidth, e.textContent.slice(0, 40)])
            .filter(([s, c]) => s > c + 1)""")
        assert wide == []
