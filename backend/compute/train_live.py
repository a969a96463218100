"""Widget: train a tiny DecoderLM on the server, live, and draw its loss curves.

The book's own training loop (`backend/reference/training.py`) on a byte-level model (vocabulary
256, d = 32, 2 layers, a window of 32 bytes) for a fixed 200 steps, reading the 240 held-out
Wikipedia sentences that ship with the book (`backend/bookmodel/heldout_sentences.txt`): the
first 200 are the training text, the last 40 the validation text. The reader sets the learning
rate, the warm-up, the initial scale and the batch size, or breaks one thing on purpose.

Work is bounded by the spec alone: every legal setting trains at most MAX_BATCH x STEPS windows of
SEQ_LEN bytes (204,800 tokens) plus 11 evaluations, one CPU thread, a few seconds at most
(tests/compute/test_train_live.py times the largest). A run is seeded, so a setting always
draws the same curve; results are cached per process.

`facts` holds the training chapter's measurements (the off-by-one run's generation, the step-0
statistics, the overfitting run, the scale section's FLOPs): values only the prose quotes.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache

import torch

from backend.compute.kept import kept
from backend.compute.spec import Depends, Output, Param, WidgetSpec
from backend.compute.style import COLORS, base_layout
from backend.reference import training as tr
from backend.reference.counting import count_parameters
from backend.reference.presets import get_preset

BASE = tr.RunConfig()  # d = 32, 2 layers, 2 heads, window 32, 200 steps
STEPS, SEQ_LEN = BASE.steps, BASE.seq_len
MAX_BATCH = 32
WORK_TOKENS = MAX_BATCH * STEPS * SEQ_LEN  # the most any setting trains on: 204,800 tokens
N_TRAIN_SENTENCES = 200  # of the 240 held-out sentences; the rest are the validation text
N_SMALL_SENTENCES = 20  # the overfitting run's training text
PROMPT = "The city of"
N_NEW = 40

BREAKS = ("none", "no_warmup", "no_clipping", "unshifted")
BREAK_LABELS = ("nothing", "no warm-up", "no gradient clipping", "labels not shifted")

SPEC = WidgetSpec(
    name="train_live",
    try_next=(
        "Set `break_it` to labels not shifted: the training loss falls almost to zero, and the "
        "continuation below the figure is one byte repeated, and its loss on the next byte is "
        "worse than a uniform guess. Then move the seed: the same recipe ends anywhere from near "
        "the byte-frequency line to well below it, a spread larger than most breaks change."
    ),
    title="Train a tiny model, live",
    description=f"A byte-level DecoderLM (d = {BASE.d_model}, {BASE.n_layers} layers) trained for "
                f"{STEPS} steps on 200 Wikipedia sentences; training and validation loss per step.",
    params=(
        Param("lr", "peak learning rate", "float", default=BASE.lr, min=1e-4, max=0.3, step=1e-4,
              scale="log2", help="AdamW's learning rate at the end of the warm-up; a cosine then "
                                 "takes it down to a tenth of this by the last step."),
        Param("warmup_steps", "warm-up steps", "int", default=BASE.warmup_steps, min=0, max=100,
              step=5, help="Steps over which the learning rate climbs linearly from lr / warm-up "
                           "to lr. 0: the first step already takes the full rate.",
              depends=(Depends("break_it", {"no_warmup": {"disabled": True}}),)),
        Param("init_std", "initial scale σ", "float", default=BASE.init_std, min=0.002, max=2.0,
              step=0.001, scale="log2",
              help="Every matrix starts N(0, σ²); the residual outputs σ / √(2L). GPT-2 and "
                   "Llama: 0.02."),
        Param("batch_size", "batch size", "int", default=BASE.batch_size, min=1, max=MAX_BATCH,
              step=1, scale="log2", unit="windows",
              help=f"Windows of {SEQ_LEN} bytes per step. The number of steps is fixed at {STEPS}."),
        Param("break_it", "break", "choice", default="none", options=BREAKS,
              option_labels=BREAK_LABELS,
              help="Train with one thing wrong: no warm-up (the full rate from step 0), no "
                   "clipping of the gradient's norm, or labels not shifted (each position "
                   "scored on its own token)."),
        Param("seed", "seed", "int", default=0, min=0, max=9, step=1,
              help="Draws the initial weights and the batches: one seed, one curve."),
    ),
    outputs=(
        Output("loss_step0", "validation loss at step 0", ".3f", "nats"),
        Output("final_train", "final training loss (the run's own labels)", ".3f", "nats"),
        Output("final_val", "final validation loss (the run's own labels)", ".3f", "nats"),
        # the real task whatever the run trained on: for the unshifted bug these differ
        Output("val_next_byte", "final validation loss on the next byte", ".3f", "nats"),
        Output("val_bits_per_byte", "next-byte bits per byte", ".2f"),
        Output("val_perplexity", "next-byte perplexity", ".1f"),
        Output("max_grad_norm", "largest gradient norm", ".2f"),
        Output("clipped_share", "steps clipped", ".1%"),
        Output("continuation", "greedy continuation of “The city of”", ""),
    ),
    bake=({"break_it": "no_warmup"}, {"break_it": "no_clipping"}, {"break_it": "unshifted"},
          {"lr": 0.1}, {"init_std": 1.0}, {"batch_size": 4}),
    cost_hint="heavy",  # a few seconds of one thread: one at a time per worker
    warm=False,  # the page carries its baked runs; warming would cost every worker seconds
)


@lru_cache(maxsize=1)
def texts() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(training, validation, small training) byte streams from the shipped sentences."""
    from backend.bookmodel.load import heldout_sentences

    s = heldout_sentences()
    return (tr.encode_bytes(" ".join(s[:N_TRAIN_SENTENCES])),
            tr.encode_bytes(" ".join(s[N_TRAIN_SENTENCES:])),
            tr.encode_bytes(" ".join(s[:N_SMALL_SENTENCES])))


