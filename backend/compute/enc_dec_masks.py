"""Widget: the three masks of the 2017 encoder-decoder, for a batch of two sentence pairs.

Pair 0 fills the batch (`src_len` source tokens, `tgt_len` target tokens); pair 1 is shorter
and padded to the same lengths (`src_pad` and `tgt_pad` pad tokens at the end). The masks come
from `backend.reference.encoder_decoder.seq2seq_masks`; a one-layer model of the same file runs
on the batch so the shapes at every step and the attention weights are real. Work: a 12 x 12
matrix at most and a forward pass of a d_model = 8 model.
"""

from __future__ import annotations

import copy
from functools import lru_cache

import torch

from backend.compute.spec import Depends, Output, Param, ParamError, WidgetSpec
from backend.compute.style import COLORS, base_layout
from backend.reference.config import ModelConfig
from backend.reference.encoder_decoder import (
    EncoderDecoder,
    base_model_forward_check,
    seq2seq_masks,
    trace_shapes,
)
from backend.reference.multi_head import split_heads
from backend.reference.rng import isolated_rng
from backend.reference.sinusoidal import sinusoidal_encoding

MAX_LEN = 12
HANDOUT_TABLE_LEN = 2048  # 004 section 9.8: tgt_len=2048 rows in each of its two position tables
BATCH = 2
# A tiny model of the reference file: only its shapes and its masked weights are shown.
TINY = ModelConfig(vocab_size=16, d_model=8, n_layers=1, n_heads=2, d_ff=16, max_seq_len=MAX_LEN)


SPEC = WidgetSpec(
    name="enc_dec_masks",
    try_next=(
        "Raise `src_pad`: the padded source positions drop out of the encoder's mask and of the "
        "decoder's cross-attention, while the decoder's causal mask stays as it was."
    ),
    title="The encoder-decoder's three masks",
    description="Encoder self-attention, decoder self-attention and cross-attention masks for a "
                "batch of two sentence pairs, the second one padded.",
    params=(
        Param("src_len", "source length", "int", default=6, min=1, max=MAX_LEN, step=1,
              unit="tokens", help="Source tokens per pair after padding (S): the longest source."),
        Param("tgt_len", "target length", "int", default=5, min=1, max=MAX_LEN, step=1,
              unit="tokens", help="Target tokens per pair after padding (T): the longest target."),
        Param("src_pad", "source padding", "int", default=2, min=0, max=MAX_LEN - 1, step=1,
              unit="tokens", help="Pad tokens at the end of the second pair's source.",
              depends=(Depends("src_len", {n: {"max": n - 1, "note": "at least one real source "
                                               "token stays"} for n in range(1, MAX_LEN + 1)}),)),
        Param("tgt_pad", "target padding", "int", default=1, min=0, max=MAX_LEN - 1, step=1,
              unit="tokens", help="Pad tokens at the end of the second pair's target.",
              depends=(Depends("tgt_len", {n: {"max": n - 1, "note": "at least one real target "
                                               "token stays"} for n in range(1, MAX_LEN + 1)}),)),
    ),
    outputs=(
        Output("encoder_shape", "encoder self-attention mask", ""),
        Output("decoder_shape", "decoder self-attention mask", ""),
        Output("cross_shape", "cross-attention mask", ""),
        Output("encoder_allowed", "encoder: allowed pairs (padded pair)", "d"),
        Output("decoder_allowed", "decoder: allowed pairs (padded pair)", "d"),
        Output("cross_allowed", "cross: allowed pairs (padded pair)", "d"),
    ),
    bake=(
        tuple({"src_len": s, "src_pad": min(2, s - 1)} for s in range(1, MAX_LEN + 1))
        + tuple({"tgt_len": t, "tgt_pad": min(1, t - 1)} for t in range(1, MAX_LEN + 1))
        + tuple({"src_pad": p} for p in range(0, 6))
        + tuple({"tgt_pad": p} for p in range(0, 5))
        + ({"src_len": 12, "tgt_len": 12, "src_pad": 4, "tgt_pad": 3},)
    ),
)


@lru_cache(maxsize=1)
def _model() -> EncoderDecoder:
    with isolated_rng(0):
        return EncoderDecoder(TINY).eval()


