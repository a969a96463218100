"""Widget: what training changes, read off the book's own model at a few steps of its training.

The run that made the shipped model kept its weights after a few steps (0 is the
initialisation; `backend/bookmodel/checkpoints.py`, shipped in half precision). For the step the
reader picks: that checkpoint's greedy continuation of a prompt, one head's attention map on the
prompt with its four role scores (`backend/reference/head_roles.py`), and the step's losses from
the run's own record. The shipped model judges each continuation: its loss per token on the
continued text says how far the text is from the language it learned; and its own greedy
continuation, beside the checkpoint's, says where the two part.
"""

from __future__ import annotations

import html
import math

import torch

from backend.bookmodel import checkpoints
from backend.bookmodel.load import attention_maps, shared_model
from backend.bookmodel.tokenizer import EOT, readable_pieces, token_bytes
from backend.compute.attention_models import _too_long, _user_tokenizer
from backend.compute.spec import Output, Param, ParamError, WidgetSpec
from backend.compute.style import COLORS, WEIGHT_SCALE, base_layout
from backend.reference.generate import generate
from backend.reference.head_roles import ROLES, role_scores

MAX_CHARS = 500  # as the attention map's sentence
MAX_TOKENS = 64  # the prompt after tokenization, <|endoftext|> included: as the attention map
MAX_NEW = 32  # greedy tokens per request: with the prompt, well inside the model's 128 positions
LAYERS, HEADS = 4, 4  # the book's model (weights/config.json; tests/compute checks)
PROMPT = "In 1850, the town had a population of"
STEPS = checkpoints.steps()
LAST = STEPS[-1]
ROLE_LABELS = {"previous_token": "previous-token", "first_token": "first-token", "local": "local",
               "induction": "induction"}


def _step_label(step: int) -> str:
    if step == 0:
        return "0 (initialisation)"
    return f"{step:,} (the shipped model)" if step == LAST else f"{step:,}"


SPEC = WidgetSpec(
    name="training_checkpoints",
    try_next=(
        "Move `step` from 0 to the end and read the continuation at each stop: noise, then "
        "common words, then phrases. Then keep the step and change `layer` and `head` to find "
        "a head whose map changes most."
    ),
    title="The book's model during training: one prompt at each checkpoint",
    description="The greedy continuation of a prompt and one head's attention map, with the "
                "weights as they stood after a chosen step of the book model's training.",
    params=(
        Param("step", "weights after step", "choice", default=str(LAST),
              options=tuple(str(s) for s in STEPS),
              option_labels=tuple(_step_label(s) for s in STEPS),
              help="The training steps whose weights were kept: 0 is the random "
                   f"initialisation, {LAST:,} the model the rest of the book uses."),
        Param("text", "prompt", "text", default=PROMPT, max_length=MAX_CHARS,
              help=f"Any text; at most {MAX_TOKENS} tokens with <|endoftext|> in front."),
        Param("new_tokens", "new tokens", "int", default=16, min=1, max=MAX_NEW, step=1,
              help="How many tokens the checkpoint adds, each its most likely next token."),
        Param("layer", "layer", "int", default=3, min=0, max=LAYERS - 1, step=1,
              help="The head whose map is drawn: its layer, counted from 0."),
        Param("head", "head", "int", default=1, min=0, max=HEADS - 1, step=1,
              help="Its query head within the layer, counted from 0."),
    ),
    outputs=(
        Output("step", "weights after step", ",d"),
        Output("tokens_seen", "training tokens seen", ",d"),
        Output("val_loss", "validation loss", ".3f", "nats/token"),
        Output("continuation", "continuation", ""),
        Output("judged_loss", "the shipped model's loss on the continuation", ".2f", "nats/token"),
        Output("previous_token", "the head's weight on the previous token", ".0%"),
        Output("first_token", "its weight on <|endoftext|>", ".0%"),
    ),
    bake=tuple({"step": str(s)} for s in STEPS),
    cost_hint="heavy",
)


