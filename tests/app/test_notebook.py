"""`GET /api/widgets/<name>/notebook`: the reader's setting as a notebook (backend/app/notebook.py).

These tests read the notebooks; tests/app/test_notebook_run.py executes them (slow)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

from backend.app.query import _typed
from backend.compute import REGISTRY

ROOT = Path(__file__).resolve().parents[2]


def _get(client, name: str, query: str = ""):
    return client.get(f"/api/widgets/{name}/notebook" + (f"?{query}" if query else ""))


def _book_files(nb) -> dict:
    """The BOOK_FILES dict of the notebook's code cell that writes the book's code."""
    cell = next(c for c in nb.cells if c.cell_type == "code" and "BOOK_FILES = {" in c.source)
    tree = ast.parse(cell.source)
    assign = next(n for n in tree.body if isinstance(n, ast.Assign)
                  and n.targets[0].id == "BOOK_FILES")
    return ast.literal_eval(assign.value)


def _params(nb) -> dict:
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.lstrip().startswith("#")
                and "params = {" in c.source)
    tree = ast.parse(cell.source)
    assign = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "params")
    return ast.literal_eval(assign.value)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_widget_has_a_valid_notebook_at_its_defaults(client, name):
    r = _get(client, name)
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.mimetype == "application/x-ipynb+json"
    assert r.headers["Content-Disposition"] == f'attachment; filename="{name}_default.ipynb"'
    nb = nbformat.reads(r.get_data(as_text=True), as_version=4)
    nbformat.validate(nb)  # the server skips this per answer; every widget's passes here
    assert _params(nb) == REGISTRY[name].SPEC.defaults()
    # The last code cell shows the values as JSON; the markdown before it says what to try.
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "'application/json'" in code[-1].source and "raw=True" in code[-1].source
    assert REGISTRY[name].SPEC.try_next in "".join(c.source for c in nb.cells)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_the_notebook_carries_the_source_files_as_they_are(client, name):
    files = _book_files(nbformat.reads(_get(client, name).get_data(as_text=True), as_version=4))
    assert f"backend/compute/{name}.py" in files
    for rel, text in files.items():
        if rel == "backend/compute/__init__.py":  # the registry of all widgets is replaced
            assert "import" not in text
            continue
        assert text == (ROOT / rel).read_text(), rel
    # Every backend module a carried file imports at its top level is carried too.
    for rel, text in files.items():
        if not rel.endswith(".py"):
            continue
        for node in ast.parse(text).body:
            if isinstance(node, ast.ImportFrom) and not node.level and \
                    (node.module or "").startswith("backend"):
                mod = node.module.replace(".", "/")
                assert f"{mod}.py" in files or f"{mod}/__init__.py" in files, (rel, node.module)


def test_model_and_measured_widgets_say_so_in_the_first_cell(client):
    first = {name: nbformat.reads(_get(client, name).get_data(as_text=True),
                                  as_version=4).cells[0].source for name in REGISTRY}
    model = {n for n, s in first.items() if "The book's trained model" in s}
    minilm = {n for n, s in first.items() if "**MiniLM.**" in s}
    measured = {n for n, s in first.items() if "measures *your own machine*" in s}
    # Known from the widgets' own code: who loads the book's weights, MiniLM, or takes timings.
    loads = {n for n in REGISTRY if "shared_model" in (ROOT / f"backend/compute/{n}.py").read_text()
             or "encode_book" in (ROOT / f"backend/compute/{n}.py").read_text()}
    timed = {n for n in REGISTRY if "timing_lock" in (ROOT / f"backend/compute/{n}.py").read_text()}
    assert loads <= model and {"attention_map", "attention_sink", "sampling", "kv_decode"} <= model
    assert "attention_map" in minilm and "attention_sink" in minilm
    assert measured == timed == {"sequential_vs_parallel", "attention_cost", "kv_decode",
                                 "generation_steps"}
    # The install line names what the code imports, at the versions this server runs.
    assert "bpe-openai==" in first["training_signal"]
    assert "transformers==" in first["parity"] and "torch==" in first["rmsnorm"]
    assert "transformers" not in first["rmsnorm"]


@pytest.mark.parametrize("name", list(REGISTRY))
def test_what_to_try_next_names_a_real_parameter(name):
    spec = REGISTRY[name].SPEC
    named = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", spec.try_next))
    assert named & {p.name for p in spec.params}, spec.try_next


def test_the_setting_travels_and_names_the_file(client):
    r = _get(client, "attention_scaling", "d_k=256&seed=3")
    assert r.status_code == 200
    assert r.headers["Content-Disposition"] == \
        'attachment; filename="attention_scaling_d_k-256_seed-3.ipynb"'
    nb = nbformat.reads(r.get_data(as_text=True), as_version=4)
    assert _params(nb) == {"d_k": 256, "n_positions": 8, "seed": 3}
    # Query values are typed as the spec says: bool and choice and text.
    r = _get(client, "rmsnorm", "upcast=false&dtype=float16&offset=2.5")
    assert _params(nbformat.reads(r.get_data(as_text=True), as_version=4)) == \
        {"offset": 2.5, "scale": 1.0, "dtype": "float16", "upcast": False}
    r = _get(client, "sampling", "prompt=The%20sea%20is&top_k=5")
    disposition = r.headers["Content-Disposition"]
    assert re.fullmatch(r'attachment; filename="sampling_prompt-The-sea-is_top_k-5_[0-9a-f]{10}'
                        r'\.ipynb"', disposition), disposition
    assert _params(nbformat.reads(r.get_data(as_text=True), as_version=4))["prompt"] == "The sea is"


def test_the_same_setting_gives_the_same_file(client):
    a = _get(client, "attention_scaling", "seed=3&d_k=256").get_data()
    b = _get(client, "attention_scaling", "d_k=256&seed=3&n_positions=8").get_data()
    assert a == b


@pytest.mark.parametrize("name, query, param, words", [
    ("attention_scaling", "d_k=2000", "d_k", "must be from 1 to 1024, got 2000"),
    ("attention_scaling", "d_k=abc", "d_k", "must be an integer, got 'abc'"),
    ("attention_scaling", "d_k=64.5", "d_k", "must be an integer"),
    ("attention_scaling", "d_k=64&d_k=128", "d_k", "given 2 times"),
    ("attention_scaling", "nope=1", "nope", "unknown parameter 'nope'"),
    ("rmsnorm", "upcast=maybe", "upcast", "must be true or false"),
    ("rmsnorm", "dtype=int4", "dtype", "must be one of"),
    ("rmsnorm", "offset=nan", "offset", "finite"),
    ("sampling", "prompt=", "prompt", "must not be empty"),
    ("multi_head", "n_heads=8&n_kv=3", "n_kv", "must be one of"),
])
@pytest.mark.parametrize("route", ["notebook", "result"])
def test_bad_settings_are_the_posts_400(client, route, name, query, param, words):
    """Both routes that read a setting from a query (this one and the pages' GET .../result)
    refuse as the POST does; a refused result is not kept by any cache."""
    r = client.get(f"/api/widgets/{name}/{route}?{query}")
    assert r.status_code == 400
    assert "max-age" not in r.headers.get("Cache-Control", "")
    body = r.get_json()
    assert body["param"] == param and words in body["error"], body
    # The POST endpoint says the same for the same setting, where JSON can say it (JSON has
    # no NaN, and an object no key twice).
    if "given" not in words and "nan" not in query:
        names = {p.name for p in REGISTRY[name].SPEC.params}
        body_json = {k: _typed(REGISTRY[name].SPEC.param(k).type, v) if k in names else v
                     for k, v in (kv.split("=", 1) for kv in query.split("&"))}
        post = client.post(f"/api/widgets/{name}", json=body_json)
        assert post.status_code == 400 and post.get_json()["error"] == body["error"]


def test_a_setting_in_a_json_body_gets_the_same_notebook(client):
    """The page POSTs a setting too long for a URL (a long passage): the same notebook, the same
    file name, the same refusals as the GET's."""
    get = _get(client, "attention_scaling", "d_k=256&seed=3")
    post = client.post("/api/widgets/attention_scaling/notebook", json={"seed": 3, "d_k": 256})
    assert post.status_code == 200 and post.get_data() == get.get_data()
    assert post.headers["Content-Disposition"] == get.headers["Content-Disposition"]
    # 4,000 Devanagari letters: 36 kB escaped, past any request line the book's servers take
    passage = ("\u0915\u093e " * 1334)[:4000]
    assert len(passage) == REGISTRY["training_signal"].SPEC.param("text").max_length
    body = json.dumps({"text": passage}, ensure_ascii=False).encode()  # as JSON.stringify sends it
    r = client.post("/api/widgets/training_signal/notebook", data=body,
                    content_type="application/json")
    assert r.status_code == 200, r.get_json()
    assert _params(nbformat.reads(r.get_data(as_text=True), as_version=4))["text"] == passage
    bad = client.post("/api/widgets/attention_scaling/notebook", json={"d_k": 2000})
    assert bad.status_code == 400 and bad.get_json()["param"] == "d_k"
    assert "must be from 1 to 1024" in bad.get_json()["error"]
    assert client.post("/api/widgets/attention_scaling/notebook", data="[1",
                       content_type="application/json").status_code == 400


def test_unknown_widget_is_404(client):
    r = _get(client, "no_such_widget")
    assert r.status_code == 404
    assert "no widget named 'no_such_widget'" in r.get_json()["error"]


def test_the_route_is_in_the_openapi_document(client):
    doc = client.get("/api/openapi.json").get_json()
    for name, module in REGISTRY.items():
        op = doc["paths"][f"/api/widgets/{name}/notebook"]["get"]
        assert [p["name"] for p in op["parameters"]] == [p.name for p in module.SPEC.params]
        assert {"200", "400"} <= set(op["responses"])
        post = doc["paths"][f"/api/widgets/{name}/notebook"]["post"]
        assert set(post["requestBody"]["content"]["application/json"]["schema"]["properties"]) \
            == {p.name for p in module.SPEC.params}
