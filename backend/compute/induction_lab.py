"""Widget: induction heads in a real trained Llama, found by their scores and knocked out.

SmolLM2-135M-Instruct (30 layers of 9 query heads, `backend/smollm2`) reads `<|endoftext|>`, then
`n_tokens` random tokens, then the same tokens again. The second copy is predictable only by
copying: find where the current token appeared before and predict what followed it there. The
loss on each copy, every head's induction and previous-token score (`backend/reference/induction.py`),
and the loss again with the top heads (by the chosen score, or drawn at random as a control)
knocked out: their output set to zero, or to its mean over the positions, before W_O.
"""

from __future__ import annotations

import math

import torch

from backend.compute.spec import Output, Param, WidgetSpec, seed_param
from backend.compute.style import COLORS, base_layout
from backend.reference.induction import (
    HIGH_ID,
    LOW_ID,
    ablate_heads,
    copy_losses,
    head_scores,
    repeated_random_tokens,
    token_losses,
)

RANKS = ("induction", "previous_token", "random")
RANK_LABELS = ("top induction", "top previous-token", "random (a control)")  # the menu
RANK_WORDS = ("strongest induction heads", "strongest previous-token heads",
              "heads drawn at random (a control)")  # the summary
MAX_ABLATE = 30

SPEC = WidgetSpec(
    name="induction_lab",
    try_next=(
        "Raise `ablate` from 0 to 4 with `rank` on induction, then switch `rank` to random: the "
        "second copy's loss climbs back when the induction heads go, far less when as many "
        "random heads go."
    ),
    title="Induction heads in SmolLM2-135M: find them, knock them out",
    description="Random tokens repeated: the loss on each copy, every head's induction and "
                "previous-token score, and the loss with the top heads knocked out.",
    params=(
        Param("n_tokens", "random tokens in each copy", "int", default=50, min=8, max=200,
              step=1, help="The sequence is <|endoftext|>, these tokens, then the same again."),
        seed_param(999, help="Which random tokens."),
        Param("ablate", "heads knocked out", "int", default=0, min=0, max=MAX_ABLATE, step=1,
              help="How many of the 270 heads lose their output, the highest-ranked first."),
        Param("rank", "which heads", "choice", default="induction", options=RANKS,
              option_labels=RANK_LABELS,
              help="Rank heads by their induction score or previous-token score, or draw them "
                   "at random (the same seed, the same draw)."),
        Param("ablation", "knocked out how", "choice", default="mean", options=("mean", "zero"),
              help="mean: the head's output at every position becomes its average over the "
                   "sequence. zero: it becomes 0."),
    ),
    outputs=(
        Output("loss_first", "loss on the first copy (nats per token)", ".2f"),
        Output("loss_second", "loss on the second copy", ".2f"),
        Output("loss_second_ablated", "second copy, heads knocked out", ".2f"),
        Output("loss_first_ablated", "first copy, heads knocked out", ".2f"),
        Output("top_induction_score", "the strongest induction head's score", ".2f"),
        Output("induction_heads", "heads scoring over 0.5 as induction", "d"),
        Output("previous_heads", "heads scoring over 0.5 as previous-token", "d"),
    ),
    bake=(tuple({"ablate": k} for k in (1, 2, 4, 8, 16, 30))
          + tuple({"ablate": k, "rank": r} for k in (4, 8, 30) for r in ("previous_token", "random"))
          + ({"ablate": 4, "ablation": "zero"}, {"n_tokens": 20}, {"n_tokens": 200},
             {"seed": 1}, {"seed": 2})),
    cost_hint="heavy",
    warm=False,  # the page carries its results; warming would load 538 MB into every worker
)


def _model():
    """A module of this request's own holding SmolLM2's shared weights: the knock-out hooks go on
    it, never on a model another thread (a request, the warm-up) is running."""
    from backend.smollm2.load import own_module

    return own_module()


