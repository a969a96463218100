"""Every qualitative sentence of Appendix B, "How the widgets compute"
(docs/chapters/how-widgets-compute.md and the chapters' notes it gathers,
docs/chapters/_compute/<chapter>.md), asserted over what the code computes, section by section.
Sentences a chapter's own claims test already asserts are not repeated; the section says where
they are: the CPU's attention ceilings (test_cost_memory_time.py), the sink study and habit
heads over the held-out sentences (test_attention_maps.py, slow), the scaling widget's budgets
(test_scaling.py), the roofline's oracles (test_decode_time.py), the replay's preemption
(test_paged_kv.py). What only a browser shows (labels on a phone, the offline notices, a
snapped slider) is the browser tests'. Nothing here times anything: where a sentence is about how
a widget times, its clock is replaced by one that records where it ran.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- cost.md: the ceilings
# (the CPU's two rules and the slider's top: test_cost_memory_time.py)

def attention_cost_facts(**params):
    """What `{{ value("attention_cost", ...) }}` reads from the build's facts (no timing)."""
    from backend.compute import attention_cost as w

    return w.facts(w.SPEC.resolve({"context_len": 16, **params}))


@pytest.mark.parametrize("free_gb", [80, 141])
@pytest.mark.parametrize("workers", [1, 2, 4])
def test_a_gpu_ceiling_is_each_workers_share_of_the_free_memory(monkeypatch, free_gb, workers):
    """'On a GPU, "memory" is one worker's share of what torch.cuda.mem_get_info reports free
    when the server starts: the free bytes divided by the number of workers that share the card
    (WEB_CONCURRENCY, times the replicas that share it, BOOK_GPU_REPLICAS)'; 'a GPU with 80 GB
    free, served by 2 workers ..., would allow T = 50,000 for one head in float32, and one with
    141 GB free T = 66,379; ... A server of one worker has the whole card to itself: T = 70,710
    and T = 93,874 at one head; more workers each get less.' The server's own path, on a pretend
    card: device.memory_bytes asks mem_get_info and reads WEB_CONCURRENCY, budgets.memory_budget
    takes its share, and the memory rule's ceiling follows."""
    from backend import budgets, device
    from backend.compute import attention_cost as w
    from backend.reference import attention_cost as ac

    free = int(free_gb * 1e9)
    monkeypatch.setattr(device, "device", lambda: "cuda:0")
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index=None: (free, 2 * free))
    monkeypatch.setenv("WEB_CONCURRENCY", str(workers))
    monkeypatch.setattr(device, "memory_bytes", device.memory_bytes.__wrapped__)  # uncached
    assert device.memory_bytes() == free // workers
    monkeypatch.setenv("BOOK_GPU_REPLICAS", "3")  # three replicas on the card: a third each
    assert device.memory_bytes() == free // (3 * workers)
    monkeypatch.delenv("BOOK_GPU_REPLICAS")
    served = ac.largest_context(budgets.memory_budget(), 1, 1, torch.float32)
    assert served == w.gpu_memory_ceiling(free, workers)
    f = attention_cost_facts()
    quoted = {(80, 2): f["ceiling_80gb"], (141, 2): f["ceiling_141gb"],
              (80, 1): f["ceiling_80gb_one_worker"], (141, 1): f["ceiling_141gb_one_worker"]}
    if (free_gb, workers) in quoted:
        assert served == quoted[(free_gb, workers)]
    assert (f["ceiling_80gb"], f["ceiling_141gb"]) == (50_000, 66_379)
    assert (f["ceiling_80gb_one_worker"], f["ceiling_141gb_one_worker"]) == (70_710, 93_874)
    if workers > 1:  # 'more workers each get less'
        assert served < f[f"ceiling_{free_gb}gb_one_worker"]


def test_the_gpu_override_tells_each_worker_how_many_replicas_share_the_card():
    """compose.gpu.yaml's replica count and the BOOK_GPU_REPLICAS its workers divide the card by
    are one variable: with the CPU stack's BOOK_REPLICAS (3 in an instructor's .env) three
    replicas of two workers each planned against half the card."""
    gpu = "\n".join(line for line in (ROOT / "compose.gpu.yaml").read_text(encoding="utf-8")
                    .splitlines() if not line.lstrip().startswith("#"))
    assert "replicas: ${BOOK_GPU_REPLICAS:-1}" in gpu
    assert "BOOK_GPU_REPLICAS: ${BOOK_GPU_REPLICAS:-1}" in gpu
    assert "BOOK_REPLICAS" not in gpu.replace("BOOK_GPU_REPLICAS", "")


def test_the_quoted_workers_are_the_lecture_halls():
    """'served by 2 workers (as the lecture-hall stack and the cluster manifests run it)'."""
    from backend.compute import attention_cost as w

    compose = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    configmap = (ROOT / "deploy/kubernetes/base/configmap.yaml").read_text(encoding="utf-8")
    assert re.search(r"WEB_CONCURRENCY: \$\{WEB_CONCURRENCY:-(\d+)\}", compose).group(1) == str(w.SHIPPED_WORKERS)
    assert re.search(r'WEB_CONCURRENCY: "(\d+)"', configmap).group(1) == str(w.SHIPPED_WORKERS)
    assert attention_cost_facts()["shipped_workers"] == w.SHIPPED_WORKERS == 2


def test_at_32_heads_the_141gb_card_allows_less():
    """'at 32 heads, the 141 GB one allows only T = ... for the explicit path' (the same two workers)."""
    from backend.compute import attention_cost as w

    one, many = attention_cost_facts(), attention_cost_facts(n_heads=32)
    assert many["ceiling_141gb"] < one["ceiling_141gb"]
    assert many["ceiling_141gb"] == w.gpu_memory_ceiling(int(141e9), 2, n_heads=32)


# ---------------------------------------------------------------- the appendix's own page

