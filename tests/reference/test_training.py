"""backend/reference/training.py against independent oracles: PyTorch's cross_entropy on logits
shifted by hand, torch.optim.AdamW, the book model's own schedule (train.py), the clipping rule."""

from __future__ import annotations

import math

import pytest
import torch
from torch.nn import functional as F

from backend.reference import training as tr
from backend.reference.config import ModelConfig
from backend.reference.model import DecoderLM

CFG = ModelConfig(vocab_size=61, d_model=32, n_layers=3, n_heads=2, d_ff=48, max_seq_len=16,
                  tie_embeddings=True)


def _model(seed=0, **kw) -> DecoderLM:
    return tr.build_model(CFG, torch.Generator().manual_seed(seed), **kw)


def test_shifted_loss_is_cross_entropy_of_each_position_on_the_next_token():
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 9, 61, generator=gen)
    ids = torch.randint(0, 61, (3, 9), generator=gen)
    # the oracle: every (b, t) pair scored by hand, t on token t + 1, averaged
    terms = [-torch.log_softmax(logits[b, t], -1)[ids[b, t + 1]] for b in range(3) for t in range(8)]
    assert tr.lm_loss(logits, ids) == pytest.approx(torch.stack(terms).mean().item(), rel=1e-6)
    oracle = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:])
    assert tr.lm_loss(logits, ids) == pytest.approx(oracle.item(), rel=1e-6)


def test_unshifted_loss_scores_each_position_on_its_own_token():
    gen = torch.Generator().manual_seed(2)
    logits = torch.randn(2, 5, 61, generator=gen)
    ids = torch.randint(0, 61, (2, 5), generator=gen)
    oracle = F.cross_entropy(logits.transpose(1, 2), ids)
    assert tr.lm_loss(logits, ids, shifted=False) == pytest.approx(oracle.item(), rel=1e-6)
    assert tr.lm_loss(logits, ids, shifted=False) != pytest.approx(tr.lm_loss(logits, ids).item())


def test_one_forward_gives_every_positions_loss_as_prefix_by_prefix_would():
    """The causal mask makes position t's logits those of the prefix alone: one pass, T losses."""
    model = _model().eval()
    ids = torch.randint(0, 61, (1, 10), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        full = model(ids).logits[0]  # (T, V)
        one_by_one = torch.stack([model(ids[:, : t + 1]).logits[0, -1] for t in range(10)])
    assert torch.allclose(full, one_by_one, atol=1e-5)


def test_init_draws_from_the_generator_alone_and_scales_residual_outputs():
    state = torch.random.get_rng_state()
    a, b = _model(seed=5), _model(seed=5)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global generator never moved
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q), name
    assert not torch.equal(_model(seed=6).embed_tokens.weight, a.embed_tokens.weight)
    big = tr.build_model(CFG.replace(d_model=256, d_ff=512, n_heads=4), torch.Generator().manual_seed(0))
    residual = 0.02 / math.sqrt(2 * CFG.n_layers)
    for name, p in big.named_parameters():
        if name.endswith(("o_proj.weight", "down_proj.weight")):
            assert p.std().item() == pytest.approx(residual, rel=0.05), name
        elif p.dim() == 2:
            assert p.std().item() == pytest.approx(0.02, rel=0.05), name
        else:
            assert torch.equal(p, torch.ones_like(p)), name  # RMSNorm gains
    assert big.lm_head.weight is big.embed_tokens.weight  # the tie survives the re-draw


def test_residual_scaling_can_be_turned_off():
    m = tr.build_model(CFG.replace(d_model=256, d_ff=512, n_heads=4), torch.Generator().manual_seed(0),
                       scale_residual=False)
    assert m.layers[0].mlp.down_proj.weight.std().item() == pytest.approx(0.02, rel=0.05)


def test_shipped_model_still_loads_unchanged():
    """training.py adds an init; DecoderLM's own is untouched, so the book's weights load as saved."""
    from backend.bookmodel.load import load_model

    model, _ = load_model()
    assert sum(p.numel() for p in model.parameters()) == 1_311_872


@pytest.mark.parametrize("warmup", [0, 100])
def test_the_book_models_schedule_is_torchs_warmup_then_cosine(warmup):
    """The book model's schedule (train.py calls the chapter's lr_at) against PyTorch's own
    schedulers: LinearLR from peak / warmup up to the peak, then CosineAnnealingLR down to
    min_lr_ratio of it."""
    from backend.bookmodel.train import TrainConfig, lr_at

    tc = TrainConfig(warmup_steps=warmup)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=tc.lr)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(
        opt, T_max=tc.steps - warmup, eta_min=tc.lr * tc.min_lr_ratio)
    sched = cosine if not warmup else torch.optim.lr_scheduler.SequentialLR(
        opt, [torch.optim.lr_scheduler.LinearLR(opt, 1 / warmup, 1.0, total_iters=warmup - 1),
              cosine], milestones=[warmup])
    for step in range(tc.steps):
        assert lr_at(step, tc) == pytest.approx(opt.param_groups[0]["lr"], rel=1e-9), step
        opt.step()
        sched.step()


