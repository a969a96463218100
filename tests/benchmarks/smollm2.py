"""Benchmark: SmolLM2-135M in the book's DecoderLM on this machine's CPU (issue 34's budgets).

    .venv/bin/python tests/benchmarks/smollm2.py [--runs 20]

Records, in tests/benchmarks/results/smollm2.json and .md (recorded, not asserted):
- a cold process's first answer from each SmolLM2 widget through the API (budget: 5 s);
- the first load in a fresh process from the converted file (imports included), and the
  conversion from the GGUF file when no converted file exists yet;
- a forward over 64 tokens with attention weights, on one torch thread (budget: 300 ms);
- one cached generation step at 64 tokens of context, on one thread (budget: 60 ms);
- the induction lab's answer at its defaults (two forwards of 101 tokens, scores, knock-outs).
Medians over `--runs` runs after one warm-up run, with the fastest and slowest.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "tests" / "benchmarks" / "results"
BUDGETS_MS = {"forward_64_attn_1thread": 300, "cached_step_1thread": 60}

LOAD = ("import time; t = time.perf_counter(); from backend.smollm2 import load; load.model(); "
        "print(time.perf_counter() - t)")
# A cold worker's first answer from a SmolLM2 widget: the app, the model and the computation,
# through the API as a reader's request meets them (the converted file already on disk).
FIRST = ("import time; t = time.perf_counter(); from backend.app import create_app; "
         "c = create_app().test_client(); r = c.post('/api/widgets/{name}', json={{}}); "
         "assert r.status_code == 200, r.get_data(as_text=True); print(time.perf_counter() - t)")
FIRST_ANSWERS = ("head_roles", "generation_steps", "induction_lab")


def _fresh_load_s() -> float:
    out = subprocess.run([sys.executable, "-c", LOAD], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _first_answer_s(name: str) -> float:
    out = subprocess.run([sys.executable, "-c", FIRST.format(name=name)], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _times(fn, runs: int) -> dict:
    fn()
    ms = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t) * 1000)
    return {"median_ms": statistics.median(ms), "fastest_ms": min(ms), "slowest_ms": max(ms),
            "runs": runs}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()

    import torch

    from backend.compute import induction_lab
    from backend.smollm2 import load

    converted = load.converted()
    had = converted.is_file()
    if had:
        converted.unlink()
        converted.with_suffix(".tokenizer.json").unlink(missing_ok=True)
    t = time.perf_counter()
    load.converted()
    load.tokenizer_file()
    convert_s = time.perf_counter() - t
    fresh = [_fresh_load_s() for _ in range(3)]
    first = {name: _first_answer_s(name) for name in FIRST_ANSWERS}

    model, tok = load.model()
    ids = torch.randint(1000, 20000, (1, 64), generator=torch.Generator().manual_seed(0))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    out = {}
    with torch.no_grad():
        out["forward_64_attn_1thread"] = _times(lambda: model(ids, output_attentions=True),
                                                args.runs)

        def step():
            cache = model.new_cache()
            model(ids[:, :63], cache=cache)
            t0 = time.perf_counter()
            model(ids[:, 63:], cache=cache, logits_to_keep=1)
            return (time.perf_counter() - t0) * 1000

        step()
        steps = [step() for _ in range(args.runs)]
        out["cached_step_1thread"] = {"median_ms": statistics.median(steps),
                                      "fastest_ms": min(steps), "slowest_ms": max(steps),
                                      "runs": args.runs}
    torch.set_num_threads(threads)
    params = induction_lab.SPEC.resolve({"ablate": 4})
    out["induction_lab_answer"] = _times(lambda: induction_lab.compute(params), 5)
    record = {"machine": f"{platform.machine()}, {platform.processor() or '?'}; torch "
                         f"{torch.__version__}, {torch.get_num_threads()} threads available",
              "convert_s": convert_s, "fresh_process_load_s": fresh,
              "cold_first_answer_s": first, "budgets_ms": BUDGETS_MS,
              **out}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "smollm2.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = ["# SmolLM2-135M on this machine's CPU (tests/benchmarks/smollm2.py)", "",
             f"Machine: {record['machine']}.", "",
             f"- conversion from the GGUF file (once per machine): {convert_s:.1f} s",
             "- first load in a fresh process, from the converted file, imports included: "
             + ", ".join(f"{s:.1f} s" for s in fresh),
             "- a cold process's first answer through the API (app, model, computation; budget "
             "5 s): " + ", ".join(f"{n} {s:.1f} s" for n, s in first.items()), ""]
    lines += ["| measured | median | fastest | slowest | budget |", "|---|---:|---:|---:|---:|"]
    for name, r in out.items():
        budget = BUDGETS_MS.get(name)
        lines.append(f"| {name} | {r['median_ms']:.0f} ms | {r['fastest_ms']:.0f} ms | "
                     f"{r['slowest_ms']:.0f} ms | {f'{budget} ms' if budget else '-'} |")
    (RESULTS / "smollm2.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
