"""The load benchmark's figures (tests/benchmarks/load.py): per request class the count,
throughput, p50 / p95 / p99 / max latency, cached share and errors, and the markdown table
results/load.md records.
"""

from __future__ import annotations

from dataclasses import dataclass

CLASSES = ("page", "asset", "api-light", "api-heavy", "api-timing")  # timing: SPEC.measured


@dataclass
class Record:
    cls: str
    start: float  # time.monotonic()
    ms: float
    status: int  # 0: no HTTP answer (connection refused / reset / timeout)
    cached: bool | None = None
    error: str | None = None
    browser: bool = False  # answered by the reader's own HTTP cache: no request was sent


# --- figures -------------------------------------------------------------------------------------

def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, max(0, int(round(q * len(xs) + 0.5)) - 1))], 1)


def summarize(records: list[Record], wall: float, settled_at: float | None = None) -> dict:
    """Figures of the requests sent; moves the reader's browser answered from its own cache
    (no request) are counted apart, per class, and in no latency or throughput. With
    `settled_at` (a time.monotonic()), the API classes also get the percentiles of the requests
    sent from then on: the class at work, after the storm of everyone opening the chapter."""
    held = [r for r in records if r.browser]
    records = [r for r in records if not r.browser]
    out = {"requests": len(records), "wall_s": round(wall, 1),
           "throughput_rps": round(len(records) / wall, 1), "classes": {},
           "errors_by_status": {}}
    for cls in CLASSES:
        rs = [r for r in records if r.cls == cls]
        if not rs:
            continue
        ok = [r.ms for r in rs if 200 <= r.status < 400]
        errors: dict[str, int] = {}
        for r in rs:
            if not 200 <= r.status < 400:
                key = str(r.status) if r.status else (r.error or "no answer").split(":")[0]
                errors[key] = errors.get(key, 0) + 1
                out["errors_by_status"][key] = out["errors_by_status"].get(key, 0) + 1
        entry = {"n": len(rs), "rps": round(len(rs) / wall, 1), "p50_ms": pct(ok, 0.5),
                 "p95_ms": pct(ok, 0.95), "p99_ms": pct(ok, 0.99),
                 "max_ms": round(max(ok), 1) if ok else None, "errors": errors}
        if cls.startswith("api"):
            entry["answered_by_browser"] = sum(r.cls == cls for r in held)
            answered = [r for r in rs if r.cached is not None]
            entry["cached_share"] = (round(sum(r.cached for r in answered) / len(answered), 3)
                                     if answered else None)
            computed = [r.ms for r in answered if not r.cached]
            entry["computed_p95_ms"] = pct(computed, 0.95)
            if settled_at is not None:
                late = [r for r in rs if r.start >= settled_at]
                ok_late = [r.ms for r in late if 200 <= r.status < 400]
                entry["settled"] = {"n": len(late), "p50_ms": pct(ok_late, 0.5),
                                    "p95_ms": pct(ok_late, 0.95), "p99_ms": pct(ok_late, 0.99),
                                    "errors": sum(not 200 <= r.status < 400 for r in late)}
        samples = sorted({r.error for r in rs if r.error})[:4]
        if samples:
            entry["error_samples"] = samples
        out["classes"][cls] = entry
    return out



def _server(level: dict) -> str:
    """The server's CPU and memory, where the benchmark measured them (a process it started);
    a server it cannot see (containers, another host) is said to be unmeasured, not 0 %."""
    if "server_cpu_share" not in level:
        return "server CPU and memory not measured (the server is not a process of this benchmark's)"
    return (f"server CPU {level['server_cpu_share']:.0%} of one core, peak RSS "
            f"{level['server_peak_rss_mib']} MiB")

def markdown(result: dict) -> str:
    lines = [f"# Load benchmark ({result['date']})", "",
             f"Server: {result['server']}. Machine: {result['cpus']} CPUs, load average before "
             f"the run {result['load_average_before']}. {result['note']}", ""]
    if result.get("prewarm"):
        w = result["prewarm"]
        lines += [f"Before the first level, the {w['settings']} settings the pages offer for "
                  f"their heavy widgets ({', '.join(w['widgets'])}) were asked once, as `make "
                  f"prewarm` does: {w['warmed']} computed, {w['already']} already cached, "
                  f"{w['failed']} failed, {w['seconds']} s.", ""]
    for level in result["levels"]:
        lines += [f"## {level['readers']} readers, {level['duration_s']} s: "
                  f"{level['throughput_rps']} requests/s, errors {level['errors_by_status'] or 'none'}",
                  "",
                  f"Generator CPU {level['client_cpu_share']:.0%} of one core; {_server(level)}; "
                  f"load average after "
                  f"{level['load_average_after']}. Retried once on a kept-alive connection the server "
                  f"had closed: {level['retried_on_closed_keepalive']}.", "",
                  "| class | requests | per s | p50 ms | p95 ms | p99 ms | max ms | cached | "
                  "errors | moves the browser's cache answered |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
        for cls, e in level["classes"].items():
            cached = "" if e.get("cached_share") is None else f"{e['cached_share']:.0%}"
            lines.append(f"| {cls} | {e['n']} | {e['rps']} | {e['p50_ms']} | {e['p95_ms']} | "
                         f"{e['p99_ms']} | {e['max_ms']} | {cached} | "
                         f"{', '.join(f'{k}: {v}' for k, v in e['errors'].items()) or '0'} | "
                         f"{e.get('answered_by_browser', '')} |")
        settled = [(c, e["settled"]) for c, e in level["classes"].items() if "settled" in e]
        if settled:
            lines += ["", f"After the first {level.get('settled_after_s')} s (everyone has "
                      "opened the chapter; the requests sent from then on):", "",
                      "| class | requests | p50 ms | p95 ms | p99 ms | errors |",
                      "|---|---:|---:|---:|---:|---:|"]
            lines += [f"| {c} | {e['n']} | {e['p50_ms']} | {e['p95_ms']} | {e['p99_ms']} | "
                      f"{e['errors']} |" for c, e in settled]
        lines.append("")
    return "\n".join(lines)
