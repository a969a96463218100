"""Load the committed model: config, tokenizer and weights from `weights/`."""

from __future__ import annotations

import json
import re
import threading
from functools import lru_cache
from pathlib import Path

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer

from backend.errors import ModelUnavailable  # noqa: F401  (raised here; callers import it too)
from backend.reference.config import ModelConfig
from backend.reference.model import DecoderLM
from backend.reference.rng import isolated_rng

from . import WEIGHTS_DIR
from .tokenizer import load_tokenizer

# Sentences the model never trained on, for measurements over many rows (the chapter's sink).
HELDOUT_SENTENCES = Path(__file__).resolve().parent / "heldout_sentences.txt"
N_HELDOUT = 240


def load_model(weights_dir: Path = WEIGHTS_DIR,
               weights_file: str = "model.safetensors") -> tuple[DecoderLM, Tokenizer]:
    """The trained DecoderLM in eval mode (on the CPU) and its tokenizer. `weights_file`, relative
    to weights_dir, picks other weights of the same model (a training checkpoint, stored in half
    precision: copied into the float32 parameters, so the model computes in float32 either way)."""
    cfg = ModelConfig(**json.loads((weights_dir / "config.json").read_text()))
    with isolated_rng():  # every weight is loaded below
        model = DecoderLM(cfg)
    state = load_file(str(weights_dir / weights_file))
    missing, unexpected = model.load_state_dict(state, strict=False)
    # The output head is tied to the embedding, so the file stores that matrix once.
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise RuntimeError(f"weights do not match the config: missing {missing}, unexpected {unexpected}")
    model.eval()
    return model, load_tokenizer(weights_dir / "tokenizer.json")


_LOADING = threading.Lock()


def shared_model() -> tuple[DecoderLM, Tokenizer]:
    """The shipped model and tokenizer, loaded once per process and shared by every widget.

    A worker warms its models in a background thread while request threads may ask for the same
    model: the lock makes them wait for the one load instead of loading it twice. A failed load
    is not cached: the next request tries again (and fails as fast), so a file put right is
    picked up without a restart."""
    with _LOADING:
        try:
            return _load_shared()
        except Exception as exc:
            # The message names no path and carries no traceback: it goes to the reader.
            raise ModelUnavailable(f"the book's model could not be loaded on this server "
                                   f"({type(exc).__name__}); try again later") from exc


@lru_cache(maxsize=1)
def _load_shared() -> tuple[DecoderLM, Tokenizer]:
    return load_model()


def metrics(weights_dir: Path = WEIGHTS_DIR) -> dict:
    return json.loads((weights_dir / "metrics.json").read_text())


# --8<-- [start:attention_maps]
@torch.no_grad()
def attention_maps(model: DecoderLM, ids: list[int]) -> torch.Tensor:
    """Every layer's and head's attention weights for one sequence: (L, h, T, T)."""
    out = model(torch.tensor([ids]), output_attentions=True)  # each layer hands back its softmax
    return torch.stack(out.attentions)[:, 0]  # (L, B=1, h, T, T) -> (L, h, T, T)
# --8<-- [end:attention_maps]


def heldout_sentences(path: Path = HELDOUT_SENTENCES) -> list[str]:
    """The committed held-out sentences (lines starting with '#' are the file's header)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def extract_heldout_sentences(n: int = N_HELDOUT) -> list[str]:
    """The first n sentences of 6-30 words from the validation articles, in title order.

    Needs the corpus package (a dev dependency); the result is committed as
    `heldout_sentences.txt` so a server without the corpus can still measure over it.
    """
    from .corpus import split

    _, val = split()
    out = []
    for article in val:
        for s in _SENTENCE_END.split(article.text):
            if 6 <= len(s.split()) <= 30 and s[-1] in ".!?":
                out.append(s)
    return out[:n]


def write_heldout_sentences(path: Path = HELDOUT_SENTENCES) -> None:
    from .corpus import PACKAGE, PACKAGE_VERSION

    header = (f"# {N_HELDOUT} sentences from the validation articles of {PACKAGE}=={PACKAGE_VERSION}\n"
              "# (Wikipedia text, CC BY-SA 4.0). Written by backend.bookmodel.load."
              "write_heldout_sentences; the model never trained on them.\n")
    path.write_text(header + "\n".join(extract_heldout_sentences()) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_heldout_sentences()
