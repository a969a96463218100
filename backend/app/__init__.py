"""The HTTP face of the book: the widget API and the built site, from one origin.

`create_app()` reads its settings from defaults, then `BOOK_*` environment variables, then the
`test_config` a test passes in (config flows one way). Routes validate, call a widget and
serialize; the tensor math lives in `backend.widgets` and `backend.reference`.
"""

from __future__ import annotations

import os
from pathlib import Path

from flask import Flask
from flask_cors import CORS

from backend.app import api, errors, limits, site

REPO_ROOT = Path(__file__).resolve().parents[2]

DEFAULTS = {
    "SITE_DIR": str(REPO_ROOT / "site"),    # the output of `mkdocs build`
    "MAX_CONTENT_LENGTH": 16 * 1024,        # bytes of request body; larger gets 413
    "MAX_CONCURRENT_COMPUTES": 2,           # per worker process; more waiting gets 503
    "COMPUTE_WAIT_SECONDS": 5.0,            # how long a request may queue for a slot
    "HEAVY_WAIT_SECONDS": 30.0,             # the same for heavy widgets (a model may be loading)
    "RATE_LIMIT_PER_MINUTE": 600,           # per client address, per worker; 0 disables
    "RESULT_CACHE_SIZE": 512,               # identical requests are answered from memory
    "CORS_ORIGINS": "",                     # comma-separated origins that may call /api/*
}

# name of the setting -> (environment variable, type)
ENVIRONMENT = {
    "SITE_DIR": ("BOOK_SITE_DIR", str),
    "MAX_CONTENT_LENGTH": ("BOOK_MAX_BODY_BYTES", int),
    "MAX_CONCURRENT_COMPUTES": ("BOOK_MAX_CONCURRENT", int),
    "COMPUTE_WAIT_SECONDS": ("BOOK_COMPUTE_WAIT_SECONDS", float),
    "HEAVY_WAIT_SECONDS": ("BOOK_HEAVY_WAIT_SECONDS", float),
    "RATE_LIMIT_PER_MINUTE": ("BOOK_RATE_LIMIT_PER_MINUTE", int),
    "RESULT_CACHE_SIZE": ("BOOK_RESULT_CACHE_SIZE", int),
    "CORS_ORIGINS": ("BOOK_CORS_ORIGINS", str),
}


def create_app(test_config: dict | None = None) -> Flask:
    app = Flask(__name__, static_folder=None)
    app.config.from_mapping(DEFAULTS)
    for key, (var, kind) in ENVIRONMENT.items():
        if var in os.environ:
            try:
                app.config[key] = kind(os.environ[var])
            except ValueError as exc:
                raise SystemExit(f"{var}={os.environ[var]!r} is not a valid {kind.__name__}") from exc
    if test_config:
        app.config.update(test_config)
    app.json.sort_keys = False

    origins = [o.strip().rstrip("/") for o in app.config["CORS_ORIGINS"].split(",") if o.strip()]
    if origins:  # none: same origin only (no CORS headers at all)
        CORS(app, resources={r"/api/*": {"origins": origins}}, methods=["GET", "POST"],
             allow_headers=["Content-Type"], max_age=600)
    limits.init_app(app)
    errors.init_app(app)
    app.register_blueprint(api.bp)
    app.register_blueprint(site.bp)
    return app
