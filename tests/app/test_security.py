"""Security: the headers of a kept library (`secure`) with a Content-Security-Policy of the
site's own origin (plus the configured API origin); no stack trace or filesystem path in any
error; no endpoint evaluates reader code or opens a reader-named file."""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from backend.app import create_app, security
from backend.compute import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
URL = "/api/widgets/attention_scaling"


def _csp(resp) -> dict[str, list[str]]:
    out = {}
    for part in resp.headers["Content-Security-Policy"].split(";"):
        name, *values = part.split()
        out[name] = values
    return out


def test_security_headers_on_api_and_pages(client):
    for resp in (client.get("/api/health"), client.get("/"), client.post(URL, json={"d_k": 2}),
                 client.get("/api/no-such-thing")):
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        assert resp.headers["X-Frame-Options"] == "SAMEORIGIN"
        assert resp.headers["Referrer-Policy"] == "strict-origin-when-cross-origin"
        assert "Server" not in resp.headers
        csp = _csp(resp)
        assert csp["default-src"] == ["'self'"] and csp["object-src"] == ["'none'"]
        assert csp["connect-src"] == ["'self'"] and csp["frame-ancestors"] == ["'self'"]
        assert not any("'unsafe-inline'" in v or "'unsafe-eval'" in v or "*" in v
                       for k, v in csp.items() if k.startswith("script-src"))


def test_the_configured_api_origin_is_allowed_to_connect_and_nothing_else(tmp_path):
    app = create_app({"TESTING": True, "SITE_DIR": str(tmp_path),
                      "API_URL": "https://api.example.edu/api"})
    csp = _csp(app.test_client().get("/api/health"))
    assert csp["connect-src"] == ["'self'", "https://api.example.edu"]
    assert csp["script-src"][0] == "'self'" and "https://api.example.edu" not in csp["script-src"]


def test_inline_scripts_of_the_built_site_are_allowed_by_hash_only(tmp_path):
    (tmp_path / "index.html").write_text(
        "<html><head><script>var a = 1;</script>"
        '<script type="application/json" id="data">{"x": 1}</script>'
        '<script src="assets/x.js"></script></head></html>')
    client = create_app({"TESTING": True, "SITE_DIR": str(tmp_path)}).test_client()
    scripts = _csp(client.get("/"))["script-src"]
    digest = base64.b64encode(hashlib.sha256(b"var a = 1;").digest()).decode()
    assert scripts == ["'self'", f"'sha256-{digest}'"]  # the one JavaScript block, by hash
    assert security.inline_script_hashes('<script type="application/json">{}</script>') == set()


def test_every_page_has_one_policy_that_allows_every_pages_inline_scripts(tmp_path):
    """Material's instant navigation swaps a page's content in under the policy of the page the
    reader opened first: so each page's policy allows the inline scripts of all of them (by
    hash, never eval), and a data block (a notebook's figure, widget_blocks.py) needs nothing."""
    own = "var only_here = 1;"
    (tmp_path / "index.html").write_text("<html><head></head></html>")
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "index.html").write_text(
        f'<html><body><script>{own}</script><template class="tw-data"><script '
        'type="application/json" class="tw-notebook-figure">{"data": []}</script></template>'
        '</body></html>')
    client = create_app({"TESTING": True, "SITE_DIR": str(tmp_path)}).test_client()
    digest = base64.b64encode(hashlib.sha256(own.encode()).digest()).decode()
    policies = {client.get(path).headers["Content-Security-Policy"]
                for path in ("/", "/nb/", "/nb/index.html", "/no-such-page/")}
    assert len(policies) == 1
    (csp,) = policies
    assert _csp(client.get("/"))["script-src"] == ["'self'", f"'sha256-{digest}'"]
    assert "'unsafe-eval'" not in csp


# ----------------------------------------------------------------- nothing leaks in errors

LEAKS = ("Traceback", 'File "', str(ROOT), "/work/", "site-packages", ".py\"", ".py,")


def _assert_clean(resp):
    text = resp.get_data(as_text=True)
    for leak in LEAKS:
        assert leak not in text, (resp.status_code, leak, text[:500])
    assert not re.search(r", line \d+, in ", text)  # a traceback frame