@torch.no_grad()
def greedy(model, ids: list[int], new_tokens: int) -> list[int]:
    """The model's greedy continuation of `ids`: its new token ids."""
    out = generate(model, torch.tensor([ids]), new_tokens, greedy=True).tokens  # (1, T + new)
    return out[0, len(ids):].tolist()


@torch.no_grad()
def judged_loss(model, prompt: list[int], new: list[int]) -> float:
    """`model`'s mean loss (nats per token) on the new tokens after the prompt. With the
    shipped model: how unlikely the continuation is in the language the finished model learned."""
    ids = torch.tensor([prompt + new])  # (1, T + n)
    logp = model(ids).logits[0, len(prompt) - 1:-1].log_softmax(-1)  # (n, V): before each new one
    return float(-logp.gather(-1, torch.tensor(new)[:, None]).mean())


def encode(text: str) -> tuple[list[int], list[str]]:
    """<|endoftext|> and the prompt's token ids, with the labels a reader sees."""
    tok = shared_model()[1]
    enc = _user_tokenizer().encode(text)  # a typed "<|endoftext|>" stays text
    if not enc.ids:
        raise ParamError("the prompt gives the book's model no tokens at all", "text")
    ids = [tok.token_to_id(EOT)] + enc.ids
    if len(ids) > MAX_TOKENS:
        raise _too_long(text, len(ids), "book")
    return ids, [EOT] + readable_pieces([token_bytes(tok, i) for i in enc.ids])


def compute(params: dict) -> dict:
    step, layer, head = int(params["step"]), params["layer"], params["head"]
    ids, labels = encode(params["text"])
    model, _ = checkpoints.shared_checkpoint(step)
    shipped, tok = shared_model()  # the float32 weights the rest of the book uses
    new = greedy(model, ids, params["new_tokens"])
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]  # (T, V): the guess after each token
    # where the token just read stands among each position's guesses (0: the top guess)
    own_rank = (logits > logits.gather(-1, torch.tensor(ids)[:, None])).sum(-1)  # (T,)
    weights = attention_maps(model, ids)[layer, head]  # (T, T)
    scores = role_scores(weights[None, None], ids)  # each (1, 1) or None
    entry = checkpoints.entry(step)
    shipped_new = greedy(shipped, ids, params["new_tokens"])
    same = next((i for i, (a, b) in enumerate(zip(new, shipped_new, strict=True)) if a != b),
                len(new))
    T = len(ids)
    rows = torch.arange(1, T)
    even = 1 / (rows + 1).float()  # (T-1,): an even split's weight on each visible token
    # how spread out each row is: its entropy over that of an even split of what it can see
    # (1: uniform over the past, 0: all on one token); rows 1 onward (row 0 sees one token)
    ent = -(weights[1:].clamp_min(1e-12).log() * weights[1:]).sum(-1)  # (T-1,)
    spread = float((ent / (rows + 1).float().log()).mean()) if T > 1 else 0.0
    curve = [{k: e[k] for k in ("step", "tokens", "train_loss", "val_loss")}
             for e in checkpoints.manifest()["checkpoints"]]
    values = {
        "step": step,
        "steps": list(STEPS),
        "n_steps": len(STEPS),
        "last_step": LAST,
        "checkpoint_mb": round(sum(e["bytes"] for e in checkpoints.manifest()["checkpoints"]) / 1e6, 1),
        "checkpoint_dtype": checkpoints.manifest()["dtype"],
        "loss_windows": checkpoints.manifest()["loss_windows"],
        **_rerun(),
        "max_chars": MAX_CHARS,
        "max_tokens": MAX_TOKENS,
        "max_new": MAX_NEW,
        "max_positions": MAX_TOKENS + MAX_NEW,
        "seq_len": checkpoints.manifest()["seq_len"],
        "tokens_seen": entry["tokens"],
        "train_loss": round(entry["train_loss"], 4),
        "val_loss": round(entry["val_loss"], 4),
        "curve": [{**c, "train_loss": round(c["train_loss"], 4),
                   "val_loss": round(c["val_loss"], 4)} for c in curve],
        "layer": layer,
        "head": head,
        "n_tokens": T,
        "tokens": labels,
        "continuation": tok.decode(new),
        # for one line of a table: a new line shown as ↵, a table's column bar as a look-alike
        "continuation_shown": tok.decode(new).strip().replace("\n", " ↵ ").replace("|", "∣"),
        "continuation_tokens": len(new),
        "distinct_tokens": len(set(new)),
        "copies": int((own_rank == 0).sum()),  # positions whose top guess is the token just read
        "own_rank_worst": int(own_rank.max()),
        "top_share": round(float((own_rank.max() + 1) / logits.shape[-1]), 4),
        "judged_loss": round(judged_loss(shipped, ids, new), 4),
        "same_as_shipped": same,  # leading new tokens equal to the shipped model's
        "shipped_continuation": tok.decode(shipped_new),
        **{role: (round(float(s), 4) if s is not None else None)
           for role, s in ((r, scores[r]) for r in ROLES)},
        "spread": round(spread, 4),
        # the previous-token and first-token scores of a head that splits every row evenly
        "even_previous": round(float(even[1:].mean()), 4) if T >= 3 else None,
        "even_first": round(float(even.mean()), 4) if T >= 2 else None,
        # a model that knows nothing (every token 1/V) loses ln V nats on any token
        "uniform_loss": round(math.log(model.config.vocab_size), 4),
        "vocab_size": model.config.vocab_size,
        "weights": [[round(float(w), 4) for w in r] for r in weights],
    }
    return {"values": values, "figure": _figure(values), "summary": _summary(values),
            "table": _table(values)}