def test_open_as_notebook_carries_the_code_and_says_what_it_needs():
    """'It downloads a small Jupyter notebook that sets the parameters you chose, carries the
    book's code the widget runs (the widget module and the reference files it imports, as the
    server reads them), runs the same computation and draws the same figure, and ends with a
    suggestion of what to try next. Its first cell gives the Python version and the install lines
    for a fresh virtual environment; a notebook that runs the book's trained model downloads its
    weights (about 5 MB) from the book's server once and checks them, and a widget that times code
    measures your own machine.' (Each widget's notebook is executed in tests/app/test_notebook_run.py.)"""
    from backend.app import notebook
    from backend.compute import REGISTRY

    def cells(name, **params):
        module = REGISTRY[name]
        return notebook.build(name, module, module.SPEC.resolve(params)).cells

    mlp = cells("mlp", d_ff=8192)
    first, code = mlp[0].source, mlp[2].source
    assert f"Python {notebook.python_version()}" in first and "pip install" in first
    assert "'backend/compute/mlp.py'" in code and "'backend/reference/mlp.py'" in code
    assert (ROOT / "backend/reference/mlp.py").read_text() in eval(code.split("\n\n")[0].removeprefix("BOOK_FILES = "))[
        "backend/reference/mlp.py"]
    assert "8192" in mlp[4].source  # the setting chosen
    assert "widget.compute(setting)" in mlp[6].source and "go.Figure" in mlp[6].source
    assert REGISTRY["mlp"].SPEC.try_next in mlp[-2].source  # ends with what to try next
    model = cells("attention_map")
    assert "about 5 MB" in model[0].source and "sha256(part) != digest" in model[2].source
    weights = sum((notebook.WEIGHTS_DIR / f).stat().st_size for f in notebook.BOOK_WEIGHT_FILES)
    assert 4.5e6 < weights < 6e6
    assert "*your own machine*" in cells("kv_decode", steps=8)[0].source
    # 'the button needs the server: offline it says so' (the browser test: test_notebook_browser.py)
    actions = (ROOT / "widgets/runtime/actions.js").read_text(encoding="utf-8")
    assert "needs the book's server" in actions


# ---------------------------------------------------------------- cost.md: timing and memory

def test_attention_cost_times_alternate_after_a_warm_up():
    """'a warm-up run first, then 5 runs of each path, alternated so both are sampled over the
    same stretch of time'."""
    from backend.compute import attention_cost as w
    from backend.reference import attention_cost as ac

    calls = []
    a, b = (lambda x: calls.append("a")), (lambda x: calls.append("b"))
    runs = ac.time_paths([a, b], (torch.zeros(1),), repeats=w.REPEATS, warmup=w.WARMUP)
    assert w.WARMUP == 1 and calls == ["a", "b"] * (w.WARMUP + w.REPEATS)
    assert [len(r.ms) for r in runs] == [w.REPEATS, w.REPEATS]


def test_attention_cost_measures_under_the_lock_on_one_thread_and_once_per_worker(monkeypatch):
    """'one timing at a time on the whole host (a lock shared by every worker), on one CPU thread
    when the device is a CPU'; 'The figure draws each median as a point, with a bar from the
    fastest run to the slowest, and the data table under it lists all three'; 'Results are kept
    per worker, so a repeated setting re-times nothing.' The widget's own measure, with the clock
    replaced by one that records where it ran."""
    from contextlib import contextmanager

    from backend.compute import attention_cost as w
    from backend.compute import measure as measure_lib
    from backend.reference import attention_cost as ac

    held, seen = [], []

    @contextmanager
    def lock(*_a, **_k):
        held.append(True)
        yield
        held.pop()

    def clock(paths, args, repeats, warmup):
        seen.append((bool(held), torch.get_num_threads()))
        return [ac.Runs((3.0, 1.0, 2.0)), ac.Runs((6.0, 4.0, 5.0))]

    monkeypatch.setattr(measure_lib, "timing_lock", lock)
    monkeypatch.setattr(ac, "time_paths", clock)
    w.measure.cache_clear()
    try:
        r = w.compute(w.SPEC.resolve({"context_len": 64}))
        w.compute(w.SPEC.resolve({"context_len": 64}))
    finally:
        w.measure.cache_clear()
    assert seen and all(s == (True, 1) for s in seen)
    assert len(seen) == len(r["values"]["ladder_T"])  # the second request timed nothing
    explicit = next(t for t in r["figure"]["data"] if t.get("error_y") and "explicit" in t["hovertemplate"])
    assert explicit["y"][-1] == 2.0  # the median
    assert explicit["error_y"]["array"][-1] == 1.0 and explicit["error_y"]["arrayminus"][-1] == 1.0
    assert r["table"]["rows"][-1][1] == "2 (1–3)"


def test_the_cpus_peak_counts_op_outputs_alive_at_once():
    """'on a CPU the book counts, with a dispatch hook, the bytes of every tensor that each
    operation creates, from the moment it is created until the last tensor viewing it is freed,
    and reports the most alive at once.'"""
    from backend.reference import attention_cost as ac

    x = torch.zeros(1000)  # 4,000 bytes made before: not counted

    def two_alive(x):
        a = x + 1  # 4,000 bytes
        view = a[:10]  # a view: no new bytes, and it keeps `a` alive
        del a
        b = x * 2  # 4,000 more, while `a` lives on through its view
        return view, b

    def one_at_a_time(x):
        a = x + 1
        del a
        return x * 2

    assert ac.peak_bytes(two_alive, x) == 8000
    assert ac.peak_bytes(one_at_a_time, x) == 4000


def test_which_kernel_ran_is_one_of_pytorchs_attention_kernels():
    """'the widget reports the first that is one of PyTorch's attention kernels (on this build's
    CPU, ...), or "math" when the call fell back to PyTorch's plain bmm-and-softmax path'."""
    from backend.reference import attention_cost as ac

    q, k, v = ac.random_qkv(1, 2, 32, 16, torch.float32, "cpu")
    kernel = ac.fused_kernel(q, k, v)
    assert kernel == "math" or "attention" in kernel


def test_the_memory_rules_bytes_per_pair():
    """'B h T^2 pairs at 8 bytes each (float32; 10 in bfloat16 and float16) must fit in half of
    the device's memory' (the CPU's figures: test_cost_memory_time.py)."""
    from backend import budgets
    from backend.reference import attention_cost as ac

    per_pair = {dt: ac.eager_bytes_per_score(dt) for dt in (torch.float32, torch.bfloat16, torch.float16)}
    assert per_pair == {torch.float32: 8, torch.bfloat16: 10, torch.float16: 10}
    assert budgets.MEMORY_SHARE == 0.5


# ---------------------------------------------------------------- kv-cache.md: kv_decode

def test_kv_decode_runs_untimed_then_alternates_timed_runs_under_the_lock(monkeypatch):
    """'runs the book's generate twice, with and without a cache, for the key-row counts, the
    logits and the filled cache; those two runs are also the warm-up. Then it times every step of
    both with step_times'; 'The step-timed runs alternate, cached then uncached'; 'On a CPU the
    timing runs on one thread ... A lock shared by every worker on the host lets one widget time
    at a time'; 'the default's untimed and timed runs together took ... ms'."""
    from contextlib import contextmanager

    from backend.compute import kv_decode as w
    from backend.compute import measure as measure_lib

    order, held = [], []

    @contextmanager
    def lock(*_a, **_k):
        held.append(True)
        yield
        held.pop()

    real_generate = w.generate

    def generate(model, prompt, steps, use_cache, greedy):
        order.append(("generate", use_cache, bool(held), torch.get_num_threads()))
        return real_generate(model, prompt, steps, use_cache=use_cache, greedy=greedy)

    real_steps = w.decode.step_times

    def step_times(model, prompt, steps, use_cache):
        order.append(("timed", use_cache, bool(held), torch.get_num_threads()))
        return real_steps(model, prompt, steps, use_cache)

    monkeypatch.setattr(measure_lib, "timing_lock", lock)
    monkeypatch.setattr(w, "generate", generate)
    monkeypatch.setattr(w.decode, "step_times", step_times)
    t = w.measure.__wrapped__("random", 20, 1)
    repeats = w.repeats_for(20, 1)
    assert [o[:2] for o in order] == [("generate", True), ("generate", False)] \
        + [("timed", True), ("timed", False)] * repeats
    assert all(o[2:] == (True, 1) for o in order)
    assert t.timing_ms > 0 and len(t.cache_runs) == len(t.no_cache_runs) == repeats


