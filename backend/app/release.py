"""The release: what an answer depends on besides its setting. One name, used by the result
cache's keys (in-process, Redis) and by the ETag a browser or nginx revalidates with, so a
deploy never serves the previous code's answer from any cache under the new release."""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

from backend import device

BACKEND = Path(__file__).resolve().parents[1]
CACHE_VERSION = "v2"  # bump when a result's shape changes, so a shared Redis drops old ones
# The packages whose arithmetic or tokenisation is in the answers.
PACKAGES = ("torch", "numpy", "transformers", "tokenizers", "plotly")


@functools.cache
def code_release() -> str:
    """What the book's pages name as their release, and `/api/health` too: a digest of every file
    under `backend` (code, weights, corpora; compiled bytecode left out), the versions of the
    packages that compute and the cache's format version. No device: the pages are built once and
    served by hosts with or without a GPU. Read once per process."""
    digest = hashlib.sha256(CACHE_VERSION.encode())
    for name in PACKAGES:
        try:
            digest.update(f"|{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"|{name}=-".encode())
    for path in sorted(BACKEND.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(b"\0" + path.relative_to(BACKEND).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@functools.cache
def release() -> str:
    """The code's release on this device: what an answer depends on, so the result cache's keys
    and the ETag name it (a timing measured on one card is not another's)."""
    return hashlib.sha256(f"{code_release()}|{device.describe()}".encode()).hexdigest()[:12]