@lru_cache(maxsize=1)
def forward_check() -> dict:
    """004 section 9.8 at full size, on the meta device (no memory, only shapes)."""
    return base_model_forward_check()


@lru_cache(maxsize=1)
def input_scale(d_model: int = 512, n_positions: int = 2048, vocab: int = 26) -> dict:
    """The 2017 input, sqrt(d_model) * E[x] + PE(t), at the paper's width: how large each part
    is at initialisation. PyTorch's nn.Embedding starts N(0, 1); a sinusoid row is exactly
    1/sqrt(2) in RMS (each sin/cos pair has sin^2 + cos^2 = 1)."""
    g = torch.Generator().manual_seed(0)  # not the global seed: other requests share it
    emb = torch.randn(vocab, d_model, generator=g)  # (V, d): nn.Embedding's own N(0, 1) start
    pe = sinusoidal_encoding(n_positions, d_model)  # (positions, d)
    emb_rms = float(emb.pow(2).mean().sqrt())
    pe_rms = pe.pow(2).mean(-1).sqrt()  # per position
    # a table that is also the output layer starts small, as an nn.Linear(d, V) does: entries
    # uniform in +-1/sqrt(d), an RMS of 1/sqrt(3 d)
    small = (torch.rand(vocab, d_model, generator=g) * 2 - 1) / d_model ** 0.5
    small_rms = float(small.pow(2).mean().sqrt())
    pe_mean = float(pe_rms.mean())
    return {"d_model": d_model, "sqrt_d_model": d_model ** 0.5, "embed_rms": emb_rms,
            "pe_rms": pe_mean, "pe_rms_spread": float(pe_rms.max() - pe_rms.min()),
            "ratio_unscaled": emb_rms / pe_mean,
            "ratio_scaled": d_model ** 0.5 * emb_rms / pe_mean,
            "small_rms": small_rms, "small_ratio_unscaled": small_rms / pe_mean,
            "small_ratio_scaled": d_model ** 0.5 * small_rms / pe_mean}


@torch.no_grad()
def cross_example(model: EncoderDecoder, src, src_lengths, tgt, tgt_lengths, pair: int = 1,
                  head: int = 0, query: int = 0) -> dict:
    """One cross-attention row worked by hand: the decoder's query for target position `query`
    times every encoder key, in the first decoder layer, with the book's own projections."""
    seen = {}
    # A private copy (d_model = 8: microseconds) carries the hook. On the shared model, a hook
    # would also fire for other threads' requests (gunicorn's gthread workers), and registering
    # one while another thread runs a forward can break that forward: a 500 under load.
    model = copy.deepcopy(model)
    layer = model.decoder_layers[0]
    layer.cross_attn.register_forward_pre_hook(
        lambda mod, args: seen.update(x_q=args[0], x_kv=args[1], mask=args[2]))
    out = model(src, src_lengths, tgt, tgt_lengths)
    attn = layer.cross_attn
    q = split_heads(attn.q_proj(seen["x_q"]), attn.n_heads)[pair, head, query]  # (d_head,)
    k = split_heads(attn.k_proj(seen["x_kv"]), attn.n_heads)[pair, head]  # (S, d_head)
    d_head = q.numel()
    scores = k @ q / d_head ** 0.5  # (S,): one query against every key
    real = seen["mask"][pair, 0, query]  # (S,) True = a real source token
    weights = torch.softmax(scores.masked_fill(~real, float("-inf")), -1)
    book = out.cross_attentions[0][pair, head, query]  # what the model itself computed
    vec = lambda t: "(" + ", ".join(f"{round(float(x), 2) + 0.0:+.2f}".replace("-", "−") for x in t) + ")"  # noqa: E731
    return {"d_head": d_head, "sqrt_d_head": d_head ** 0.5, "query": vec(q),
            "keys": [vec(row) for row in k], "scores": [float(x) for x in scores],
            "real": [bool(x) for x in real], "weights": [float(x) for x in weights],
            "model_weights": [float(x) for x in book],
            "max_diff": float((weights - book).abs().max()),
            "weight_sum": float(weights.sum()), "argmax": int(weights.argmax()),
            "T": int(tgt.size(1)), "S": int(src.size(1))}


def _shape(t: tuple) -> str:
    return "(" + ", ".join(str(n) for n in t) + ")"


