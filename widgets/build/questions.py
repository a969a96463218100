"""Checked questions: a reader types an answer, the page checks it against the book's own numbers.

Each chapter's questions live beside it, in `docs/chapters/_questions/<chapter>.yml`:

    chapter: chapters/kv-cache.md
    questions:
      - id: kv-cache.2                   # stable across releases: a course cites it
        ask: |                           # Markdown; {{ value(...) }} and math work here
          Set the key/value heads to 2. How many KiB does one token's cache take now?
        answer: {widget: kv_cache, value: bytes_per_token, params: {n_kv_heads: 2}}
        scale: 0.0009765625              # optional: the value times this is the answer (bytes → KiB)
        unit: KiB                        # optional: printed after the box and the answer
        tolerance: {rel: 0.01}           # or {abs: 0.5}, or integer; a choice is exact
        fmt: ".4g"                       # how the worked answer prints the expected value
        hint: |                          # shown after a wrong try
          …
        worked: |                        # shown after a right try, or on request
          …

An answer is one widget value (`widget`, `value`, `params`, read as `{{ value() }}` reads it), an
expression over several (`expr: "a / b"`, `of: {a: {widget: …}, b: {…}}`: arithmetic,
comparisons, `x if c else y`, and min, max, abs, round, sqrt, log, log2, exp, ceil, floor), or,
for a question with `choices: {key: label, …}`, a choice: `{choice: key}`, or an `expr` that
yields a key. Nothing is typed: the build computes every expected value, and stops when one
cannot be computed, when two questions share an id, or when a chapter's question is never shown.

A chapter shows its questions with `{{ questions("kv-cache") }}` (every one not marked
`inline: true`), and one of them anywhere with `{{ question("kv-cache.2") }}`. Each becomes a
block the runtime (`widgets/runtime/questions.js`) turns into an answer box; without JavaScript
the worked answer is still one click away. Every page's head carries the book's question list
(ids and versions: `tw-questions`), from which the runtime draws the reader's progress.

`BOOK_EXAM=1` builds an exam edition: no expected values, hints or worked answers in any page,
and no instructors' question list (`{{ question_list() }}` says so instead).
"""

from __future__ import annotations

import ast
import hashlib
import html
import json
import math
import operator
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from mkdocs.exceptions import PluginError

from backend import settings
from widgets.build import macros

FOLDER = "chapters/_questions"
ID = re.compile(r"^(?P<chapter>[a-z0-9][a-z0-9-]*)\.(?P<n>[1-9][0-9]?)$")
KEYS = {"id", "ask", "answer", "scale", "unit", "tolerance", "fmt", "hint", "worked", "choices",
        "inline"}
ANSWER_KEYS = {"widget", "value", "params", "expr", "of", "choice"}

ValueOf = Callable[[str, str, dict], object]


def exam() -> bool:
    """An exam edition: questions without their answers (`BOOK_EXAM=1` at build time)."""
    return bool(settings.get("BOOK_EXAM"))


# ------------------------------------------------------------------------- expressions

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow,
           ast.Mod: operator.mod}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
_FUNCTIONS = {"min": min, "max": max, "abs": abs, "round": round, "sqrt": math.sqrt,
              "log": math.log, "log2": math.log2, "log10": math.log10, "exp": math.exp,
              "ceil": math.ceil, "floor": math.floor}


