"""The serving chapter's sentences about prefixes (what a cached prefix depends on), prices and
RAG, and the page as it renders, asserted over computed values. Its sentences about what a token
costs, the cache's lever and why it caps users are in test_serving.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from backend.compute import prefix_cache_cost as pc
from backend.reference.config import ModelConfig
from backend.reference.model import DecoderLM


def cost(**p):
    return pc.compute(pc.SPEC.resolve(p))["values"]


# ----------------------------------------------------------- prefixes: what a cache depends on

@torch.no_grad()
def test_a_prefix_cache_is_shared_and_one_changed_token_changes_everything_after_it():
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=61, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=64,
                      max_seq_len=32)
    model = DecoderLM(cfg).eval()
    a = torch.randint(0, 61, (1, 12))
    b = a.clone()
    b[0, 5] = (a[0, 5] + 1) % 61  # one token changed at position 5
    ca, cb = model.new_cache(), model.new_cache()
    model(a, cache=ca)
    model(b, cache=cb)
    # Exact, not close: both runs have the same shapes, so the same kernels sum in the same order,
    # and a position's row reads only earlier positions (a masked key adds an exact 0).
    for layer in range(cfg.n_layers):
        for x, y in ((ca.keys[layer], cb.keys[layer]), (ca.values[layer], cb.values[layer])):
            assert torch.equal(x[:, :, :5], y[:, :, :5])  # the shared prefix: identical
            assert not torch.equal(x[:, :, 5], y[:, :, 5])
            if layer >= 1:  # from the second layer on, every later position differs
                assert all(not torch.allclose(x[:, :, t], y[:, :, t]) for t in range(5, 12))
            else:  # the first layer: each position's own token and position only
                assert torch.equal(x[:, :, 6:], y[:, :, 6:])


# ------------------------------------------------------------------------- prices and RAG

def test_the_handout_bill():
    c = cost()
    assert (c["cost_full"], c["cost_cached"], c["saving"]) == (0.009, 0.00585, 0.35)
    assert c["cost_first_write"] == 0.009875 and c["break_even_requests"] == 2


@pytest.mark.parametrize("n_in, n_out", [(400, 100), (4000, 300), (100, 1), (1, 1000),
                                         (131_072, 131_072)])
def test_the_output_bounds_the_saving(n_in, n_out):
    for cached in sorted({1, max(1, n_in // 3), max(1, n_in // 2), n_in}):
        for p_cached in (0.0, 1.0, 5.0):
            c = cost(input_tokens=n_in, output_tokens=n_out, cached_tokens=cached,
                     price_cached=p_cached)
            assert c["saving"] <= 1 - c["output_share_full"] + 1e-15
    whole = cost(cached_tokens=400)
    assert whole["saving"] == 0.4 < 1 - whole["output_share_full"] and whole["output_share_full"] > 0.5


def test_rag_gains_little_a_long_fixed_prefix_a_lot():
    rag = cost(input_tokens=4000, cached_tokens=300, output_tokens=300)
    fixed = cost(input_tokens=4000, cached_tokens=3500, output_tokens=300)
    assert rag["saving"] < 0.1 < 0.5 < fixed["saving"]
    assert f"{rag['saving']:.1%}" == "4.9%" and f"{fixed['saving']:.0%}" == "57%"
    assert rag["cacheable_provider"] == 0          # "at a provider ... it saves nothing"


# The headline: 4,000 in, 3,500 fixed, 300 out: "$0.04300 without caching and $0.01835 with
# it, 57% less ... repaid by request number 2"; "a provider that caches in steps of 128 bills
# 3,456 of the 3,500"
def test_the_long_prefix_headline():
    c = cost(input_tokens=4000, cached_tokens=3500, output_tokens=300)
    assert c["cost_full"] > c["cost_cached"] and c["break_even_requests"] == 2
    assert c["cacheable_provider"] == 3456 and c["cacheable_provider"] % 128 == 0
    assert c["provider_minimum"] <= 3500


# "OpenAI and Anthropic cache nothing shorter than 1,024 tokens, and some of Anthropic's models
# need more, 2,048 or 4,096, as of 2026": the widget counts the lowest minimum, so its
# "earns nothing" below it holds at every provider.
# "350 tokens are under the providers' minimum, so there it earns nothing; a self-hosted engine
# would reuse 336 of them, its whole blocks." "Only whole blocks of the shared prefix are reused"
def test_a_short_prefix_earns_nothing_at_a_provider_and_whole_blocks_in_an_engine():
    c = cost()
    assert c["provider_minimum"] == 1024 and c["provider_step"] == 128 and c["engine_block"] == 16
    assert c["cacheable_provider"] == 0 and c["cacheable_engine"] == 336 == 350 // 16 * 16
    assert "caches none" in pc.compute(pc.SPEC.resolve({}))["notice"]
    assert "notice" not in pc.compute(pc.SPEC.resolve(
        {"input_tokens": 4000, "cached_tokens": 3500, "output_tokens": 300}))


def test_exercise_3_half_the_input_saves_a_fifth():
    assert cost(cached_tokens=200)["saving"] == 0.2
    assert cost(cached_tokens=200)["cacheable_provider"] == 0     # "A provider would not cache"
    assert cost(cached_tokens=199)["saving"] < 0.2 < cost(cached_tokens=201)["saving"]


# ------------------------------------------------------------------- the page as it renders

def test_no_value_that_starts_a_line_renders_as_a_list_marker():
    """A continuation line that begins '3. ' or '64) ' would start a new list item."""
    from widgets.build.macros import expand
    from widgets.build.widget_blocks import value_macro

    text = (Path(__file__).resolve().parents[2] / "docs/chapters/serving.md").read_text()
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("{{ value("):
            shown = expand(line, {"value": value_macro}, "serving.md").lstrip()
            assert not re.match(r"\d+[.)](\s|$)", shown), f"line {n}: {shown[:40]!r}"


# The units box: "Cache sizes in the paragraph above are in GiB (2^30 bytes) ...; everywhere else
# sizes are in GB". The paragraph right above the box quotes total_gib, and no total_gb.
def test_the_units_box_speaks_of_the_paragraph_above_it():
    text = (Path(__file__).resolve().parents[2] / "docs/chapters/serving.md").read_text()
    box = text.index('!!! note "Units, and what a card really holds"')
    assert "Cache sizes in the paragraph above are in GiB" in text[box:box + 400]
    above = text[:box].rstrip().rsplit("\n\n", 1)[-1]
    assert '"total_gib"' in above and '"total_gb"' not in above