def compute(params: dict) -> dict:
    model = _model()
    n, k = params["n_tokens"], params["ablate"]
    ids = repeated_random_tokens(n, params["seed"])
    with torch.no_grad():
        clean = model(ids, output_attentions=True)
        # {"induction": (L, h), "previous_token": (L, h)}; the maps themselves are let go
        scores = head_scores(clean.attentions, n)
        nll = token_losses(clean.logits, ids)
        del clean
    L, h = scores["induction"].shape
    if params["rank"] == "random":
        gen = torch.Generator().manual_seed(params["seed"])
        order = torch.randperm(L * h, generator=gen)
    else:
        order = torch.argsort(scores[params["rank"]].flatten(), descending=True, stable=True)
    chosen = [(int(i) // h, int(i) % h) for i in order[:k]]
    first, second = copy_losses(nll, n)
    nll_ablated = None
    if chosen:
        with torch.no_grad(), ablate_heads(model, chosen, params["ablation"], ids):
            nll_ablated = token_losses(model(ids).logits, ids)
        first_a, second_a = copy_losses(nll_ablated, n)
    else:
        first_a, second_a = first, second
    ind, prev = scores["induction"], scores["previous_token"]
    top = divmod(int(torch.argmax(ind)), h)
    values = {
        "n_tokens": n, "layers": L, "heads_per_layer": h, "heads": L * h,
        "uniform_loss": math.log(model.config.vocab_size),  # an even guess over the vocabulary
        "token_ids": [LOW_ID, HIGH_ID - 1],
        "loss_first": first, "loss_second": second,
        "loss_first_ablated": first_a, "loss_second_ablated": second_a,
        "top_induction": {"layer": top[0], "head": top[1], "score": float(ind.max())},
        "top_induction_score": float(ind.max()),
        "top_previous": dict(zip(("layer", "head"), divmod(int(torch.argmax(prev)), h),
                                 strict=True)) | {"score": float(prev.max())},
        "induction_heads": int((ind > 0.5).sum()),
        "previous_heads": int((prev > 0.5).sum()),
        "ablated": [list(c) for c in chosen],
        "induction_scores": ind.tolist(),
        "previous_scores": prev.tolist(),
    }
    shown = scores["induction" if params["rank"] == "random" else params["rank"]]
    figure = _figure(params, shown, chosen, nll.tolist(),
                     None if nll_ablated is None else nll_ablated.tolist(), n)
    return {"values": values, "figure": figure, "summary": _summary(params, values),
            "table": _table(values)}


def _figure(params, shown, chosen, clean_pos, ablated_pos, n) -> dict:
    L, h = shown.shape
    label = "previous-token" if params["rank"] == "previous_token" else "induction"
    data = [{
        "type": "heatmap", "z": shown.tolist(), "x": list(range(h)), "y": list(range(L)),
        "zmin": 0, "zmax": 1, "colorscale": "Blues", "xaxis": "x", "yaxis": "y",
        "colorbar": {"title": {"text": "score"}, "len": 0.9, "x": 0.37, "thickness": 12},
        "hovertemplate": f"layer %{{y}}, head %{{x}}<br>{label} score %{{z:.2f}}<extra></extra>",
    }]
    if chosen:
        picked = "knocked out (drawn at random)" if params["rank"] == "random" else "knocked out"
        data.append({"type": "scatter", "mode": "markers", "x": [c[1] for c in chosen],
                     "y": [c[0] for c in chosen], "name": picked, "xaxis": "x",
                     "yaxis": "y", "marker": {"symbol": "x", "size": 9,
                                              "color": COLORS["unscaled"]},
                     "hovertemplate": "knocked out: layer %{y}, head %{x}<extra></extra>"})
    pos = list(range(1, len(clean_pos) + 1))  # the position whose token is predicted
    data.append({"type": "scatter", "mode": "lines", "x": pos, "y": clean_pos,
                 "name": "loss, every head", "xaxis": "x2", "yaxis": "y2",
                 "line": {"color": COLORS["scaled"]},
                 "hovertemplate": "every head · token %{x}: %{y:.2f} nats<extra></extra>"})
    if ablated_pos is not None:
        data.append({"type": "scatter", "mode": "lines", "x": pos, "y": ablated_pos,
                     "name": f"loss, {len(chosen)} knocked out", "xaxis": "x2", "yaxis": "y2",
                     "line": {"color": COLORS["unscaled"]},
                     "hovertemplate": f"{len(chosen)} knocked out · token %{{x}}: %{{y:.2f}} nats"
                                      "<extra></extra>"})
    layout = base_layout(
        height=460,
        title={"text": f"{label.capitalize()} score of each head · loss on each token"},
        xaxis={"domain": [0, 0.33], "title": {"text": "head"}, "dtick": 1},
        yaxis={"title": {"text": "layer"}, "autorange": "reversed", "dtick": 5},
        xaxis2={"domain": [0.54, 1], "anchor": "y2",
                "title": {"text": "predicted token (1 = the first random one)"}},
        yaxis2={"anchor": "x2", "title": {"text": "loss (nats)"}, "rangemode": "tozero"},
        # drawn in the loss panel's own coordinates, so they stay there when a phone stacks it
        shapes=[{"type": "line", "xref": "x2", "yref": "y2 domain", "x0": n + 0.5, "x1": n + 0.5,
                 "y0": 0, "y1": 1, "line": {"dash": "dot", "color": COLORS["guide"]}}],
        annotations=[{"xref": "x2", "yref": "y2 domain", "x": n + 0.5, "y": 1.0,
                      "yanchor": "bottom", "showarrow": False, "text": "second copy →",
                      "xanchor": "left"}],
    )
    # a phone stacks the two panels, the colour bar beside the heatmap
    narrow = {"height": 760, "title": {"text": f"{label.capitalize()} scores · loss"},
              "xaxis": {"domain": [0, 0.86]}, "yaxis": {"domain": [0.58, 1]},
              "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.4]}}
    narrow_traces = [{"colorbar": {"x": 0.9, "y": 0.79, "len": 0.42, "thickness": 12}}]
    return {"data": data, "layout": layout, "narrow": narrow, "narrow_traces": narrow_traces}


def _summary(params, v) -> str:
    t = v["top_induction"]
    words = (f"On {v['n_tokens']} random tokens repeated, SmolLM2-135M's loss is "
             f"{v['loss_first']:.2f} nats per token on the first copy and "
             f"{v['loss_second']:.2f} on the second. Its strongest induction head is layer "
             f"{t['layer']}, head {t['head']} (score {t['score']:.2f}).")
    if params["ablate"]:
        which = dict(zip(RANKS, RANK_WORDS, strict=True))[params["rank"]]
        words += (f" With the {params['ablate']} {which} knocked out ({params['ablation']}), "
                  f"the second copy's loss is {v['loss_second_ablated']:.2f} and the first's "
                  f"{v['loss_first_ablated']:.2f}.")
    return words


def _table(v) -> dict:
    rows = [["first copy", v["loss_first"], v["loss_first_ablated"]],
            ["second copy", v["loss_second"], v["loss_second_ablated"]]]
    return {"caption": "Mean loss per token (nats), with every head and with the chosen heads "
                       "knocked out", "columns": ["copy", "every head", "knocked out"],
            "rows": rows}
