"""Results that take minutes, kept on disk for the other processes of the same checkout.

The training chapter's facts train about forty tiny models: three minutes of one core. The book's
build computes them for its prose and questions, and the claims tests compute them again, in
another process, to check that prose: the same code on the same data, so the same numbers. The
first process to finish writes them under `.cache/kept/`, and the others read them, under a key
that changes with every file of `backend/` (code, data, weights), the locked package versions,
torch's version and its thread count (training rounds differently on another thread count).

Only what the build and the tests compute goes here, never a server's answer: the server does
not call these functions, and where the folder cannot be written (a read-only image) the
result is simply computed each time. JSON, not pickle: nothing read back here is executed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / ".cache" / "kept"
log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def _sources() -> str:
    digest = hashlib.sha256()
    files = sorted(p for p in (ROOT / "backend").rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts)
    files += sorted(ROOT.glob("requirements*.lock"))
    for path in files:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def key(name: str) -> str:
    """What the result depends on, as a file name."""
    digest = hashlib.sha256(
        f"{_sources()} torch {torch.__version__} threads {torch.get_num_threads()}".encode())
    return f"{name}-{digest.hexdigest()[:24]}.json"


def kept(name: str):
    """Decorator for a function of no arguments whose result is JSON (floats, NaN included):
    read from `.cache/kept/` where this checkout wrote it, else computed and written there."""
    def wrap(fn):
        @functools.wraps(fn)
        def read_or_compute():
            path = FOLDER / key(name)
            try:
                return json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                pass
            result = fn()
            try:
                FOLDER.mkdir(parents=True, exist_ok=True)
                part = path.with_suffix(f".{os.getpid()}.part")
                part.write_text(json.dumps(result), encoding="utf-8")
                part.replace(path)  # whole or not at all, for a reader in another process
            except OSError as err:
                log.info("%s not kept: %s", name, err)
            return json.loads(json.dumps(result))  # as a reader gets it: lists, not tuples
        return read_or_compute
    return wrap

