"""Widget: contiguous reservations against paged blocks, on the same arena and the same requests.

Both allocators of backend/reference/paged.py replay one seeded stream of requests (an always
waiting queue; prompt and output lengths drawn around the mean, capped at the maximum) for a few
mean lengths' worth of decode steps, and report, averaged over the second half, what share of
the arena holds real tokens, what is reserved or padded but empty, what is free, and how many
requests run at once. The picture is the arena at the last step, one cell per few slots.
Sizes in bytes use Llama-3-8B's bytes per token, read off the book's KVCache (kv_levers).

Bounded work: the replay runs about 4 mean lengths of steps (256 to 4,096), each writing one
token per running sample, and the running samples are at most the arena's slots over the
shortest request, so the work is a few times the arena (at most 16,384 slots).
"""

from __future__ import annotations

from functools import lru_cache

from backend.compute.rules import Limit
from backend.compute.spec import Output, Param, WidgetSpec
from backend.compute.style import COLORS, SERIES, base_layout
from backend.reference import kv_levers, paged_replay
from backend.reference.paged import fork_blocks, one_request, prefix_hit
from backend.reference.paged_replay import SLOT, replay

SCHEMES = ("contiguous", "paged")
COLUMNS = 64  # cells per row of the arena picture
CELLS = 2048  # cells in the picture, whatever the arena
SEED = 0
# the worked examples the chapter names: one request, a shared opening, parallel samples
EXAMPLE_TOKENS = 1000  # Exercise 1
MATH_TOKENS = 200  # the math's worked example, a different length
PREFIX_PROMPT, PREFIX_SHARED = 100, 40
# vLLM's scheduler admits a request only while this share of the blocks stays free (its
# `watermark`, 0.01 by default); the widget's replay keeps none, the prose compares the two
VLLM_WATERMARK = 0.01
FORK_PROMPT, FORK_SAMPLES = 40, 4
# The rules across params, as data the page follows (it clamps, never sends a refused setting):
# the mean request is at most the maximum, and the arena holds every sample of one prompt at
# the maximum length.
MEAN_AT_MOST_MAX = Limit(0, ((1, ("mean_len",)), (-1, ("max_len",))),
                         "the mean is at most the maximum")
ARENA_HOLDS_SAMPLES = Limit(0, ((1, ("samples", "max_len")), (-1, ("budget_tokens",))),
                            "the memory holds samples × maximum length")


SPEC = WidgetSpec(
    name="paged_kv",
    try_next=(
        "Lower `block_size` towards 1: a paged cache wastes at most one partly filled block per "
        "request, so smaller blocks waste less, while contiguous reservations hold the maximum "
        "length for every request."
    ),
    title="Contiguous reservations against paged blocks",
    description="The same requests served from one arena, reserved per request or paged.",
    params=(
        Param("block_size", "block size", "int", default=16, min=1, max=256, step=1,
              scale="log2", unit="tokens",
              help="Token slots per block of the paged cache (vLLM's default is 16)."),
        Param("mean_len", "mean request length", "int", default=256, min=64, max=2048, step=1,
              scale="log2", unit="tokens", limits=(MEAN_AT_MOST_MAX,),
              help="Prompt and output are each drawn around half of this; many short, few long."),
        Param("max_len", "maximum request length", "int", default=1024, min=64, max=4096,
              step=1, scale="log2", unit="tokens", limits=(ARENA_HOLDS_SAMPLES,),
              help="Prompt plus output never exceeds it; the contiguous scheme reserves it for "
                   "every sequence. At least the mean length."),
        Param("samples", "parallel samples per prompt", "int", default=1, min=1, max=8, step=1,
              help="Answers drawn from one prompt: the paged cache shares the prompt's blocks."),
        Param("budget_tokens", "cache memory", "int", default=16384, min=4096, max=16384,
              step=1, scale="log2", unit="token slots",
              help="The arena both schemes share, in tokens of cache. At least samples times "
                   "the maximum length."),
    ),
    outputs=(
        Output("contiguous_token_share", "contiguous: memory holding tokens", ".0%"),
        Output("paged_token_share", "paged: memory holding tokens", ".0%"),
        Output("contiguous_running", "contiguous: requests running at once", ".1f"),
        Output("paged_running", "paged: requests running at once", ".1f"),
        Output("running_ratio", "paged runs this many times as many", ".2f"),
        Output("paged_shared_share", "paged: memory holding prompt tokens shared by samples",
               ".0%"),
        Output("paged_preempted", "paged: requests sent back to the queue", "d"),
    ),
    bake=({"block_size": 1}, {"block_size": 4}, {"block_size": 64}, {"block_size": 256},
          {"samples": 4}, {"max_len": 4096}, {"mean_len": 1024}),
    cost_hint="heavy",
)


@lru_cache(maxsize=64)
def _lengths(mean: int, cap: int) -> tuple[float, float]:
    return paged_replay.stream_lengths(SEED, mean, cap)


def compute(params: dict) -> dict:
    bs, mean, cap, n, budget = (params[k] for k in
                                ("block_size", "mean_len", "max_len", "samples", "budget_tokens"))
    runs = {s: replay(s, budget, bs, mean, cap, n, seed=SEED) for s in SCHEMES}
    per_token = kv_levers.bytes_per_token("gqa")
    values = {"arena_gb": budget * per_token / 1e9, "bytes_per_token": per_token,
              "output_mean_len": mean / 2}  # the mean of the answers' length distribution
    values["request_mean_len"], values["cut_at_max_share"] = _lengths(mean, cap)
    for s, r in runs.items():
        slots = r.n_slots
        values.update({
            f"{s}_token_share": r.tokens / slots,
            f"{s}_empty_share": r.internal / slots,  # inside allocations, no token (yet)
            f"{s}_never_share": r.never / slots,  # ... and none will ever come
            f"{s}_free_share": r.free / slots,
            f"{s}_waste_share": 1 - r.tokens / slots,
            f"{s}_waste_gb": (slots - r.tokens) * per_token / 1e9,
            f"{s}_running": r.running,
            f"{s}_finished": r.finished,
        })
    p = runs["paged"]
    values.update({
        "paged_shared_share": p.shared / p.n_slots,
        "paged_preempted": p.preempted,
        # tokens a request sent back had written (and has prefilled again with its prompt)
        "paged_victim_mean_written": p.victims_written / p.preempted if p.preempted else 0.0,
        "paged_copies": p.copies,
        "running_ratio": p.running / runs["contiguous"].running,
        "finished_ratio": p.finished / max(1, runs["contiguous"].finished),
        "measured_steps": p.measured_steps,
        "block_bytes": bs * per_token,
    })
    blocks, empty = one_request(EXAMPLE_TOKENS, bs)
    m_blocks, m_empty = one_request(MATH_TOKENS, bs)
    held, unshared, copies = fork_blocks(FORK_PROMPT, FORK_SAMPLES, bs)
    values.update({
        "example_tokens": EXAMPLE_TOKENS, "example_blocks": blocks, "example_empty": empty,
        "example_empty_bytes": empty * per_token,
        "math_tokens": MATH_TOKENS, "math_blocks": m_blocks, "math_empty": m_empty,
        "math_empty_bytes": m_empty * per_token,
        "prefix_shared": PREFIX_SHARED, "prefix_hit_tokens": prefix_hit(PREFIX_PROMPT,
                                                                        PREFIX_SHARED, bs),
        "fork_prompt": FORK_PROMPT, "fork_samples": FORK_SAMPLES, "fork_blocks": held,
        "fork_blocks_unshared": unshared, "fork_copies": copies,
    })
    return {"values": values, "figure": _figure(runs, budget),
            "summary": _summary(params, values), "table": _table(values)}


def facts(params: dict) -> dict:
    """Values only the prose quotes: the same paged replay with vLLM's admission watermark."""
    bs, mean, cap, n, budget = (params[k] for k in
                                ("block_size", "mean_len", "max_len", "samples", "budget_tokens"))
    kept = replay("paged", budget, bs, mean, cap, n, seed=SEED, watermark=VLLM_WATERMARK)
    contiguous = replay("contiguous", budget, bs, mean, cap, n, seed=SEED)
    return {"watermark_share": VLLM_WATERMARK,
            "watermark_blocks": int(VLLM_WATERMARK * (budget // bs)),
            "paged_preempted_watermark": kept.preempted,
            "running_ratio_watermark": kept.running / contiguous.running,
            "paged_token_share_watermark": kept.tokens / kept.n_slots}


# legend name per slot code: orange is a reservation's not-yet-written part (contiguous) or the
# empty end of a block (paged); red appears only in the contiguous arena, green only in the paged
LEGEND = {SLOT["token"]: "token", SLOT["shared"]: "token shared by samples",
          SLOT["reserved"]: "empty slot of an allocation",
          SLOT["never"]: "reserved past the answer's end",
          SLOT["free"]: "free"}
TONES = {SLOT["free"]: COLORS["guide"], SLOT["token"]: SERIES[0],
         SLOT["reserved"]: COLORS["accent"], SLOT["never"]: COLORS["unscaled"],
         SLOT["shared"]: COLORS["good"]}


def _cells(snapshot: list[int]) -> list[list[int]]:
    """The arena in CELLS cells, each showing the kind most of its slots are."""
    per = max(1, len(snapshot) // CELLS)
    flat = []
    for i in range(0, len(snapshot), per):
        chunk = snapshot[i:i + per]
        flat.append(max(set(chunk), key=chunk.count))
    return [flat[r:r + COLUMNS] for r in range(0, len(flat), COLUMNS)]


def _figure(runs: dict, budget: int) -> dict:
    codes = sorted(TONES)
    top = max(codes)
    scale = []
    for c in codes:  # a stepped colour scale: each code its own flat band
        lo, hi = c / (top + 1), (c + 1) / (top + 1)
        scale += [[lo, TONES[c]], [hi, TONES[c]]]
    data = []
    for i, s in enumerate(SCHEMES):
        z = _cells(runs[s].snapshot)
        axis = "" if i == 0 else "2"
        data.append({"type": "heatmap", "z": z, "zmin": -0.5, "zmax": top + 0.5,
                     "colorscale": scale, "showscale": False, "xgap": 1, "ygap": 1,
                     "xaxis": f"x{axis}", "yaxis": f"y{axis}", "name": s,
                     "hovertemplate": f"{s}<extra></extra>"})
    for code, name in LEGEND.items():  # legend entries (a heatmap has none)
        data.append({"type": "scatter", "x": [None], "y": [None], "mode": "markers",
                     "marker": {"symbol": "square", "size": 12, "color": TONES[code]},
                     "name": name, "showlegend": True})
    hidden = {"showticklabels": False, "showgrid": False, "zeroline": False, "ticks": ""}
    per = max(1, budget // CELLS)
    # Axis titles say how to read a grid (review P7): the arena runs along a row, then down.
    # The gap between the grids holds the upper one's x title and the lower one's heading.
    across = {"text": f"{COLUMNS} cells a row, left to right", "font": {"size": 11},
              "standoff": 4}
    down = {"text": "rows", "font": {"size": 11}, "standoff": 4}
    layout = base_layout(
        500,
        xaxis={**hidden, "domain": [0, 1], "anchor": "y", "title": across},
        yaxis={**hidden, "domain": [0.6, 1], "autorange": "reversed", "title": down},
        xaxis2={**hidden, "domain": [0, 1], "anchor": "y2", "title": across},
        yaxis2={**hidden, "domain": [0, 0.4], "autorange": "reversed", "title": down},
        annotations=[
            {"text": f"contiguous, max length reserved (cell = {per} slots)",
             "x": 0, "y": 1.0, "xref": "paper", "yref": "paper", "xanchor": "left",
             "yanchor": "bottom", "showarrow": False},
            {"text": f"paged, blocks as tokens arrive (cell = {per} slots)",
             "x": 0, "y": 0.4, "xref": "paper", "yref": "paper", "xanchor": "left",
             "yanchor": "bottom", "showarrow": False}],
        margin={"l": 30, "r": 10, "t": 30, "b": 30},
        legend={"orientation": "h", "y": -0.1},
    )
    # on a phone the first title in two lines: in one it runs past the figure's edge
    first = {**layout["annotations"][0], "align": "left",
             "text": f"contiguous, max length reserved<br>(cell = {per} slots)"}
    second = {**layout["annotations"][1], "align": "left",
              "text": f"paged, blocks as tokens arrive<br>(cell = {per} slots)"}
    return {"data": data, "layout": layout,
            "narrow": {"height": 600, "legend": {"y": -0.14}, "margin": {"t": 44},
                       "annotations": [first, second]}}


def _summary(params: dict, v: dict) -> str:
    return (f"The same requests (mean {params['mean_len']:,} tokens, at most "
            f"{params['max_len']:,}, {params['samples']} sample(s) each) served from "
            f"{params['budget_tokens']:,} token slots: reserved contiguously for the maximum, "
            f"{v['contiguous_token_share']:.0%} of the memory holds tokens and "
            f"{v['contiguous_running']:.1f} requests run at once; in blocks of "
            f"{params['block_size']}, {v['paged_token_share']:.0%} holds tokens and "
            f"{v['paged_running']:.1f} run at once, with {v['paged_shared_share']:.0%} of the "
            f"memory holding prompt tokens that several samples read. Each grid is the arena "
            f"read row by row, left to right.")


def _table(v: dict) -> dict:
    rows = []
    for s in SCHEMES:
        rows.append([s, f"{v[f'{s}_token_share']:.0%}", f"{v[f'{s}_empty_share']:.0%}",
                     f"{v[f'{s}_never_share']:.0%}", f"{v[f'{s}_free_share']:.0%}",
                     f"{v['paged_shared_share']:.0%}" if s == "paged" else "none",
                     f"{v[f'{s}_running']:.1f}", f"{v[f'{s}_finished']:,}"])
    return {"caption": "Where the arena's memory goes, averaged over the measured steps",
            "columns": ["scheme", "holds tokens", "allocated, empty now",
                        "of which never written", "free", "shared by samples",
                        "requests at once",
                        "requests finished"],
            "rows": rows}