def evaluate(expr: str, names: dict):
    """`expr` over `names`: arithmetic and comparisons only, no attribute, no import, no loop."""
    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise PluginError(f"{expr!r}: {node.id!r} is not in `of`")
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](walk(node.operand))
        if isinstance(node, ast.BoolOp):
            values = [walk(v) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            left = walk(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = walk(right_node)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return walk(node.body) if walk(node.test) else walk(node.orelse)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in _FUNCTIONS and not node.keywords):
            return _FUNCTIONS[node.func.id](*(walk(a) for a in node.args))
        raise PluginError(f"{expr!r}: {ast.dump(node)[:60]} is not allowed in an answer")

    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise PluginError(f"{expr!r} is not an expression: {exc.msg}") from None
    return walk(tree)


# ----------------------------------------------------------------------------- questions

@dataclass
class Question:
    id: str
    chapter: str                 # the chapter's page, "chapters/kv-cache.md"
    ask: str
    answer: dict
    hint: str
    worked: str
    unit: str = ""
    scale: float = 1.0
    tolerance: dict = field(default_factory=dict)
    fmt: str = ".4g"
    choices: dict = field(default_factory=dict)
    inline: bool = False
    expected: object = None      # computed
    source: str = ""             # the file it was read from

    @property
    def kind(self) -> str:
        return "choice" if self.choices else "number"

    @property
    def version(self) -> str:
        """Changes when what counts as right changes: progress on an unchanged question survives
        a new release, on a changed one it is dropped."""
        key = json.dumps([self.id, self.kind, self._settled(), self.tolerance,
                          sorted(self.choices)], sort_keys=True)
        return hashlib.sha256(key.encode()).hexdigest()[:12]

    def _settled(self):
        """The expected answer to a hundredth of its tolerance, for the version: a model's loss
        moves in its 7th figure with torch's thread count (attention-maps.3: 8.06092075964 on one
        thread, 8.06092268151 on two), which must not drop a reader's progress, while a change
        that moves what counts as right does."""
        if self.kind == "choice" or "integer" in self.tolerance:
            return self.expected
        if "abs" in self.tolerance:
            return round(self.expected / (self.tolerance["abs"] / 100))
        figures = max(1, math.ceil(-math.log10(self.tolerance["rel"] / 100)))
        return f"{self.expected:.{figures}g}"

    def shown(self) -> str:
        """The expected answer as the worked answer prints it."""
        if self.kind == "choice":
            return self.choices[self.expected]
        text = format(self.expected, self.fmt)
        return f"{text} {self.unit}".strip()

    def payload(self, exam_edition: bool = False) -> dict:
        """What the page carries for the runtime (`data-question`): in an exam edition, no answer."""
        data = {"id": self.id, "kind": self.kind, "v": self.version, "unit": self.unit}
        if not exam_edition:
            data.update(expected=self.expected, tolerance=self.tolerance, shown=self.shown())
        return data

    def check(self, value) -> bool:
        """The same rule the runtime applies (widgets/runtime/questions.js), for the tests."""
        if self.kind == "choice":
            return value == self.expected
        return within(value, self.expected, self.tolerance)


def within(value: float, expected: float, tolerance: dict) -> bool:
    if "integer" in tolerance:
        return float(value).is_integer() and int(value) == round(expected)
    if "abs" in tolerance:
        return abs(value - expected) <= tolerance["abs"] * (1 + 1e-9)
    return abs(value - expected) <= tolerance["rel"] * abs(expected) * (1 + 1e-9)


def _tolerance(raw, where: str) -> dict:
    if raw is None:
        return {"rel": 0.01}
    if raw == "integer":
        return {"integer": True}
    if (isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) in {"rel", "abs"}
            and isinstance(next(iter(raw.values())), int | float)
            and next(iter(raw.values())) >= 0):
        return {k: float(v) for k, v in raw.items()}
    raise PluginError(f"{where}: tolerance is {{rel: x}}, {{abs: x}} or integer, not {raw!r}")


def read(path: Path) -> list[Question]:
    """One chapter's questions, checked for shape (not yet computed)."""
    where = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise PluginError(f"{where}: not YAML: {exc}") from None
    if not isinstance(data, dict) or set(data) != {"chapter", "questions"}:
        raise PluginError(f"{where}: needs `chapter:` and `questions:`, nothing else")
    chapter, slug = data["chapter"], path.stem
    if chapter != f"chapters/{slug}.md":
        raise PluginError(f"{where}: chapter must be chapters/{slug}.md, the file's own name")
    out = []
    for n, raw in enumerate(data["questions"] or [], 1):
        at = f"{where}, question {n}"
        if not isinstance(raw, dict) or set(raw) - KEYS:
            raise PluginError(f"{at}: unknown keys {sorted(set(raw) - KEYS) if isinstance(raw, dict) else raw!r}")
        for key in ("id", "ask", "answer", "hint", "worked"):
            if not raw.get(key):
                raise PluginError(f"{at}: needs `{key}`")
        match = ID.match(str(raw["id"]))
        if not match or match["chapter"] != slug:
            raise PluginError(f"{at}: id {raw['id']!r} must read {slug}.<number>")
        answer = raw["answer"]
        if not isinstance(answer, dict) or set(answer) - ANSWER_KEYS:
            raise PluginError(f"{at}: answer takes {sorted(ANSWER_KEYS)}")
        choices = raw.get("choices") or {}
        if not isinstance(choices, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in choices.items()):
            # YAML reads a bare yes/no/on/off key as a boolean
            raise PluginError(f"{at}: choices maps a key (a string: quote yes and no) to its label")
        if "choice" in answer and not choices:
            raise PluginError(f"{at}: a `choice` answer needs `choices`")
        out.append(Question(
            id=raw["id"], chapter=chapter, ask=raw["ask"], answer=answer, hint=raw["hint"],
            worked=raw["worked"], unit=str(raw.get("unit") or ""),
            scale=float(raw.get("scale", 1.0)),
            tolerance={} if choices else _tolerance(raw.get("tolerance"), at),
            fmt=str(raw.get("fmt") or ".4g"), choices=choices, inline=bool(raw.get("inline")),
            source=where))
    return out


