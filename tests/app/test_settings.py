"""The one table of environment variables: every bad value stops the server at start with a
message naming the variable, in `create_app` and through gunicorn; the README lists exactly
the table's variables, with the table's defaults."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from backend import settings
from backend.app import create_app

ROOT = Path(__file__).resolve().parents[2]

# The variable names deployments set (compose, Kubernetes, the README): the table must hold exactly
# these, so renaming or dropping one is a deliberate change here as well.
AGREED = {"HOST", "PORT", "WEB_CONCURRENCY", "BOOK_CPUS", "BOOK_THREADS", "BOOK_ACCESS_LOG", "BOOK_DEVICE",
          "BOOK_SITE_DIR", "BOOK_MAX_BODY_BYTES", "BOOK_MAX_CONCURRENT",
          "BOOK_COMPUTE_WAIT_SECONDS", "BOOK_HEAVY_WAIT_SECONDS", "BOOK_RATE_LIMIT",
          "BOOK_CACHE_URL", "BOOK_CACHE_PASSWORD", "BOOK_CACHE_TTL_SECONDS", "BOOK_CORS_ORIGINS", "BOOK_API_URL",
          "BOOK_HF_CHECKPOINT", "BOOK_TIMING_LOCK", "BOOK_TRUSTED_PROXIES", "BOOK_METRICS",
          "BOOK_ERRATA_URL", "BOOK_EXAM", "BOOK_SITE_URL", "BOOK_GPU_REPLICAS"}

BAD = [
    ("WEB_CONCURRENCY", "abc", "whole number"),
    ("WEB_CONCURRENCY", "0", "from 1 to 64"),
    ("PORT", "70000", "from 0 to 65535"),
    ("BOOK_THREADS", "4.5", "whole number"),
    ("BOOK_ACCESS_LOG", "maybe", "1/true/yes/on"),
    ("BOOK_METRICS", "public", "1/true/yes/on"),
    ("BOOK_ERRATA_URL", "javascript:alert(1)", "http(s) URL"),
    ("BOOK_GPU_REPLICAS", "0", "from 1 to 64"),
    ("BOOK_DEVICE", "tpu", "cpu, cuda or cuda:N"),
    ("BOOK_MAX_BODY_BYTES", "-1", "from 256 to"),
    ("BOOK_MAX_CONCURRENT", "two", "whole number"),
    ("BOOK_COMPUTE_WAIT_SECONDS", "soon", "number of seconds"),
    ("BOOK_HEAVY_WAIT_SECONDS", "nan", "finite number"),
    ("BOOK_RATE_LIMIT", "lots", "Flask-Limiter syntax"),
    ("BOOK_CACHE_URL", "ftp://x", "redis://"),
    ("BOOK_CACHE_URL", "redis://", "names no host"),
    ("BOOK_CACHE_TTL_SECONDS", "0", "from 1 to"),
    ("BOOK_CORS_ORIGINS", "https://ok.example, not an origin", "is not an origin"),
    ("BOOK_API_URL", "api.example.edu", "http(s) URL"),
    ("BOOK_HF_CHECKPOINT", "/no/such/checkpoint", "not a folder that exists"),
    ("BOOK_TIMING_LOCK", "/no/such/dir/lock", "folder that does not exist"),
    ("BOOK_TRUSTED_PROXIES", "-1", "from 0 to 8"),
]


def test_the_table_holds_exactly_the_agreed_variables():
    names = [v.name for v in settings.TABLE]
    assert len(names) == len(set(names))
    assert set(names) == AGREED


def test_defaults_with_an_empty_environment():
    values = settings.load({})
    assert values["PORT"] == 8000 and values["BOOK_MAX_CONCURRENT"] == 2
    assert 2 <= values["WEB_CONCURRENCY"] <= 4
    assert values["BOOK_CACHE_URL"] == "" and values["BOOK_TRUSTED_PROXIES"] == 0
    assert values["BOOK_RATE_LIMIT"] == "30000/minute;1000/second"


@pytest.mark.parametrize("raw, parsed", [("off", ""), ("OFF", ""), ("0", ""),
                                         ("100/second", "100/second"),
                                         ("3000/minute;100/second", "3000/minute;100/second")])
def test_rate_limit_syntax(raw, parsed):
    assert settings.load({"BOOK_RATE_LIMIT": raw})["BOOK_RATE_LIMIT"] == parsed


def test_good_values_are_parsed():
    values = settings.load({"WEB_CONCURRENCY": " 3 ", "BOOK_ACCESS_LOG": "yes",
                            "BOOK_DEVICE": "CUDA:1", "BOOK_CACHE_URL": "redis://cache:6379/0",
                            "BOOK_CORS_ORIGINS": "https://a.example, http://b.example:8080/",
                            "BOOK_API_URL": "https://api.example.edu/api/"})
    assert values["WEB_CONCURRENCY"] == 3 and values["BOOK_ACCESS_LOG"] is True
    assert values["BOOK_DEVICE"] == "cuda:1"
    assert values["BOOK_CORS_ORIGINS"] == ("https://a.example", "http://b.example:8080")
    assert values["BOOK_API_URL"] == "https://api.example.edu/api"


@pytest.mark.parametrize("name, raw, reason", BAD)
def test_a_bad_value_stops_create_app_naming_the_variable(name, raw, reason):
    with pytest.raises(SystemExit) as info:
        create_app({"TESTING": True}, environ={name: raw})
    message = str(info.value)
    assert f"{name}={raw!r}" in message and reason in message


SERVE = [sys.executable, "-m", "backend.serve"]          # what `make serve` runs
GUNICORN = [sys.executable, "-m", "gunicorn", "-c", "backend/gunicorn_conf.py"]


def _run(cmd: list[str], env_extra: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, "PORT": "0", **env_extra}
    return subprocess.run(cmd + ["--check-config"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("cmd", [SERVE, GUNICORN], ids=["backend.serve", "gunicorn -c"])
@pytest.mark.parametrize("name, raw", [("WEB_CONCURRENCY", "abc"), ("BOOK_RATE_LIMIT", "lots"),
                                       ("BOOK_CACHE_URL", "ftp://x")])
def test_a_bad_value_stops_gunicorn_at_start_naming_the_variable(cmd, name, raw):
    if cmd is GUNICORN and name == "WEB_CONCURRENCY":
        # gunicorn parses WEB_CONCURRENCY itself on import, before any config file: it still
        # stops, with its own traceback; `backend.serve` checks first and says it in one line.
        proc = _run(cmd, {name: raw})
        assert proc.returncode != 0 and "WEB_CONCURRENCY" in proc.stderr
        return
    proc = _run(cmd, {name: raw})
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert f"bad setting {name}={raw!r}" in out, out[-2000:]
    assert "Traceback" not in out


@pytest.mark.parametrize("cmd", [SERVE, GUNICORN], ids=["backend.serve", "gunicorn -c"])
def test_gunicorn_starts_with_the_defaults(cmd):
    proc = _run(cmd, {})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]


def _readme_rows() -> dict[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Settings (environment variables)", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*`([A-Z_]+)`\s*\|", line)
        if m:
            rows[m.group(1)] = line
    return rows


def test_the_readme_lists_exactly_the_tables_variables():
    rows = _readme_rows()
    assert set(rows) == {v.name for v in settings.TABLE}


def test_the_readme_table_is_the_generated_one():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert settings.markdown_table() in text, \
        "README's settings table is stale: paste the output of `python -m backend.settings`"