def unigram_loss(stream: torch.Tensor) -> float:
    """The loss of a model that knows only how often each byte occurs: the text's entropy."""
    counts = Counter(stream.tolist())
    n = len(stream)
    return -sum(c / n * math.log(c / n) for c in counts.values())


def run_config(params: dict) -> tr.RunConfig:
    broken = params["break_it"]
    return BASE.replace(
        lr=params["lr"], init_std=params["init_std"], batch_size=params["batch_size"],
        seed=params["seed"],
        warmup_steps=0 if broken == "no_warmup" else params["warmup_steps"],
        grad_clip=None if broken == "no_clipping" else BASE.grad_clip,
        shifted=broken != "unshifted",
    )


@lru_cache(maxsize=32)
def run(rc: tr.RunConfig, small: bool = False) -> dict:
    """One seeded run reduced to plain numbers and its greedy continuation. It runs on the
    worker's own thread count (process-wide: a request must not change it under the others);
    another count moves the curve by rounding only (tests/compute/test_train_live.py)."""
    train_ids, val_ids, small_ids = texts()
    r = tr.train(rc, small_ids if small else train_ids, val_ids)
    text = tr.greedy_bytes(r.model, PROMPT, N_NEW) if r.diverged_at is None else ""
    # the real objective, whatever the run trained on: what it knows about the next byte
    val_next = (tr.mean_loss(r.model, val_ids, rc.seq_len, shifted=True)
                if r.diverged_at is None else None)
    return {"diverged_at": r.diverged_at, "steps": r.steps, "train_loss": r.train_loss,
            "grad_norm": r.grad_norm, "lr": r.lr,
            "eval_steps": r.eval_steps, "val_loss": r.val_loss,
            "train_eval_loss": r.train_eval_loss, "continuation": text, "val_next_byte": val_next}


