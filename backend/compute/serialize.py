"""Results as strict JSON: a non-finite float (an overflow a widget shows on purpose) becomes null.

Python's `json` writes `Infinity` and `NaN`, which are not JSON: `JSON.parse` in the browser
rejects the whole document, so one overflowing number would stop a page's every widget. Both the
API and the build's baked results go through `finite()`.
"""

from __future__ import annotations

import math


def finite(obj):
    """A copy of `obj` with every inf/-inf/nan float replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj
