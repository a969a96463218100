"""The HTTP face of the book: the widget API and the built site, from one origin.

`create_app()` takes its settings from `backend.settings` (the one table of environment
variables, defaults included), then the `test_config` a test passes in (config flows one way).
A bad variable stops it with a message naming the variable. Routes validate, call a widget and
serialize; the tensor math lives in `backend.compute` and `backend.reference`.
"""

from __future__ import annotations

from flask import Flask, request
from flask_cors import CORS
from werkzeug.middleware.proxy_fix import ProxyFix

from backend import settings
from backend.app import api, errors, fair_queue, metrics, rate, result_cache, security, site

REPO_ROOT = settings.REPO_ROOT


def create_app(test_config: dict | None = None, environ=None) -> Flask:
    app = Flask(__name__, static_folder=None)
    app.config.from_mapping(settings.flask_config(environ))
    if test_config:
        app.config.update(test_config)
    app.json.sort_keys = False

    proxies = int(app.config["TRUSTED_PROXIES"])
    if proxies:
        # The client address (rate limits, fairness) is the one the nearest N proxies saw.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies)

    metrics.init_app(app)  # first: its hooks time and count what the others refuse
    fair_queue.init_app(app)
    result_cache.init_app(app)
    rate.init_app(app)
    errors.init_app(app)
    security.init_app(app)
    init_cors(app)
    app.register_blueprint(api.bp)
    app.register_blueprint(site.bp)
    return app


def init_cors(app: Flask) -> None:
    """Cross-origin access (Flask-Cors) for the `BOOK_CORS_ORIGINS` origins only, so a site on a
    static host can call this API; none configured = same origin only (no CORS headers at all)."""
    origins = app.config["CORS_ORIGINS"]
    if isinstance(origins, str):  # a test_config may pass the raw comma-separated form
        origins = tuple(o.strip().rstrip("/") for o in origins.split(",") if o.strip())
    if origins:
        CORS(app, resources={r"/api/*": {"origins": list(origins)}}, methods=["GET", "POST"],
             allow_headers=["Content-Type"], max_age=600,
             # a notebook fetched by POST is saved under the name the server gives it
             expose_headers=["Content-Disposition"])
        allowed = set(origins)

        @app.after_request
        def timing_allow_origin(resp):
            # The page of an allowed origin may read its API answers' Resource Timing sizes:
            # that is how its runtime tells an answer from its browser's cache from a fresh one
            # (widgets/runtime/scheduler.js, answeredBy), which across origins the browser
            # otherwise hides.
            origin = request.headers.get("Origin", "").rstrip("/")
            if origin in allowed and request.path.startswith("/api/"):
                resp.headers["Timing-Allow-Origin"] = origin
                resp.vary.add("Origin")
            return resp
