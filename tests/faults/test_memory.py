"""The largest parameters every widget allows, all sent at once: every one is answered (a result,
or a 400 naming the budget that refused it), and the server's memory stays under its bound.

The bound is stated in the README ("Memory"): the proportional set size (PSS) of gunicorn's master
and its workers added up, what the processes cost the machine: a page shared by n processes (the
memory-mapped SmolLM2 weights every worker reads, the code the master loaded before forking)
counts 1/n in each. The resident sizes added up, which count a shared page in every process,
are recorded beside it."""

from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import psutil

from tests.support.api import http_post
from tests.support.server import serve

MiB = 2**20
WORKERS = 2
# README, "Memory": the whole server, gunicorn's master and 2 workers with every model loaded
# (SmolLM2's 538 MB of weights among them, shared by the workers) and every widget at its
# largest, stays under 2.5 GiB of PSS (measured: README).
BOUND_MIB = 2560


def _sizes(tree) -> tuple[int, int]:
    """(PSS, RSS) of the processes, added up."""
    pss = rss = 0
    for p in tree:
        try:
            info = p.memory_full_info()
        except psutil.Error:
            continue
        pss, rss = pss + info.pss, rss + info.rss
    return pss, rss
TEXT = "the river bank flooded after the storm and "
SETTINGS = {"BOOK_RATE_LIMIT": "off",
            # every request waits for its turn instead of a 503: all of them must run
            "BOOK_COMPUTE_WAIT_SECONDS": "600", "BOOK_HEAVY_WAIT_SECONDS": "600",
            "BOOK_MAX_CONCURRENT": "4"}


def largest(spec) -> list[dict]:
    """Parameter sets at the top of every range: each number at its effective maximum (given
    the others), each text at its length limit; then one set per choice/bool value."""
    from backend.compute.spec import ParamError

    labels = {p.name: p.label for p in spec.params}
    base = spec.defaults()
    for p in spec.params:
        if p.type == "text":
            base[p.name] = (TEXT * (p.max_length // len(TEXT) + 1))[: p.max_length].strip()
    for _ in range(2):  # twice: a maximum may depend on a later parameter
        for p in spec.params:
            if p.type in ("int", "float"):
                eff = p.effective({k: v for k, v in base.items() if k != p.name}, labels)
                if eff["allowed"]:
                    base[p.name] = max(eff["allowed"])
                elif not eff["disabled"]:
                    top = eff["max"]
                    if p.type == "int" and p.step and p.step > 1:
                        top = p.min + (int(top) - p.min) // int(p.step) * int(p.step)
                    base[p.name] = int(top) if p.type == "int" else top
    variants = [base]
    for p in spec.params:
        if p.type == "choice":
            variants += [{**base, p.name: o} for o in p.options if o != base[p.name]]
        elif p.type == "bool":
            variants.append({**base, p.name: not base[p.name]})
    out = []
    for v in variants:
        for _ in range(30):
            try:
                out.append(spec.resolve(v))
                break
            except ParamError as exc:
                # A rule across params (the spec's `check`/`limits` hooks, run by resolve):
                # the numbers the message quotes step down together until the rule holds,
                # the largest combination the spec accepts near the tops.
                # (Not the param the error is filed under when others are quoted: that is the
                # budget they are measured against.)
                quoted = set(re.findall(r"'([^']+)'", str(exc)))
                p = next((q for q in spec.params if exc.param in (q.name,)), None)
                others = quoted - {exc.param, p.label if p else None}
                v = _step_down(spec, v, others or quoted | {exc.param})
                if v is None:
                    break
    return out


def _step_down(spec, params: dict, named: set) -> dict | None:
    out = dict(params)
    for p in spec.params:
        if (p.name in named or p.label in named) and p.type in ("int", "float"):
            out[p.name] = _lower(p, out[p.name])
    return out if out != params else None


def _lower(p, v):
    """A number 70 % of its way above the param's minimum, on the param's step."""
    new = p.min + (v - p.min) * 0.7
    if p.type == "int":
        step = int(p.step or 1)
        new = int(p.min + int((new - p.min) // step) * step)
    return new


def shrink(spec, params: dict, body: dict) -> dict | None:
    """A smaller set after a budget's 400: every control the message names ('label' in quotes,
    or the param it reports) cut to 70 % of its way above its minimum, where the spec still
    accepts the result. None: nothing left to shrink."""
    from backend.compute.spec import ParamError

    named = set(re.findall(r"'([^']+)'", body.get("error", ""))) | {body.get("param")}
    out = dict(params)
    for p in spec.params:
        if p.name not in named and p.label not in named:
            continue
        v = out[p.name]
        if p.type == "text":
            new = v[: int(len(v) * 0.7)].strip()
        elif p.type in ("int", "float"):
            new = _lower(p, v)
        else:
            continue
        if new == v:
            continue
        try:
            spec.resolve({**out, p.name: new})
        except ParamError:
            continue
        out[p.name] = new
    return out if out != params else None


def test_largest_params_of_every_widget_at_once_stay_under_the_memory_bound(tmp_path):
    from backend.compute import REGISTRY

    jobs = [(name, v) for name, m in REGISTRY.items() for v in largest(m.SPEC)]
    peak = {"pss": 0, "rss": 0}
    with serve(tmp_path / "no-site", env=SETTINGS, workers=WORKERS,
               log=tmp_path / "gunicorn.log") as server:
        tree = server.tree()
        stop = threading.Event()

        def sample():
            while not stop.wait(0.2):
                pss, rss = _sizes(tree)
                peak["pss"], peak["rss"] = max(peak["pss"], pss), max(peak["rss"], rss)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        idle, idle_rss = _sizes(tree)
        results = {}
        t0 = time.monotonic()
        pending = jobs
        rounds = 0
        while pending and rounds < 12:  # a 400 from a compute-time budget: halve what it names
            rounds += 1
            with ThreadPoolExecutor(max_workers=16) as pool:
                answers = list(pool.map(lambda j: http_post(server.base, *j, timeout=600), pending))
            retry = []
            for (name, params), (status, body) in zip(pending, answers):
                results[(name, json.dumps(params, sort_keys=True))] = (status, body)
                assert status in (200, 400), (name, params, status, body)
                if status == 400:
                    smaller = shrink(REGISTRY[name].SPEC, params, body)
                    assert body.get("param") or smaller is None, body  # 400 names its control
                    if smaller:
                        retry.append((name, smaller))
            pending = retry
        seconds = time.monotonic() - t0
        stop.set()
        sampler.join()
        assert [p.pid for p in server.tree()] == [p.pid for p in tree]  # no worker died
    ran = {k for k, (s, _) in results.items() if s == 200}
    assert {name for name, _ in ran} == set(REGISTRY), set(REGISTRY) - {n for n, _ in ran}
    print(f"\n{len(results)} requests ({len(ran)} answered 200) in {seconds:.0f} s over "
          f"{len(tree)} processes; PSS idle {idle / MiB:.0f} MiB, peak {peak['pss'] / MiB:.0f} "
          f"MiB; RSS idle {idle_rss / MiB:.0f} MiB, peak {peak['rss'] / MiB:.0f} MiB")
    (tmp_path / "memory.json").write_text(json.dumps({
        "idle_pss_mib": idle / MiB, "peak_pss_mib": peak["pss"] / MiB,
        "idle_rss_mib": idle_rss / MiB, "peak_rss_mib": peak["rss"] / MiB}))
    assert peak["pss"] < BOUND_MIB * MiB
