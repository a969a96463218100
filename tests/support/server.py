"""Live gunicorn processes for the tests: the one launcher the app, site, fault and deploy
tests share (`make serve`'s command by default), and a free port to put one on."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = "backend/gunicorn_conf.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    base: str  # http://127.0.0.1:PORT
    port: int
    proc: subprocess.Popen

    def workers(self) -> list[int]:
        """The workers' process ids (the master's children)."""
        import psutil

        return [c.pid for c in psutil.Process(self.proc.pid).children()]

    def tree(self) -> list:
        """The master and its workers, as psutil processes."""
        import psutil

        master = psutil.Process(self.proc.pid)
        return [master] + master.children(recursive=True)


@contextmanager
def serve(site_dir: Path | str = "/nonexistent", env: dict | None = None,
          workers: int | None = None, port: int | None = None, log: Path | None = None,
          config: str = CONFIG, argv: Sequence[str] | None = None, start_s: float = 90):
    """`gunicorn -c backend/gunicorn_conf.py` on 127.0.0.1, as `make serve` runs it; yields a
    `Server` once /api/health answers and every worker has forked; stopped (SIGTERM, then
    SIGKILL to its process group) afterwards.

    `env`: variables set for this server only (None removes one); `workers`: WEB_CONCURRENCY
    (None keeps the config's default); `log`: where its output goes (else a temporary file,
    whose tail a failed start reports); `config`: another config file (relative to the
    repository root); `argv`: gunicorn's arguments instead of `-c config` ("{port}" in them
    is replaced by the port); `start_s`: how long it may take to answer."""
    port = port or free_port()
    full = {**os.environ, "PORT": str(port), "HOST": "127.0.0.1", "BOOK_SITE_DIR": str(site_dir),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if workers is not None:
        full["WEB_CONCURRENCY"] = str(workers)
    full.update(env or {})
    full = {k: v for k, v in full.items() if v is not None}
    args = [a.format(port=port) for a in argv] if argv else ["-c", config]
    out = open(log, "w+b") if log else tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", *args], cwd=ROOT, env=full,
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", port, proc)
    try:
        _wait_healthy(server, out, start_s)
        # A worker answers as soon as it is imported (it warms in the background), possibly
        # before gunicorn has forked the others: wait for all of them.
        expected = int(full.get("WEB_CONCURRENCY") or 0)
        deadline = time.time() + start_s
        while expected and len(server.tree()) < expected + 1 and time.time() < deadline:
            time.sleep(0.2)
        yield server
    finally:
        stop(proc)
        out.close()


def _wait_healthy(server: Server, out, start_s: float) -> None:
    deadline = time.time() + start_s
    while True:
        try:
            urllib.request.urlopen(server.base + "/api/health", timeout=2)
            return
        except OSError:
            if server.proc.poll() is not None or time.time() > deadline:
                stop(server.proc)
                out.seek(0)
                tail = out.read().decode(errors="replace")[-3000:]
                pytest.fail(f"gunicorn did not answer /api/health:\n{tail}")
            time.sleep(0.2)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=25)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
