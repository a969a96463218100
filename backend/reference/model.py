"""A Llama-style decoder-only language model: embedding, L pre-norm blocks, final norm, LM head.

The same forward serves training (no cache, all T positions at once, loss from labels) and
generation (a KVCache passed in, usually one new position per call). Architecture as in
Touvron et al., Llama 2 (2023) and Hugging Face's ``LlamaForCausalLM``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from .block import DecoderBlock
from .config import ModelConfig
from .kv_cache import KVCache
from .masks import and_masks, causal_mask, to_additive
from .norms import RMSNorm
from .rope import rope_cos_sin

IGNORE_INDEX = -100  # label value that contributes no loss (PyTorch's cross_entropy default)


@dataclass
class LMOutput:
    logits: torch.Tensor  # (B, T_kept, vocab_size)
    loss: torch.Tensor | None = None  # scalar, mean next-token cross-entropy
    attentions: tuple[torch.Tensor, ...] | None = None  # per layer (B, n_heads, T, T_kv)
    cache: KVCache | None = None


# --8<-- [start:lm_loss]
def next_token_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of position t's logits against token t+1. Pass labels = input_ids:
    the shift happens here, once (shifting them yourself as well is the off-by-two bug)."""
    logits = logits[:, :-1, :].float()  # (B, T-1, V): the last position has nothing to predict
    targets = labels[:, 1:]  # (B, T-1)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=IGNORE_INDEX)
# --8<-- [end:lm_loss]


# --8<-- [start:padding_positions]
def positions_from_mask(attention_mask: torch.Tensor, t_new: int) -> torch.Tensor:
    """Position ids of the last t_new columns of a (B, T_kv) 1/0 padding mask: (B, t_new).

    Real tokens count 0, 1, 2, ... from the row's first real token, so a left-padded row gets the
    positions it would have had unpadded; pads get 0 (their outputs are never read). This is the
    rule Hugging Face's ``generate`` uses (``_prepare_position_ids_for_generation``). HF's plain
    ``LlamaForCausalLM.forward``, given a mask but no position ids, numbers the pads as positions
    instead (0..T-1); RoPE sees only offsets, so its real-token logits differ from these by rounding
    only (about 1e-6 measured), and passing ``position_ids=arange`` here reproduces it.
    """
    positions = attention_mask.long().cumsum(dim=-1) - 1  # (B, T_kv)
    positions = positions.masked_fill(attention_mask == 0, 0)
    return positions[:, -t_new:]
# --8<-- [end:padding_positions]


class DecoderLM(nn.Module):
    # --8<-- [start:lm_init]
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.layers = nn.ModuleList(DecoderBlock(config, i) for i in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        if config.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight  # one (V, d) matrix, read in both directions
    # --8<-- [end:lm_init]

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        """N(0, 0.02) for every matrix, zero biases: the GPT-2 / Llama convention."""
        if isinstance(module, (nn.Linear, nn.Embedding)) and module.weight.is_meta:
            return  # the meta device holds shapes only (parameter counts, cache sizes): nothing to draw
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    # --8<-- [start:lm_forward]
    def forward(
        self,
        input_ids: torch.Tensor,
        labels: torch.Tensor | None = None,
        cache: KVCache | None = None,
        logits_to_keep: int = 0,
        output_attentions: bool = False,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> LMOutput:
        """``attention_mask`` (B, T_past + T), 1 = real token, 0 = padding, covers the cached
        positions too (as in Hugging Face). Without ``position_ids``, positions are counted from
        the mask (``positions_from_mask``), so left padding changes nothing for the real tokens."""
        B, T = input_ids.shape  # input_ids: (B, T)
        if labels is not None and logits_to_keep:
            raise ValueError("labels need logits at every position; leave logits_to_keep at 0")
        past = cache.seq_len if cache is not None else 0
        if past + T > self.config.max_seq_len:
            raise ValueError(f"{past + T} positions exceed max_seq_len={self.config.max_seq_len}")
        if attention_mask is not None and attention_mask.shape != (B, past + T):
            raise ValueError(
                f"attention_mask must have shape (batch, cached + new positions) = {(B, past + T)}, "
                f"got {tuple(attention_mask.shape)}"
            )

        x = self.embed_tokens(input_ids)  # (B, T, d_model)
        if position_ids is None and attention_mask is not None:
            position_ids = positions_from_mask(attention_mask, T)  # (B, T)
        elif position_ids is None:
            position_ids = torch.arange(past, past + T, device=input_ids.device).expand(B, T)  # (B, T)
        cos, sin = rope_cos_sin(position_ids, self.config.d_head, self.config.rope_theta, x.dtype)  # (B, T, d_head)
        allowed = causal_mask(T, past + T, x.device)  # (T, T_kv)
        if attention_mask is not None:
            allowed = and_masks(allowed, attention_mask.bool()[:, None, None, :])  # (B, 1, T, T_kv): no pad keys
        mask = to_additive(allowed, x.dtype)  # built once for all layers

        attentions = []
        for layer in self.layers:
            x, weights = layer(x, cos, sin, mask, cache)
            if output_attentions:
                attentions.append(weights)  # (B, n_heads, T, T_kv)
        x = self.norm(x)

        if logits_to_keep:
            x = x[:, -logits_to_keep:, :]  # generation needs only the last position's distribution
        logits = self.lm_head(x)  # (B, T_kept, vocab_size)
        loss = next_token_loss(logits, labels) if labels is not None else None
        return LMOutput(logits, loss, tuple(attentions) if output_attentions else None, cache)
    # --8<-- [end:lm_forward]

    def new_cache(self) -> KVCache:
        return KVCache(self.config.n_layers)