def _one_value(spec: dict, value_of: ValueOf, at: str):
    if not isinstance(spec, dict) or {"widget", "value"} - set(spec) or set(spec) - {"widget", "value", "params"}:
        raise PluginError(f"{at}: a value is {{widget, value, params}}, not {spec!r}")
    return value_of(spec["widget"], spec["value"], dict(spec.get("params") or {}))


def compute_expected(q: Question, value_of: ValueOf) -> None:
    """Fill in `q.expected` from the book's code; PluginError when it cannot be computed."""
    at, answer = f"{q.source}: {q.id}", q.answer
    if "choice" in answer:
        result = str(answer["choice"])
    elif "expr" in answer:
        of = answer.get("of") or {}
        names = {name: _one_value(spec, value_of, f"{at}, {name}") for name, spec in of.items()}
        result = evaluate(str(answer["expr"]), names)
    else:
        result = _one_value({k: v for k, v in answer.items()}, value_of, at)
    if q.kind == "choice":
        if str(result) not in q.choices:
            raise PluginError(f"{at}: the answer {result!r} is not one of the choices {sorted(q.choices)}")
        q.expected = str(result)
        return
    if isinstance(result, bool) or not isinstance(result, int | float) or not math.isfinite(result):
        raise PluginError(f"{at}: the answer must be a finite number, got {result!r}")
    value = result * q.scale
    # Rounded to 12 significant figures: the version (and the page) must not change with the
    # last bits a different CPU gives the same computation.
    q.expected = int(value) if "integer" in q.tolerance else float(f"{value:.12g}")
    if "integer" in q.tolerance and not float(value).is_integer():
        raise PluginError(f"{at}: tolerance integer, but the answer is {value!r}")


class Book:
    """Every question of the book, read once per build, computed on first use."""

    def __init__(self, docs_dir: Path, value_of: ValueOf):
        self.value_of = value_of
        self.by_id: dict[str, Question] = {}
        self.by_chapter: dict[str, list[Question]] = {}
        folder = docs_dir / FOLDER
        for path in sorted(folder.glob("*.yml")) if folder.is_dir() else []:
            for q in read(path):
                if q.id in self.by_id:
                    raise PluginError(f"{path}: id {q.id} is used twice "
                                      f"(also in {self.by_id[q.id].source})")
                self.by_id[q.id] = q
                self.by_chapter.setdefault(path.stem, []).append(q)
        self.computed = False
        self.shown: dict[str, str] = {}      # question id -> the page that showed it

    def compute(self) -> None:
        if not self.computed:
            for q in self.by_id.values():
                compute_expected(q, self.value_of)
            self.computed = True

    def manifest(self, urls: dict[str, str], titles: dict[str, str]) -> dict:
        """What every page's head carries: each chapter's questions, by id and version."""
        self.compute()
        chapters = []
        for slug, qs in self.by_chapter.items():
            src = f"chapters/{slug}.md"
            if src in urls:
                chapters.append({"url": urls[src], "title": titles.get(src, slug),
                                 "questions": [[q.id, q.version] for q in qs]})
        order = list(urls)
        chapters.sort(key=lambda c: order.index(next(s for s, u in urls.items() if u == c["url"])))
        return {"chapters": chapters}


# --------------------------------------------------------------------------------- HTML

