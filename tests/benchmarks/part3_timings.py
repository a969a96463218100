"""Every timing Part III states, measured on this host's device, recorded (not asserted here).

    python tests/benchmarks/part3_timings.py            # the device BOOK_DEVICE names (cuda if any)
    make gpu-check                                       # this, then the timing claims on CUDA

Writes tests/benchmarks/results/part3_timings_<kind>.json: for each measured widget at the
settings the chapters name, the figures their sentences rest on, with the device and torch
version. `make gpu-check` then runs the chapters' claims tests that time things with
BOOK_DEVICE=cuda, so a sentence the GPU contradicts fails there and is rewritten; the figures go
into the chapters' instructor notes beside the CPU's.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# (widget, params, the values its sentences use); params beyond the defaults are the chapters'.
SETTINGS = [
    ("attention_cost", {}, ["fused_kernel", "ms_eager", "ms_fused", "peak_bytes_eager",
                            "peak_bytes_fused", "ceiling", "max_abs_diff"]),
    ("attention_cost", {"context_len": 128}, ["ms_eager", "ms_fused"]),
    ("attention_cost", {"dtype": "bfloat16"}, ["fused_kernel", "ms_eager", "ms_fused",
                                               "peak_bytes_eager", "peak_bytes_fused"]),
    ("kv_decode", {}, ["step_ms_early_no_cache", "step_ms_late_no_cache", "step_ms_early_cache",
                       "step_ms_late_cache", "step_slope_us_no_cache", "step_slope_us_cache",
                       "ms_no_cache", "ms_cache", "speedup"]),
    ("kv_decode", {"model": "book", "steps": 96, "prompt_len": 32},
     ["ms_no_cache", "ms_cache", "speedup"]),
    ("sequential_vs_parallel", {}, ["ms_sequential", "ms_parallel", "speedup", "us_per_step"]),
    ("sequential_vs_parallel", {"length": 1024}, ["ms_sequential", "ms_parallel", "speedup"]),
]


def measure() -> dict:
    import torch

    from backend import device
    from backend.compute import REGISTRY

    rows = []
    for name, params, keys in SETTINGS:
        module = REGISTRY[name]
        resolved = module.SPEC.resolve(params)
        start = time.perf_counter()
        values = module.compute(resolved)["values"]
        rows.append({"widget": name, "params": resolved,
                     "seconds": round(time.perf_counter() - start, 2),
                     "values": {k: values.get(k) for k in keys}})
        print(f"{name} {params}: " + ", ".join(f"{k}={values.get(k)}" for k in keys), flush=True)
    import os

    return {"device": device.describe(), "kind": device.kind(), "torch": torch.__version__,
            "python": platform.python_version(),
            # timings are only as quiet as the host: the 1-minute load average when they ended
            "load_average_1min": round(os.getloadavg()[0], 2), "measured": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="where to write the JSON (default: results/part3_timings_<kind>.json)")
    args = parser.parse_args(argv)
    record = measure()
    out = Path(args.out or ROOT / "tests/benchmarks/results" / f"part3_timings_{record['kind']}.json")
    out.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
