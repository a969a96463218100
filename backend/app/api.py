"""Routes of the widget API (contract in DESIGN.md); the OpenAPI document is built from specs."""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
import time

import torch
from flask import Blueprint, abort, current_app, jsonify, request, send_file, url_for

from backend import device
from backend.app import fair_queue, metrics, notebook, offered, openapi, query, result_cache
from backend.app.demand import WARMING
from backend.app.release import code_release, release
from backend.compute import REGISTRY
from backend.compute.serialize import finite
from backend.compute.spec import ParamError

bp = Blueprint("api", __name__, url_prefix="/api")

OPTIONAL = ("summary", "table", "notice")
# How long a browser (or nginx) may reuse a spec answer without asking again. The pages adopt
# this process's spec (its device's ceilings, a `local` checkpoint) over the one baked at build
# time; a redeploy with other limits reaches every reader within this time.
SPEC_MAX_AGE = 300


@bp.get("/health")
def health():
    # `release`: the code's release, which every page of the book built from this code names in
    # its footer. `device` stays the one-line label; `accelerator` and `limits` are for operators and probes:
    # the limits this device sets, as each widget that has one declares it (`device_limits()`).
    # `warming`: this worker is still warming its widgets in the background (it answers
    # meanwhile, a first computation a little slower); a readiness probe may wait for false.
    # `queue`: the compute slots of the worker that answered, in use and waited for (the model
    # widgets' queue stands in front of the widgets' one); /metrics adds up every worker's.
    widget_limits = {name: m.device_limits() for name, m in REGISTRY.items()
                     if callable(getattr(m, "device_limits", None))}
    return {"status": "ok", "release": code_release(), "device": device.describe(),
            "torch": torch.__version__,
            "warming": WARMING.is_set(), "accelerator": device.facts(),
            "limits": widget_limits, "queue": fair_queue.get().depth()}


@bp.get("/widgets")
def list_widgets():
    # Every widget's spec in one answer: a page asks once, for all the widgets it shows.
    return _spec_answer("", lambda: {"widgets": [m.SPEC.to_json() for m in REGISTRY.values()]})


@bp.get("/widgets/<name>")
def describe_widget(name: str):
    return _spec_answer(name, _module(name).SPEC.to_json)


# The specs this process validates with, as JSON bytes, their gzip and an ETag, made on first
# use: a spec does not change while a process runs. Each answer keeps the spec objects it was
# made from, so a spec replaced in this process (a test that reloads a widget module) is
# serialised anew. `name`: one widget's; "" every widget's; OPENAPI the API's document, made
# from every spec (529 KB, 13 to 57 ms to build: it was built again for every request).
_SPEC_ANSWERS: dict = {}
OPENAPI = "openapi.json"


def _spec_answer(name: str, payload):
    specs = (REGISTRY[name].SPEC,) if name in REGISTRY else tuple(m.SPEC for m in REGISTRY.values())
    held = _SPEC_ANSWERS.get(name)
    if held is None or len(held[0]) != len(specs) or any(a is not b for a, b in zip(held[0], specs)):
        body = json.dumps(finite(payload()), ensure_ascii=False, separators=(",", ":")).encode()
        held = (specs, body, gzip.compress(body, 6), hashlib.sha256(body).hexdigest()[:20])
        _SPEC_ANSWERS[name] = held  # one dict item set: atomic; a race only serialises twice
    _specs, body, packed, tag = held
    zipped = request.accept_encodings["gzip"] > 0
    resp = current_app.response_class(packed if zipped else body, mimetype="application/json")
    if zipped:
        resp.headers["Content-Encoding"] = "gzip"
    resp.vary.add("Accept-Encoding")
    resp.set_etag(tag + ("-gz" if zipped else ""))
    resp.cache_control.public = True
    resp.cache_control.max_age = SPEC_MAX_AGE
    return resp.make_conditional(request)


@bp.post("/widgets/<name>")
def compute_widget(name: str):
    # The rate limit per client address (Flask-Limiter) was checked before this view ran.
    module = _module(name)
    return jsonify(_answer(name, module, module.SPEC.resolve(_json_body())))


