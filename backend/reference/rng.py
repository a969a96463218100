"""PyTorch's layers draw their default initialisation from the process's global generator, and
every thread of a server worker shares it: two requests building layers at once would draw from
each other's sequence. Everything in the book that builds layers does it inside `isolated_rng`,
which seeds the global generator, holds one lock while the layers are built, and puts the
generator's state back afterwards; every other random draw takes a `torch.Generator` (or
`numpy.random.Generator`) of its own. So a seeded answer is the same whatever else the worker
is computing, and no request moves the global state (tests/reference/test_rng.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

_LOCK = threading.RLock()


@contextmanager
def isolated_rng(seed: int = 0) -> Iterator[None]:
    """Build layers here: their default initialisation is PyTorch's, drawn after
    `torch.manual_seed(seed)`, and the global generator is left as it was found."""
    with _LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
