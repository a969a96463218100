"""The book's values behind the exercise notebooks' checks, recomputed by the book's code.

A standalone notebook runs without the repository, so each check() there carries the expected
value as a literal. Every such literal is listed in BOOK below with the book's code that computes
it; the test fails when a notebook gains a check nobody recomputes here, when a literal is not
the book's value correctly rounded to the digits it shows, or when the check's tolerance would
refuse the book's own unrounded value. (Notebooks that run from a clone compute their expected
values with the book's code at run time, and the build runs them.)
"""

import ast
import dataclasses
import json
import math

import pytest
import torch

from backend.reference import attention_cost, masks, mlp, norms, order, recurrence, rope, scaling
from backend.reference import river_bank as rb
from backend.reference import training_signal as ts
from backend.reference import two_heads as th
from backend.reference.config import ModelConfig
from backend.reference.counting import count_module, count_parameters
from backend.reference.generate import token_steps
from backend.reference.kv_cache import kv_cache_bytes_for
from backend.reference.notebook_check import check
from backend.reference.presets import PRESETS
from backend.reference.serving import CARDS, users_fit, weights_bytes
from tests.conftest import ROOT

EXERCISES = ROOT / "docs/exercises"


# ------------------------------------------------------------------ the book's values

def _river_bank_names():
    return ["the", "river", "bank"]


def _heads_that_move() -> str:
    before, after = th.bank_weights(th.EMBEDDINGS, 2), th.bank_weights(th.with_moneyed_the(), 2)
    moved = [name for name, b, a in zip("AB", before, after) if not torch.equal(b, a)]
    return "both" if len(moved) == 2 else moved[0]


def _mask_scores(pad: bool = False):
    """The masks notebook's scores: the, river, bank (float32), E E^T / sqrt(4); pad: a zero row first."""
    e = torch.tensor([rb.WORDS[w] for w in _river_bank_names()])
    if pad:
        e = torch.cat([torch.zeros(1, 4), e])
    return e @ e.T / 2


def _pad_allowed():
    allowed = masks.causal_mask(4).clone()
    allowed[:, 0] = False  # nobody may attend to the pad
    return allowed


