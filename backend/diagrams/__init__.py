"""The book's diagrams: pictures drawn by code, at build time, from a configuration.

Each module here other than `svg` is one diagram and defines

    def draw(**config) -> svg.Canvas

whose shape follows its configuration (a model's layers and widths, a head count, a mask
kind): the picture of Llama-3-8B's grouped-query attention is drawn from (32, 8), never by hand.
A chapter places one with a block the build hook (`widgets/build/figures.py`) renders:

    ```diagram
    name: heads_sharing            # the module
    config: {n_heads: 8, n_kv: 2}  # optional: draw()'s keyword arguments
    id: gqa                        # optional: the figure's anchor (default: the name)
    caption: Eight query heads share two key/value heads.
    ```
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

NOT_DIAGRAMS = {"svg", "palette"}


def registry() -> dict[str, ModuleType]:
    """Every diagram module, by name."""
    out = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in NOT_DIAGRAMS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if not callable(getattr(module, "draw", None)):
            raise TypeError(f"backend/diagrams/{info.name}.py defines no draw(**config)")
        out[info.name] = module
    return out
