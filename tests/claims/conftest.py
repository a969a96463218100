"""What the claims tests of measured widgets share."""

from __future__ import annotations

import pytest


@pytest.fixture()
def private_timing_lock(tmp_path, monkeypatch):
    """A timing lock of this test's own, so that a server's or another test's timings on this
    host never make a measurement here wait (or answer 503)."""
    from backend.widgets import measure

    monkeypatch.setattr(measure, "LOCK_PATH", str(tmp_path / "timing.lock"))


@pytest.fixture()
def one_torch_thread():
    """Tiny tensors: torch's thread pool only adds overhead on a busy machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
