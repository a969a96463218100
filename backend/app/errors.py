"""Every error leaves as JSON `{"error": "<sentence>"}` with the status that fits it."""

from __future__ import annotations

from flask import Flask, jsonify, request
from flask_limiter.errors import RateLimitExceeded
from werkzeug.exceptions import HTTPException, InternalServerError

from backend.app import metrics, rate
from backend.app.site import not_found_page
from backend.errors import Busy, ModelUnavailable, ParamError

# Werkzeug's default descriptions are written for HTML pages; say what the client can fix.
MESSAGES = {404: "no such resource"}


def json_error(status: int, message: str, **extra):
    resp = jsonify({"error": message, **extra})
    resp.status_code = status
    return resp


def init_app(app: Flask) -> None:
    @app.errorhandler(ParamError)
    def bad_param(exc: ParamError):
        extra = {"param": exc.param} if exc.param else {}
        return json_error(400, str(exc), **extra)

    @app.errorhandler(ModelUnavailable)
    def model_unavailable(exc: ModelUnavailable):
        # the cause, with its path, goes to the log line only
        metrics.refuse("model_unavailable", f"{exc}: {exc.__cause__!r}")
        resp = json_error(503, str(exc))
        resp.headers["Retry-After"] = "30"
        return resp

    @app.errorhandler(Busy)
    def busy(exc: Busy):
        metrics.refuse(exc.reason, str(exc))
        resp = json_error(503, str(exc))  # a full queue, or another reader's timing
        resp.headers["Retry-After"] = str(exc.retry_after)
        return resp

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        if not request.path.startswith("/api/") and exc.code == 404:
            return not_found_page()  # a reader's mistyped page gets the book's own 404
        if exc.description and exc.description != type(exc).description:
            message = exc.description  # raised with a message written for the client
        else:
            message = MESSAGES.get(exc.code, exc.name.lower())
        if exc.code == 413:
            message = (f"the request body is too large; the limit is "
                       f"{app.config['MAX_CONTENT_LENGTH']} bytes")
        if exc.code == 405:
            allowed = sorted(exc.valid_methods or [])
            message = f"{request.method} is not allowed here; use {' or '.join(allowed)}"
        retry_after = None
        if isinstance(exc, RateLimitExceeded):
            retry_after = rate.get().retry_after()
            message = (f"too many requests from your address (at most {exc.description}); "
                       f"try again in {retry_after} s")
            metrics.refuse("rate_limit", message)
        elif exc.code == 503:
            metrics.refuse("unavailable", message)
        resp = json_error(exc.code, message)
        if retry_after is not None:
            resp.headers["Retry-After"] = str(retry_after)
        if exc.code == 405 and exc.valid_methods:
            resp.headers["Allow"] = ", ".join(sorted(exc.valid_methods))
        for key, value in (exc.get_headers() if exc.code in (429, 503) else []):
            if key.lower() == "retry-after":
                resp.headers[key] = value
        if exc.code == 503 and "Retry-After" not in resp.headers:
            resp.headers["Retry-After"] = "1"
        return resp

    @app.errorhandler(Exception)
    def server_error(exc: Exception):
        # A bug on our side, never the client's input: log it, and say so plainly.
        app.logger.exception("unhandled error on %s %s", request.method, request.path)
        return json_error(500, InternalServerError.description.split(".")[0] +
                          "; this is a bug in the book's server, not in your request")
