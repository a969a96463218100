"""The original encoder-decoder Transformer (Vaswani et al., 2017), post-norm, with its three masks.

Encoder self-attention sees the whole source (only padding hidden); decoder self-attention is
causal; cross-attention lets every target position read every real source position. Each
sublayer is wrapped as LayerNorm(x + Sublayer(x)): post-norm, as in the paper. Two small
departures from the paper, both as in the handout's code: the embeddings are not multiplied by
sqrt(d_model), and the source side is a pluggable ``frontend`` (token embedding by default, or
e.g. a Linear layer over audio features).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .config import ModelConfig
from .masks import and_masks, causal_mask, cross_mask, padding_mask
from .mlp import MLP
from .multi_head import MultiHeadAttention
from .norms import LayerNorm
from .sinusoidal import sinusoidal_encoding


# --8<-- [start:encoder_layer]
class EncoderLayer(nn.Module):
    """Bidirectional self-attention, then the MLP; each as norm(x + sublayer(x))."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config)
        self.norm1 = LayerNorm(config.d_model, config.norm_eps)
        self.mlp = MLP(config)
        self.norm2 = LayerNorm(config.d_model, config.norm_eps)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        # x: (B, S, d_model); mask: (B, 1, 1, S), True = real source token
        attn_out, weights = self.self_attn(x, x, mask)  # weights: (B, n_heads, S, S)
        x = self.norm1(x + self.dropout(attn_out))  # post-norm: normalize after the residual add
        x = self.norm2(x + self.dropout(self.mlp(x)))
        return x, weights
# --8<-- [end:encoder_layer]


