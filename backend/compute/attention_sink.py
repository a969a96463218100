"""Widget: is the first token a sink? Measured over hundreds of held-out sentences.

For the book's decoder (`<|endoftext|>` in front) and for MiniLM (`[CLS]`, `[SEP]`): how much of
each row the special tokens take against an even split of the positions the row can see, for the
averaged map and for every head, plus each head's previous-/next-token habit over the same rows.
The study runs the models over every sentence in `backend/bookmodel/heldout_sentences.txt`
(seconds), so it is its own widget: the attention-map requests stay fast, and this one is baked
for both models and computed live only if a reader asks again.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from backend.compute.attention_models import encode, encode_book
from backend.compute.spec import Output, Param, ParamError, WidgetSpec
from backend.compute.style import COLORS, base_layout

SPEC = WidgetSpec(
    name="attention_sink",
    try_next=(
        "Switch `model` between book and minilm and compare how much attention the first token "
        "draws against its fair share in each."
    ),
    title="Does the first token draw more than its share? Over the held-out sentences",
    description="The special tokens' weight against an even split, per head, over every held-out "
                "sentence, for the book's decoder and for MiniLM.",
    params=(
        Param("model", "model", "choice", default="book", options=("book", "minilm"),
              help="book: the book's decoder, <|endoftext|> first. minilm: the pretrained encoder, "
                   "[CLS] first and [SEP] last."),
    ),
    outputs=(
        Output("sentences", "held-out sentences", ",d"),
        Output("rows", "rows measured", ",d"),
        Output("share", "mean weight on the special tokens", ".1%"),
        Output("even", "an even split would give them", ".1%"),
        Output("ratio", "share ÷ even split, averaged map", ".2f"),
        Output("top_rate", "rows where a special token is the largest weight", ".0%"),
        Output("heads_over_2x", "heads giving them over twice the even share", "d"),
    ),
    bake=({"model": "book"}, {"model": "minilm"}),
    cost_hint="heavy",
    warm=False,  # minutes of CPU across workers at start for numbers the page already carries
)


@lru_cache(maxsize=4)
def sink_study(model: str, bos: bool = True) -> dict:
    """How much weight the special tokens draw, compared with an even split, over many rows.

    For every word row of every held-out sentence: the weight on the special tokens the row
    can see, against the even share (their number over the number of positions the row can
    see), for the map averaged over all layers and heads and for each head on its own.
    """
    from backend.bookmodel.load import heldout_sentences

    shares, evens, tops = [], [], []  # each: (R,) averaged map, or (L, h, R) per head
    habits, habit_rows = [], 0  # per sentence: ((L, h), (L, h)) counts of rows
    used = 0
    for text in heldout_sentences():
        try:
            e = encode_book(text, bos=bos) if model == "book" else encode(model, text)
        except ParamError:  # longer than the widget's token limit: left out
            continue
        used += 1
        T = len(e.tokens)
        # Head habits: how often a word row's favourite word token is the one just before
        # (or just after) it, the widget's previous/next-token rate, over every sentence.
        is_special = torch.tensor(e.special)
        wrows = torch.tensor([i for i in range(T) if not e.special[i]])
        favourite = e.maps[:, :, wrows].masked_fill(is_special, -1.0).argmax(-1)  # (L, h, R)
        habits.append(((favourite == wrows - 1).sum(-1), (favourite == wrows + 1).sum(-1)))
        habit_rows += len(wrows)
        visible = torch.tril(torch.ones(T, T, dtype=torch.bool)) if e.causal else torch.ones(T, T, dtype=torch.bool)
        target = torch.tensor(e.special) if bos else torch.arange(T) == 0  # no BOS: the first word
        rows = [i for i in range(T) if not e.special[i] and (target & visible[i]).any() and i > 0]
        if not rows:
            continue
        maps = e.maps[:, :, rows]  # (L, h, R, T)
        vis = visible[rows]  # (R, T)
        shares.append((maps * target).sum(-1))  # (L, h, R)
        evens.append((target & vis).sum(-1) / vis.sum(-1))  # (R,)
        best = maps.masked_fill(~vis, -1.0).argmax(-1)  # (L, h, R)
        tops.append((best, maps.mean(dim=(0, 1)).masked_fill(~vis, -1.0).argmax(-1)))
        tops[-1] = (target[tops[-1][0]], target[tops[-1][1]])
    share = torch.cat(shares, dim=-1)  # (L, h, R)
    even = torch.cat(evens)  # (R,)
    top_head = torch.cat([t[0] for t in tops], dim=-1).float()  # (L, h, R)
    top_mean = torch.cat([t[1] for t in tops]).float()  # (R,)
    mean_share = share.mean(dim=(0, 1))  # (R,): the averaged map's rows
    head_ratio = (share / even).mean(-1)  # (L, h): each head's special-token weight ÷ even share
    layer, head = divmod(int(head_ratio.argmax()), head_ratio.shape[1])
    previous = (sum(p for p, _ in habits).float() / habit_rows).tolist()  # [layer][head]
    following = (sum(n for _, n in habits).float() / habit_rows).tolist()
    return {
        "sentences": used,
        "rows": int(even.numel()),
        "share": round(float(mean_share.mean()), 4),
        "even": round(float(even.mean()), 4),
        "ratio": round(float((mean_share / even).mean()), 3),
        "above_even": round(float((mean_share > even).float().mean()), 4),
        "top_rate": round(float(top_mean.mean()), 4),
        "heads": int(head_ratio.numel()),
        "heads_over_2x": int((head_ratio > 2).sum()),
        "strongest": {"layer": layer, "head": head,
                      "ratio": round(float(head_ratio[layer, head]), 3),
                      "share": round(float(share[layer, head].mean()), 4),
                      "top_rate": round(float(top_head[layer, head].mean()), 4)},
        # per layer and head, over every word row of the held-out sentences
        "head_ratio": [[round(float(r), 3) for r in heads] for heads in head_ratio],
        "habit_rows": habit_rows,
        "previous_token_rate": [[round(r, 4) for r in heads] for heads in previous],
        "next_token_rate": [[round(r, 4) for r in heads] for heads in following],
    }


def _study_values(model: str) -> dict | None:
    if model == "book":
        return {**sink_study("book"), "without_bos": sink_study("book", bos=False)}
    if model == "minilm":
        return sink_study("minilm")
    return None  # an instructor's checkpoint may be large: no study over hundreds of sentences


def _study_values(model: str) -> dict:
    if model == "book":
        return {**sink_study("book"), "without_bos": sink_study("book", bos=False)}
    return sink_study("minilm")


def compute(params: dict) -> dict:
    model = params["model"]
    v = _study_values(model)
    who = "<|endoftext|>" if model == "book" else "[CLS] and [SEP]"
    name = "the book's model" if model == "book" else "MiniLM"
    L, H = len(v["head_ratio"]), len(v["head_ratio"][0])
    summary = (f"Over {v['rows']:,} rows of {v['sentences']} held-out sentences, {name} puts "
               f"{v['share']:.1%} of a row on {who}, where an even split would give "
               f"{v['even']:.1%} ({v['ratio']:.2f} times); {v['heads_over_2x']} of {v['heads']} "
               f"heads give more than twice the even share.")
    table = {"caption": f"{name}: weight on {who} ÷ an even split, and how often the head's "
                        f"favourite word is the previous one, per head",
             "columns": ["layer", "head", "÷ even split", "previous-token rate"],
             "rows": [[layer, head, v["head_ratio"][layer][head],
                       v["previous_token_rate"][layer][head]]
                      for layer in range(L) for head in range(H)]}
    return {"values": v, "figure": _figure(v, name, who), "summary": summary, "table": table}


def _figure(v: dict, name: str, who: str) -> dict:
    ratio, prev = v["head_ratio"], v["previous_token_rate"]
    L, H = len(ratio), len(ratio[0])
    heads = list(range(H))
    layers = list(range(L))
    top = max(2.0, max(max(r) for r in ratio))
    data = [
        {"type": "heatmap", "z": ratio, "x": heads, "y": layers, "coloraxis": "coloraxis",
         "text": [[f"{x:.1f}" for x in r] for r in ratio], "texttemplate": "%{text}",
         "hovertemplate": "layer %{y}, head %{x}<br>%{z:.2f} × an even split<extra></extra>"},
        {"type": "heatmap", "z": prev, "x": heads, "y": layers, "coloraxis": "coloraxis2",
         "text": [[f"{x:.0%}" for x in r] for r in prev], "texttemplate": "%{text}",
         "xaxis": "x2", "yaxis": "y2",
         "hovertemplate": "layer %{y}, head %{x}<br>previous token %{z:.0%}<extra></extra>"},
    ]
    layout = base_layout(
        360,
        # Colour scales on the layout (not the traces), so the phone patch can move their bars.
        # Zero is transparent: the page's own background, light or dark.
        coloraxis={"cmin": 0, "cmax": top,
                   "colorscale": [[0, "rgba(31,119,180,0)"], [1 / top, "rgba(31,119,180,0.35)"],
                                  [1, COLORS["scaled"]]],
                   "colorbar": {"title": {"text": "× even"}, "len": 0.8, "thickness": 10,
                                "x": 0.42}},
        coloraxis2={"cmin": 0, "cmax": 1,
                    "colorscale": [[0, "rgba(255,127,14,0)"], [1, COLORS["accent"]]],
                    "colorbar": {"title": {"text": "rate"}, "len": 0.8, "thickness": 10,
                                 "x": 1.0}},
        xaxis={"domain": [0, 0.4], "title": {"text": "head"}, "dtick": 1},
        yaxis={"title": {"text": "layer"}, "dtick": 1, "autorange": "reversed"},
        xaxis2={"domain": [0.56, 0.96], "title": {"text": "head"}, "dtick": 1, "anchor": "y2"},
        yaxis2={"anchor": "x2", "dtick": 1, "autorange": "reversed"},
        annotations=[
            {"text": f"weight on {who} ÷ even split", "showarrow": False, "x": 0.2, "y": 1.1,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
            {"text": "favourite word = the previous one", "showarrow": False, "x": 0.76,
             "y": 1.1, "xref": "paper", "yref": "paper", "xanchor": "center"},
        ],
    )
    narrow = {
        "height": 640,
        "coloraxis": {"colorbar": {"x": 0.9, "y": 0.79, "len": 0.4, "yanchor": "middle"}},
        # The gap between the panels holds the first one's "head" title, then the second
        # panel's own title above its cells.
        "coloraxis2": {"colorbar": {"x": 0.9, "y": 0.18, "len": 0.36, "yanchor": "middle"}},
        "xaxis": {"domain": [0, 0.85]}, "yaxis": {"domain": [0.6, 1]},
        "xaxis2": {"domain": [0, 0.85]}, "yaxis2": {"domain": [0, 0.36]},
        "annotations": [{**layout["annotations"][0], "x": 0.42, "y": 1.07},
                        {**layout["annotations"][1], "x": 0.42, "y": 0.43}],
    }
    return {"data": data, "layout": layout, "narrow": narrow}