def _grid(mask: torch.Tensor) -> list[list[int]]:
    return [[int(x) for x in row] for row in mask]


def compute(params: dict) -> dict:
    S, T, sp, tp = params["src_len"], params["tgt_len"], params["src_pad"], params["tgt_pad"]
    if sp >= S:  # the spec's rule already says this; kept so compute never builds an empty row
        raise ParamError(f"'source padding' must be from 0 to {S - 1} when 'source length' is {S}",
                         "src_pad")
    if tp >= T:
        raise ParamError(f"'target padding' must be from 0 to {T - 1} when 'target length' is {T}",
                         "tgt_pad")
    src_lengths = torch.tensor([S, S - sp])  # (B,)
    tgt_lengths = torch.tensor([T, T - tp])  # (B,)
    m = seq2seq_masks(src_lengths, S, T, tgt_lengths)
    # The masks as stored (broadcastable) and as the handout writes them: (batch, q_len, k_len).
    enc = m.encoder.expand(BATCH, 1, S, S)[:, 0]  # (B, S, S)
    dec = m.decoder.expand(BATCH, 1, T, T)[:, 0]  # (B, T, T)
    cross = m.cross[:, 0]  # (B, T, S)
    causal_only = seq2seq_masks(src_lengths, S, T).decoder.expand(BATCH, T, T)  # no target lengths

    src = torch.randint(0, TINY.vocab_size, (BATCH, S), generator=torch.Generator().manual_seed(1))
    tgt = torch.randint(0, TINY.vocab_size, (BATCH, T), generator=torch.Generator().manual_seed(2))
    model = _model()
    with torch.no_grad():
        out = model(src, src_lengths, tgt, tgt_lengths)
    flow = trace_shapes(model, src, src_lengths, tgt, tgt_lengths)
    weights = {"encoder": out.encoder_attentions[0], "decoder": out.decoder_attentions[0],
               "cross": out.cross_attentions[0]}  # (B, h, q, k) each
    allowed = {"encoder": enc, "decoder": dec, "cross": cross}
    leaked = max(float(weights[k].masked_select(~allowed[k][:, None].expand_as(weights[k])).abs().max())
                 if (~allowed[k]).any() else 0.0 for k in weights)
    empty_rows = sum(int((~a.any(-1)).sum()) for a in allowed.values())
    check = forward_check()
    worked = cross_example(model, src, src_lengths, tgt, tgt_lengths)

    values = {
        "tiny_d_model": TINY.d_model, "tiny_heads": TINY.n_heads, "tiny_vocab": TINY.vocab_size,
        "src_len": S, "tgt_len": T, "src_real": S - sp, "tgt_real": T - tp,
        "encoder_mask": _grid(enc[1]), "decoder_mask": _grid(dec[1]), "cross_mask": _grid(cross[1]),
        "encoder_shape": _shape(enc.shape), "decoder_shape": _shape(dec.shape),
        "cross_shape": _shape(cross.shape),
        "encoder_stored_shape": _shape(m.encoder.shape), "decoder_stored_shape": _shape(m.decoder.shape),
        "cross_stored_shape": _shape(m.cross.shape),
        "encoder_allowed": int(enc[1].sum()), "decoder_allowed": int(dec[1].sum()),
        "cross_allowed": int(cross[1].sum()),
        "encoder_cells": S * S, "decoder_cells": T * T, "cross_cells": T * S,
        "decoder_allowed_full": int(dec[0].sum()),
        # cells of the padded pair's decoder mask that only the padding rule blocks: the pad
        # rows, from the first pad column to the diagonal
        "decoder_pad_only": int((causal_only[1] & ~dec[1]).sum()),
        "decoder_stored_shape_no_lengths": _shape(seq2seq_masks(src_lengths, S, T).decoder.shape),
        "cross_is_square": S == T, "empty_rows": empty_rows,
        "max_weight_on_masked": leaked,
        "nan_in_logits": bool(out.logits.isnan().any()),
        "flow": {k: _shape(v) for k, v in flow.items()},
        "check": {k: _shape(v) for k, v in check.items() if k != "parameters"},
        "check_parameters": check["parameters"][0],
        # the handout builds its two sinusoid tables with nn.Embedding.from_pretrained(freeze=True):
        # frozen, but still Parameters, so its sum(p.numel()) counts them too
        "check_position_tables": 2 * HANDOUT_TABLE_LEN * check["memory (encoder output)"][2],
        "check_parameters_handout": check["parameters"][0]
        + 2 * HANDOUT_TABLE_LEN * check["memory (encoder output)"][2],
        "check_batch": check["source"][0], "check_src_len": check["source"][1],
        "check_fbank_dim": check["source"][2], "check_tgt_len": check["target"][1],
        "check_vocab": check["logits"][2],
        "check_d_model": check["memory (encoder output)"][2],
        "check_heads": check["cross-attention weights"][1],
        "cross_example": worked,
        "input_scale": input_scale(),
    }
    return {"values": values, "figure": figure(values), "summary": summary(values),
            "table": table(values)}


