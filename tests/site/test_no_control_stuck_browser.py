"""No control can get stuck (issue 33, item 1; UX review B1 and B2), for every widget of the
built book, in Chromium.

For each widget instance on each page, with a second control moved to an end first, every
number control is dragged to both ends of its slider and typed to its own ends and past them;
every choice takes each option, every checkbox both states; then all sliders go to their ends
together. End and Home on each slider must reach the max (the current ceiling included) and
the min the page offers under the other controls. After each action, once no request is pending or waiting, the controls must show
`widget.params` and the figure must show the same setting (`widget.shown.params`), and no
request the page sent may have been refused by the server's own validation.

The server's answer is the API's validation itself: each result request is resolved in this
process by `backend.app.query.params_from_query` (what the result route runs before computing),
and a refusal is answered with the API's 400. A legal setting is answered with the widget's
default figure under the setting's params: what is under test is the controls and the runtime's
bookkeeping, not the computation (every legal setting's computation is the fuzzer's and the
widget tests' to check), and computing the measured widgets for real would take minutes.
A widget added later is swept too: the widgets come from the registry and the pages from the
built site.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlsplit

import pytest
from werkzeug.datastructures import MultiDict

from backend.app.query import params_from_query
from backend.compute import REGISTRY
from backend.compute.spec import ParamError
from tests.support.browser import DESKTOP, new_page

pytestmark = pytest.mark.browser

SETTLED = """el => { const w = el.widget;
    return !!w && w.scheduler.idle; }"""

# What disagrees, in words: a control whose DOM value is not widget.params, or a param whose
# value is not the one the figure shows.
DISAGREE = """el => { const w = el.widget, out = [];
    const shown = (w.shown && w.shown.params) || {};
    for (const p of w.spec.params) {
      const v = w.params[p.name], c = w.controls[p.name];
      if (p.name in shown && shown[p.name] !== v) {
        out.push(`${p.name}: control ${JSON.stringify(v)}, figure ${JSON.stringify(shown[p.name])}`);
      }
      if (c.box && c.box.value !== String(v)) out.push(`${p.name}: box reads ${c.box.value}, param ${v}`);
      if (c.input && c.input.type === 'checkbox' && c.input.checked !== !!v) out.push(`${p.name}: checkbox`);
      if (c.input && c.input.tagName === 'SELECT' && c.input.value !== String(v)) out.push(`${p.name}: select`);
    }
    return out; }"""

CONTROLS = """el => el.widget.spec.params.map(p => {
    const c = el.widget.controls[p.name];
    return {name: p.name, type: p.type, min: p.min, max: p.max, step: p.step || 1,
            options: p.options || null, slider: !!c.slider,
            disabled: !!(c.slider ? c.slider.disabled : c.input && c.input.disabled)};
  })"""

SLIDE = """(el, [name, end]) => { const s = el.querySelector(`input[type=range][name="${name}"]`);
    if (s.disabled) return false;
    s.value = end === 'max' ? s.max : s.min;
    s.dispatchEvent(new Event('input', {bubbles: true})); return true; }"""

# Where a slider stands against its ends as the page offers them now (its stops' ends, else
# the param's min and max under the other params): End must reach the max, the current
# ceiling included, and Home the min (issue 33: two log2 sliders stopped short of theirs).
AT_END = """(el, [name, end]) => { const w = el.widget, p = w.spec.params.find(q => q.name === name);
    const eff = w.offered(p), list = w.stopsOf(p, eff), v = w.params[name];
    const want = list ? list[end === 'max' ? list.length - 1 : 0] : eff[end];
    return Math.abs(v - want) <= 1e-9 * Math.max(1, Math.abs(want)) ? null
      : `${name}: ${end === 'max' ? 'End' : 'Home'} stops at ${v}, its ${end} is ${want}`; }"""

# One round trip per action (there are thousands): the action, the wait until the widget is
# settled, then what disagrees; null where the control is disabled.
ACT = f"""async (el, arg) => {{
    if (!(ACTION)(el, arg)) return null;
    const until = performance.now() + 20000;
    while (!({SETTLED})(el)) {{
      if (performance.now() > until) return ['not settled 20 s after the action'];
      await new Promise(r => setTimeout(r, 10));
    }}
    return ({DISAGREE})(el); }}"""

TYPE = """(el, [name, value]) => { const b = el.querySelector(`input[name="${name}-value"]`);
    if (b.disabled) return false;
    b.value = String(value); b.dispatchEvent(new Event('change', {bubbles: true})); return true; }"""

CHOOSE = """(el, [name, value]) => { const s = el.querySelector(`select[name="${name}"]`);
    if (s.disabled) return false;
    s.value = value; s.dispatchEvent(new Event('change', {bubbles: true})); return true; }"""

TOGGLE = """(el, name) => { const c = el.querySelector(`input[type=checkbox][name="${name}"]`);
    if (c.disabled) return false;
    c.checked = !c.checked; c.dispatchEvent(new Event('change', {bubbles: true})); return true; }"""


def pages_with(site, name: str) -> list[str]:
    """The site's pages (paths) that carry a widget `name`, the print edition left out (its
    figures are static)."""
    out = []
    for html in sorted(site.rglob("index.html")):
        rel = html.parent.relative_to(site).as_posix()
        if rel.startswith("print") or f'data-widget="{name}"' not in html.read_text("utf-8"):
            continue
        out.append("/" + (rel + "/" if rel != "." else ""))
    return out


class Sweep:
    """One page, its result requests answered by the API's own validation (see the module's
    docstring), and every action's outcome checked."""

    def __init__(self, page, name: str):
        self.page, self.name = page, name
        self.refused: list[str] = []
        self.apart: list[str] = []
        self.short: list[str] = []
        self.default_body: dict | None = None
        page.route(f"**/api/widgets/{name}/result*", self.answer)

    def answer(self, route):
        query = urlsplit(route.request.url).query
        spec = REGISTRY[self.name].SPEC
        try:
            values = params_from_query(spec, MultiDict(parse_qsl(query, keep_blank_values=True)))
        except ParamError as err:
            self.refused.append(f"{query}: {err}")
            route.fulfill(status=400, content_type="application/json",
                          body=json.dumps({"error": str(err), "param": err.param}))
            return
        if self.default_body is None:
            route.continue_()  # before the page is read (the link's own setting): the server
            return
        body = {**self.default_body, "params": values, "cached": False}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    def act(self, root, what: str, script: str, arg) -> None:
        apart = root.evaluate(ACT.replace("ACTION", script), arg)
        if apart:  # null: a disabled control, nothing a reader can do
            self.apart.append(f"after {what}: " + "; ".join(apart))

    def key(self, root, name: str, key: str) -> None:
        """The reader's End or Home on a slider, then where it stands checked against its end."""
        slider = root.query_selector(f'input[type=range][name="{name}"]')
        if slider.is_disabled():
            return
        slider.press(key)
        self.page.wait_for_function(f"el => ({SETTLED})(el)", arg=root, timeout=20_000)
        end = "max" if key == "End" else "min"
        short = root.evaluate(AT_END, [name, end])
        if short:
            self.short.append(short)
        apart = root.evaluate(DISAGREE)
        if apart:
            self.apart.append(f"after {key} on {name}: " + "; ".join(apart))

    def reset(self, root) -> None:
        root.query_selector(".tw-reset").click()
        self.page.wait_for_function(f"el => ({SETTLED})(el)", arg=root, timeout=20_000)

    def sweep(self, root) -> None:
        self.default_body = self.default_body or root.evaluate("el => el.widget.baked[0]")
        controls = root.evaluate(CONTROLS)
        sliders = [c for c in controls if c["slider"]]
        for i, c in enumerate(sliders):
            self.reset(root)
            other = sliders[(i + 1) % len(sliders)] if len(sliders) > 1 else None
            if other is not None:  # a second control moved first, to its far end
                self.act(root, f"{other['name']} to its top", SLIDE, [other["name"], "max"])
            n, step = c["name"], c["step"]
            self.act(root, f"{n} to its bottom", SLIDE, [n, "min"])
            self.act(root, f"{n} to its top", SLIDE, [n, "max"])
            self.key(root, n, "Home")
            self.key(root, n, "End")
            for typed in (c["max"], c["min"], c["max"] + step, c["min"] - step):
                self.act(root, f"{n} typed {typed}", TYPE, [n, typed])
        for c in controls:
            if c["type"] == "choice":
                for option in c["options"]:
                    self.act(root, f"{c['name']} = {option}", CHOOSE, [c["name"], option])
            elif c["type"] == "bool":
                self.act(root, f"{c['name']} toggled", TOGGLE, c["name"])
                self.act(root, f"{c['name']} toggled back", TOGGLE, c["name"])
        self.reset(root)
        for end in ("max", "min"):  # every slider to the same end, one after another
            for c in sliders:
                self.act(root, f"all to their {end}: {c['name']}", SLIDE, [c["name"], end])


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_no_refusal_leaves_controls_and_figure_apart(browser, server, built_site, name):
    paths = pages_with(built_site, name)
    if not paths:
        pytest.skip(f"no page of the book shows {name}")
    problems = []
    for path in paths:
        with new_page(browser, **DESKTOP) as page:
            sweep = Sweep(page, name)
            page.goto(server + path)
            roots = page.locator(f'[data-widget="{name}"]')
            roots.first.wait_for(state="attached")
            page.wait_for_function(  # every instance follows the server's spec
                f"""() => [...document.querySelectorAll('[data-widget="{name}"]')]
                    .every(el => el.dataset.spec === 'server')""", timeout=20_000)
            for k in range(roots.count()):
                root = roots.nth(k).element_handle()
                root.scroll_into_view_if_needed()
                sweep.sweep(root)
            problems += [f"{path} {p}" for p in sweep.refused + sweep.apart + sweep.short]
            # a refusal is reported above, with its setting; anything else the console says
            problems += [f"{path} console: {e}" for e in page.console_errors
                         if "status of 400" not in e]
    assert problems == [], "\n".join(problems[:40])