def _md_block(tag: str, cls: str, text: str, extra: str = "") -> str:
    return f'<{tag} class="{cls}" markdown="block"{extra}>\n\n{text.strip()}\n\n</{tag}>'


def render(q: Question, exam_edition: bool) -> str:
    """The question as Markdown in HTML (md_in_html), read by the page's own Markdown."""
    anchor = "q-" + q.id.replace(".", "-")
    attrs = html.escape(json.dumps(q.payload(exam_edition), separators=(",", ":")), quote=True)
    parts = [f'<section class="tw-q" id="{anchor}" data-question="{attrs}" markdown="block">',
             f'<p class="tw-q-head"><a class="tw-q-id" href="#{anchor}">Question {q.id}</a>'
             f'<span class="tw-q-state"></span></p>',
             _md_block("div", "tw-q-ask", q.ask)]
    if q.kind == "choice":
        items = "\n".join(f'- `{key}` {label}' for key, label in q.choices.items())
        parts.append(_md_block("div", "tw-q-choices", items))
    if not exam_edition:
        parts.append(_md_block("details", "tw-q-hint", "<summary>Hint</summary>\n\n" + q.hint))
        worked = f"**Answer: {html.escape(q.shown().rstrip('.'))}.**\n\n{q.worked.strip()}"
        parts.append(_md_block("details", "tw-q-worked",
                               "<summary>Worked answer</summary>\n\n" + worked))
    parts.append("</section>")
    return "\n" + "\n".join(parts) + "\n"


def render_listing(book: Book, titles: dict[str, str]) -> str:
    """The instructors' list (a page in the docs' root): every question, its expected value,
    what the page accepts and the code that computes it."""
    if exam():
        return "*This is an exam edition (`BOOK_EXAM=1`): the questions' answers are not in it.*\n"
    book.compute()
    out = []
    order = list(titles)  # the nav's order; a chapter outside the nav last
    for slug, qs in sorted(book.by_chapter.items(), key=lambda item: order.index(
            f"chapters/{item[0]}.md") if f"chapters/{item[0]}.md" in order else len(order)):
        src = f"chapters/{slug}.md"
        out.append(f"\n## {titles.get(src, slug)}\n")
        for q in qs:
            link = f"[Question {q.id}]({src}#q-{q.id.replace('.', '-')})"
            choices = ("\n\n" + "\n".join(f"- `{k}` {label}" for k, label in q.choices.items())
                       if q.choices else "")
            out.append(_md_block(
                "div", "tw-q-listing",
                f"**{link}**\n\n{q.ask.strip()}{choices}\n\n"
                f"*Answer:* **{html.escape(q.shown())}** (accepts {_accepts(q)}) · "
                f"*computed by* {_how(q)}"))
    return "\n".join(out) + "\n"


def _accepts(q: Question) -> str:
    if q.kind == "choice":
        return "that choice"
    t = q.tolerance
    if "integer" in t:
        return "exactly"
    if "abs" in t:
        return f"± {t['abs']:g} {q.unit}".strip()
    return f"± {t['rel']:.0%}" if t["rel"] >= 0.01 else f"± {t['rel']:.1%}"


def _how(q: Question) -> str:
    def one(spec):
        params = ", ".join(f"{k}={v!r}" for k, v in (spec.get("params") or {}).items())
        return f"`{spec['widget']}` → `{spec['value']}`" + (f" at {params}" if params else "")
    a = q.answer
    if "choice" in a:
        return "a choice (conceptual)"
    if "expr" in a:
        of = "; ".join(f"{name} = {one(spec)}" for name, spec in (a.get("of") or {}).items())
        text = f"`{a['expr']}` with {of}"
    else:
        text = one(a)
    if q.scale != 1:
        inverse = 1 / q.scale
        text += f", ÷ {inverse:,.0f}" if inverse == round(inverse) else f", × {q.scale:g}"
    return text


# --------------------------------------------------------------------------- the hooks

_STATE: dict = {"book": None, "urls": {}, "titles": {}, "where": ""}


def _book() -> Book:
    if _STATE["book"] is None:
        raise PluginError("questions: the book's questions were not read (on_files did not run)")
    return _STATE["book"]