def test_schedule_endpoints():
    peak = 3e-3
    assert tr.lr_at(0, peak, 10, 100) == pytest.approx(peak / 10)
    assert tr.lr_at(9, peak, 10, 100) == pytest.approx(peak)
    assert tr.lr_at(10, peak, 10, 100) == pytest.approx(peak)  # the cosine starts at the top
    assert tr.lr_at(100, peak, 10, 100) == pytest.approx(0.1 * peak)
    assert tr.lr_at(500, peak, 10, 100) == pytest.approx(0.1 * peak)
    assert tr.lr_at(0, peak, 0, 100) == pytest.approx(peak)  # no warm-up: full rate at once
    mid = tr.lr_at(55, peak, 10, 100)
    assert mid == pytest.approx(0.1 * peak + 0.9 * peak / 2)
    rates = [tr.lr_at(s, peak, 10, 100) for s in range(10, 101)]
    assert all(x >= y for x, y in zip(rates, rates[1:], strict=False))


def test_adamw_by_hand_equals_torch_adamw():
    gen = torch.Generator().manual_seed(7)
    w0 = torch.randn(5, 4, generator=gen)
    grads = [torch.randn(5, 4, generator=gen) * (10 ** k) for k in (-3, 0, 1, -1, 2)]
    ref = torch.nn.Parameter(w0.clone())
    opt = torch.optim.AdamW([ref], lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    mine, m, v = w0.clone(), torch.zeros_like(w0), torch.zeros_like(w0)
    for t, g in enumerate(grads, start=1):
        ref.grad = g.clone()
        opt.step()
        tr.adamw_update(mine, g, m, v, t, lr=1e-2)
        assert torch.allclose(mine, ref.detach(), rtol=1e-5, atol=1e-7), t
    assert torch.allclose(m, opt.state[ref]["exp_avg"], rtol=1e-5, atol=1e-9)
    assert torch.allclose(v, opt.state[ref]["exp_avg_sq"], rtol=1e-5, atol=1e-12)


def test_optimizer_decays_matrices_only():
    opt = tr.make_optimizer(_model(), 1e-3, weight_decay=0.1)
    decay, none = opt.param_groups
    assert decay["weight_decay"] == 0.1 and all(p.dim() == 2 for p in decay["params"])
    assert none["weight_decay"] == 0.0 and all(p.dim() == 1 for p in none["params"])


def test_clipping_caps_the_global_norm_and_no_clipping_leaves_it():
    stream = torch.randint(0, 61, (400,), generator=torch.Generator().manual_seed(4))
    batch = tr.random_windows(stream, 4, 16, torch.Generator().manual_seed(4))
    for clip in (1e-3, None):
        model = _model(std=1.0) if clip is None else _model()
        opt = tr.make_optimizer(model, 0.0)  # lr 0 (and no decay at lr 0): look at the gradients
        _, norm = tr.train_step(model, opt, batch, 0.0, clip)
        after = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))
        if clip is None:
            assert after.item() == pytest.approx(norm, rel=1e-5)
        else:
            assert norm > clip and after.item() == pytest.approx(clip, rel=1e-3)


def _streams():
    text = "the cat sat on the mat. " * 60
    ids = tr.encode_bytes(text)
    return ids[:1200], ids[1200:]


def test_training_lowers_the_loss_and_is_reproducible():
    train_ids, val_ids = _streams()
    rc = tr.RunConfig(steps=40, eval_every=20, batch_size=4, seq_len=16)
    a, b = tr.train(rc, train_ids, val_ids), tr.train(rc, train_ids, val_ids)
    assert a.train_loss == b.train_loss and a.val_loss == b.val_loss  # same seed, same thread count
    assert a.train_loss[0] == pytest.approx(math.log(256), abs=0.1)  # step 0: about a uniform guess
    assert a.val_loss[-1] < a.val_loss[0] - 1.0
    assert a.eval_steps == [0, 20, 40] and len(a.train_loss) == 40
    c = tr.train(rc.replace(seed=1), train_ids, val_ids)
    assert c.train_loss != a.train_loss


def test_unshifted_labels_learn_to_copy():
    train_ids, val_ids = _streams()
    rc = tr.RunConfig(steps=60, eval_every=60, batch_size=4, seq_len=16, shifted=False, lr=1e-2)
    r = tr.train(rc, train_ids, val_ids)
    assert r.val_loss[-1] < 0.2  # scored on the byte it can see: almost free


def test_bytes_round_trip_and_flops():
    assert tr.decode_bytes(tr.encode_bytes("naïve ∑")) == "naïve ∑"
    assert len(tr.encode_bytes("ï")) == 2  # one token per byte, not per character
    assert tr.training_flops(1e6, 1e9) == 6e15
