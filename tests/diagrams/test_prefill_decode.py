"""The prefill/decode diagram follows its configuration, and its labels are the shapes of the
attention weights the reference model computes in each pass."""

from __future__ import annotations

import re

import pytest
import torch

from backend.diagrams import prefill_decode
from backend.reference.config import ModelConfig
from backend.reference.model import DecoderLM


def _cells(canvas, tone):
    return len(re.findall(rf'<rect [^>]*class="tw-d-box tw-d-{tone}"', "".join(canvas.parts)))


@pytest.mark.parametrize("prompt, steps", [(5, 3), (1, 1), (8, 6), (3, 5)])
def test_prefill_is_a_triangle_and_each_step_one_row(prompt, steps):
    c = prefill_decode.draw(prompt=prompt, steps=steps)
    assert _cells(c, "query") == prompt * (prompt + 1) // 2 + 1      # and one legend swatch
    assert _cells(c, "accent") == steps + 1                            # each row's own key
    assert _cells(c, "key") == sum(prompt + r - 1 for r in range(1, steps + 1)) + 1
    texts = c.texts()
    assert f"{prompt} × {prompt}" in texts
    rows = texts[texts.index("prefill") + 2:]  # after prefill's own "P × P"
    assert [t for t in rows if t.startswith("1 × ")] == [f"1 × {prompt + r}"
                                                         for r in range(1, steps + 1)]
    assert [t for t in texts if t.startswith("step ")] == [f"step {r}" for r in range(1, steps + 1)]
    assert c.width >= 360 and f"{prompt + steps} at the last" in c.desc


def test_a_larger_configuration_draws_more():
    small, large = prefill_decode.draw(prompt=2, steps=1), prefill_decode.draw(prompt=6, steps=4)
    assert large.height > small.height
    assert _cells(large, "query") > _cells(small, "query")


@pytest.mark.parametrize("bad", [{"prompt": 0}, {"prompt": 9}, {"steps": 7}, {"prompt": 8, "steps": 7}])
def test_out_of_range_configurations_are_refused(bad):
    with pytest.raises(ValueError):
        prefill_decode.draw(**bad)


@torch.no_grad()
def test_the_labels_are_the_reference_models_attention_shapes():
    """Prefill's weights are (B, h, P, P) with the causal triangle kept; a cached decode step's
    are (B, h, 1, P + r): one query row against every stored key and its own."""
    prompt, steps = 5, 3
    cfg = ModelConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=32,
                      max_seq_len=16)
    model = DecoderLM(cfg).eval()
    ids = torch.arange(prompt)[None]
    cache = model.new_cache()
    out = model(ids, cache=cache, output_attentions=True)
    w = out.attentions[0]
    assert w.shape == (1, 2, prompt, prompt)
    kept = int((w[0, 0] > 0).sum())
    shapes = []
    for _r in range(1, steps + 1):
        nxt = out.logits[:, -1:].argmax(-1)
        out = model(nxt, cache=cache, output_attentions=True)
        shapes.append(tuple(out.attentions[0].shape))
    texts = prefill_decode.draw(prompt=prompt, steps=steps).texts()
    assert f"{w.shape[2]} × {w.shape[3]}" in texts
    assert kept == prompt * (prompt + 1) // 2  # the triangle: masked scores are exactly 0
    rows = texts[texts.index("prefill") + 2:]
    assert [f"1 × {s[3]}" for s in shapes] == [t for t in rows if t.startswith("1 × ")]
    assert all(s[2] == 1 for s in shapes)