@bp.get("/widgets/<name>/result")
def widget_result(name: str):
    """The POST's answer for the setting in the query (`?d_k=256&causal=true`), as a GET that
    browsers and proxies may keep: the same setting asked again within `RESULT_MAX_AGE` is
    answered by the reader's browser, or by nginx in front of the replicas, without reaching
    a worker; after that a conditional request is answered 304 without a computation or a
    cache lookup. The pages send every parameter, in the spec's order (spec.js settingQuery),
    so one setting is one URL; a query that omits some gets their defaults, as the POST does."""
    module = _module(name)
    params = query.params_from_query(module.SPEC, request.args)
    tag = result_etag(name, params)
    revalidated = request.if_none_match.contains_weak(tag)
    metrics.cache_lookup("etag", revalidated)
    if revalidated:
        resp = current_app.response_class(status=304)
    else:
        resp = jsonify(_answer(name, module, params))
    resp.set_etag(tag, weak=True)
    resp.cache_control.public = True
    resp.cache_control.max_age = min(RESULT_MAX_AGE, module.SPEC.result_ttl or RESULT_MAX_AGE)
    return resp


# How long a browser or nginx may reuse a GET result without asking. The answers are
# deterministic for one release of the code on one device (measured timings are kept as the
# server's own cache keeps them, up to a widget's `result_ttl`); a redeploy reaches a reader
# within this time, as the pages' own files do (`site.CACHE_SECONDS`).
RESULT_MAX_AGE = 600


def result_etag(name: str, params: dict) -> str:
    """A weak validator naming the setting and the release: semantically the same answer (a
    measured timing taken again may differ in its last digits, hence weak)."""
    return f"{release()}-{result_cache.ResultCache.key(name, params).split(':', 1)[1][:20]}"


def _answer(name: str, module, params: dict) -> dict:
    cache = result_cache.get()
    key = cache.key(name, params)
    start = time.perf_counter()
    result = cache.get(key)
    cached = result is not None
    metrics.cache_lookup(cache.kind, cached)
    if not cached and module.SPEC.measured:
        # A timing takes the host's lock for seconds: readers asking for the same setting
        # meanwhile, in this worker or any replica sharing the cache, wait for this one's
        # answer instead of each queueing a measurement of their own (issue 35, item 4).
        with cache.flight(key, current_app.config["HEAVY_WAIT_SECONDS"]) as found:
            result, cached = found, found is not None
            if not cached:
                result = _compute(name, module, params, cache, key)
    elif not cached:
        result = _compute(name, module, params, cache, key)
    # elapsed_ms is what *this* request cost the server: a cached answer reports the lookup,
    # never the old compute time as if it had just been spent (that stays in computed_ms).
    elapsed_ms = result["computed_ms"] if not cached else (time.perf_counter() - start) * 1000
    return finite({
        "widget": name,
        "params": params,
        "values": result["values"],
        "figure": result["figure"],
        "device": device.describe(),
        "elapsed_ms": round(elapsed_ms, 3),
        "computed_ms": result["computed_ms"],
        "cached": cached,
        **{k: result[k] for k in OPTIONAL if k in result},
    })


def _compute(name: str, module, params: dict, cache, key: str) -> dict:
    # Only computations queue for a slot: a cached answer never counts against fairness.
    with fair_queue.get().compute_slot(heavy=module.SPEC.cost_hint == "heavy"):
        try:
            result = run(module, params)
        finally:
            device.release_cached_memory()  # on a GPU, what a ceiling run reserved
    metrics.COMPUTE_SECONDS.labels(name).observe(result["computed_ms"] / 1000)
    # A measured widget's answer at a setting the pages offer is kept for the release (measured
    # once per release and device); elsewhere its own short result_ttl (offered.py).
    cache.put(key, result, offered.result_ttl(current_app.config["SITE_DIR"], module, name, params))
    return result