def test_kv_decode_times_fewer_runs_as_the_uncached_rows_grow():
    """'up to 3 runs of each are timed, but only as many as keep the uncached runs within 75,000
    key rows per layer, and never fewer than one: past about 270 steps (the default's 400
    included) each is timed once.'"""
    from backend.compute import kv_decode as w

    P = w.SPEC.resolve({})["prompt_len"]
    assert w.repeats_for(100, P) == w.REPEATS == 3
    once_from = next(s for s in range(1, w.MAX_STEPS + 1) if w.repeats_for(s, P) == 1)
    assert 250 <= once_from <= 290 and w.repeats_for(400, P) == 1
    assert all(w.repeats_for(s, p) >= 1 for s in (1, w.MAX_STEPS) for p in (1, w.MAX_PROMPT))
    assert all(w.repeats_for(s, P) * w.token_steps(s, False, P) <= w.TIMING_ROW_BUDGET
               for s in range(1, once_from))


def test_kv_decode_reads_the_fastest_step_of_each_stretch_and_quarter():
    """'Each step's time is the fastest of the runs'; 'The line in the figure joins the fastest
    step of each of at most forty stretches of steps, and the numbers the chapter quotes are the
    fastest steps of the first and of the last quarter of the steps after the first (the first
    step of a cached run is the prefill)'; 'a burst that slows a hundred steps in a row lifts their
    dots but not the quarter's fastest step, unless it covers the whole quarter'."""
    from backend.compute import kv_decode as w

    assert w.per_step([(3.0, 1.0), (2.0, 4.0)]) == [2.0, 1.0]
    for n in (40, 400, 401, 1000):
        xs, ms = list(range(n)), [1.0] * n
        mids, lows = w.buckets(xs, ms, w.MAX_BUCKETS)
        assert w.MAX_BUCKETS == 40 and len(mids) <= 40
    ms = [50.0] + [1.0 + i / 1000 for i in range(400)]  # a slow prefill, then decode steps
    assert w.quarters(ms) == (1.0, min(ms[-100:]))
    burst = ms[:20] + [m + 5 for m in ms[20:120]] + ms[120:]  # 100 slow steps in a row
    assert w.quarters(burst)[0] == 1.0 and max(burst[20:120]) > max(ms[20:120])
    covered = [ms[0]] + [m + 5 for m in ms[1:101]] + ms[101:]  # the whole first quarter
    assert w.quarters(covered)[0] > 5


def test_kv_decode_is_remembered_for_ten_minutes():
    """'a worker remembers it for 600 seconds and the API's result cache ... keeps the answer no
    longer (WidgetSpec.result_ttl), where other widgets' results are kept for a day.'"""
    from backend import settings
    from backend.compute import REGISTRY
    from backend.compute import kv_decode as w

    assert w.measure.ttl_seconds == w.MEASURE_TTL_SECONDS == w.SPEC.result_ttl == 600
    assert settings.get("BOOK_CACHE_TTL_SECONDS", {}) == 86400
    assert all(m.SPEC.result_ttl is None for n, m in REGISTRY.items() if n not in ("kv_decode", "generation_steps"))


def test_kv_decodes_random_model_draws_from_its_own_generator():
    """'The 2-layer reference model draws its weights (the usual N(0, 0.02) matrices and unit norm
    gains) from a private torch.Generator, never from torch's global one'."""
    from backend.compute import kv_decode_models as m

    state = torch.get_rng_state()
    a, b = m.random_model(), m.random_model()
    assert torch.equal(state, torch.get_rng_state())  # the global generator untouched
    assert m.RANDOM_CONFIG.n_layers == 2
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(p, q), name
        if name.endswith("norm.weight"):
            assert bool((p == 1).all()), name
    big = a.embed_tokens.weight
    assert abs(big.std().item() - 0.02) < 0.002 and abs(big.mean().item()) < 0.002


# ---------------------------------------------------------------- decode-time.md: the roofline

def test_the_roofline_adds_up_bytes_and_flops_in_exact_fractions():
    """'adds up the bytes one decode step reads (the book's DecoderLM weights counted on the meta
    device, in bfloat16, and each user's KVCache filled on the meta device) and the FLOPs it does
    (2 per parameter per user, plus 4 per query head, head width, cached token and layer for the
    attention), and divides them by the card's published memory bandwidth and dense bfloat16 peak
    ... The step time is the larger of the two: a lower bound, exact arithmetic on fractions'."""
    from fractions import Fraction

    from backend.reference import decode_time as dt
    from backend.reference import serving
    from backend.reference.counting import count_parameters
    from backend.reference.presets import PRESETS

    cfg, card = PRESETS["llama-3-8b"], serving.CARDS["80"]
    for B, T in ((1, 1), (4, 8192), (64, 8192)):
        s = dt.step(cfg, card, B, T)
        n = count_parameters(cfg).total
        assert s.weight_bytes == 2 * n == serving.weights_bytes(cfg)
        assert s.cache_bytes == sum(serving.cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.d_head, T, B))
        assert s.weight_flops == 2 * n * B
        assert s.attention_flops == 4 * cfg.n_heads * cfg.d_head * T * cfg.n_layers * B
        assert isinstance(s.seconds, Fraction)
        assert s.seconds == max(s.read_s, s.compute_s)
        assert s.read_s == Fraction(s.weight_bytes + s.cache_bytes) / card.bandwidth


def test_the_roofline_names_what_does_not_fit_and_leaves_it_off_the_curve():
    """'Whether the batch fits is serving.users_fit at the card's CUDA-reported total, as in the
    KV-cache widget; a batch that does not fit is named in a notice and left off the throughput
    curve. A context past the model's published length is named in a notice too. The generic
    24 GB card has no single published bandwidth and is not offered.' (The oracles the tests hold
    the model to, the datasheets and a reviewer's hand arithmetic: test_decode_time.py.)"""
    from backend.compute import decode_roofline as w
    from backend.compute import kv_cache

    r = w.compute(w.SPEC.resolve({"batch": 1024, "context_len": 8192}))
    v = r["values"]
    assert not v["batch_fits"] and "notice" in r
    assert max(b for b, *_ in v["curve"]) == v["users_fit"] < 1024
    kv = kv_cache.compute(kv_cache.SPEC.resolve({"memory": "80", "context_len": 8192}))["values"]
    assert v["users_fit"] == kv["users_fit"]
    long = w.compute(w.SPEC.resolve({"context_len": 16384}))
    assert long["values"]["beyond_max_seq_len"] and "notice" in long
    assert "24" not in w.TIMED_CARDS