@pytest.mark.parametrize("method, url, kwargs, status", [
    ("get", "/api/no-such-thing", {}, 404),
    ("post", "/api/widgets/no_such_widget", {"json": {}}, 404),
    ("get", "/no/such/page/", {}, 404),
    ("put", URL, {"json": {}}, 405),
    ("post", "/api/health", {}, 405),
    ("post", URL, {"data": json.dumps({"pad": "x" * 40_000}),
                   "content_type": "application/json"}, 413),
    ("post", URL, {"data": "{", "content_type": "application/json"}, 400),
    ("post", URL, {"data": "[" * 10_000, "content_type": "application/json"}, 400),
    ("post", URL, {"json": {"d_k": "../../etc/passwd"}}, 400),
])
def test_error_responses_carry_no_trace_or_path(tmp_path, method, url, kwargs, status):
    (tmp_path / "index.html").write_text("<html>the book</html>")  # a built site, no 404 page
    client = create_app({"TESTING": True, "SITE_DIR": str(tmp_path)}).test_client()
    resp = getattr(client, method)(url, **kwargs)
    assert resp.status_code == status
    _assert_clean(resp)


def test_a_500_carries_no_trace_or_path(client, monkeypatch):
    def broken(params):
        open("/no/such/dir/secret.txt")  # an error whose message names a path

    monkeypatch.setattr(REGISTRY["attention_scaling"], "compute", broken)
    resp = client.post(URL, json={"d_k": 9})
    assert resp.status_code == 500 and resp.is_json
    _assert_clean(resp)
    assert "secret.txt" not in resp.get_data(as_text=True)


# ------------------------------------------------------------- no reader code, no reader file

DANGEROUS_MODULES = {"pickle", "marshal", "shelve", "dill", "subprocess"}


def _calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            owner = getattr(f.value, "id", "") if isinstance(f, ast.Attribute) else ""
            yield node, name, owner


def test_no_served_code_evaluates_or_unpickles_anything():
    """The modules a request can reach (the app and the widgets, with the reference code and
    the book's model loader) call no eval/exec/pickle/torch.load/subprocess."""
    found = []
    for folder in ("backend/app", "backend/compute", "backend/reference", "backend/bookmodel"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name in {"train.py", "parity.py"} and "widgets" not in path.parts:
                continue  # command-line tools, never imported by the server
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                        [node.module or ""]
                    found += [f"{path.name}: import {m}" for m in mods
                              if m.split(".")[0] in DANGEROUS_MODULES]
            for node, name, owner in _calls(tree):
                if name in {"eval", "exec", "compile", "__import__"} and \
                        isinstance(node.func, ast.Name):   # the builtins (not nn.Module.eval)
                    found.append(f"{path.name}:{node.lineno} {name}()")
                if name == "import_module" and path != ROOT / "backend/compute/__init__.py":
                    found.append(f"{path.name}:{node.lineno} import_module()")
                if name == "load" and owner == "torch":
                    found.append(f"{path.name}:{node.lineno} torch.load()")
                if name == "from_pretrained":
                    kws = {k.arg: k.value for k in node.keywords}
                    if "trust_remote_code" in kws:
                        found.append(f"{path.name}:{node.lineno} trust_remote_code")
    assert found == []
    # the registry imports modules named only by the constant list in its own source
    registry = ast.parse((ROOT / "backend/compute/__init__.py").read_text(encoding="utf-8"))
    assert any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "_MODULES"
                                                 for t in n.targets)
               and isinstance(n.value, (ast.Tuple, ast.List))
               and all(isinstance(e, ast.Constant) for e in n.value.elts)
               for n in ast.walk(registry))


def test_no_widget_parameter_names_a_file():
    for name, module in REGISTRY.items():
        for p in module.SPEC.params:
            assert not any(w in p.name.lower() for w in ("path", "file", "dir", "checkpoint",
                                                          "url")), (name, p.name)
            assert p.type in {"int", "float", "bool", "choice", "text"}


def test_the_attention_map_checkpoint_comes_only_from_the_environment(client, monkeypatch):
    monkeypatch.delenv("BOOK_HF_CHECKPOINT", raising=False)
    r = client.post("/api/widgets/attention_map",
                    json={"model": "local", "text": "/etc/passwd"})
    assert r.status_code == 400 and r.get_json()["param"] == "model"
    _assert_clean(r)
    # a path typed as the text is only text: it is tokenized, never opened
    r = client.post("/api/widgets/attention_map", json={"text": "../../etc/passwd"})
    assert r.status_code == 200
    assert "root:" not in r.get_data(as_text=True)
