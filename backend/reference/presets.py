"""Named configurations of real models, from their published configs (config.json / params.json).

Counting their parameters on the meta device (counting.py) gives the real sizes without
allocating a byte.
"""

from __future__ import annotations

from .config import ModelConfig

PRESETS: dict[str, ModelConfig] = {
    # Touvron et al., Llama 2 (2023); Hugging Face meta-llama/Llama-2-*-hf config.json
    "llama-2-7b": ModelConfig(
        vocab_size=32000, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=32, d_ff=11008, max_seq_len=4096
    ),
    "llama-2-13b": ModelConfig(
        vocab_size=32000, d_model=5120, n_layers=40, n_heads=40, n_kv_heads=40, d_ff=13824, max_seq_len=4096
    ),
    "llama-2-70b": ModelConfig(
        vocab_size=32000, d_model=8192, n_layers=80, n_heads=64, n_kv_heads=8, d_ff=28672, max_seq_len=4096
    ),
    # Llama 3 (2024): 128K vocabulary, GQA everywhere, rope_theta 500000
    "llama-3-8b": ModelConfig(
        vocab_size=128256, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14336,
        max_seq_len=8192, rope_theta=500000.0,
    ),
    "llama-3-70b": ModelConfig(
        vocab_size=128256, d_model=8192, n_layers=80, n_heads=64, n_kv_heads=8, d_ff=28672,
        max_seq_len=8192, rope_theta=500000.0,
    ),
    "llama-3.2-1b": ModelConfig(
        vocab_size=128256, d_model=2048, n_layers=16, n_heads=32, n_kv_heads=8, d_ff=8192,
        max_seq_len=131072, rope_theta=500000.0, tie_embeddings=True,
    ),
    # Hugging Face, SmolLM2 (2024): HuggingFaceTB/SmolLM2-135M config.json, the model the book
    # runs (backend/smollm2; tests/smollm2/test_load.py holds this to the checkpoint's own)
    "smollm2-135m": ModelConfig(
        vocab_size=49152, d_model=576, n_layers=30, n_heads=9, n_kv_heads=3, d_ff=1536,
        max_seq_len=8192, rope_theta=100000.0, norm_eps=1e-5, tie_embeddings=True,
    ),
    # Vaswani et al. (2017), base model: N = 6, d = 512, h = 8, d_ff = 2048 (for the encoder-decoder)
    "transformer-base": ModelConfig(
        vocab_size=37000, d_model=512, n_layers=6, n_heads=8, d_ff=2048, max_seq_len=512, dropout=0.1
    ),
}

DECODER_PRESETS = tuple(name for name in PRESETS if name != "transformer-base")


def get_preset(name: str) -> ModelConfig:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}") from None