def test_the_prefill_floor_and_the_speculative_check_are_the_same_model():
    """'The prefill floor (for the time to the first token) is the same model applied to a whole
    prompt at once, with the causal attention's FLOPs; speculative decoding's check is one step
    doing k + 1 tokens' FLOPs over one read.'"""
    from fractions import Fraction

    from backend.reference import decode_time as dt
    from backend.reference import serving
    from backend.reference.counting import count_parameters
    from backend.reference.presets import PRESETS

    cfg, card = PRESETS["llama-3-8b"], serving.CARDS["80"]
    n, P = count_parameters(cfg).total, 8192
    causal = sum(4 * cfg.n_layers * cfg.n_heads * cfg.d_head * t for t in range(1, P + 1))
    written = sum(serving.cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.d_head, P, 1))
    assert dt.prefill_time(cfg, card, P) == max(Fraction(2 * n + written) / card.bandwidth,
                                                Fraction(2 * n * P + causal) / card.peak_flops)
    one, check = dt.step(cfg, card, 4, 512), dt.verify_step(cfg, card, 4, 512, 4)
    assert (check.weight_bytes, check.cache_bytes) == (one.weight_bytes, one.cache_bytes)
    assert check.weight_flops + check.attention_flops == 5 * (one.weight_flops + one.attention_flops)


# ---------------------------------------------------------------- serving.md: kv_cache, prefix_cache_cost

def test_kv_cache_sizes_the_books_cache_on_the_meta_device():
    """'kv_cache fills the book's own KVCache, through its own update, with tensors on PyTorch's
    meta device ..., and reads its size off the cache. The weights beside it are the book's
    DecoderLM built on the meta device and counted, in bfloat16. A custom model is counted with
    Llama-3-8B's vocabulary and an MLP 3.5 times its width.'"""
    from backend.compute import kv_cache as w
    from backend.reference import serving
    from backend.reference.counting import count_parameters
    from backend.reference.kv_cache import KVCache
    from backend.reference.presets import PRESETS

    cache = serving.filled_cache(2, 8, 128, 1000, 3, torch.bfloat16)
    assert isinstance(cache, KVCache) and cache.nbytes() == 2 * 2 * 3 * 8 * 1000 * 128 * 2
    assert all(t.device.type == "meta" for t in cache.keys + cache.values)
    setting = w.SPEC.resolve({"preset": "custom", "n_heads": 16, "n_kv": 4, "head_dim": 64,
                              "n_layers": 12, "batch": 1})
    v, custom = w.compute(setting)["values"], w.config_of(setting)
    assert custom.vocab_size == PRESETS["llama-3-8b"].vocab_size and custom.d_ff == 3.5 * custom.d_model
    assert v["weights_bytes"] == 2 * count_parameters(custom).total
    T = setting["context_len"]
    assert v["total_bytes"] == serving.filled_cache(12, 4, 64, T, 1, torch.bfloat16).nbytes()


def test_kv_cache_cards_anchor_notice_and_scales():
    """'an H200 sold as 141 GB reports 139.80 GiB, 150.1 GB. The API accepts the card as the
    string "80" or the number 80.'; 'Beside it the widget reports the count in 90% of the card,
    vLLM's default gpu_memory_utilization'; 'Above 1,024 users ... the widget adds a notice that
    the count is memory's only'; 'int8 and fp8 are counted with one float16 scale per key vector
    and per value vector'; 'a decode step reads the weights and every fitting user's cache once
    and yields one token per user; the widget divides the one by the other, and compares it with
    the same model and card at 8,192 tokens.'"""
    from backend.compute import kv_cache as w
    from backend.reference import serving

    def run(**p):
        return w.compute(w.SPEC.resolve(p))

    h200 = serving.CARDS["141"]
    assert (h200.sold_gb, h200.reported_gib) == (141, "139.80")
    assert f"{run(memory='141')['values']['memory_gb']:.1f}" == "150.1"
    assert run(memory=80)["values"] == run(memory="80")["values"]
    v = run()["values"]
    assert v["vllm_utilization"] == 0.9
    assert v["users_fit_vllm"] == serving.users_fit(int(0.9 * v["memory_bytes"]), v["weights_bytes"],
                                                    v["per_user_bytes"]).users
    short = run(context_len=16)
    assert short["values"]["users_fit"] > 1024 and "memory's only" in short["notice"]
    assert "notice" not in run()
    for dtype in ("int8", "fp8"):
        q = run(dtype=dtype)["values"]
        vectors = 2 * q["n_layers"] * q["n_kv"]  # a key and a value vector per head and layer
        assert q["scales_per_token_bytes"] == 2 * vectors and q["values_per_token_bytes"] == vectors * q["head_dim"]
    fit = v["users_fit"]
    assert v["decode_read_per_token_gb"] * 1e9 == pytest.approx((v["weights_bytes"] + fit * v["per_user_bytes"]) / fit)
    assert run(context_len=8192)["values"]["read_per_token_vs_8192"] == 1.0
    assert run(context_len=131072)["values"]["read_per_token_vs_8192"] > 1


def test_prefix_cache_cost_prices_in_exact_fractions_and_says_what_a_provider_caches():
    """'prefix_cache_cost prices one request three ways in exact decimal fractions (no caching,
    the request that writes the prefix, a later one that reads it). It assumes the whole cached
    prefix is served from the cache, and reports beside it what a provider would cache (nothing
    below 1,024 tokens, then steps of 128) and what a self-hosted engine would reuse (whole blocks
    of 16); below the minimum a notice says so.'"""
    from fractions import Fraction

    from backend.compute import prefix_cache_cost as w
    from backend.reference import pricing

    b = pricing.bill(400, 350, 100, 10, 50, 1)
    assert isinstance(b.total, Fraction) and pricing.exact(0.1) == Fraction(1, 10)
    small = w.compute(w.SPEC.resolve({}))
    v = small["values"]
    assert (v["provider_minimum"], v["provider_step"], v["engine_block"]) == (1024, 128, 16)
    assert v["cacheable_provider"] == 0 and "notice" in small
    assert [r[0] for r in small["table"]["rows"]][:3] == list(w.ROWS)
    big = w.compute(w.SPEC.resolve({"input_tokens": 4096, "cached_tokens": 3500}))["values"]
    assert big["cacheable_provider"] == 3456 and big["cacheable_engine"] == 3488


