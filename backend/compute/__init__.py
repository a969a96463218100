"""The widget registry: one module per widget, each exposing `SPEC` and `compute(params)`.

`compute` receives parameters already validated by `SPEC.resolve` and returns
`{"values": {name: number-or-list}, "figure": {"data": [...], "layout": {...}}}`, and may add
`"summary"` (one or two plain sentences saying what the figure shows, for screen readers and
as the plot's text alternative) and `"table"` (`{"caption": str, "columns": [str, ...],
"rows": [[cell, ...], ...]}`, the figure's data as a table a screen reader can reach).
Shared colours and the base layout live in `style.py`.
Adding a widget means adding its module to `_MODULES` below, one chapter block and one test.
"""

from __future__ import annotations

import importlib
from types import ModuleType

_MODULES = (  # in the order the book meets them
    "sequential_vs_parallel",
    "river_bank",
    "attention_scaling",
    "causal_mask",
    "multi_head",
    "positions_order",
    "positions_sinusoids",
    "positions_rope",
    "attention_map",
    "attention_sink",
    "induction_lab",
    "head_roles",
    "mlp",
    "rmsnorm",
    "training_signal",
    "model_params",
    "sampling",
    "training_checkpoints",
    "train_live",
    "parity",
    "enc_dec_masks",
    "attention_cost",
    "kv_decode",
    "generation_steps",
    "kv_cache",
    "decode_roofline",
    "speculative",
    "prefix_cache_cost",
    "paged_kv",
    "kv_levers",
)


def _load() -> dict[str, ModuleType]:
    registry = {}
    for mod_name in _MODULES:
        module = importlib.import_module(f"{__name__}.{mod_name}")
        assert module.SPEC.name == mod_name, f"{mod_name}: SPEC.name must match the module name"
        registry[mod_name] = module
    return registry


REGISTRY: dict[str, ModuleType] = _load()


def get(name: str) -> ModuleType | None:
    return REGISTRY.get(name)
