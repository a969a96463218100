"""The one configuration object every reference module reads.

Symbol names follow the book: d_model = d, n_heads = h, n_kv_heads = n_kv, d_head = d_k,
n_layers = L, d_ff = the MLP's inner width, vocab_size = |Sigma|.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of a Llama-style decoder-only model (the encoder-decoder reuses the shared fields).

    ``n_kv_heads`` left as None means plain multi-head attention (n_kv = h); 1 means
    multi-query attention; anything in between is grouped-query attention (Ainslie et al., 2023).
    ``dropout`` is read by the encoder-decoder only; the Llama-style DecoderLM has none.
    """

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    n_kv_heads: int | None = None
    max_seq_len: int = 2048
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    tie_embeddings: bool = False
    attention_bias: bool = False
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", self.n_heads)
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff", "max_seq_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an integer, got {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}): "
                "each head gets d_model / n_heads dimensions"
            )
        if self.n_kv_heads > self.n_heads or self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads}): "
                "every key/value head serves the same number of query heads"
            )
        if self.d_head % 2:
            raise ValueError(
                f"d_head = d_model / n_heads = {self.d_head} must be even: RoPE rotates pairs of dimensions"
            )
        if not self.rope_theta > 0:
            raise ValueError(f"rope_theta must be positive, got {self.rope_theta}")
        if not self.norm_eps > 0:
            raise ValueError(f"norm_eps must be positive, got {self.norm_eps}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    @property
    def d_head(self) -> int:
        """Width of one head, d_k = d_model / n_heads."""
        return self.d_model // self.n_heads

    @property
    def n_rep(self) -> int:
        """Query heads per key/value head (the group size of GQA)."""
        return self.n_heads // self.n_kv_heads

    def replace(self, **changes) -> ModelConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# --8<-- [start:from_hf]
# A Hugging Face config.json names the same sizes differently; this is the whole dictionary.
HF_NAMES = {
    "vocab_size": "vocab_size",
    "hidden_size": "d_model",
    "num_hidden_layers": "n_layers",
    "num_attention_heads": "n_heads",
    "num_key_value_heads": "n_kv_heads",  # absent in older configs: plain multi-head attention
    "intermediate_size": "d_ff",
    "max_position_embeddings": "max_seq_len",
    "rope_theta": "rope_theta",
    "rms_norm_eps": "norm_eps",
    "tie_word_embeddings": "tie_embeddings",
    "attention_bias": "attention_bias",
}


def config_from_hf(hf: dict) -> ModelConfig:
    """A ModelConfig from the fields of a Llama-family config.json (unknown keys are ignored)."""
    fields = {ours: hf[theirs] for theirs, ours in HF_NAMES.items() if theirs in hf}
    if "rope_parameters" in hf and "rope_theta" not in fields:  # transformers >= 5 nests it
        fields["rope_theta"] = hf["rope_parameters"]["rope_theta"]
    fields.setdefault("tie_embeddings", False)  # LlamaConfig's default
    return ModelConfig(**fields)
# --8<-- [end:from_hf]
