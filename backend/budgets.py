"""What one request may spend on this device: the policy the measured widgets' ceilings follow
(`/api/health` reports it). The numbers are the book's choice; the device's size comes from
`device.py`.
"""

from __future__ import annotations

from backend import device

# Of the device's memory (free GPU memory, or the CPU's fixed budget), the share the explicit
# attention path's T x T working set may take.
MEMORY_SHARE = 0.5
# B * h * T^2 * d_head per request. CPU (one thread): T = 1,448 at d_head = 64, about 40 ms per
# explicit run on a loaded 2-core host, so 6 runs of both paths at four T stay near a second.
# GPU: 2^40 (T = 131,072 at d_head = 64), about 4.4 TFLOP per explicit run.
WORK_BUDGET = {"cpu": 2 ** 27, "cuda": 2 ** 40}


def memory_budget() -> int:
    """Bytes a request's attention working set may take on this device."""
    return int(device.memory_bytes() * MEMORY_SHARE)


def work_budget() -> int:
    """B h T^2 d_head a request may multiply on this device (its kind: cpu or cuda)."""
    return WORK_BUDGET[device.kind()]