def _rerun() -> dict:
    """How the checkpoints' run compares with the shipped one: the last step it reached (later
    steps, the last one at least, are the shipped model itself: the manifest marks them) and the
    largest gap between its validation losses and the shipped run's curve where both have one."""
    from backend.bookmodel.load import metrics

    curve = {p["step"]: p["val_loss"] for p in metrics()["curve"]}
    rerun = [e for e in checkpoints.manifest()["checkpoints"] if not e.get("note", "").startswith(
        "the shipped model")]
    shared = [abs(e["val_loss"] - curve[e["step"]]) for e in rerun if e["step"] in curve]
    return {"rerun_last": rerun[-1]["step"], "rerun_shared": len(shared),
            "rerun_gap": float(f"{max(shared):.2g}") if shared else None}


def _summary(v: dict) -> str:
    prev = "" if v["previous_token"] is None else f"{v['previous_token']:.0%} on the previous token, "
    return (f"After {v['step']:,} training steps (validation loss {v['val_loss']:.2f} nats per "
            f"token), the book's model continues the prompt with “{v['continuation'].strip()}”. "
            f"Layer {v['layer']}, head {v['head']} puts {prev}{v['first_token']:.0%} on "
            f"<|endoftext|>, on average over the prompt's tokens.")


def _table(v: dict) -> dict:
    return {"caption": f"Layer {v['layer']}, head {v['head']} after step {v['step']:,}: where "
                       "each prompt token looks (the weight on each earlier token)",
            "columns": ["token", *[f"{t} (#{i})" for i, t in enumerate(v["tokens"])]],
            "rows": [[f"{t} (#{i})", *r[: i + 1], *[""] * (len(r) - i - 1)]
                     for i, (t, r) in enumerate(zip(v["tokens"], v["weights"], strict=True))]}


def _esc(text: str) -> str:
    """Plotly reads a few HTML tags in labels: a token such as '<b>' must show as text."""
    return html.escape(text, quote=False)


