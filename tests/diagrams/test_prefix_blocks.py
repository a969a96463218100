"""The prefix-blocks diagram follows its configuration and counts what the reference counts."""

from __future__ import annotations

import math
import re

import pytest

from backend.diagrams import prefix_blocks
from backend.reference.serving import cached_prefix_tokens


def _tones(canvas, tone):
    return len(re.findall(rf"<rect [^>]*tw-d-{tone}", "".join(canvas.parts)))


@pytest.mark.parametrize("tokens, shared, block", [(80, 40, 16), (80, 64, 16), (100, 70, 16),
                                                   (48, 10, 16), (12, 7, 2)])
def test_whole_shared_blocks_hit_and_the_rest_is_prefilled(tokens, shared, block):
    c = prefix_blocks.draw(tokens=tokens, shared=shared, block=block)
    blocks = math.ceil(tokens / block)
    hit = shared // block
    assert _tones(c, "good") == hit + 1                    # and its legend swatch
    assert _tones(c, "accent") == blocks - hit + 1
    assert f"from the cache: {hit * block} tokens" in c.texts()
    assert f"prefilled again: {tokens - hit * block} tokens" in c.texts()


def test_a_longer_shared_prefix_hits_more_blocks():
    assert (_tones(prefix_blocks.draw(shared=64), "good")
            > _tones(prefix_blocks.draw(shared=40), "good"))


def test_the_reference_rule_whole_blocks_and_a_minimum():
    assert cached_prefix_tokens(40, 16) == 32
    assert cached_prefix_tokens(350, 128, minimum=1024) == 0       # a short system prompt
    assert cached_prefix_tokens(3500, 128, minimum=1024) == 3456
    assert cached_prefix_tokens(3500, 16) == 3488
    assert "32 tokens, come from the cache" in prefix_blocks.draw(tokens=80, shared=40).desc


def test_a_wholly_shared_prompt_still_runs_its_last_token():
    """An engine must run the prompt's last token to get the first new token's logits (vLLM caps
    a hit at the prompt minus one), so a prompt shared whole reuses the blocks before it."""
    assert cached_prefix_tokens(400, 16, prompt=400) == 384
    assert cached_prefix_tokens(399, 16, prompt=400) == 384
    assert cached_prefix_tokens(350, 16, prompt=400) == 336
    assert cached_prefix_tokens(1, 16, prompt=1) == 0
    c = prefix_blocks.draw(tokens=80, shared=80, block=16)
    assert "from the cache: 64 tokens" in c.texts() and "prefilled again: 16 tokens" in c.texts()
