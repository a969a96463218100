"""The 2017 encoder-decoder is drawn from its configuration; its labels match the reference model."""

from __future__ import annotations

import pytest
import torch

from backend.diagrams import transformer_2017
from backend.reference.config import ModelConfig
from backend.reference.encoder_decoder import EncoderDecoder, trace_shapes


@pytest.mark.parametrize("n", [1, 2, 6])
def test_one_box_per_sublayer_per_layer(n):
    texts = transformer_2017.draw(n_layers=n).texts()
    assert texts.count("self-attn") == n            # the encoder's
    assert texts.count("masked self-attn") == n     # the decoder's
    assert texts.count("cross-attn") == n
    assert texts.count("MLP") == 2 * n
    assert texts.count(f"{n} layers") == 2


def test_the_memory_reaches_every_decoder_layer():
    """One arrow from the memory's bus into each decoder layer's cross-attention."""
    for n in (2, 5):
        svg = transformer_2017.draw(n_layers=n).render("fig-t")
        assert svg.count("tw-d-fill-value") == n


def test_width_and_embedding_scale_follow_the_configuration():
    paper, small = transformer_2017.draw().texts(), transformer_2017.draw(d_model=8, scale_embeddings=False).texts()
    assert "√512·embed + PE" in paper and "memory S × 512" in paper
    assert "embed + PE" in small and "memory S × 8" in small and not any("√" in t for t in small)


@torch.no_grad()
def test_labels_are_the_reference_models_shapes_and_layers():
    cfg = ModelConfig(vocab_size=11, d_model=16, n_layers=3, n_heads=2, d_ff=32, max_seq_len=8)
    model = EncoderDecoder(cfg).eval()
    src, tgt = torch.ones(1, 5, dtype=torch.long), torch.ones(1, 4, dtype=torch.long)
    shapes = trace_shapes(model, src, torch.tensor([5]), tgt)
    texts = transformer_2017.draw(n_layers=cfg.n_layers, d_model=cfg.d_model, n_heads=cfg.n_heads,
                                  d_ff=cfg.d_ff).texts()
    assert shapes["memory (encoder output)"][-1] == cfg.d_model and f"memory S × {cfg.d_model}" in texts
    assert shapes["source embedded + positions"][-1] == cfg.d_model and f"S × {cfg.d_model}" in texts
    assert shapes["target embedded + positions"][-1] == cfg.d_model and f"T × {cfg.d_model}" in texts
    assert len(model.decoder_layers) == texts.count("cross-attn")
    assert all(hasattr(layer, "cross_attn") for layer in model.decoder_layers)
    assert not any(hasattr(layer, "cross_attn") for layer in model.encoder_layers)
    assert len(model.encoder_layers) == texts.count("self-attn")


def test_depth_is_bounded():
    with pytest.raises(ValueError):
        transformer_2017.draw(n_layers=9)
