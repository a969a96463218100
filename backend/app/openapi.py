"""The OpenAPI 3.1 document of the API, generated from the widget specs (never hand-edited)."""

from __future__ import annotations

from backend.compute.spec import Param

JSON_TYPES = {"int": "integer", "float": "number", "bool": "boolean", "choice": "string",
              "text": "string"}


def _param_schema(p: Param) -> dict:
    schema = {"type": JSON_TYPES[p.type], "default": p.default, "description": p.label}
    if p.type in {"int", "float"}:
        schema.update(minimum=p.min, maximum=p.max)
        if p.type == "int" and p.step and p.step > 1:
            if p.min % p.step == 0:
                schema["multipleOf"] = int(p.step)
            else:
                schema["description"] += f" ({p.min} plus a multiple of {p.step})"
    if p.type == "choice":
        schema["enum"] = list(p.options)
    if p.type == "text":
        schema.update(minLength=1, maxLength=p.max_length)
    if p.depends or p.limits:
        # The range that follows other params (spec.Depends, spec.Limit), in words and as data.
        schema["description"] += f". Depends on other parameters: {p.describe_depends()}"
    if p.depends:
        schema["x-depends"] = [d.to_json() for d in p.depends]
    if p.limits:
        schema["x-limits"] = [lim.to_json() for lim in p.limits]
    return schema


ERROR = {"type": "object", "required": ["error"],
         "properties": {"error": {"type": "string"}, "param": {"type": "string"}}}