# --8<-- [start:decoder_layer]
class DecoderLayer(nn.Module):
    """Masked self-attention, then cross-attention to the encoder output, then the MLP."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config)
        self.norm1 = LayerNorm(config.d_model, config.norm_eps)
        self.cross_attn = MultiHeadAttention(config)
        self.norm2 = LayerNorm(config.d_model, config.norm_eps)
        self.mlp = MLP(config)
        self.norm3 = LayerNorm(config.d_model, config.norm_eps)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, y, memory, self_mask=None, cross_mask=None):
        # y: (B, T, d_model) target so far;  memory: (B, S, d_model) encoder output
        attn_out, self_weights = self.self_attn(y, y, self_mask)  # (B, n_heads, T, T)
        y = self.norm1(y + self.dropout(attn_out))
        attn_out, cross_weights = self.cross_attn(y, memory, cross_mask)  # Q from y, K and V from memory
        y = self.norm2(y + self.dropout(attn_out))  # cross_weights: (B, n_heads, T, S), not square
        y = self.norm3(y + self.dropout(self.mlp(y)))
        return y, self_weights, cross_weights
# --8<-- [end:decoder_layer]


@dataclass
class Seq2SeqMasks:
    encoder: torch.Tensor  # (B, 1, 1, S) broadcast over heads and queries
    decoder: torch.Tensor  # (T, T) or (B, 1, T, T) with target padding
    cross: torch.Tensor  # (B, 1, T, S)


# --8<-- [start:three_masks]
def seq2seq_masks(src_lengths: torch.Tensor, s: int, t: int, tgt_lengths: torch.Tensor | None = None) -> Seq2SeqMasks:
    """The three masks of the encoder-decoder, boolean, True = may attend."""
    encoder = padding_mask(src_lengths, s)  # hide source padding, see both directions
    decoder = causal_mask(t, device=src_lengths.device)  # no peeking at later target tokens
    if tgt_lengths is not None:
        decoder = and_masks(decoder, padding_mask(tgt_lengths, t))
    cross = cross_mask(src_lengths, t, s)  # every target position, every real source position
    return Seq2SeqMasks(encoder, decoder, cross)
# --8<-- [end:three_masks]


@dataclass
class Seq2SeqOutput:
    logits: torch.Tensor  # (B, T, vocab_size)
    encoder_attentions: tuple[torch.Tensor, ...]  # per layer (B, n_heads, S, S)
    decoder_attentions: tuple[torch.Tensor, ...]  # per layer (B, n_heads, T, T)
    cross_attentions: tuple[torch.Tensor, ...]  # per layer (B, n_heads, T, S)


class EncoderDecoder(nn.Module):
    """Source -> Encoder (N layers) -> memory; target -> Decoder (N layers, reading memory) -> LM head."""

    def __init__(self, config: ModelConfig, frontend: nn.Module | None = None):
        super().__init__()
        if config.n_kv_heads != config.n_heads:
            raise ValueError("the 2017 encoder-decoder has no grouped-query attention: set n_kv_heads = n_heads")
        self.config = config
        self.frontend = frontend if frontend is not None else nn.Embedding(config.vocab_size, config.d_model)
        self.tgt_embed = nn.Embedding(config.vocab_size, config.d_model)
        self.register_buffer("pos", sinusoidal_encoding(config.max_seq_len, config.d_model), persistent=False)
        self.dropout = nn.Dropout(config.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_layers))
        self.lm_head = nn.Linear(config.d_model, config.vocab_size)

    def encode(self, src: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        x = self.frontend(src)  # (B, S, d_model)
        x = self.dropout(x + self.pos[: x.size(1)])  # add (not concatenate) the position signal
        weights = []
        for layer in self.encoder_layers:
            x, w = layer(x, mask)
            weights.append(w)
        return x, weights

    def decode(self, tgt_ids, memory, self_mask, cross_mask):
        y = self.tgt_embed(tgt_ids)  # (B, T, d_model)
        y = self.dropout(y + self.pos[: y.size(1)])
        self_w, cross_w = [], []
        for layer in self.decoder_layers:
            y, sw, cw = layer(y, memory, self_mask, cross_mask)
            self_w.append(sw)
            cross_w.append(cw)
        return y, self_w, cross_w

    # --8<-- [start:seq2seq_forward]
    def forward(self, src, src_lengths, tgt_ids, tgt_lengths=None) -> Seq2SeqOutput:
        # src: (B, S) token ids, or (B, S, features) for a Linear frontend;  tgt_ids: (B, T)
        s, t = src.size(1), tgt_ids.size(1)
        if max(s, t) > self.config.max_seq_len:
            raise ValueError(f"sequence longer than max_seq_len={self.config.max_seq_len}")
        masks = seq2seq_masks(src_lengths, s, t, tgt_lengths)
        memory, enc_w = self.encode(src, masks.encoder)  # (B, S, d_model)
        y, dec_w, cross_w = self.decode(tgt_ids, memory, masks.decoder, masks.cross)  # (B, T, d_model)
        logits = self.lm_head(y)  # (B, T, vocab_size)
        return Seq2SeqOutput(logits, tuple(enc_w), tuple(dec_w), tuple(cross_w))
    # --8<-- [end:seq2seq_forward]


# --8<-- [start:trace_shapes]
@torch.no_grad()
def trace_shapes(model: EncoderDecoder, src, src_lengths, tgt_ids, tgt_lengths=None) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape on the way through the model, in the order the data meets them."""
    s, t = src.size(1), tgt_ids.size(1)
    masks = seq2seq_masks(src_lengths, s, t, tgt_lengths)
    shapes = {"source": tuple(src.shape), "target": tuple(tgt_ids.shape)}
    x = model.frontend(src) + model.pos[:s]  # what the first encoder layer reads (before dropout)
    shapes["source embedded + positions"] = tuple(x.shape)  # (B, S, d_model)
    memory, enc_w = model.encode(src, masks.encoder)
    shapes["encoder self-attention weights"] = tuple(enc_w[0].shape)  # (B, h, S, S)
    shapes["memory (encoder output)"] = tuple(memory.shape)  # (B, S, d_model)
    y = model.tgt_embed(tgt_ids) + model.pos[:t]  # what the first decoder layer reads
    shapes["target embedded + positions"] = tuple(y.shape)  # (B, T, d_model)
    y, dec_w, cross_w = model.decode(tgt_ids, memory, masks.decoder, masks.cross)
    shapes["decoder self-attention weights"] = tuple(dec_w[0].shape)  # (B, h, T, T)
    shapes["cross-attention weights"] = tuple(cross_w[0].shape)  # (B, h, T, S)
    shapes["decoder output"] = tuple(y.shape)  # (B, T, d_model)
    shapes["logits"] = tuple(model.lm_head(y).shape)  # (B, T, vocab_size)
    return shapes
# --8<-- [end:trace_shapes]


# --8<-- [start:forward_check]
HANDOUT_CHECK = dict(batch=16, max_feat_len=100, max_label_len=50, fbank_dim=80, vocab_size=26)


def base_model_forward_check(device: str = "meta") -> dict[str, tuple[int, ...]]:
    """004 section 9.8: six layers each side at d_model 512, a Linear frontend over 80-dim fbank
    features, random data. On the meta device nothing is allocated: only the shapes are real."""
    c = HANDOUT_CHECK
    config = ModelConfig(vocab_size=c["vocab_size"], d_model=512, n_layers=6, n_heads=8, d_ff=2048,
                         max_seq_len=2048, dropout=0.1)
    with torch.device(device):
        model = EncoderDecoder(config, frontend=nn.Linear(c["fbank_dim"], config.d_model))
        fbank = torch.randn(c["batch"], c["max_feat_len"], c["fbank_dim"])  # (16, 100, 80)
        feat_lens = torch.full((c["batch"],), c["max_feat_len"] // 2)  # any lengths in 1..100
        labels = torch.zeros(c["batch"], c["max_label_len"], dtype=torch.long)  # (16, 50)
        shapes = trace_shapes(model, fbank, feat_lens, labels)
    shapes["parameters"] = (sum(p.numel() for p in model.parameters()),)
    return shapes
# --8<-- [end:forward_check]
