"""The book's PyTorch reference implementations.

One concept per module (attention, masks, rope, norms, mlp, block, model, kv_cache, ...),
plain ``torch`` only. Import the module you need, e.g.
``from backend.reference.model import DecoderLM``; this package file imports nothing heavy.
"""