# --- what the reader sees ------------------------------------------------------------------

ALLOWED, CAUSAL, PAD = 0, 1, 2
NARROW_HEIGHT = 1400  # px, phones
NARROW_GAP = 0.1  # of the plot height between stacked panels: ~125 px
_band = (1 - 2 * NARROW_GAP) / 3
NARROW_BANDS = tuple((round(max(0.0, 1 - (i + 1) * _band - i * NARROW_GAP), 4),
                      round(1 - i * (_band + NARROW_GAP), 4)) for i in range(3))
CELL_WORDS = {ALLOWED: "may attend", CAUSAL: "blocked: a later target token",
              PAD: "blocked: a pad token"}
PANELS = (("encoder", "encoder self-attention", "src", "src"),
          ("decoder", "decoder self-attention", "tgt", "tgt"),
          ("cross", "cross-attention", "tgt", "src"))


def _labels(kind: str, v: dict) -> list[str]:
    n, real = (v["src_len"], v["src_real"]) if kind == "src" else (v["tgt_len"], v["tgt_real"])
    prefix = "s" if kind == "src" else "t"
    return [f"{prefix}{i}" if i < real else f"{prefix}{i} pad" for i in range(n)]


def _kinds(panel: str, v: dict) -> list[list[int]]:
    """Each cell: allowed, blocked by causality, or blocked by a pad key. Causality is read
    first: a decoder cell that both rules block (a later key that is also a pad) is causal,
    so the pad colour marks only the cells that the padding rule alone blocks."""
    grid = v[f"{panel}_mask"]
    k_real = v["tgt_real"] if panel == "decoder" else v["src_real"]
    causal = panel == "decoder"
    return [[ALLOWED if ok else (CAUSAL if causal and j > i else PAD if j >= k_real else CAUSAL)
             for j, ok in enumerate(row)] for i, row in enumerate(grid)]


def _hover_word(panel: str, kind: int, q: int, k: int, v: dict) -> str:
    if panel == "decoder" and kind == CAUSAL and k >= v["tgt_real"]:
        return "blocked: a later target token (also a pad)"
    return CELL_WORDS[kind]