def run(module, params: dict) -> dict:
    """One computation, as the cache stores it (also used by `backend.prewarm`)."""
    start = time.perf_counter()
    out = module.compute(params)
    result = {"values": out["values"], "figure": out["figure"],
              "computed_ms": round((time.perf_counter() - start) * 1000, 2)}
    # Optional parts of a result: a sentence summarising it and a data table, both for
    # readers who cannot see the plot, and a notice (a caveat that is not an error, e.g.
    # "the word is not in the sentence"). The runtime renders all three.
    for extra in OPTIONAL:
        if extra in out:
            result[extra] = out[extra]
    return result


@bp.get("/widgets/<name>/notebook")
def widget_notebook(name: str):
    """The reader's setting as a Jupyter notebook that runs the book's own code (notebook.py).
    The query holds the parameters (`?d_k=256&causal=true`), validated by the widget's spec as
    the POST body is; nothing is computed here, so the work is bounded by the spec's size."""
    module = _module(name)
    return _notebook(name, module, query.params_from_query(module.SPEC, request.args))


@bp.post("/widgets/<name>/notebook")
def widget_notebook_post(name: str):
    """The same notebook for a setting in a JSON body, as the result's POST takes it: a setting
    too long for a URL (a long passage of text) is sent this way by the page."""
    module = _module(name)
    return _notebook(name, module, module.SPEC.resolve(_json_body()))


def _notebook(name: str, module, params: dict):
    def weights_url(filename: str, digest: str) -> str:
        return url_for("api.book_model_file", digest=digest[:16], filename=filename,
                       _external=True)

    resp = current_app.response_class(notebook.render(name, module, params, weights_url),
                                      mimetype="application/x-ipynb+json")
    resp.headers["Content-Disposition"] = (
        f'attachment; filename="{notebook.filename(module.SPEC, params)}"')
    return resp


@bp.get("/book-model/<digest>/<path:filename>")
def book_model_file(digest: str, filename: str):
    """A file of the book's trained weights (or a training checkpoint, `checkpoints/...`), for
    the notebooks that run the model. Only the files `book_model_files` lists are served. The path
    names the file's SHA-256 (its first 16 hex digits): a release that retrains the model
    serves it under another path, so a notebook never receives weights it was not made for,
    and the file may be kept for a year."""
    digests = notebook.book_model_files()
    if filename not in digests or digests[filename][:16] != digest:
        abort(404)
    resp = send_file(notebook.WEIGHTS_DIR / filename, max_age=31_536_000, conditional=True,
                     etag=digests[filename])
    resp.cache_control.immutable = True
    return resp


@bp.get("/openapi.json")
def openapi_document():
    return _spec_answer(OPENAPI, lambda: openapi.document(REGISTRY))


def _module(name: str):
    module = REGISTRY.get(name)
    if module is None:
        abort(404, description=f"no widget named {name!r}; known widgets: "
                               f"{', '.join(sorted(REGISTRY))}")
    return module


def _reject_constant(token: str):
    raise ValueError(f"{token} is not a number JSON allows")


class _LongNumber(Exception):
    pass


def _parse_int(text: str) -> int:
    # Python refuses to read an integer of more digits than this, in words about its own
    # internals ("use sys.set_int_max_str_digits()"): the reader gets the API's words instead.
    if len(text.lstrip("+-")) > sys.get_int_max_str_digits():
        raise _LongNumber(f"a number in the request has {len(text.lstrip('+-')):,} digits; the "
                          f"API reads numbers of at most {sys.get_int_max_str_digits():,}")
    return int(text)


def _json_body():
    raw = request.get_data(cache=False)  # MAX_CONTENT_LENGTH has already capped its size
    if not raw:  # no body at all: every default (the document marks the body optional)
        return {}
    try:
        return json.loads(raw, parse_constant=_reject_constant, parse_int=_parse_int)
    except _LongNumber as exc:
        raise ParamError(str(exc)) from None
    except (ValueError, RecursionError) as exc:
        # UnicodeDecodeError and JSONDecodeError are both ValueErrors.
        raise ParamError(f"the request body is not valid JSON: {exc}") from None
