"""Helpers of the guards' tests: a real redis-server, and a live gunicorn whose computation is
a fixed sleep (`slow_app.py`)."""

from __future__ import annotations

import functools
import http.client
import json
import os
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager

import pytest

from backend import settings
from backend.compute import REGISTRY
from tests.support.server import free_port, serve

URL = "/api/widgets/attention_scaling"


class RedisServer:
    def __init__(self, password: str | None = None):
        self.password = password
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", *(["--requirepass", self.password] if self.password else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hello = f"AUTH {self.password}\r\nPING\r\n".encode() if self.password else b"PING\r\n"
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(hello)
                    time.sleep(0.02)
                    if b"+PONG" in s.recv(64):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


@pytest.fixture()
def redis_server():
    yield from _redis(None)


@pytest.fixture()
def redis_with_password():
    """A Redis that requires AUTH, as the compose stack and the cluster manifests run it."""
    yield from _redis("s3cret-for-tests")


def _redis(password):
    if not shutil.which("redis-server"):
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is missing under CI: `make test` installs Debian's")
        pytest.skip("redis-server not installed (apt-get install redis-server; CI installs it)")
    server = RedisServer(password).start()
    yield server
    server.stop()


THREADS = settings.load({})["BOOK_THREADS"]  # the shipped default, as `make serve` runs


@contextmanager
def _slow_server(workers=1, **env_extra):
    with serve(env=env_extra, argv=[
            "-k", "gthread", "-w", str(workers), "--threads", str(THREADS),
            "-b", "127.0.0.1:{port}", "--no-control-socket", "--pythonpath", "tests/app",
            "--backlog", "256", "slow_app:create()"]) as server:
        # Each worker imports the app after its fork (no preload): wait until every one has
        # answered, or a test of how work spreads over workers measures the first one alone.
        seen, deadline = set(), time.time() + 90
        while len(seen) < workers and time.time() < deadline:
            _, headers, _, _ = _post(server.port, "127.0.0.1", {}, path="/api/health",
                                     method="GET")
            seen.add(headers.get("X-Test-Worker"))
            time.sleep(0.02)
        assert len(seen) >= workers, f"only {len(seen)} of {workers} workers answered in 90 s"
        yield server.port


def _post(port, source, body, path=URL, method="POST", conn=None):
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                              source_address=(source, 0))
    try:
        t0 = time.perf_counter()
        conn.request(method, path, body=json.dumps(body) if method == "POST" else None,
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, dict(resp.getheaders()), data, time.perf_counter() - t0
    finally:
        if own:
            conn.close()

@pytest.fixture(scope="session")
def slow_server():
    """`with slow_server(workers=1, **env) as port:` a live gunicorn with the shipped number of
    threads a worker (`BOOK_THREADS`' default)."""
    return _slow_server


@pytest.fixture(scope="session")
def post():
    """`post(port, source_address, body, conn=None) -> (status, headers, data, seconds)`."""
    return _post


@functools.cache
def _canned_answer(name: str) -> dict:
    """The widget's real answer at its defaults, computed once a session."""
    module = REGISTRY[name]
    return module.compute(module.SPEC.resolve({}))


@pytest.fixture()
def canned_compute(monkeypatch):
    """Every light widget's `compute` answers its own (real) result at the defaults, whatever it
    is asked: for fuzzing what the server does with a request (parsing, validation, errors,
    serialising, the document's schemas) thousands of times without thousands of
    computations. The fuzz tests keep a sample of real computations besides."""
    for name, module in REGISTRY.items():
        if module.SPEC.cost_hint == "light":
            answer = _canned_answer(name)  # computed (for real) before `compute` is replaced
            monkeypatch.setattr(module, "compute", lambda params, answer=answer: answer)