def _passage_tokens() -> int:
    """The training-signal notebook's passage, tokenized by the notebook's own tokenizer."""
    bpe_openai = pytest.importorskip("bpe_openai")
    nb = json.loads((EXERCISES / "llm101-06-training-signal.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        for node in ast.walk(ast.parse("".join(cell["source"]))) if cell["cell_type"] == "code" else ():
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "text":
                return len(bpe_openai.get_encoding("cl100k_base").encode(ast.literal_eval(node.value)))
    raise AssertionError("the passage `text = (...)` is gone from the notebook")


def _rope_score(m: int, n: int) -> float:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(8, generator=g, dtype=torch.float64)
    k = torch.randn(8, generator=g, dtype=torch.float64)
    return (rope.rotate(q, m, precision=torch.float64) @ rope.rotate(k, n, precision=torch.float64)).item()


def _users(preset: str, card: str, dtype=torch.bfloat16, **changes) -> int:
    config = dataclasses.replace(PRESETS[preset], **changes)
    per_user = kv_cache_bytes_for(config, 8192, dtype=dtype)  # the notebook counts no fp8 scales
    return users_fit(CARDS[card].memory_bytes, weights_bytes(config), per_user).users


def _swiglu_params() -> int:
    config = ModelConfig(vocab_size=2, d_model=4096, n_layers=1, n_heads=32, d_ff=14336)
    with torch.device("meta"):
        return count_module(mlp.SwiGLU(config))


BOOK = {
    ("01-variance", "Var(q·k) at d_k = 64 (the seeded 10,000 pairs)"):
        lambda: scaling.handout_000_draw(0)["var_unscaled"],
    ("01-variance", "the entropy of an even row over 8 keys"): lambda: scaling.uniform_entropy(8),
    ("01-variance", "an even row's gradient at T = 8"): lambda: scaling.even_row_gradient(8),
    ("attention-cost", "MiB of T x T tables at T = 2048"):
        lambda: attention_cost.eager_bytes(2048) / 2**20,
    ("attention-cost", "the longest T whose two tables fit in 1 GiB"):
        lambda: attention_cost.largest_context(2**30),
    ("block-mlp-and-norm", "4096 ones added one at a time in bfloat16"):
        lambda: norms.running_mean_square(torch.ones(4096), torch.bfloat16) * 4096,
    ("block-mlp-and-norm", "parameters of the SwiGLU MLP"): _swiglu_params,
    ("block-mlp-and-norm", "d_ff of Llama-2-7B and Llama-3-8B"):
        lambda: [mlp.swiglu_hidden_size(4096), mlp.swiglu_hidden_size(4096, 1024, 1.3)],
    ("llm101-01-sequential-vs-parallel", "a gradient after 100 steps at 0.9 and at 1.1"):
        lambda: [recurrence.gradient_through_steps(f, 100)[-1] for f in (0.9, 1.1)],
    ("llm101-03-self-attention", "the word bank gives the largest weight"):
        lambda: _river_bank_names()[int(rb.bank_in_context(rb.sentence(rb.WORDS["river"])).weights.argmax())],
    ("llm101-03-self-attention", "bank's water and money after the mix"):
        lambda: rb.bank_in_context(rb.sentence(rb.WORDS["river"])).after[:2].tolist(),
    ("llm101-03-self-attention", "the weights with a twin neighbour"):
        lambda: rb.bank_in_context(rb.sentence(rb.WORDS["bank"])).weights.tolist(),
    ("llm101-04-two-heads", "head A's least-weighted word"):
        lambda: th.WORDS[int(th.bank_weights(th.EMBEDDINGS, 2)[0].argmin())],
    ("llm101-04-two-heads", "head B's most-weighted word"):
        lambda: th.WORDS[int(th.bank_weights(th.EMBEDDINGS, 2)[1].argmax())],
    ("llm101-04-two-heads", "the head whose weights change"): _heads_that_move,
    ("llm101-04-two-heads", "the weights of the head that owns the fourth column"):
        lambda: th.bank_weights(th.EMBEDDINGS, 4)[3].tolist(),
    ("llm101-05-masks", "the decoder's first row"):
        lambda: masks.weights_boolean(_mask_scores(), masks.causal_mask(3))[0].tolist(),
    ("llm101-05-masks", "row sums after zeroing"):
        lambda: masks.weights_zeroed_after(_mask_scores(), masks.causal_mask(3)).sum(-1).tolist(),
    ("llm101-05-masks", "the pad row with -inf"):
        lambda: masks.weights_boolean(_mask_scores(pad=True), _pad_allowed(), fill=float("-inf"))[0].tolist(),
    ("llm101-05-masks", "the pad row with the dtype's minimum"):
        lambda: masks.weights_boolean(_mask_scores(pad=True), _pad_allowed())[0].tolist(),
    ("llm101-06-training-signal", "training signals from the 46-token passage"):
        lambda: [ts.decoder_predictions(n := _passage_tokens()), ts.encoder_predictions(n, 0.15)],
    ("llm101-06-training-signal", "decoder / encoder at rate 0.5"):
        lambda: ts.whole_ratio(_passage_tokens(), 0.5),
    ("llm101-07-position", "the largest difference at strength 0.01"):
        lambda: (order.vector_of("dog", ["dog", "bites", "man"], 0.01)
                 - order.vector_of("dog", ["man", "bites", "dog"], 0.01)).abs().max().item(),
    ("llm101-07-position", "the score of q at 1000 and k at 998"): lambda: _rope_score(1000, 998),
    ("llm101-08-kv-cache", "key rows for 800 tokens, no cache and cache"):
        lambda: [token_steps(800, False), token_steps(800, True)],
    ("llm101-08-kv-cache", "key rows, 10-token prompt and 400 new tokens"):
        lambda: [token_steps(400, False, prompt_len=10), token_steps(400, True, prompt_len=10)],
    ("model-config-and-count", "parameters in one block"):
        lambda: count_parameters(PRESETS["llama-2-7b"]).per_layer,
    ("model-config-and-count", "the total with the head tied to the embedding"):
        lambda: count_parameters(dataclasses.replace(PRESETS["llama-2-7b"], tie_embeddings=True)).total,
    ("model-config-and-count", "Llama-3-8B's total"): lambda: count_parameters(PRESETS["llama-3-8b"]).total,
    ("sizing-a-deployment", "users on an A100 80 GB at 8,192 tokens"):
        lambda: [_users("llama-3-8b", "80"), _users("llama-3-8b", "80", n_kv_heads=32)],
    ("sizing-a-deployment", "Llama 3 70B on an H200 at 8,192 tokens"):
        lambda: [_users("llama-3-70b", "141"), _users("llama-3-70b", "141", dtype=torch.float8_e4m3fn)],
}


# ------------------------------------------------------------------ the notebooks' checks

def _checks(path):
    """Every check(...) call in a notebook's code: (label, expected node, rel, abs)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or "".join(cell["source"]).startswith("# The book's answer checker"):
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check":
                kw = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
                found.append((ast.literal_eval(node.args[0]), node.args[2], kw.get("rel"), kw.get("abs")))
    return found


def _standalone(path) -> bool:
    text = path.read_text(encoding="utf-8")
    return "backend.reference" not in text.replace("backend/reference", "") \
        and "backend.bookmodel" not in text


def _literal(node):
    """The expected value as written: a literal, or [float("nan")] * 4 style lists."""
    return eval(compile(ast.Expression(node), "<check>", "eval"), {"__builtins__": {"float": float}})  # noqa: S307 -- the book's own notebooks, literals only


def _sig(x: float) -> int:
    return next(n for n in range(1, 18) if float(f"{x:.{n}g}") == x)


def _rounds_to(literal, book) -> bool:
    if isinstance(literal, list):
        return isinstance(book, list) and len(book) == len(literal) and all(map(_rounds_to, literal, book))
    if isinstance(literal, (str, bool)):
        return literal == book
    if isinstance(literal, float) and math.isnan(literal):
        return math.isnan(book)
    if isinstance(literal, int):
        return float(book).is_integer() and int(book) == literal
    return float(f"{book:.{_sig(literal)}g}") == literal


STANDALONE = [p for p in sorted(EXERCISES.glob("*.ipynb")) if _standalone(p)]
CASES = [(p.stem, label, node, rel, abs_) for p in STANDALONE for label, node, rel, abs_ in _checks(p)]


def test_every_standalone_check_is_recomputed_here_and_nothing_stale():
    assert len(STANDALONE) == 12
    in_notebooks = {(stem, label) for stem, label, *_ in CASES}
    assert in_notebooks - BOOK.keys() == set(), "checks with no book value recomputed in BOOK"
    assert BOOK.keys() - in_notebooks == set(), "BOOK entries no notebook checks any more"


@pytest.mark.parametrize("stem,label,node,rel,abs_", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_the_literal_is_the_books_value(stem, label, node, rel, abs_, capsys):
    literal, book = _literal(node), BOOK[(stem, label)]()
    assert _rounds_to(literal, book), f"{stem}: {label}: the notebook says {literal}, the book {book}"
    # The book's own unrounded value passes the notebook's check: the tolerance covers the rounding.
    assert check(label, book, literal, rel=rel, abs=abs_), capsys.readouterr().out


def test_clone_notebooks_compute_their_expected_values():
    """A notebook that can import the book's code never types the expected value."""
    clones = [p for p in sorted(EXERCISES.glob("*.ipynb")) if not _standalone(p)]
    assert len(clones) == 4
    for path in clones:
        checks = _checks(path)
        assert len(checks) >= 2, path.name
        for label, node, *_ in checks:
            assert not isinstance(node, ast.Constant), f"{path.name}: {label} is typed, not computed"