# ---------------------------------------------------------------- paged-kv.md: the replay, the levers

def test_the_replay_streams_seeded_requests_and_measures_the_second_half():
    """'replays one endless, seeded stream of requests (seed 0) through two allocators over the
    same arena'; 'Prompt and output lengths are each drawn from an exponential distribution of
    mean half the chosen mean length, clipped so that prompt plus output is at most the maximum';
    'The replay runs four mean lengths of steps (at least 256, at most 4,096) and averages the
    second half'."""
    import itertools

    from backend.compute import paged_kv as w
    from backend.reference import paged_replay as pr

    assert w.SEED == 0
    first = list(itertools.islice(pr.request_stream(0, 256, 1024, 1), 20000))
    assert first[:50] == list(itertools.islice(pr.request_stream(0, 256, 1024, 1), 50))
    assert all(r.prompt + max(r.outputs) <= 1024 for r in first)
    mean_prompt = sum(r.prompt for r in first) / len(first)
    assert abs(mean_prompt - 128) < 5  # about half the mean (1 + an exponential draw of mean 128)
    assert [pr.steps_for(m) for m in (32, 64, 256, 1024, 2048)] == [256, 256, 1024, 4096, 4096]
    r = pr.replay("paged", 4096, 16, 64, 256, steps=300)
    assert r.measured_steps == 150
    assert w.compute(w.SPEC.resolve({}))["values"]["measured_steps"] == pr.steps_for(256) // 2