def _figure(v: dict) -> dict:
    T = v["n_tokens"]
    cats = [f"{_esc(t)} (#{i})" for i, t in enumerate(v["tokens"])]  # unique, even for repeats
    k = math.ceil(T / 24)  # at most about 24 labels per axis
    ticks = {"tickmode": "array", "tickvals": cats[::k], "ticktext": [_esc(t) for t in v["tokens"]][::k]}
    steps = [c["step"] for c in v["curve"]]
    at = steps.index(v["step"])
    # the loss panel's x axis: one slot per kept step (they are spaced like 0, 25, ..., 1600)
    xs = list(range(len(steps)))
    loss = [
        {"type": "scatter", "mode": "lines+markers", "x": xs, "y": [c["val_loss"] for c in v["curve"]],
         "name": "validation loss", "line": {"color": COLORS["scaled"]},
         "hovertemplate": "step %{customdata:,}<br>validation %{y:.3f}<extra></extra>",
         "customdata": steps, "xaxis": "x2", "yaxis": "y2"},
        {"type": "scatter", "mode": "lines+markers", "x": xs,
         "y": [c["train_loss"] for c in v["curve"]], "name": "training loss",
         "line": {"color": COLORS["guide"], "dash": "dot"}, "customdata": steps,
         "hovertemplate": "step %{customdata:,}<br>training %{y:.3f}<extra></extra>",
         "xaxis": "x2", "yaxis": "y2"},
        {"type": "scatter", "mode": "markers", "x": [at], "y": [v["val_loss"]],
         "name": "this step", "marker": {"color": COLORS["accent"], "size": 13, "symbol": "circle-open",
                                         "line": {"width": 3}},
         "hoverinfo": "skip", "xaxis": "x2", "yaxis": "y2"},
    ]
    heat = {"type": "heatmap", "z": [[w if j <= i else None for j, w in enumerate(r)]
                                     for i, r in enumerate(v["weights"])],
            "x": cats, "y": cats, "coloraxis": "coloraxis",
            "hovertemplate": "from %{y}<br>to %{x}<br>weight %{z:.3f}<extra></extra>"}
    axis = {"type": "category", "automargin": True, "showgrid": False,
            "tickfont": {"size": 10 if T <= 24 else 9}, **ticks}
    layout = base_layout(
        480,
        margin={"l": 60, "r": 10, "t": 60, "b": 60},
        xaxis={**axis, "domain": [0.42, 0.92], "tickangle": -60,
               "title": {"text": "attended to (key)", "standoff": 8}},
        yaxis={**axis, "autorange": "reversed", "title": {"text": "looking from (query)",
                                                          "standoff": 8}},
        xaxis2={"domain": [0, 0.28], "anchor": "y2", "tickmode": "array", "tickvals": xs,
                "ticktext": [f"{s:,}" for s in steps], "tickangle": -60,
                "title": {"text": "training step"}},
        yaxis2={"anchor": "x2", "title": {"text": "loss (nats/token)"}},
        coloraxis={"cmin": 0, "cmax": 1, "colorscale": WEIGHT_SCALE,
                   "colorbar": {"title": {"text": "weight"}, "thickness": 10, "x": 1.0}},
        legend={"orientation": "h", "x": 0, "y": -0.35},
        title={"text": f"Step {v['step']:,}: layer {v['layer']}, head {v['head']}",
               "x": 0, "xref": "paper", "xanchor": "left", "font": {"size": 15}},
    )
    narrow = {
        "height": 760,
        "xaxis": {"domain": [0, 0.9]}, "yaxis": {"domain": [0.42, 1]},
        "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.22]},
        "coloraxis": {"colorbar": {"orientation": "h", "x": 0.5, "xanchor": "center", "y": 1.0,
                                   "yanchor": "bottom", "thickness": 8, "len": 1}},
        "margin": {"t": 90},
    }
    return {"data": [heat, *loss], "layout": layout, "narrow": narrow}
