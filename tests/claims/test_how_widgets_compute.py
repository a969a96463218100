"""Every qualitative sentence of Appendix B, "How the widgets compute"
(docs/chapters/how-widgets-compute.md and the chapters' notes it gathers,
docs/chapters/_compute/<chapter>.md), asserted over what the code computes. Sentences a chapter's
own claims test already asserts are named there, not repeated: each section below says where.
Nothing here times anything (timed claims are in the chapters' timing tests).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- cost.md: the ceilings
# (the CPU's two rules and the slider's top: test_cost_memory_time.py)

def attention_cost_facts(**params):
    """What `{{ value("attention_cost", ...) }}` reads from the build's facts (no timing)."""
    from backend.compute import attention_cost as w

    return w.facts(w.SPEC.resolve({"context_len": 16, **params}))


@pytest.mark.parametrize("free_gb", [80, 141])
@pytest.mark.parametrize("workers", [1, 2, 4])
def test_a_gpu_ceiling_is_each_workers_share_of_the_free_memory(monkeypatch, free_gb, workers):
    """'On a GPU, "memory" is one worker's share of what torch.cuda.mem_get_info reports free
    when the server starts: the free bytes divided by the number of the server's workers
    (WEB_CONCURRENCY)'; 'a GPU with 80 GB free, served by 2 workers ..., would allow T = 50,000
    for one head in float32, and one with 141 GB free T = 66,379; ... A server of one worker has
    the whole card to itself: T = 70,710 and T = 93,874 at one head; more workers each get less.'
    The server's own path, on a pretend card: device.memory_bytes asks mem_get_info and reads
    WEB_CONCURRENCY, budgets.memory_budget takes its share, and the memory rule's ceiling follows."""
    from backend import budgets, device
    from backend.compute import attention_cost as w
    from backend.reference import attention_cost as ac

    free = int(free_gb * 1e9)
    monkeypatch.setattr(device, "device", lambda: "cuda:0")
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index=None: (free, 2 * free))
    monkeypatch.setenv("WEB_CONCURRENCY", str(workers))
    monkeypatch.setattr(device, "memory_bytes", device.memory_bytes.__wrapped__)  # uncached
    assert device.memory_bytes() == free // workers
    served = ac.largest_context(budgets.memory_budget(), 1, 1, torch.float32)
    assert served == w.gpu_memory_ceiling(free, workers)
    f = attention_cost_facts()
    quoted = {(80, 2): f["ceiling_80gb"], (141, 2): f["ceiling_141gb"],
              (80, 1): f["ceiling_80gb_one_worker"], (141, 1): f["ceiling_141gb_one_worker"]}
    if (free_gb, workers) in quoted:
        assert served == quoted[(free_gb, workers)]
    assert (f["ceiling_80gb"], f["ceiling_141gb"]) == (50_000, 66_379)
    assert (f["ceiling_80gb_one_worker"], f["ceiling_141gb_one_worker"]) == (70_710, 93_874)
    if workers > 1:  # 'more workers each get less'
        assert served < f[f"ceiling_{free_gb}gb_one_worker"]


def test_the_quoted_workers_are_the_lecture_halls():
    """'served by 2 workers (as the lecture-hall stack and the cluster manifests run it)'."""
    from backend.compute import attention_cost as w

    compose = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    configmap = (ROOT / "deploy/kubernetes/base/configmap.yaml").read_text(encoding="utf-8")
    assert re.search(r"WEB_CONCURRENCY: \$\{WEB_CONCURRENCY:-(\d+)\}", compose).group(1) == str(w.SHIPPED_WORKERS)
    assert re.search(r'WEB_CONCURRENCY: "(\d+)"', configmap).group(1) == str(w.SHIPPED_WORKERS)
    assert attention_cost_facts()["shipped_workers"] == w.SHIPPED_WORKERS == 2


def test_at_32_heads_the_141gb_card_allows_less():
    """'at 32 heads, the 141 GB one allows only T = ... for the explicit path' (the same two workers)."""
    from backend.compute import attention_cost as w

    one, many = attention_cost_facts(), attention_cost_facts(n_heads=32)
    assert many["ceiling_141gb"] < one["ceiling_141gb"]
    assert many["ceiling_141gb"] == w.gpu_memory_ceiling(int(141e9), 2, n_heads=32)
