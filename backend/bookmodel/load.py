"""Load the committed model: config, tokenizer and weights from `weights/`."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer

from backend.reference.config import ModelConfig
from backend.reference.model import DecoderLM

from . import WEIGHTS_DIR
from .tokenizer import load_tokenizer


def load_model(weights_dir: Path = WEIGHTS_DIR) -> tuple[DecoderLM, Tokenizer]:
    """The trained DecoderLM in eval mode (on the CPU) and its tokenizer."""
    cfg = ModelConfig(**json.loads((weights_dir / "config.json").read_text()))
    model = DecoderLM(cfg)
    state = load_file(str(weights_dir / "model.safetensors"))
    missing, unexpected = model.load_state_dict(state, strict=False)
    # The output head is tied to the embedding, so the file stores that matrix once.
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise RuntimeError(f"weights do not match the config: missing {missing}, unexpected {unexpected}")
    model.eval()
    return model, load_tokenizer(weights_dir / "tokenizer.json")


def metrics(weights_dir: Path = WEIGHTS_DIR) -> dict:
    return json.loads((weights_dir / "metrics.json").read_text())


# --8<-- [start:attention_maps]
@torch.no_grad()
def attention_maps(model: DecoderLM, ids: list[int]) -> torch.Tensor:
    """Every layer's and head's attention weights for one sequence: (L, h, T, T)."""
    out = model(torch.tensor([ids]), output_attentions=True)  # each layer hands back its softmax
    return torch.stack(out.attentions)[:, 0]  # (L, B=1, h, T, T) -> (L, h, T, T)
# --8<-- [end:attention_maps]
