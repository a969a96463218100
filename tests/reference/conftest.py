"""Fixtures for the reference-implementation tests: seeded RNG, one intra-op thread."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _seed_and_single_thread():
    """Seed every test. The configs here are tiny, and on a busy 2-core machine torch's intra-op
    thread pool costs far more than it saves (a 100-element softmax: ~2 us on one thread, ~100 us
    or worse on two), so each test runs single-threaded and restores the setting afterwards."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
