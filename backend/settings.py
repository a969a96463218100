"""Every environment variable the server reads, in one table: name, type, default, meaning and
the check its value must pass. `create_app`, `backend/gunicorn_conf.py` and `backend/device.py`
read their settings from here, so a bad value (`WEB_CONCURRENCY=abc`) stops the server at
start with a sentence naming the variable, instead of surfacing later as a 500.

The README's configuration table is written from `TABLE` (`python -m backend.settings`
prints it) and a test checks that the two agree.

This module imports nothing heavy (no torch, no Flask): the gunicorn master reads it first.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO_ROOT = Path(__file__).resolve().parents[1]


class SettingError(SystemExit):
    """A bad environment variable. A SystemExit, so an uncaught one stops the process with
    its message (and no traceback) in the gunicorn master and in `create_app` alike."""

    def __init__(self, name: str, raw: str, reason: str):
        self.name, self.raw, self.reason = name, raw, reason
        super().__init__(f"bad setting {name}={raw!r}: {reason}")


# ------------------------------------------------------------------------------ parsers
# Each takes the stripped text of the variable and returns the value or raises ValueError
# with a reason written for the person who set it.

def _int(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError("must be a whole number") from None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ValueError(f"must be from {lo} to {hi}" if hi is not None else
                             f"must be at least {lo}")
        return value
    return parse


def _float(lo: float = 0.0) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError("must be a number of seconds") from None
        if not (value >= lo) or value == float("inf"):
            raise ValueError(f"must be a finite number, at least {lo:g}")
        return value
    return parse


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _bool(text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError("must be one of 1/true/yes/on or 0/false/no/off")


def _text(text: str) -> str:
    return text


def _device(text: str) -> str:
    text = text.lower()
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
        raise ValueError("must be cpu, cuda or cuda:N")
    return text


def _rate_limit(text: str) -> str:
    if text.lower() in {"off", "0", "none"}:
        return ""
    from limits import parse_many  # Flask-Limiter's own parser: the same syntax it enforces

    try:
        parse_many(text)
    except ValueError:
        raise ValueError("must be Flask-Limiter syntax such as '3000/minute;100/second', "
                         "or 'off'") from None
    return text


def _cache_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in {"redis", "rediss", "unix"}:
        raise ValueError("must be a redis:// (or rediss://, unix://) URL, or empty for "
                         "the in-process cache")
    if parts.scheme != "unix" and not parts.hostname:
        raise ValueError("names no host")
    try:
        _ = parts.port  # reading it raises ValueError for a port that is not a number
    except ValueError:
        raise ValueError("has a port that is not a number") from None
    return text


def _origin(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in {"http", "https"} or not parts.hostname or parts.path not in {"", "/"} \
            or parts.query or parts.fragment:
        raise ValueError(f"{text!r} is not an origin like https://book.example.edu")
    return f"{parts.scheme}://{parts.netloc}"


def _origins(text: str) -> tuple[str, ...]:
    return tuple(_origin(o.strip()) for o in text.split(",") if o.strip())


def _api_url(text: str) -> str:
    if text.startswith("/"):
        return text.rstrip("/") or "/"
    parts = urlsplit(text)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValueError("must be an http(s) URL such as https://api.example.edu/api, "
                         "or a path such as /api")
    return text.rstrip("/")


def _site_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in {"http", "https"} or not parts.hostname or parts.query or parts.fragment:
        raise ValueError("must be the http(s) URL the book is served at, such as "
                         "https://book.example.edu/ or https://example.edu/course/book/")
    return text if text.endswith("/") else text + "/"


def _report_link(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme == "mailto" and "@" in parts.path:
        return text
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValueError("must be an http(s) URL such as https://github.com/you/book/issues, "
                         "or a mailto: address")
    return text


def _folder(text: str) -> str:
    if not Path(text).is_dir():
        raise ValueError("is not a folder that exists")
    return text


def _lock_file(text: str) -> str:
    if not Path(text).parent.is_dir():
        raise ValueError("lies in a folder that does not exist")
    return text


def _default_cpus() -> int:
    from backend.host import available_cpus

    return available_cpus()


def _default_workers() -> int:
    from backend.host import available_cpus  # the container's CPU quota, not the host's cores

    return min(4, max(2, available_cpus()))


# -------------------------------------------------------------------------------- table

@dataclass(frozen=True)
class Var:
    name: str
    kind: str           # as the README shows it
    default: Any        # the parsed default; a callable is evaluated on the host
    shown: str          # the default as the README shows it
    meaning: str
    parse: Callable[[str], Any]
    check: str          # the validation, in words
    config: str | None = None  # the Flask config key, for variables the app reads


TABLE: tuple[Var, ...] = (
    Var("HOST", "text", "127.0.0.1", "`127.0.0.1`", "address gunicorn listens on "
        "(`0.0.0.0` in the container)", _text, "any"),
    Var("PORT", "integer", 8000, "`8000`", "port gunicorn listens on (0: any free port)", _int(0, 65535),
        "0 to 65535"),
    Var("WEB_CONCURRENCY", "integer", _default_workers, "2–4 by CPU count",
        "gunicorn worker processes", _int(1, 64), "1 to 64"),
    Var("BOOK_CPUS", "integer", _default_cpus, "the container's CPU quota, else its cores",
        "CPUs the server plans for: each worker's torch computes on `BOOK_CPUS ÷ "
        "WEB_CONCURRENCY` threads (at least 1). A quota (cgroup `cpu.max`, or v1's "
        "`cpu.cfs_quota_us`) is read by itself; set this where the share is smaller than the "
        "quota (the cluster manifests pass the pod's CPU request)", _int(1, 1024), "1 to 1024"),
    Var("BOOK_THREADS", "integer", 64, "`64`", "threads per worker: enough that computations "
        "waiting their turn (in the fair queue, not in gunicorn's) leave threads for health "
        "checks, pages and cached answers", _int(1, 256), "1 to 256"),
    Var("BOOK_ACCESS_LOG", "boolean", True, "on", "log every request to stdout (gunicorn's "
        "access log: client, request line, status, bytes, milliseconds, request id)", _bool,
        "1/true/yes/on or 0/false/no/off"),
    Var("BOOK_METRICS", "boolean", True, "on", "serve Prometheus metrics at `/metrics` on the "
        "app's port (every worker in one scrape; see \"Watching it run\")", _bool,
        "1/true/yes/on or 0/false/no/off", "METRICS"),
    Var("BOOK_GPU_REPLICAS", "integer", 1, "`1`", "replicas that share one GPU "
        "(`compose.gpu.yaml` sets it with its replica count): each worker plans its memory "
        "ceilings against the card's free memory divided by `WEB_CONCURRENCY` times this",
        _int(1, 64), "1 to 64"),
    Var("BOOK_DEVICE", "text", "", "`cuda` if available, else `cpu`",
        "torch device the widgets compute on", _device, "cpu, cuda or cuda:N"),
    Var("BOOK_SITE_DIR", "path", str(REPO_ROOT / "site"), "`site/`", "the built book to serve",
        _text, "any (a missing book is a 503 page saying how to build it)", "SITE_DIR"),
    Var("BOOK_MAX_BODY_BYTES", "integer", 16 * 1024, "`16384`",
        "largest request body; larger gets 413", _int(256, 1 << 24), "256 to 16777216",
        "MAX_CONTENT_LENGTH"),
    Var("BOOK_MAX_CONCURRENT", "integer", 2, "`2`", "computations at once per worker; more "
        "wait in a fair queue (16 places per slot), then 503", _int(1, 64), "1 to 64",
        "MAX_CONCURRENT_COMPUTES"),
    Var("BOOK_COMPUTE_WAIT_SECONDS", "seconds", 5.0, "`5`", "how long a request may wait in "
        "the queue for a computation, then 503", _float(0), "a number ≥ 0",
        "COMPUTE_WAIT_SECONDS"),
    Var("BOOK_HEAVY_WAIT_SECONDS", "seconds", 30.0, "`30`", "the same for widgets that run "
        "whole models (one at a time per worker; a model may still be loading)", _float(0),
        "a number ≥ 0", "HEAVY_WAIT_SECONDS"),
    Var("BOOK_RATE_LIMIT", "limits", "30000/minute;1000/second", "`30000/minute;1000/second`",
        "requests to the API per client address (Flask-Limiter syntax); `off` disables. "
        "Shared by all workers with Redis, per worker without", _rate_limit,
        "Flask-Limiter syntax, or empty/`off`", "RATE_LIMIT"),
    Var("BOOK_CACHE_URL", "URL", "", "empty (in-process)", "where results and rate counters "
        "live: empty = each worker's memory; `redis://host:6379/0` = one Redis shared by every "
        "worker and replica", _cache_url, "empty, or a redis://, rediss:// or unix:// URL",
        "CACHE_URL"),
    Var("BOOK_CACHE_PASSWORD", "secret", "", "empty (no AUTH)", "the password of "
        "BOOK_CACHE_URL's Redis (kept out of the URL, so it is never printed with it); the "
        "compose stack and the cluster manifests require one", _text, "any", "CACHE_PASSWORD"),
    Var("BOOK_CACHE_TTL_SECONDS", "seconds", 86400, "`86400`", "how long a computed result "
        "is kept", _int(1, 365 * 86400), "1 to 31536000", "CACHE_TTL_SECONDS"),
    Var("BOOK_CORS_ORIGINS", "origins", (), "empty (same origin only)", "comma-separated "
        "origins allowed to call the API from another site", _origins,
        "comma-separated http(s) origins", "CORS_ORIGINS"),
    Var("BOOK_API_URL", "URL", "", "empty (`/api`, same origin)", "public API base the built "
        "pages call (read at build time by the hook, and at run time for the CSP's "
        "connect-src)", _api_url, "an http(s) URL or a path", "API_URL"),
    Var("BOOK_ERRATA_URL", "URL", "", "empty (the book's errata page)", "where every page's "
        "footer link 'Report a mistake' points: a course's issue tracker or an address (read at "
        "build time)", _report_link, "an http(s) URL or a mailto: address"),
    Var("BOOK_SITE_URL", "URL", "", "empty (the address each reader asked for)", "the public "
        "URL the built book is served at, for its sitemap and pages' canonical links (read at "
        "build time). Needed only on a static host: the book's own server (Flask, nginx) writes "
        "each reader's own address into the sitemap, which Material's instant navigation reads",
        _site_url, "an http(s) URL"),
    Var("BOOK_EXAM", "boolean", False, "off", "build an exam edition: the chapters' checked "
        "questions without their expected values, hints or worked answers, and no instructors' "
        "answer list (read at build time)", _bool, "1/true/yes/on or 0/false/no/off"),
    Var("BOOK_HF_CHECKPOINT", "path", "", "unset", "a local Hugging Face checkpoint folder "
        "(GPT-2, a Llama, …) offered as model `local` in the attention-map widget; loaded "
        "offline with eager attention. The only way a checkpoint is chosen: no request names "
        "a file", _folder, "a folder that exists"),
    Var("BOOK_TIMING_LOCK", "path", os.path.join(tempfile.gettempdir(), "book-timing.lock"),
        "`$TMPDIR/book-timing.lock`", "lock file (or folder) that serialises measured "
        "widgets' timings across all workers; replicas that mount one host folder and name it "
        "here time one at a time on the host (compose and the cluster do). A request waits up "
        "to 10 s, then 503; a lock that cannot be opened keeps only each worker's own timings "
        "apart (logged)", _lock_file, "its folder exists"),
    Var("BOOK_TRUSTED_PROXIES", "integer", 0, "`0`", "how many reverse proxies' "
        "`X-Forwarded-For` to trust for the client address (compose/k8s set 1)", _int(0, 8),
        "0 to 8", "TRUSTED_PROXIES"),
)

BY_NAME = {v.name: v for v in TABLE}


def value(var: Var, environ: Mapping[str, str]):
    raw = environ.get(var.name)
    if raw is None or raw.strip() == "":
        return var.default() if callable(var.default) else var.default
    try:
        return var.parse(raw.strip())
    except ValueError as exc:
        raise SettingError(var.name, raw, str(exc)) from None


def load(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every variable's value by name; the first bad one raises SettingError."""
    environ = os.environ if environ is None else environ
    return {var.name: value(var, environ) for var in TABLE}


def get(name: str, environ: Mapping[str, str] | None = None):
    return value(BY_NAME[name], os.environ if environ is None else environ)


def flask_config(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    values = load(environ)
    return {var.config: values[var.name] for var in TABLE if var.config}


def markdown_table() -> str:
    rows = ["| variable | type | default | meaning | accepted values |", "|---|---|---|---|---|"]
    rows += [f"| `{v.name}` | {v.kind} | {v.shown} | {v.meaning} | {v.check} |" for v in TABLE]
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