def settings_for(chapter: str, widget: str) -> list[dict]:
    """The settings of `widget` the questions of `chapter` ("chapters/kv-cache.md") read their
    answers at: the page bakes them, so a reader can confirm an answer with the API down."""
    book = _STATE["book"]
    if book is None:
        return []
    out = []
    for q in book.by_chapter.get(Path(chapter).stem, []):
        answer = q.answer
        for spec in [answer] if "widget" in answer else list((answer.get("of") or {}).values()):
            if isinstance(spec, dict) and spec.get("widget") == widget:
                params = dict(spec.get("params") or {})
                if params not in out:
                    out.append(params)
    return out


def question_macro(call: macros.Call) -> str:
    (qid,) = macros.arguments(call, 1, 'one question id: question("kv-cache.2")')
    book = _book()
    q = book.by_id.get(qid)
    if q is None:
        raise PluginError(f"no question {qid!r} in {FOLDER}/")
    return _show(book, q)


def questions_macro(call: macros.Call) -> str:
    (slug,) = macros.arguments(call, 1, 'a chapter\'s name: questions("kv-cache")')
    book = _book()
    if slug not in book.by_chapter:
        raise PluginError(f"no {FOLDER}/{slug}.yml")
    return "".join(_show(book, q) for q in book.by_chapter[slug] if not q.inline)


def _show(book: Book, q: Question) -> str:
    where = _STATE["where"]
    if where != q.chapter:
        raise PluginError(f"question {q.id} belongs to {q.chapter}, not to {where}")
    if q.id in book.shown:
        raise PluginError(f"question {q.id} is shown twice")
    book.compute()
    book.shown[q.id] = where
    return render(q, exam())


def list_macro(call: macros.Call) -> str:
    macros.arguments(call, 0, "no arguments: question_list()")
    return render_listing(_book(), _STATE["titles"])


def progress_macro(call: macros.Call) -> str:
    """`{{ progress_view() }}`: where the runtime draws the reader's progress (the home page)."""
    macros.arguments(call, 0, "no arguments: progress_view()")
    return ('<div class="tw-progress" data-progress>'
            '<noscript>Your progress is shown here when JavaScript runs.</noscript></div>')


MACROS = {"question": question_macro, "questions": questions_macro, "question_list": list_macro,
          "progress_view": progress_macro}


def start(docs_dir: Path, value_of: ValueOf) -> None:
    _STATE.update(book=Book(docs_dir, value_of), urls={}, titles={}, where="")


def on_nav(nav, config, files):
    """The chapters in reading order, with their titles and URLs: the progress view's rows."""
    urls, titles = {}, {}
    for page in nav.pages:
        src = page.file.src_uri
        if src.startswith("chapters/"):
            urls[src], titles[src] = page.url, page.title or src
    _STATE.update(urls=urls, titles=titles)
    book = _STATE["book"]
    if book is not None:
        config.extra["tw_questions"] = json.dumps(book.manifest(urls, titles),
                                                  separators=(",", ":")).replace("</", "<\\/")
    return nav


def on_page_markdown(markdown: str, page, config, files):
    _STATE["where"] = page.file.src_uri
    return markdown


def on_post_build(config) -> None:
    book = _STATE["book"]
    if book is None:
        return
    built = set(_STATE["urls"])
    unshown = [q.id for q in book.by_id.values() if q.chapter in built and q.id not in book.shown]
    if unshown:
        raise PluginError(f"questions never shown on their chapter (add {{{{ questions(...) }}}}): "
                          f"{', '.join(unshown)}")


def main(argv: list[str]) -> int:
    """`python -m widgets.build.questions [file.yml …]`: every question's expected answer,
    computed by the book's code (all chapters without arguments): an author's check before a
    build."""
    from widgets.build import widget_blocks

    root = Path(__file__).resolve().parents[2] / "docs"
    paths = [Path(a) for a in argv] or sorted((root / FOLDER).glob("*.yml"))
    seen: dict[str, str] = {}
    try:
        for path in paths:
            for q in read(path):
                if q.id in seen:
                    raise PluginError(f"{path}: id {q.id} is used twice (also in {seen[q.id]})")
                seen[q.id] = str(path)
                compute_expected(q, widget_blocks.value_of)
                print(f"{q.id:<22} {q.shown():<28} accepts {_accepts(q):<10} v {q.version}")
    except PluginError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
