"""gunicorn for tests only (nothing ships it): `backend/gunicorn_conf.py` on a device with less
memory than the machine that built the book (`MEMORY_BYTES` instead of the CPU's 512 MiB), so the
attention-cost ceiling this server validates with, and serves in its spec, is lower than the one
baked into the pages (1,200 tokens instead of 1,448 at one head of 64 in float32: under the baked
slider's top, above its start of 1,024).
tests/site/test_runtime_live_spec.py uses it: `gunicorn(..., config=CONFIG)`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from backend import device  # noqa: E402  (the widgets are imported later, with the app)

MEMORY_BYTES = 22 * 2 ** 20
device.CPU_MEMORY_BYTES = MEMORY_BYTES  # read by device.memory_bytes() when a widget first asks

from backend.gunicorn_conf import *  # noqa: E402,F401,F403