def test_the_replay_admits_and_preempts_as_appendix_b_says():
    """'A contiguous request is admitted when every sample's region fits; it can never run out
    later. A paged request is admitted when its prompt's blocks plus one block per sample are
    free, with no other block kept in reserve'; '... keeping 1% of the blocks free at admission
    (10 of the default arena's), the watermark of vLLM's block manager.' (Preemption itself:
    test_paged_kv.py.)"""
    from backend.compute import paged_kv as w
    from backend.reference.paged import PagedKV
    from backend.reference.paged_replay import Request, _admit

    kv = PagedKV(5, 16)
    assert not _admit(kv, Request(40, (1, 1, 1)), 0, True, 64, 0)  # 3 prompt blocks + 3 > 5
    assert not kv.tables and len(kv.pool.free) == 5  # nothing placed
    assert _admit(kv, Request(40, (1, 1)), 0, True, 64, 0)  # 3 + 2 = 5: fits exactly
    kv = PagedKV(5, 16)
    assert not _admit(kv, Request(40, (1, 1)), 0, True, 64, 1)  # with one block in reserve
    f = w.facts(w.SPEC.resolve({}))
    assert f["watermark_share"] == 0.01 and f["watermark_blocks"] == 10 == int(0.01 * 16384 // 16)


def test_the_replays_bytes_work_and_picture():
    """'bytes use Llama-3-8B's 131,072 bytes per token, read off the book's KVCache on the meta
    device'; 'a setting whose samples x maximum length exceeds the arena is refused with a 400';
    'The widget is marked heavy'; 'The arena at the last step, in 2,048 cells of equal size; a
    cell shows the kind most of its slots are'. And the levers: 'Each lever's cache is the book's
    KVCache filled on the meta device'."""
    from backend.compute import paged_kv as w
    from backend.compute.spec import ParamError
    from backend.reference import kv_levers, serving
    from backend.reference.presets import PRESETS

    c = PRESETS["llama-3-8b"]
    v = w.compute(w.SPEC.resolve({}))["values"]
    assert v["bytes_per_token"] == serving.filled_cache(c.n_layers, c.n_kv_heads, c.d_head, 1, 1,
                                                        torch.bfloat16).nbytes() == 131072
    with pytest.raises(ParamError):
        w.SPEC.resolve({"samples": 8, "max_len": 4096, "budget_tokens": 16384})
    assert w.SPEC.cost_hint == "heavy" and w.CELLS == 2048
    assert w._cells([0, 0, 1] * 2048)[0][0] == 0 and len(sum(w._cells([1] * 16384), [])) == 2048
    for lever in ("gqa", "mla"):
        caches = kv_levers.cache_for(lever, 100)
        assert all(t.device.type == "meta" for cache in caches for t in cache.keys + cache.values)


# ---------------------------------------------------------------- llama.md: the parity check

def test_the_parity_check_copies_the_same_values_into_llama():
    """'copies the same values into transformers' LlamaForCausalLM (only the names change;
    load_state_dict copies them into Llama's own tensors) and runs both in float32 on the CPU ...
    with Llama's attention set to eager'; 'The weights are drawn from the request's own
    torch.Generator (N(0, 0.02) for every matrix, then 1 + N(0, 0.1) for every RMSNorm gain),
    never from the global seed'; 'In bfloat16 only the parameters are cast; Llama's RoPE
    frequencies stay a float32 buffer'."""
    from backend.reference.config import ModelConfig
    from backend.reference.llama_compare import build_pair

    cfg = ModelConfig(vocab_size=64, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=64,
                      max_seq_len=12)
    state = torch.get_rng_state()
    ours, theirs = build_pair(cfg, 3, torch.bfloat16)
    assert torch.equal(state, torch.get_rng_state())
    a, b = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert torch.equal(a["embed_tokens.weight"], b["model.embed_tokens.weight"])
    assert a["embed_tokens.weight"].data_ptr() != b["model.embed_tokens.weight"].data_ptr()
    assert theirs.config._attn_implementation == "eager"
    assert all(p.dtype == torch.bfloat16 for p in theirs.parameters())
    assert theirs.model.rotary_emb.inv_freq.dtype == torch.float32
    gains = torch.cat([m.weight.float() for n, m in ours.named_modules() if n.endswith("norm")])
    assert abs(gains.mean().item() - 1) < 0.05 and 0.05 < gains.std().item() < 0.15


def test_the_parity_widget_refuses_what_would_pass_its_parameter_ceiling():
    """'the widget allows at most 1,000,000 parameters ... At the widest width, four layers,
    sixteen query and sixteen key/value heads, or the largest vocabulary would pass it: on the page
    each slider that grows the model stops at the limit, and a request past it gets a 400 that
    names the limit and the range the control has at that setting.' (The page's sliders follow
    the spec's Limit: tests/js.)"""
    from backend.compute import parity as w
    from backend.compute.spec import ParamError

    assert w.MAX_PARAMS == 1_000_000
    wide = {"d_model": 256, "n_heads": 16, "d_ff": 172, "vocab": 512}
    for move in ({"n_layers": 4}, {"n_kv": 16}, {"vocab": 4096}):
        with pytest.raises(ParamError) as err:
            w.SPEC.resolve({**wide, "n_kv": 2, "n_layers": 2, **move})
        assert "1,000,000" in str(err.value) and "must be from" in str(err.value)
    w.SPEC.resolve({**wide, "n_kv": 2, "n_layers": 2})  # the widest width itself is allowed


# ---------------------------------------------------------------- block.md

def test_the_residual_experiment_is_one_stack_wired_four_ways():
    """'A stack of 32 MLP sublayers of width 64 and inner width 176 ... is built once per server
    process with PyTorch's default initialisation and seed 0, then wired four ways over the same
    weights'; 'A batch of 64 random token vectors goes up, one random upstream gradient comes down,
    and autograd's gradient at each layer's input is divided by the one at the top'; 'the
    activation norms are read from a forward pass of the same stack on the same input, in
    float32; "all entries exactly 0" is checked separately ..., because a row's norm underflows a
    layer before its entries do'; 'The claims test repeats the experiment with seeds 1 to 3'
    (test_block.py's seeds: range(4))."""
    import inspect

    from backend.compute import mlp
    from backend.reference.residual import WIRINGS, Stack, gradient_by_layer
    from backend.reference.rng import isolated_rng

    assert (mlp.RESIDUAL_DEPTH, *mlp.RESIDUAL_WIDTH) == (32, 64, 176) and len(WIRINGS) == 4
    assert mlp.block_facts.cache_info().maxsize == 1  # once per process
    states = []
    for wiring in WIRINGS:
        with isolated_rng(0):
            states.append(Stack(4, 64, 176, wiring).state_dict())
    assert all(torch.equal(states[0][k], s[k]) for s in states[1:] for k in states[0])
    grads = gradient_by_layer(4, 64, 176, "pre_norm")
    assert len(grads) == 5 and grads[-1] == 1.0
    assert inspect.signature(gradient_by_layer).parameters["n_tokens"].default == 64
    v = mlp.block_facts()
    assert v["act_first_zero_layer_plain"] < v["act_all_zero_layer_plain"]
    test_block = (ROOT / "tests/claims/test_block.py").read_text(encoding="utf-8")
    assert test_block.count('@pytest.mark.parametrize("seed", range(4))') >= 2


def test_rmsnorms_rounding_is_measured_three_ways_and_one_step_at_a_time():
    """'Rows of width 4,096 are drawn as offset + scale x N(0, 1), rounded to the chosen dtype,
    and normalised three ways: the book's upcast version, the same formula in the input dtype, and
    float64 as the exact answer'; 'rmsnorm_rounded_at runs the formula in float64 and rounds only
    the named steps to the dtype'; 'The running sum is a Python loop over one row'. And: 'Parameter
    counts ... come from the book's modules built on PyTorch's meta device'."""
    from backend.compute import rmsnorm as w
    from backend.reference.counting import build_on_meta
    from backend.reference.norms import rmsnorm_float64, rmsnorm_rounded_at
    from backend.reference.presets import PRESETS

    x = w.make_input(3.0, 2.0, torch.bfloat16)
    g = torch.Generator().manual_seed(0)
    assert x.shape[1] == w.D == 4096 and x.dtype == torch.bfloat16
    assert torch.equal(x, (torch.randn(w.N_ROWS, w.D, generator=g, dtype=torch.float64) * 2 + 3).to(torch.bfloat16))
    exact = rmsnorm_float64(x, w.EPS)
    unrounded = rmsnorm_rounded_at(x, torch.bfloat16, (), w.EPS)  # nothing rounded: float64
    torch.testing.assert_close(unrounded, exact.double(), rtol=1e-14, atol=1e-14)
    assert unrounded.dtype == torch.float64
    v = w.compute(w.SPEC.resolve({"dtype": "bfloat16"}))["values"]
    assert v["error_upcast"] < v["error_no_upcast"] and v["d"] == 4096
    assert all(p.device.type == "meta" for p in build_on_meta(PRESETS["llama-3-8b"]).parameters())


# ---------------------------------------------------------------- encoder-decoder.md

def test_the_masks_widgets_tiny_model_and_its_worked_row():
    """'runs one forward pass of a tiny model of the same file (one layer a side, d_model = 8, 2
    heads, a vocabulary of 16), built once per process with a fixed seed and never trained. Its
    token ids are random with fixed seeds, so the shapes, the masked weights and the worked
    cross-attention row are the same on every run. The work is at most a 12 x 12 mask'; 'the
    difference at the defaults is ...'."""
    from backend.compute import enc_dec_masks as w
    from backend.reference.encoder_decoder import EncoderDecoder

    m = w._model()
    assert isinstance(m, EncoderDecoder) and not m.training and w._model() is m
    assert (w.TINY.n_layers, w.TINY.d_model, w.TINY.n_heads, w.TINY.vocab_size) == (1, 8, 2, 16)
    a, b = w.compute(w.SPEC.resolve({})), w.compute(w.SPEC.resolve({}))
    assert a["values"] == b["values"] and w.MAX_LEN == 12
    assert a["values"]["cross_example"]["max_diff"] < 1e-6


def test_the_full_size_check_runs_on_meta_once_and_the_input_sizes_are_a_standard_normal():
    """'base_model_forward_check builds the six-and-six model at d_model = 512 on PyTorch's meta
    device ... It runs once per process (cached) and reports the shapes met on the way and the
    parameter count'; 'The RMS figures of the input come from one nn.Embedding of 26 rows at width
    512 with seed 0 (PyTorch's default initialisation, a standard normal) and the full 2,048-row
    sinusoid table at width 512.'"""
    from backend.compute import enc_dec_masks as w

    assert w.forward_check.cache_info().maxsize == 1
    check = w.forward_check()
    assert "parameters" in check and "logits" in check
    torch.manual_seed(0)
    emb = torch.nn.Embedding(26, 512).weight.detach()
    assert w.input_scale()["embed_rms"] == pytest.approx(float(emb.pow(2).mean().sqrt()), abs=1e-7)


# ---------------------------------------------------------------- families.md

def test_the_passage_is_counted_with_cl100k_from_the_package_once_per_process():
    """'training_signal counts the text in its box with OpenAI's cl100k_base tokenizer, whose
    vocabulary ships inside the bpe-openai package: nothing is downloaded. The tokenizer is loaded
    once per process, on first use, and recent passages' counts are cached.'; 'the same pair for
    every length from 2 to 4,096 at the current rate'. (The passes: test_training_signal.py counts
    the book's DecoderLM's forward calls through teacher_forced, prefix_by_prefix and free_running.)"""
    from backend.compute import training_signal as w
    from backend.reference import training_signal as ts

    assert w.TOKENIZER == "cl100k_base" and "bpe-openai" in w.tokenizer_name()
    assert w._encoding.cache_info().maxsize == 1 and w.count_tokens.cache_info().maxsize == 256
    assert w.count_tokens("hello world") == 2
    assert (w.SPEC.param("length").min, w.SPEC.param("length").max) == (2, 4096)
    assert ts.whole_ratio(100, 0.15) == 99 / 15
    counted = ts.CountingModel(lambda ids: ids)
    counted(torch.zeros(1, 1))
    assert counted.passes == 1


# ---------------------------------------------------------------- model.md

def test_counts_on_meta_list_a_tied_matrix_once_and_the_logits_sizes_come_off_a_meta_forward():
    """'build the book's DecoderLM from the configuration on PyTorch's meta device (shapes, no
    storage) and add up named_parameters(), which lists a tied matrix once; a 70-billion-parameter
    model costs no memory to count. The logits' sizes are read off a meta-device forward of the
    same model.'"""
    from backend.compute import model_params as w
    from backend.reference.counting import build_on_meta, count_parameters
    from backend.reference.presets import PRESETS

    tied = PRESETS["llama-3.2-1b"]
    model = build_on_meta(tied)
    assert model.lm_head.weight is model.embed_tokens.weight
    assert count_parameters(tied).total == sum(p.numel() for _, p in model.named_parameters())
    assert count_parameters(tied.replace(tie_embeddings=False)).total - count_parameters(tied).total \
        == tied.vocab_size * tied.d_model
    assert all(p.device.type == "meta" for p in build_on_meta(PRESETS["llama-2-70b"]).parameters())
    full, last = w.logits_shapes(PRESETS["llama-3-8b"], 16)
    assert full == (1, 16, 128256) and last == (1, 1, 128256)


def test_sampling_counts_on_the_distribution_after_the_settings():
    """'"tokens no filter cut" counts finite logits after temperature, top-k and top-p; "can be
    drawn" counts probabilities above 0, which is fewer at a low temperature because the float32
    softmax rounds the far tail to exactly 0. The continuation is drawn with a generator seeded by
    the seed control, so one seed gives one continuation at one setting.'"""
    from backend.compute import sampling as w

    def run(**p):
        return w.compute(w.SPEC.resolve(p))["values"]

    cold = run(temperature=0.1)
    assert cold["drawable_tokens"] < cold["kept_tokens"] == cold["vocab_size"]
    top = run(top_k=5)
    assert top["kept_tokens"] == top["drawable_tokens"] == 5
    assert run(seed=3, temperature=1.5)["continuation"] == run(seed=3, temperature=1.5)["continuation"]


# ---------------------------------------------------------------- attention-maps.md
# (the sink study over the held-out sentences, one sentence fewer for the book's model, the
# habit heads and the labels on a phone: test_attention_maps.py, slow, and the browser tests)

def test_the_attention_map_runs_eager_within_its_limits_and_reads_rows_by_word():
    """'Both models run on the CPU with eager attention, so every layer's softmax is
    materialised; the widget stacks them into one (layers, heads, T, T) tensor. The average switch
    takes the mean over all layers and heads'; 'A sentence may have at most 500 characters and,
    after tokenization, 64 tokens, special tokens included ... The book's model gets <|endoftext|>
    in front of every sentence'; 'In a script written without spaces (Chinese, Japanese, Thai)
    each character counts as a word'; 'The special tokens are left out of the tables and the rest
    of the row is rescaled to add up to 1'; 'The folder is read with local_files_only=True and
    eager attention'."""
    import inspect

    from backend.compute import attention_map as w
    from backend.compute import attention_models as am
    from backend.compute.spec import ParamError
    from backend.compute.words import words_in

    e = am.encode_book("The animal didn't cross the street.")
    assert e.tokens[0] == "<|endoftext|>" and e.special[0]
    L, h, T, T2 = e.maps.shape
    assert T == T2 == len(e.tokens) and torch.allclose(e.maps.sum(-1), torch.ones(L, h, T))
    assert "e.maps.mean(dim=(0, 1))" in inspect.getsource(w.compute)
    assert w.MAX_CHARS == 500 and am.MAX_TOKENS == 64 == w.compute(w.SPEC.resolve({}))["values"]["max_tokens"]
    with pytest.raises(ParamError):
        am.encode_book(" ".join(["word"] * 70))
    assert words_in("didn't stop.") == ["didn't", "stop", "."]
    assert words_in("我爱你") == ["我", "爱", "你"]
    table = w.compute(w.SPEC.resolve({}))["table"]  # the chosen word's row, by word
    assert table["columns"] == ["word", "tokens", "weight"]
    assert "<|endoftext|>" not in {r[1] for r in table["rows"]}
    assert abs(sum(r[2] for r in table["rows"]) - 1) < 1e-3  # rounded to 4 places each
    src = inspect.getsource(am._load_hf)
    assert "local_files_only=True" in src and 'attn_implementation="eager"' in src


# ---------------------------------------------------------------- masks.md

def test_the_mask_widget_bakes_every_setting_and_reads_sdpa_with_an_identity():
    """'Every combination of its four controls (2 sentences x 4 masks x 6 forms x 3 dtypes, 144
    settings) is computed when the site is built'; 'the softmax itself runs in float32 and its
    result is cast back (softmax_rows)'; 'SDPA's verdict ... with V = I so that its output is the
    weights (sdpa_weights)'; 'The cross-attention example ... is fixed: it does not depend on the
    controls, is computed in float32, and is compared with SDPA on every call'; 'Row sums are
    coloured green when within 0.005 of 1, red otherwise, and orange for a row with nothing to
    attend to, whatever it sums to.'"""
    from backend.compute import causal_mask as w
    from backend.compute.style import COLORS
    from backend.reference import masks

    points = w.SPEC.bake_points()
    assert len(points) == 144 == len({tuple(sorted(p.items())) for p in points})
    s = torch.randn(3, 3).to(torch.bfloat16)
    assert masks.softmax_rows(s).dtype == torch.bfloat16
    assert torch.equal(masks.softmax_rows(s), torch.softmax(s.float(), -1).to(torch.bfloat16))
    q, k = torch.randn(1, 1, 4, 8), torch.randn(1, 1, 4, 8)
    allowed = masks.causal_mask(4)
    scores = (q @ k.transpose(-1, -2) / 8 ** 0.5).masked_fill(~allowed, float("-inf"))
    torch.testing.assert_close(masks.sdpa_weights(q, k, allowed), torch.softmax(scores, -1))
    crosses = {str(w.compute(w.SPEC.resolve(p))["values"]["cross"]) for p in points[:12]}
    assert len(crosses) == 1 and w.cross_example()["same_as_sdpa"]
    fig = w.compute(w.SPEC.resolve({"mask": "causal"}))["figure"]
    bars = next(t for t in fig["data"] if t.get("name") == "row sum")
    assert set(bars["marker"]["color"]) == {COLORS["good"]}  # every row a distribution
    for p in points:
        v = w.compute(w.SPEC.resolve(p))["values"]
        bars = next(t for t in w.compute(w.SPEC.resolve(p))["figure"]["data"] if t.get("name") == "row sum")
        for i, (s_, c) in enumerate(zip(v["row_sums"], bars["marker"]["color"])):
            if not any(v["allowed"][i]):
                assert c == COLORS["accent"]
            else:
                assert c == (COLORS["good"] if s_ is not None and abs(s_ - 1) < 0.005 else COLORS["unscaled"])


# ---------------------------------------------------------------- positions.md

def test_the_positions_widgets_stride_the_table_and_search_the_half_point():
    """'drawn at most 128 positions x 64 dimensions. Past 128 positions each row stands for a
    block of positions and shows the table smoothed around it: the mean over a window two blocks
    wide centred on the block, taken three times over ... The title says "rows averaged" and the
    position axis how many positions a row holds. Past 64 dimensions one column in every few is
    drawn'; 'rope.relative_similarity in float64, at every distance up to 400; on a longer
    sequence at the first 200 distances one by one, then at 200 blocks of distances ... The
    values ... are exact. The distance at which it first falls below one half is searched one
    distance at a time, up to 4,096; past that the widget says "beyond 4,095"'; 'one fixed random
    pair, drawn from PyTorch's
    generator seeded with 0, in float64 ... The rotation angles are computed in float32'; 'the
    strength slider multiplies the sinusoids before they are added'."""
    import inspect
    import math

    from backend.compute import positions_rope as w
    from backend.compute import positions_sinusoids as ws
    from backend.reference import order, rope
    from backend.reference.sinusoidal import sinusoidal_encoding

    assert (ws.MAX_CELLS_ROWS, ws.MAX_CELLS_COLS, w.CURVE_POINTS, w.HALF_SEARCH) == (128, 64, 400, 4096)
    big = ws.compute(ws.SPEC.resolve({"max_position": 32768, "d_model": 512}))
    layout = big["figure"]["layout"]
    title = " ".join(str(a.get("text", "")) for a in layout.get("annotations", []))
    assert "rows averaged" in title and (ws.WINDOW_BLOCKS, ws.SMOOTHING) == (2, 3)
    # 'fades to nearly 0 ... kept at 92% of its strength or more' (the factor per frequency)
    factor = lambda blocks_per_turn, s=256: (math.sin(math.pi * 2 * s / (blocks_per_turn * s))  # noqa: E731
                                             / (2 * s * math.sin(math.pi / (blocks_per_turn * s)))) ** 3
    assert abs(factor(2)) < 1e-9 and all(abs(factor(b)) < 0.1 for b in (0.3, 0.7, 1.3, 1.7, 3))
    assert factor(16) >= 0.92 and all(factor(b) > factor(16) for b in (17, 32, 100))
    assert "means of 256" in layout["yaxis"]["title"]["text"]
    assert "one in 8" in layout["xaxis"]["title"]["text"]
    assert ws.strided(1000, 128) == list(range(0, 1000, 8))
    curve = w.compute(w.SPEC.resolve({"max_position": 4096}))["figure"]["data"][0]["x"]
    assert curve[:200] == list(range(200)) and len(curve) <= 400
    assert len(w.compute(w.SPEC.resolve({"max_position": 400}))["figure"]["data"][0]["x"]) == 400
    q, k = w._query_key(64)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(q, torch.randn(64, generator=g, dtype=torch.float64)) and q.dtype == torch.float64
    assert inspect.signature(rope.rotate).parameters["precision"].default == torch.float32
    x = order.embed(["dog", "bites", "man"])
    torch.testing.assert_close(order.add_positions(x, 3.0), x + 3.0 * sinusoidal_encoding(3, x.size(1)).to(x.dtype))
    assert "beyond" in inspect.getsource(w.compute) and "HALF_SEARCH) - 1" in inspect.getsource(w.compute)


# ---------------------------------------------------------------- recurrence.md

def test_sequential_vs_parallel_keeps_fastest_runs_more_for_small_problems_and_never_refuses():
    """'each version's time is its fastest run'; 'Small problems get more runs than large ones';
    'Every setting of the sliders, up to 1,024 steps of width 512, is inside the widget's work
    budget, so no setting is refused'; 'A fastest run counts only when several other runs come
    close to it. Otherwise the widget measures again, pools the runs'; 'Each length and width is
    timed once per server worker process and remembered'; 'A run slower than twice the taller bar
    is off the top of the panel'."""
    from backend.compute import measure as measure_lib
    from backend.compute import sequential_vs_parallel as w

    assert w.repeats_for(16, 16) > w.repeats_for(1024, 512) >= w.MIN_REPEATS
    assert (int(w.SPEC.param("length").max), int(w.SPEC.param("width").max)) == (1024, 512)
    assert w._max_work_of_ranges() <= w.MAX_WORK
    assert measure_lib.settled([1.0, 1.01, 1.02, 5.0]) and not measure_lib.settled([1.0, 3.0, 3.1, 3.2])
    assert w.MAX_ROUNDS > 1 and w.measure.cache_info().maxsize >= 66


# ---------------------------------------------------------------- scaling.md
# (the budgets themselves: test_scaling.py)

def test_attention_scalings_curves_seed_and_initialisation():
    """'The curves on the left of the figure are drawn once per seed, at every power of two, from
    a generator seeded with the seed plus one and fewer pairs per point'; 'The query variance at
    PyTorch's default initialisation is measured once per process, on the CPU, from unit-variance
    inputs of width 512 through a nn.Linear(512, 64) seeded with 0, without a bias'; 'Offline, the
    page falls back on results baked at build time for every power-of-two head size at 8 positions
    and every power-of-two number of positions at head size 64'."""
    from backend.compute import attention_scaling as w

    assert w.CURVE_DIMS == tuple(2 ** i for i in range(11))
    assert all(w.curve_pairs_for(d) <= w.n_pairs_for(d) for d in w.CURVE_DIMS)
    assert w.curve_pairs_for(4) < w.n_pairs_for(4)
    assert w.variance_curve.cache_info().maxsize == 32 and w.init_values.cache_info().maxsize == 1
    assert (w.INIT_D_MODEL, w.INIT_ROWS) == (512, 20_000)
    defaults = w.SPEC.resolve({})
    assert (defaults["d_k"], defaults["n_positions"], defaults["seed"]) == (64, 8, 0)
    baked = {(p.get("d_k", 64), p.get("n_positions", 8)) for p in w.SPEC.bake_points()}
    assert {(2 ** i, 8) for i in range(11)} <= baked
    top = int(w.SPEC.param("n_positions").max)
    assert {(64, 2 ** i) for i in range(1, top.bit_length())} <= baked