def summarise(r: dict, grad_clip: float | None = BASE.grad_clip) -> dict:
    val = r["val_loss"][-1]
    nxt = r["val_next_byte"]  # bits and perplexity are of the real task, the next byte
    norms = r["grad_norm"]
    return {"loss_step0": r["val_loss"][0], "final_train": r["train_eval_loss"][-1],
            "final_val": val,
            "val_bits_per_byte": None if nxt is None else nxt / math.log(2),
            "val_perplexity": None if nxt is None else math.exp(nxt), "best_val": min(r["val_loss"]),
            # the share of steps whose gradient norm was above the clip (whether or not clipped)
            "clipped_share": (sum(n > grad_clip for n in norms) / len(norms)
                              if norms and grad_clip is not None else 0.0),
            "median_grad_norm": sorted(norms)[len(norms) // 2] if norms else None,
            "best_val_step": r["eval_steps"][r["val_loss"].index(min(r["val_loss"]))],
            "max_grad_norm": max(r["grad_norm"], default=0.0), "continuation": r["continuation"],
            "val_next_byte": r["val_next_byte"],
            "first_grad_norm": r["grad_norm"][0] if r["grad_norm"] else None,
            "distinct_bytes": len(set(r["continuation"])), "diverged_at": r["diverged_at"]}


def compute(params: dict) -> dict:
    rc = run_config(params)
    r = run(rc)
    train_ids, _, _ = texts()
    v = {**summarise(r, rc.grad_clip), "uniform_loss": math.log(tr.BYTE_VOCAB), "unigram_loss": unigram_loss(train_ids),
         "eval_steps": r["eval_steps"], "val_curve": r["val_loss"],
         "train_eval_curve": r["train_eval_loss"], "tokens_seen": STEPS * rc.batch_size * SEQ_LEN,
         "shifted": rc.shifted}
    return {"values": v, "figure": _figure(r, v, rc), "summary": _summary(v, rc),
            "table": _table(r)}


def _summary(v: dict, rc: tr.RunConfig) -> str:
    if v["diverged_at"] is None:
        head = (f"The validation loss goes from {v['loss_step0']:.2f} nats at step 0 to "
                f"{v['final_val']:.2f} (the training text: {v['final_train']:.2f})")
        head += ("" if rc.shifted else
                 "; on the next byte, the real task, it ends at "
                 f"{v['val_next_byte']:.2f}")
        head += f", {v['val_bits_per_byte']:.2f} bits per next byte."
    else:
        head = f"The validation loss starts at {v['loss_step0']:.2f} nats."
    over = ("" if v["diverged_at"] is not None or not rc.shifted
            or v["val_perplexity"] <= tr.BYTE_VOCAB else
            f" Its perplexity, {v['val_perplexity']:.0f}, is above 256: it ends worse than a "
            "uniform guess, still paying for a confident start.")
    return (head + over + f" Guessing uniformly over 256 bytes scores "
            f"{v['uniform_loss']:.2f}; knowing only byte frequencies, {v['unigram_loss']:.2f}."
            + ("" if rc.shifted else " The labels are not shifted: each position is scored on the "
               "byte it already sees, so its own loss says nothing about predicting the next one; "
               "on the next byte it is worse than a uniform guess.")
            + (f" The run diverged at step {v['diverged_at']}: its loss was no longer a number, "
               "and it stopped there." if v["diverged_at"] is not None else
               f" Greedy continuation of “{PROMPT}”: “{v['continuation']}”."))


def _table(r: dict) -> dict:
    return {"caption": "Loss at each evaluation (nats per byte)",
            "columns": ["step", "training text", "validation text"],
            "rows": [[s, f"{a:.3f}", f"{b:.3f}"] for s, a, b in
                     zip(r["eval_steps"], r["train_eval_loss"], r["val_loss"], strict=True)]}


def _figure(r: dict, v: dict, rc: tr.RunConfig) -> dict:
    highest = max(max(r["train_loss"], default=0.0), v["uniform_loss"])
    top = min(highest * 1.05, Y_CAP)
    data = [
        {"type": "scatter", "mode": "lines", "x": r["steps"], "y": r["train_loss"],
         "name": "training batch", "line": {"color": COLORS["scaled"], "width": 1}, "opacity": 0.5,
         "hovertemplate": "step %{x}: %{y:.3f}<extra>batch</extra>"},
        {"type": "scatter", "mode": "lines+markers", "x": r["eval_steps"], "y": r["train_eval_loss"],
         "name": "training text", "line": {"color": COLORS["scaled"]},
         "hovertemplate": "step %{x}: %{y:.3f}<extra>training text</extra>"},
        {"type": "scatter", "mode": "lines+markers", "x": r["eval_steps"], "y": r["val_loss"],
         "name": "validation text", "line": {"color": COLORS["accent"]},
         "hovertemplate": "step %{x}: %{y:.3f}<extra>validation</extra>"},
        {"type": "scatter", "mode": "lines", "x": [0, STEPS], "y": [v["uniform_loss"]] * 2,
         "name": "uniform guess, ln 256", "line": {"color": COLORS["guide"], "dash": "dot"},
         "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": [0, STEPS], "y": [v["unigram_loss"]] * 2,
         "name": "byte frequencies only", "line": {"color": COLORS["guide"], "dash": "dash"},
         "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": r["steps"], "y": r["lr"], "name": "learning rate",
         "line": {"color": COLORS["purple"]}, "xaxis": "x2", "yaxis": "y2",
         "hovertemplate": "step %{x}: %{y:.2e}<extra>lr</extra>"},
    ]
    layout = base_layout(
        height=460,
        xaxis={"domain": [0, 1], "anchor": "y", "range": [0, STEPS], "showticklabels": False},
        yaxis={"domain": [0.3, 1], "title": {"text": "loss (nats per byte)"},
               "range": [0, top]},
        xaxis2={"domain": [0, 1], "anchor": "y2", "range": [0, STEPS], "title": {"text": "step"},
                "matches": "x"},
        yaxis2={"domain": [0, 0.2], "title": {"text": "lr"}, "rangemode": "tozero",
                "exponentformat": "e"},
        # the greedy continuation is a value below the figure, not a label in it: 40 bytes of
        # text would run past a phone's width
        legend={"orientation": "h", "y": -0.25},
    )
    if highest > Y_CAP:  # say so, rather than draw a loss off the chart unannounced
        layout["annotations"] = [{
            "x": 0, "y": Y_CAP, "xref": "x", "yref": "y", "xanchor": "left", "yanchor": "top",
            "showarrow": False, "text": f"highest batch loss {highest:.1f} nats, above the chart"}]
    return {"data": data, "layout": layout}


Y_CAP = 25  # nats: the chart's top; a sigma = 2 start (about 32) would flatten every other curve


# ------------------------------------------------------------------ the chapter's measurements

def _init_stats(std: float, n_layers: int, scale_residual: bool) -> dict:
    """Step 0 of a d = 32 model: its loss on a training batch and its logits' spread, and how
    far the residual stream has grown after the last block (its std over the embedding's)."""
    train_ids, _, _ = texts()
    gen = torch.Generator().manual_seed(0)
    rc = BASE.replace(n_layers=n_layers)
    model = tr.build_model(rc.model_config(), gen, std, scale_residual)
    batch = tr.random_windows(train_ids, 16, SEQ_LEN, gen)
    stats = tr.step0_stats(model, batch)
    seen = {}
    hook = model.norm.register_forward_hook(lambda m, args, out: seen.setdefault("x", args[0]))
    with torch.no_grad():
        model(batch)
    hook.remove()
    return {**stats, "stream_growth": seen["x"].std().item() / stats["embed_std"]}


INIT_STDS = (0.02, 0.2, 1.0)
HUGE_INIT = 2.0  # the sigma slider's top
SEEDS = tuple(range(6))  # the breaks measured over these seeds: 30 runs, about 2-3 s each
BREAK_RUNS = {"recipe": {}, "no_warmup": {"warmup_steps": 0}, "no_clipping": {"grad_clip": None},
              "big_init": {"init_std": 1.0}, "high_lr": {"lr": 0.1}}
PLATEAU = 0.05  # nats: a final loss this close to the byte-frequency loss has not left it


def _over_seeds() -> dict:
    """Each break's final validation loss on every seed, beside the recipe's on the same seed:
    one seed alone cannot tell a break's cost from the seed's luck."""
    train_ids, val_ids, _ = texts()
    def final(rc: tr.RunConfig) -> float:  # the default seed's runs are the widget's, cached
        r = run(rc) if rc.seed == BASE.seed else vars(tr.train(rc, train_ids, val_ids))
        return r["val_loss"][-1] if r["diverged_at"] is None else math.nan  # nan: it diverged

    finals = {name: [final(BASE.replace(seed=seed, **change)) for seed in SEEDS]
              for name, change in BREAK_RUNS.items()}
    recipe, floor = finals["recipe"], unigram_loss(train_ids)
    out = {"n_seeds": len(SEEDS), "recipe_spread": max(recipe) - min(recipe),
           "recipe_plateau": sum(abs(x - floor) < PLATEAU for x in recipe)}
    for name, xs in finals.items():
        diffs = [x - y for x, y in zip(xs, recipe, strict=True)]
        out[name] = {"finals": xs, "mean": sum(xs) / len(xs), "min": min(xs), "max": max(xs),
                     "worse": sum(d > 0 for d in diffs), "mean_diff": sum(diffs) / len(diffs)}
    return out


@torch.no_grad()
def _step0_own_byte() -> dict:
    """The untrained model (the default run's seed-0 draw) on the validation windows: its loss
    on each position's own byte and on the next one, and how often its top guess is its input.
    The output matrix is the tied embedding, so a position whose vector is still close to its
    input's embedding scores that byte high."""
    _, val_ids, _ = texts()
    model = tr.build_model(BASE.model_config(), torch.Generator().manual_seed(BASE.seed))
    model.eval()
    n = len(val_ids) // SEQ_LEN
    windows = val_ids[: n * SEQ_LEN].view(n, SEQ_LEN)  # (n, T)
    logits = model(windows).logits  # (n, T, 256)
    return {"own": tr.lm_loss(logits, windows, shifted=False).item(),
            "next": tr.lm_loss(logits, windows, shifted=True).item(),
            "own_top": (logits.argmax(-1) == windows).float().mean().item()}


def _adam_spike_bound(betas=(0.9, 0.95)) -> float:
    """How far one Adam step moves a weight, in units of lr, when its gradient suddenly becomes
    huge after many small ones: m is about (1 - b1) g and v about (1 - b2) g^2, so the move is
    (1 - b1) / sqrt(1 - b2) of lr, whatever the spike's size."""
    b1, b2 = betas
    return (1 - b1) / math.sqrt(1 - b2)
BIG_INIT, HIGH_LR = 1.0, 0.1  # the chapter's "too large" initial scale and learning rate
CHINCHILLA = 20  # compute-optimal tokens per parameter, about (Hoffmann et al. 2022, Table 3)
DEPTHS = (2, 8, 32)


def sci(x: float) -> str:
    """1.61e21 -> '1.6 × 10²¹', as the prose prints a count too large for digits."""
    exp = math.floor(math.log10(x))
    sup = str(exp).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{x / 10 ** exp:.1f} × 10{sup}"


@lru_cache(maxsize=1)
@kept("train_live.facts")
def _facts() -> dict:
    # lists, read by position in the prose ("init.2.loss"): the stds and depths are inside
    init = [{"std": std, **_init_stats(std, 2, True)} for std in INIT_STDS]
    growth = [{"n_layers": n, "scaled": _init_stats(0.02, n, True)["stream_growth"],
               "unscaled": _init_stats(0.02, n, False)["stream_growth"]} for n in DEPTHS]
    default = summarise(run(BASE))
    default_run = run(BASE)
    unshifted = summarise(run(BASE.replace(shifted=False)))
    # the unshifted model scored on the real objective: what it learned about the next byte
    train_ids, val_ids, small_ids = texts()
    overfit_rc = BASE.replace(steps=400, d_model=64, n_heads=4, d_ff=192)
    overfit = run(overfit_rc, small=True)
    best = min(overfit["val_loss"])
    scale = _scale_facts()
    return {
        "init": init, "growth": growth,
        "default": default, "unshifted": unshifted,
        "no_warmup": summarise(run(BASE.replace(warmup_steps=0))),
        "no_clipping": summarise(run(BASE.replace(grad_clip=None))),
        "big_init": summarise(run(BASE.replace(init_std=BIG_INIT))),
        "huge_init": summarise(run(BASE.replace(init_std=HUGE_INIT))),
        "lr_top": summarise(run(BASE.replace(lr=SPEC.param("lr").max))),
        "seeds": _over_seeds(), "step0_own": _step0_own_byte(),
        "adam_spike": _adam_spike_bound(),
        "default_norms": {"median": summarise(default_run)["median_grad_norm"],
                          "max": max(default_run["grad_norm"])},
        "high_lr": summarise(run(BASE.replace(lr=HIGH_LR))),
        "overfit": {"train_bytes": len(small_ids), "steps": overfit["eval_steps"],
                    "val": overfit["val_loss"], "train": overfit["train_eval_loss"],
                    "best_val": best, "best_step": overfit["eval_steps"][overfit["val_loss"].index(best)],
                    "best_train": overfit["train_eval_loss"][overfit["val_loss"].index(best)],
                    "final_val": overfit["val_loss"][-1], "final_train": overfit["train_eval_loss"][-1],
                    "d_model": overfit_rc.d_model, "n_steps": overfit_rc.steps},
        "train_bytes": len(train_ids), "val_bytes": len(val_ids),
        "n_params": sum(p.numel() for p in tr.build_model(
            BASE.model_config(), torch.Generator().manual_seed(0)).parameters()),
        "unigram_loss": unigram_loss(train_ids), "uniform_loss": math.log(tr.BYTE_VOCAB),
        "commonest_byte": max(Counter(train_ids.tolist()).items(), key=lambda kv: kv[1])[0],
        "base": {"lr": BASE.lr, "warmup_steps": BASE.warmup_steps, "grad_clip": BASE.grad_clip,
                 "init_std": BASE.init_std, "steps": BASE.steps, "batch_size": BASE.batch_size,
                 "seq_len": BASE.seq_len, "d_model": BASE.d_model, "n_layers": BASE.n_layers,
                 "eval_every": BASE.eval_every, "min_lr_ratio": BASE.min_lr_ratio,
                 "high_lr": HIGH_LR, "big_init": BIG_INIT, "huge_init": HUGE_INIT,
                 "lr_top": SPEC.param("lr").max, "seeds": SEEDS[-1], "seed": SEEDS[0], "plateau": PLATEAU,
                 "y_cap": Y_CAP},
        # how many steps Adam's v remembers a squared gradient for: 1 / (1 - beta2)
        "adam_memory": 1 / (1 - 0.95),
        "e3": math.exp(3),
        # how much more text the book's model read than the tiny one, in bytes
        "book_text_ratio": scale["book"]["train_text_bytes"] / len(train_ids),
        **scale,
    }


# Published training-token counts (each model's card): SmolLM2-135M "2T tokens"
# (huggingface.co/HuggingFaceTB/SmolLM2-135M, Training), Llama-3-8B "15T+ tokens"
# (github.com/meta-llama/llama3/blob/main/MODEL_CARD.md, Training Data). The parameter counts
# are the book's own meta-device count of each preset.
TRAINING_TOKENS = {"smollm2-135m": 2e12, "llama-3-8b": 15e12}


def _bytes_per_token() -> float:
    """UTF-8 bytes per token of the book model's tokenizer over the held-out sentences (text from
    the same validation articles its loss is measured on)."""
    from tokenizers import Tokenizer

    from backend.bookmodel import WEIGHTS_DIR
    from backend.bookmodel.load import heldout_sentences

    text = " ".join(heldout_sentences())
    tok = Tokenizer.from_file(str(WEIGHTS_DIR / "tokenizer.json"))
    return len(text.encode("utf-8")) / len(tok.encode(text).ids)


def _scale_facts() -> dict:
    from backend.bookmodel.load import metrics

    m = metrics()
    t = m["training"]
    book_tokens = t["steps"] * t["batch_size"] * t["seq_len"]
    book = {"params": m["model"]["n_params"], "tokens": book_tokens,
            "flops": tr.training_flops(m["model"]["n_params"], book_tokens),
            "cpu_seconds": t["cpu_seconds"], "wall_seconds": t["wall_seconds"],
            "final_val": m["final"]["val_loss"], "val_perplexity": m["final"]["val_perplexity"],
            "first_val": m["curve"][0]["val_loss"], "first_step": m["curve"][0]["step"],
            "vocab": m["tokenizer"]["vocab_size"]}
    book["flops_per_cpu_second"] = book["flops"] / book["cpu_seconds"]
    book["flops_sci"] = sci(book["flops"])
    book["flops_per_cpu_second_sci"] = sci(book["flops_per_cpu_second"])
    book["bytes_per_token"] = _bytes_per_token()
    book["tokens_per_param"] = book_tokens / book["params"]
    # an estimate: its training tokens times bytes per token measured on other (held-out) text
    book["train_text_bytes"] = m["corpus"]["train_tokens"] * book["bytes_per_token"]
    book["train_text_mb"] = round(book["train_text_bytes"] / 1e6, 1)
    book["val_bits_per_byte"] = book["final_val"] / math.log(2) / book["bytes_per_token"]
    models = {}
    for name, tokens in TRAINING_TOKENS.items():
        n = count_parameters(get_preset(name)).total
        flops = tr.training_flops(n, tokens)
        models[name] = {"params": n, "tokens": tokens, "flops": flops, "flops_sci": sci(flops),
                        "tokens_sci": sci(tokens),
                        "tokens_per_param": tokens / n, "over_book": flops / book["flops"],
                        # how long the book model's CPU, at its measured rate, would take
                        "cpu_years": flops / book["flops_per_cpu_second"] / (365.25 * 86400)}
    return {"book": book, "scale": models, "e4": math.exp(4), "chinchilla": CHINCHILLA}


def facts(params: dict) -> dict:
    return _facts()
