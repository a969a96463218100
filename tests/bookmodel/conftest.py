"""What the book model's tests share."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="module")
def torch_threads_restored():
    """Training, and the shipped model's checks, run on the thread count it was trained with
    (`torch.set_num_threads`, process-wide). Later tests in the session get the count back: on a
    machine with another number of cores, a value one of them cached before this module and the
    same value computed after would otherwise be summed by a different number of threads."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)