def figure(v: dict) -> dict:
    colors = [COLORS["scaled"], COLORS["unscaled"], COLORS["guide"]]
    scale = [[0, colors[0]], [1 / 3, colors[0]], [1 / 3, colors[1]], [2 / 3, colors[1]],
             [2 / 3, colors[2]], [1, colors[2]]]
    gap, width = 0.08, (1 - 2 * 0.08) / 3
    data, layout_axes, annotations = [], {}, []
    for i, (panel, title, q_kind, k_kind) in enumerate(PANELS):
        kinds = _kinds(panel, v)
        qs, ks = _labels(q_kind, v), _labels(k_kind, v)
        hover = [[f"query {qs[a]} → key {ks[b]}: {_hover_word(panel, kinds[a][b], a, b, v)}"
                  for b in range(len(ks))] for a in range(len(qs))]
        suffix = "" if i == 0 else str(i + 1)
        data.append({"type": "heatmap", "z": kinds, "x": ks, "y": qs, "zmin": 0, "zmax": 2,
                     "colorscale": scale, "showscale": False, "xgap": 2, "ygap": 2,
                     "hovertext": hover, "hoverinfo": "text", "name": title,
                     "xaxis": f"x{suffix}", "yaxis": f"y{suffix}"})
        x0 = i * (width + gap)
        layout_axes[f"xaxis{suffix}"] = {"domain": [x0, x0 + width], "anchor": f"y{suffix}",
                                         "side": "bottom", "tickangle": -60, "automargin": True,
                                         "title": {"text": "key", "standoff": 4}}
        layout_axes[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "autorange": "reversed",
                                         "automargin": True, "domain": [0, 1],
                                         # one "query" title, left of the first panel: a
                                         # second one would sit on the panel before it
                                         "title": {"text": "query" if i == 0 else "",
                                                   "standoff": 2}}
        shape = v[f"{panel}_shape"]
        annotations.append({"text": f"{title}<br>{shape}", "showarrow": False, "x": x0 + width / 2,
                            "y": 1.02, "xref": "paper", "yref": "paper", "xanchor": "center",
                            "yanchor": "bottom", "font": {"size": 12}})
    # A legend for the three cell kinds: invisible markers named by meaning.
    for kind, color in zip((ALLOWED, CAUSAL, PAD), colors):
        data.append({"type": "scatter", "mode": "markers", "x": [None], "y": [None],
                     "marker": {"color": color, "symbol": "square", "size": 12},
                     "name": CELL_WORDS[kind], "hoverinfo": "skip"})
    layout = base_layout(height=430, margin={"l": 60, "r": 10, "t": 60, "b": 70},
                         annotations=annotations, legend={"orientation": "h", "y": -0.32},
                         **layout_axes)
    # Phones: the panels stacked. Each gap between bands holds the panel's vertical tick labels
    # (up to "t11 pad") and the next panel's two-line title; the "key" axis title moves into the
    # panel's own title, so nothing lands inside the heatmap below.
    narrow = {"height": NARROW_HEIGHT, "margin": {"t": 50, "b": 40},
              "legend": {"orientation": "h", "y": -NARROW_GAP * 0.75, "yanchor": "top"}}
    for i, (lo, hi) in enumerate(NARROW_BANDS):
        suffix = "" if i == 0 else str(i + 1)
        narrow[f"xaxis{suffix}"] = {"domain": [0, 1], "tickangle": -90, "tickfont": {"size": 10},
                                    "title": {"text": ""}}
        narrow[f"yaxis{suffix}"] = {"domain": [lo, hi], "tickfont": {"size": 10}}
    narrow["annotations"] = [{**a, "text": a["text"].replace("<br>", " ") + "<br>rows: query, columns: key",
                              "x": 0.5, "y": hi + 0.004}
                             for a, (lo, hi) in zip(annotations, NARROW_BANDS)]
    return {"data": data, "layout": layout, "narrow": narrow}


def _tokens(n: int, what: str) -> str:
    return f"{n} real {what} token{'' if n == 1 else 's'}"


def summary(v: dict) -> str:
    return (f"Second pair of the batch: {_tokens(v['src_real'], 'source')} of {v['src_len']} and "
            f"{_tokens(v['tgt_real'], 'target')} of {v['tgt_len']}. The encoder mask "
            f"{v['encoder_shape']} allows {v['encoder_allowed']} of {v['encoder_cells']} query-key "
            f"pairs, the decoder's causal-and-padding mask {v['decoder_shape']} allows "
            f"{v['decoder_allowed']} of {v['decoder_cells']}, and the cross-attention mask "
            f"{v['cross_shape']} allows {v['cross_allowed']} of {v['cross_cells']}.")


def table(v: dict) -> dict:
    return {"caption": "The three masks of the encoder-decoder for a batch of two pairs "
                       "(the second one padded)",
            "columns": ["mask", "used in", "shape (batch, q_len, k_len)", "stored as",
                        "allowed pairs, padded pair", "what it hides"],
            "rows": [["encoder padding", "encoder self-attention", v["encoder_shape"],
                      v["encoder_stored_shape"], f"{v['encoder_allowed']} of {v['encoder_cells']}",
                      "source pad tokens"],
                     ["causal and padding", "decoder self-attention", v["decoder_shape"],
                      v["decoder_stored_shape"], f"{v['decoder_allowed']} of {v['decoder_cells']}",
                      "later target tokens, target pad tokens"],
                     ["cross padding", "decoder cross-attention", v["cross_shape"],
                      v["cross_stored_shape"], f"{v['cross_allowed']} of {v['cross_cells']}",
                      "source pad tokens"]]}
