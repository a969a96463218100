"""Fixtures for the reference-implementation tests: tiny configs, seeded RNG."""

from __future__ import annotations

import pytest
import torch

from backend.reference.config import ModelConfig


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def tiny_config() -> ModelConfig:
    return ModelConfig(vocab_size=101, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=64, max_seq_len=64)
