"""What the browser tests do to a widget on a page, written once.

`w` is a CSS selector for the widget's root (`[data-widget=mlp]`, `#widget-mlp`)."""

from __future__ import annotations


def move_slider(page, w, name, position):
    """Set the range input `name` to `position` (a stop index or a value) as a drag would:
    one `input` event. `window.__moved` records when, for latency measurements."""
    page.evaluate("""([w, name, pos]) => {
        const s = document.querySelector(`${w} input[type=range][name=${name}]`);
        window.__moved = performance.now();
        s.value = pos;
        s.dispatchEvent(new Event('input', {bubbles: true}));
    }""", [w, name, position])


def value_text(page, w, name):
    """The text of the widget's reported value `name`."""
    return page.locator(f'{w} .tw-value[data-name="{name}"] dd').inner_text().strip()


def wait_value(page, w, name, text, timeout=20_000):
    """Wait until the widget's value `name` reads `text`."""
    page.wait_for_function("""([w, name, text]) => {
        const dd = document.querySelector(`${w} .tw-value[data-name="${name}"] dd`);
        return dd && dd.textContent.trim() === text; }""", arg=[w, name, text], timeout=timeout)


def wait_live(page, w, settled=False, timeout=20_000):
    """Wait until the widget shows a live answer (and, with `settled`, no request is pending)."""
    page.wait_for_function("""([w, settled]) => { const el = document.querySelector(w);
        return el.dataset.source === 'live' && !(settled && el.classList.contains('tw-busy')); }""",
                           arg=[w, settled], timeout=timeout)


def open_widget(page, url, w, timeout=20_000, katex=None):
    """Go to `url` and wait until the widget's plot is drawn (and, with `katex` a timeout, until
    the page's maths is typeset too)."""
    page.goto(url)
    page.wait_for_selector(f"{w} .tw-plot .main-svg", timeout=timeout)
    if katex:
        page.wait_for_selector(".katex", timeout=katex)


def set_box(page, w, name, value):
    """Type `value` into the number box beside the control `name` and commit it, as leaving the
    box would: one `change` event."""
    box = page.locator(f'{w} input[name="{name}-value"]')
    box.fill(str(value))
    box.dispatch_event("change")


def wait_source(page, w, condition="true", source="live", timeout=20_000):
    """Wait until the widget's answer comes from `source` ('live' or 'precomputed') and the
    JavaScript expression `condition` holds, in which `w` is the widget's element."""
    page.wait_for_function(f"""() => {{
        const w = document.querySelector('{w}');
        return w.dataset.source === '{source}' && ({condition});
    }}""", timeout=timeout)


def refused_in_words(page, w, name, value, words, timeout=20_000):
    """Type `value` into the box of `name` (`set_box`) and wait until the widget's text includes
    `words`: the refusal of a value out of range, said on the page."""
    set_box(page, w, name, value)
    page.wait_for_function("([w, words]) => document.querySelector(w).innerText.includes(words)",
                           arg=[w, words], timeout=timeout)