def _error(description: str, retry: bool = False) -> dict:
    out = {"description": description,
           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    if retry:
        out["headers"] = {"Retry-After": {"description": "seconds to wait before trying again",
                                          "required": True,
                                          "schema": {"type": "string", "pattern": "^[0-9]+$"}}}
    return out


SPEC_WORDS = ("This server's own spec: ranges and choices that follow its device and "
              "configuration (a context ceiling, a `local` checkpoint) may differ from those "
              "baked into the pages, which adopt it. Cacheable for a few minutes (Cache-Control, "
              "ETag).")


def _spec_responses(what: str) -> dict:
    return {"200": {"description": what},
            "304": {"description": "unchanged since the ETag sent in If-None-Match"}}


def document(registry: dict) -> dict:
    paths = {
        "/api/health": {"get": {"summary": "Liveness and the compute device", "responses": {
            "200": {"description": "ok", "content": {"application/json": {"schema": {
                "type": "object", "properties": {
                    "status": {"type": "string"},
                    "release": {"type": "string", "description": (
                        "the code's release (12 hex digits), the one the footer of every page "
                        "built from the same code names")},
                    "device": {"type": "string"},
                    "torch": {"type": "string"},
                    "warming": {"type": "boolean", "description": (
                        "this worker is still warming its widgets in the background: it "
                        "answers meanwhile, a first computation a little slower; a readiness "
                        "probe may wait for false")}}}}}}}}},
        "/api/widgets": {"get": {"summary": "Every widget's parameter spec",
                                 "description": SPEC_WORDS,
                                 "responses": _spec_responses("the specs")}},
    }
    for name, module in registry.items():
        spec = module.SPEC
        body = {"type": "object", "additionalProperties": False,
                "properties": {p.name: _param_schema(p) for p in spec.params}}
        paths[f"/api/widgets/{name}"] = {
            "get": {"summary": f"Spec of {spec.title}", "description": SPEC_WORDS,
                    "responses": _spec_responses("the spec")},
            "post": {
                "summary": spec.title,
                "description": spec.description + "".join(
                    f" Rule: {rule}" for rule in spec.rules()),
                "requestBody": {"required": False,
                                "content": {"application/json": {"schema": body}}},
                "responses": {
                    "200": {"description": "values and a Plotly figure", "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Result"}}}},
                    "400": _error("a parameter is of the wrong type, out of range (including a "
                                  "range another parameter sets, see x-depends) or unknown, "
                                  "or the body is not a JSON object"),
                    "413": _error("the body is too large"),
                    "429": _error("rate limited: too many requests from this client address "
                                  "(BOOK_RATE_LIMIT)", retry=True),
                    "503": _error("busy: the fair queue for computations is full, or the "
                                  "request waited too long for a slot", retry=True),
                },
            },
        }
        query = [{"name": p.name, "in": "query", "required": False,
                  "schema": _param_schema(p)} for p in spec.params]
        paths[f"/api/widgets/{name}/result"] = {"get": {
            "summary": f"{spec.title}, as a GET that caches",
            "description": "The POST's answer for the setting in the query string (parameters "
                           "validated as the POST body is; omitted ones take their defaults). "
                           "Cache-Control lets browsers and proxies keep it (max-age up to "
                           "600 s); a weak ETag names the setting and the server's release, so "
                           "If-None-Match gets a 304 without any computation. The pages use "
                           "this route." + "".join(f" Rule: {rule}" for rule in spec.rules()),
            "parameters": query,
            "responses": {
                "200": {"description": "values and a Plotly figure", "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/Result"}}}},
                "304": {"description": "unchanged since the ETag sent in If-None-Match"},
                "400": _error("a parameter is of the wrong type, out of range (including a "
                              "range another parameter sets), unknown, or given twice"),
                "429": _error("rate limited: too many requests from this client address "
                              "(BOOK_RATE_LIMIT)", retry=True),
                "503": _error("busy: the fair queue for computations is full, or the "
                              "request waited too long for a slot", retry=True),
            },
        }}
        notebook_ok = {"description": "the notebook, as an attachment",
                       "headers": {"Content-Disposition": {"schema": {"type": "string"}}},
                       "content": {"application/x-ipynb+json": {"schema": {"type": "object"}}}}
        limited = _error("rate limited: too many requests from this client address "
                         "(BOOK_RATE_LIMIT)", retry=True)
        paths[f"/api/widgets/{name}/notebook"] = {
            "get": {
                "summary": f"{spec.title}: this setting as a Jupyter notebook",
                "description": "A notebook that sets these parameters, carries the book's code "
                               "the widget runs and runs it (nothing is computed by this "
                               "request). Parameters are validated as the POST body is.",
                "parameters": query,
                "responses": {
                    "200": notebook_ok,
                    "400": _error("a parameter is of the wrong type, out of range (including a "
                                  "range another parameter sets), unknown, or given twice"),
                    "429": limited,
                },
            },
            "post": {
                "summary": f"{spec.title}: a setting in a JSON body as a Jupyter notebook",
                "description": "The GET's notebook for a setting sent as the result's POST "
                               "sends it (the pages use it for a setting too long for a URL).",
                "requestBody": {"required": False,
                                "content": {"application/json": {"schema": body}}},
                "responses": {
                    "200": notebook_ok,
                    "400": _error("a parameter is of the wrong type, out of range (including a "
                                  "range another parameter sets) or unknown, or the body is not "
                                  "a JSON object"),
                    "413": _error("the body is too large"),
                    "429": limited,
                },
            },
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "Interactive Transformer book API", "version": "1"},
        "paths": paths,
        "components": {"schemas": {
            "Error": ERROR,
            "Result": {"type": "object",
                       "required": ["widget", "params", "values", "figure", "device",
                                    "elapsed_ms"],
                       "properties": {"widget": {"type": "string"}, "params": {"type": "object"},
                                      "values": {"type": "object"},
                                      "figure": {"type": "object"},
                                      "device": {"type": "string"},
                                      "elapsed_ms": {"type": "number", "description":
                                                     "server time spent on this request (a "
                                                     "cache lookup when cached)"},
                                      "computed_ms": {"type": "number", "description":
                                                      "time the computation took when it ran"},
                                      "cached": {"type": "boolean"},
                                      "summary": {"type": "string"},
                                      "table": {"type": "object"},
                                      "notice": {"type": "string", "description":
                                                 "a caveat that is not an error"}}},
        }},
    }
