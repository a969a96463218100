"""What several claims tests share (the private timing lock is in tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture()
def one_torch_thread():
    """Tiny tensors: torch's thread pool only adds overhead on a busy machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
