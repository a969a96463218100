"""The two models the decode widget runs, and their prompts: the book's trained model, and a
small random reference model drawn from its own seeded generator."""

from __future__ import annotations

import copy
from functools import lru_cache

import torch

from backend import device
from backend.reference.config import ModelConfig
from backend.reference.model import DecoderLM

MAX_STEPS = 400          # the decode widget's longest run: the notebook's (see kv_decode.REPEATS)
MAX_PROMPT = 32
PROMPT_TEXT_SEED = 0

# The random reference model: small, so its time is mostly the per-step work every decoder pays
# (one forward call per step), which is what the cache saves.
RANDOM_CONFIG = ModelConfig(vocab_size=256, d_model=32, n_layers=2, n_heads=2, n_kv_heads=1,
                            d_ff=64, max_seq_len=MAX_PROMPT + MAX_STEPS)
RANDOM_SEED = 0

@lru_cache(maxsize=2)
def model_for(name: str) -> DecoderLM:
    dev = device.device()
    if name == "book":
        from backend.bookmodel.load import shared_model
        model = shared_model()[0]
        # `.to` moves a module in place: other widgets share this one on the CPU, so a GPU gets
        # its own copy
        return model if dev == "cpu" else copy.deepcopy(model).to(dev)
    return random_model().eval().to(dev)


def random_model() -> DecoderLM:
    """DecoderLM(RANDOM_CONFIG) with its usual initialisation (N(0, 0.02) matrices, unit norm
    gains) drawn from a private generator: workers answer requests on threads, and seeding
    torch's global generator here would race with anything else drawing from it."""
    g = torch.Generator().manual_seed(RANDOM_SEED)
    with torch.device("meta"):
        model = DecoderLM(RANDOM_CONFIG)  # shapes only: nothing drawn from the global generator
    model = model.to_empty(device="cpu")
    with torch.no_grad():
        for module in model.modules():
            for name, p in module.named_parameters(recurse=False):
                if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)) and name == "weight":
                    p.copy_(torch.normal(0.0, 0.02, p.shape, generator=g))
                elif name == "weight":  # a norm's gain
                    p.fill_(1.0)
                else:
                    p.zero_()
    return model


def prompt_for(name: str, prompt_len: int) -> torch.Tensor:
    """(1, prompt_len) ids: the start of a held-out sentence for the book's model, a seeded
    draw for the random one."""
    if name == "book":
        from backend.bookmodel.load import heldout_sentences, shared_model
        tok = shared_model()[1]
        ids = tok.encode(" ".join(heldout_sentences()[:4])).ids[:prompt_len]
    else:
        g = torch.Generator().manual_seed(PROMPT_TEXT_SEED)
        ids = torch.randint(0, RANDOM_CONFIG.vocab_size, (prompt_len,), generator=g).tolist()
    return torch.tensor([ids], device=device.device())
