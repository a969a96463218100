"""Post-norm encoder/decoder layers against nn.TransformerEncoderLayer / DecoderLayer."""

import pytest
import torch
from torch import nn

from backend.reference.config import ModelConfig
from backend.reference.encoder_decoder import (
    DecoderLayer,
    EncoderDecoder,
    EncoderLayer,
    seq2seq_masks,
)
from backend.reference.masks import causal_mask, padding_mask

CFG = ModelConfig(vocab_size=29, d_model=32, n_layers=2, n_heads=4, d_ff=64, max_seq_len=32)
TOL = dict(atol=1e-5, rtol=0)


def load_mha(theirs: nn.MultiheadAttention, ours) -> None:
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        theirs.out_proj.weight.copy_(ours.o_proj.weight)
        theirs.out_proj.bias.copy_(ours.o_proj.bias)


def load_common(theirs, ours) -> None:
    with torch.no_grad():
        theirs.linear1.load_state_dict(ours.mlp.fc1.state_dict())
        theirs.linear2.load_state_dict(ours.mlp.fc2.state_dict())
        for i in (1, 2, 3):
            if hasattr(ours, f"norm{i}"):
                getattr(theirs, f"norm{i}").load_state_dict(getattr(ours, f"norm{i}").state_dict())


def torch_encoder_layer(ours: EncoderLayer) -> nn.TransformerEncoderLayer:
    theirs = nn.TransformerEncoderLayer(CFG.d_model, CFG.n_heads, CFG.d_ff, dropout=0.0, batch_first=True)
    load_mha(theirs.self_attn, ours.self_attn)
    load_common(theirs, ours)
    return theirs


def torch_decoder_layer(ours: DecoderLayer) -> nn.TransformerDecoderLayer:
    theirs = nn.TransformerDecoderLayer(CFG.d_model, CFG.n_heads, CFG.d_ff, dropout=0.0, batch_first=True)
    load_mha(theirs.self_attn, ours.self_attn)
    load_mha(theirs.multihead_attn, ours.cross_attn)
    load_common(theirs, ours)
    return theirs


def randomize_norms(module):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name:
                p.normal_()


@torch.no_grad()
def test_encoder_layer_matches_torch():
    ours = EncoderLayer(CFG)
    randomize_norms(ours)
    theirs = torch_encoder_layer(ours).train()  # train() with dropout 0: the plain (non-fast) path
    x, lengths = torch.randn(2, 7, 32), torch.tensor([7, 5])
    out, w = ours(x, padding_mask(lengths, 7))
    ref = theirs(x, src_key_padding_mask=~padding_mask(lengths, 7)[:, 0, 0])
    torch.testing.assert_close(out, ref, **TOL)
    assert w.shape == (2, 4, 7, 7) and torch.all(w[1, :, :, 5:] == 0)


@torch.no_grad()
def test_encoder_layer_matches_torch_fast_path():
    ours = EncoderLayer(CFG).eval()
    theirs = torch_encoder_layer(ours).eval()
    x = torch.randn(2, 7, 32)
    torch.testing.assert_close(ours(x)[0], theirs(x), **TOL)


@torch.no_grad()
def test_decoder_layer_matches_torch():
    ours = DecoderLayer(CFG)
    randomize_norms(ours)
    theirs = torch_decoder_layer(ours).train()
    y, memory = torch.randn(2, 5, 32), torch.randn(2, 8, 32)
    src_lengths = torch.tensor([8, 3])
    masks = seq2seq_masks(src_lengths, 8, 5)
    out, self_w, cross_w = ours(y, memory, masks.decoder, masks.cross)
    ref = theirs(
        y, memory,
        tgt_mask=~causal_mask(5),
        memory_key_padding_mask=~padding_mask(src_lengths, 8)[:, 0, 0],
    )
    torch.testing.assert_close(out, ref, **TOL)
    assert self_w.shape == (2, 4, 5, 5) and cross_w.shape == (2, 4, 5, 8)
    assert torch.all(self_w.triu(diagonal=1) == 0) and torch.all(cross_w[1, :, :, 3:] == 0)


@torch.no_grad()
def test_stacks_match_torch_encoder_and_decoder():
    """The whole N-layer stacks (nn.TransformerEncoder/Decoder with no final norm) on the same inputs."""
    model = EncoderDecoder(CFG).eval()
    enc = nn.TransformerEncoder(torch_encoder_layer(model.encoder_layers[0]), CFG.n_layers, enable_nested_tensor=False)
    dec = nn.TransformerDecoder(torch_decoder_layer(model.decoder_layers[0]), CFG.n_layers)
    for i in range(CFG.n_layers):
        enc.layers[i] = torch_encoder_layer(model.encoder_layers[i])
        dec.layers[i] = torch_decoder_layer(model.decoder_layers[i])
    enc.train(), dec.train()
    src, tgt = torch.randint(0, 29, (2, 9)), torch.randint(0, 29, (2, 6))
    lengths = torch.tensor([9, 6])
    masks = seq2seq_masks(lengths, 9, 6)
    memory, _ = model.encode(src, masks.encoder)
    src_x = model.frontend(src) + model.pos[:9]
    pad = ~padding_mask(lengths, 9)[:, 0, 0]
    torch.testing.assert_close(memory, enc(src_x, src_key_padding_mask=pad), **TOL)
    y, _, _ = model.decode(tgt, memory, masks.decoder, masks.cross)
    tgt_x = model.tgt_embed(tgt) + model.pos[:6]
    ref = dec(tgt_x, memory, tgt_mask=~causal_mask(6), memory_key_padding_mask=pad)
    torch.testing.assert_close(y, ref, **TOL)


def test_full_model_shapes_and_training_step():
    model = EncoderDecoder(CFG)
    src, tgt = torch.randint(0, 29, (3, 10)), torch.randint(0, 29, (3, 7))
    out = model(src, torch.tensor([10, 4, 1]), tgt)
    assert out.logits.shape == (3, 7, 29)
    assert [w.shape for w in out.cross_attentions] == [(3, 4, 7, 10)] * 2
    out.logits.sum().backward()


def test_three_masks():
    m = seq2seq_masks(torch.tensor([3, 5]), s=5, t=4, tgt_lengths=torch.tensor([4, 2]))
    assert m.encoder.shape == (2, 1, 1, 5) and m.cross.shape == (2, 1, 4, 5)
    assert m.decoder.shape == (2, 1, 4, 4)
    assert m.decoder[1, 0, 3].tolist() == [True, True, False, False]  # causal AND target padding


def test_gqa_config_is_rejected():
    with pytest.raises(ValueError, match="n_kv_heads"):
        EncoderDecoder(CFG.replace(n_kv_heads=2))


def test_trace_shapes_follow_the_model():
    """trace_shapes reports what the model's own forward returns (an independent path through it)."""
    from backend.reference.encoder_decoder import trace_shapes

    model = EncoderDecoder(CFG).eval()
    src, tgt = torch.randint(0, 29, (3, 10)), torch.randint(0, 29, (3, 7))
    lengths = torch.tensor([10, 4, 1])
    out = model(src, lengths, tgt)
    shapes = trace_shapes(model, src, lengths, tgt)
    assert shapes["logits"] == tuple(out.logits.shape) == (3, 7, 29)
    assert shapes["cross-attention weights"] == tuple(out.cross_attentions[0].shape) == (3, 4, 7, 10)
    assert shapes["encoder self-attention weights"] == tuple(out.encoder_attentions[0].shape)
    assert shapes["memory (encoder output)"] == (3, 10, 32)


def test_base_model_forward_check_prints_16_50_26():
    """004 section 9.8 prints `logits shape: torch.Size([16, 50, 26])`."""
    from backend.reference.encoder_decoder import base_model_forward_check

    shapes = base_model_forward_check()
    assert shapes["logits"] == (16, 50, 26)
    assert shapes["source"] == (16, 100, 80) and shapes["cross-attention weights"] == (16, 8, 50, 100)


def test_base_model_forward_check_parameter_count_by_hand():
    """The meta-device count against hand arithmetic for 6 + 6 post-norm layers at d = 512."""
    from backend.reference.encoder_decoder import base_model_forward_check

    d, f, v = 512, 2048, 26
    attn = 4 * (d * d + d)
    mlp = d * f + f + f * d + d
    norm = 2 * d
    encoder = 6 * (attn + mlp + 2 * norm)
    decoder = 6 * (2 * attn + mlp + 3 * norm)
    total = (80 * d + d) + v * d + encoder + decoder + (d * v + v)
    assert base_model_forward_check()["parameters"] == (total,) == (44_206_618,)


def test_forward_check_on_a_real_device_matches_meta():
    """The meta shapes are the shapes of a real forward pass (a small batch to keep it quick)."""
    from torch import nn as tnn

    from backend.reference.encoder_decoder import trace_shapes

    cfg = ModelConfig(vocab_size=26, d_model=64, n_layers=2, n_heads=8, d_ff=128, max_seq_len=128)
    real = EncoderDecoder(cfg, frontend=tnn.Linear(80, 64)).eval()
    with torch.device("meta"):
        meta = EncoderDecoder(cfg, frontend=tnn.Linear(80, 64)).eval()
    x, lens, y = torch.randn(2, 100, 80), torch.tensor([100, 37]), torch.zeros(2, 50, dtype=torch.long)
    got = trace_shapes(real, x, lens, y)
    assert got == trace_shapes(meta, x.to("meta"), lens.to("meta"), y.to("meta"))
    assert got["logits"] == (2, 50, 26)
