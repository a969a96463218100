"""Training the book's DecoderLM: the loss, the initialisation, AdamW, the schedule, clipping.

The loop is the one every GPT-style model is trained with (Radford et al., GPT-2, 2019; Touvron
et al., Llama 2, 2023; Karpathy's nanoGPT): random windows of a token stream, next-token
cross-entropy at every position in one forward pass, gradients clipped to a global norm, an AdamW
step (Loshchilov & Hutter, 2019) at a learning rate that warms up linearly and then decays on a
cosine. Everything random takes a `torch.Generator` of its own: the same seed gives the same run,
and no call reads or moves PyTorch's global generator (`backend/reference/rng.py`).

The tiny runs the training chapter measures read bytes, not BPE tokens: a vocabulary of 256,
so a loss in nats divided by ln 2 is bits per byte with no tokenizer in between.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import torch
from torch.nn import functional as F

from .config import ModelConfig
from .model import DecoderLM, next_token_loss
from .rng import isolated_rng

BYTE_VOCAB = 256  # one token per byte value


def encode_bytes(text: str) -> torch.Tensor:
    """Text -> (n,) int64 token ids, one per UTF-8 byte."""
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)


def decode_bytes(ids) -> str:
    """Token ids -> text; a byte sequence cut inside a character shows a replacement mark."""
    return bytes(int(i) for i in ids).decode("utf-8", errors="replace")


# --8<-- [start:loss]
def lm_loss(logits: torch.Tensor, ids: torch.Tensor, shifted: bool = True) -> torch.Tensor:
    """Mean cross-entropy over every position of (B, T, V) logits for (B, T) ids.

    shifted=True is the objective: position t is scored on token t + 1 (`next_token_loss`, the
    model's own). shifted=False is the off-by-one bug: position t is scored on token t, which the
    causal mask lets it see, so the model learns to copy its input."""
    if shifted:
        return next_token_loss(logits, ids)  # (B, T-1) targets, one forward pass
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), ids.reshape(-1))
# --8<-- [end:loss]


# --8<-- [start:init]
RESIDUAL_OUTPUTS = ("o_proj", "down_proj")  # the two matrices that write into the residual stream


@torch.no_grad()
def init_weights(model: DecoderLM, generator: torch.Generator, std: float = 0.02,
                 scale_residual: bool = True) -> DecoderLM:
    """Every matrix N(0, std), norm gains 1, biases 0 (GPT-2's and Llama's 0.02). The matrices that
    add into the residual stream get std / sqrt(2 L): each of the L blocks adds twice, and the
    stream's variance grows with the number of additions (GPT-2, Radford et al. 2019, sec. 2.3)."""
    residual_std = std / math.sqrt(2 * model.config.n_layers) if scale_residual else std
    for name, module in model.named_modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)):
            if module is model.lm_head and model.config.tie_embeddings:
                continue  # the same matrix as the embedding, drawn once
            s = residual_std if name.endswith(RESIDUAL_OUTPUTS) else std
            module.weight.normal_(0.0, s, generator=generator)
            if getattr(module, "bias", None) is not None:
                module.bias.zero_()
        elif hasattr(module, "weight") and isinstance(module.weight, torch.nn.Parameter):
            module.weight.fill_(1.0)  # RMSNorm's gain: start as the identity
    return model
# --8<-- [end:init]


def build_model(config: ModelConfig, generator: torch.Generator, std: float = 0.02,
                scale_residual: bool = True) -> DecoderLM:
    """A DecoderLM drawn from `generator` alone. The constructor's own draw (from the global
    generator) happens inside `isolated_rng`, which gives that generator back untouched, and
    is then overwritten by `init_weights`."""
    with isolated_rng(0):
        model = DecoderLM(config)
    return init_weights(model, generator, std, scale_residual)


# --8<-- [start:schedule]
def lr_at(step: int, peak: float, warmup_steps: int, total_steps: int, min_ratio: float = 0.1) -> float:
    """Linear warm-up to `peak` over `warmup_steps` (step 0 already takes peak / warmup_steps),
    then a half cosine down to min_ratio * peak at `total_steps`, flat after it."""
    if step < warmup_steps:
        return peak * (step + 1) / warmup_steps
    progress = min((step - warmup_steps) / max(1, total_steps - warmup_steps), 1.0)
    floor = peak * min_ratio
    return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * progress))
# --8<-- [end:schedule]


# --8<-- [start:adamw]
@torch.no_grad()
def adamw_update(p: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor, t: int,
                 lr: float, betas=(0.9, 0.95), eps: float = 1e-8, weight_decay: float = 0.1) -> None:
    """One AdamW step on one tensor, in place (t counts from 1). What torch.optim.AdamW does."""
    b1, b2 = betas
    p.mul_(1 - lr * weight_decay)  # decoupled decay: shrink the weight, not the gradient
    m.mul_(b1).add_(g, alpha=1 - b1)  # first moment: a running mean of the gradient
    v.mul_(b2).addcmul_(g, g, value=1 - b2)  # second moment: a running mean of its square
    m_hat = m / (1 - b1 ** t)  # both start at 0: undo that bias in the early steps
    v_hat = v / (1 - b2 ** t)
    p.add_(-lr * m_hat / (v_hat.sqrt() + eps))  # each coordinate moves about lr, whatever its scale
# --8<-- [end:adamw]


def make_optimizer(model: DecoderLM, lr: float, weight_decay: float = 0.1,
                   betas=(0.9, 0.95)) -> torch.optim.AdamW:
    """AdamW with decay on the matrices only; norm gains (1-d) are not pulled towards 0."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=betas)


def random_windows(stream: torch.Tensor, batch_size: int, seq_len: int,
                   generator: torch.Generator) -> torch.Tensor:
    """batch_size windows of seq_len tokens at random offsets: (B, T)."""
    starts = torch.randint(0, len(stream) - seq_len + 1, (batch_size,), generator=generator)
    return torch.stack([stream[s: s + seq_len] for s in starts.tolist()]).long()


@torch.no_grad()
def mean_loss(model: DecoderLM, stream: torch.Tensor, seq_len: int, shifted: bool = True,
              limit: int | None = None) -> float:
    """Mean loss over the stream's first `limit` non-overlapping windows (all by default), in
    nats per token, scored with the same labels the run trains on."""
    n = len(stream) // seq_len if limit is None else min(limit, len(stream) // seq_len)
    windows = stream[: n * seq_len].view(n, seq_len).long()  # (n, T)
    was_training = model.training
    model.eval()
    loss = lm_loss(model(windows).logits, windows, shifted).item()
    model.train(was_training)
    return loss


@dataclass(frozen=True)
class RunConfig:
    """A tiny training run: the model's sizes, the optimisation, and what is broken on purpose."""

    d_model: int = 32
    n_layers: int = 2
    n_heads: int = 2
    d_ff: int = 96
    seq_len: int = 32
    batch_size: int = 16
    steps: int = 200
    lr: float = 3e-3
    warmup_steps: int = 30
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    grad_clip: float | None = 1.0  # None: no clipping
    init_std: float = 0.02
    scale_residual: bool = True
    shifted: bool = True  # False: the off-by-one label bug
    eval_every: int = 20
    seed: int = 0

    def model_config(self) -> ModelConfig:
        return ModelConfig(vocab_size=BYTE_VOCAB, d_model=self.d_model, n_layers=self.n_layers,
                           n_heads=self.n_heads, d_ff=self.d_ff, max_seq_len=self.seq_len,
                           tie_embeddings=True)

    def replace(self, **changes) -> RunConfig:
        return replace(self, **changes)


@dataclass
class RunResult:
    model: DecoderLM
    steps: list[int] = field(default_factory=list)  # every step, from 0
    train_loss: list[float] = field(default_factory=list)  # the batch's loss before its update
    grad_norm: list[float] = field(default_factory=list)  # before clipping
    lr: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)  # 0, eval_every, ..., steps
    val_loss: list[float] = field(default_factory=list)
    train_eval_loss: list[float] = field(default_factory=list)  # the training text, scored like val
    diverged_at: int | None = None  # the step whose loss (or evaluation) was no longer finite


# --8<-- [start:loop]
def train_step(model: DecoderLM, opt: torch.optim.Optimizer, batch: torch.Tensor, lr: float,
               grad_clip: float | None, shifted: bool = True) -> tuple[float, float]:
    """One update: forward, loss at every position, backward, clip, AdamW. Returns the loss
    and the gradient's global norm before clipping."""
    for group in opt.param_groups:
        group["lr"] = lr
    loss = lm_loss(model(batch).logits, batch, shifted)  # (B, T, V) logits, one pass
    opt.zero_grad(set_to_none=True)
    loss.backward()
    max_norm = grad_clip if grad_clip is not None else math.inf  # inf: measure, change nothing
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    opt.step()
    return loss.item(), norm.item()


def train(rc: RunConfig, train_stream: torch.Tensor, val_stream: torch.Tensor) -> RunResult:
    gen = torch.Generator().manual_seed(rc.seed)  # the initialisation, then every batch
    model = build_model(rc.model_config(), gen, rc.init_std, rc.scale_residual)
    opt = make_optimizer(model, rc.lr, rc.weight_decay)
    out = RunResult(model)
    for step in range(rc.steps + 1):
        if step % rc.eval_every == 0 or step == rc.steps:
            val = mean_loss(model, val_stream, rc.seq_len, rc.shifted)
            # as many windows of the training text as the validation text has, scored the same way
            n_val = len(val_stream) // rc.seq_len
            seen = mean_loss(model, train_stream, rc.seq_len, rc.shifted, n_val)
            if not (math.isfinite(val) and math.isfinite(seen)):
                out.diverged_at = step
                break
            out.eval_steps.append(step)
            out.val_loss.append(val)
            out.train_eval_loss.append(seen)
        if step == rc.steps:
            break
        lr = lr_at(step, rc.lr, rc.warmup_steps, rc.steps, rc.min_lr_ratio)
        batch = random_windows(train_stream, rc.batch_size, rc.seq_len, gen)  # (B, T)
        loss, norm = train_step(model, opt, batch, lr, rc.grad_clip, rc.shifted)
        if not (math.isfinite(loss) and math.isfinite(norm)):
            out.diverged_at = step  # diverged: the weights are no longer numbers; stop here
            break
        out.steps.append(step)
        out.train_loss.append(loss)
        out.grad_norm.append(norm)
        out.lr.append(lr)
    return out
# --8<-- [end:loop]


@torch.no_grad()
def greedy_bytes(model: DecoderLM, prompt: str, n_new: int) -> str:
    """The model's most likely continuation of `prompt`, n_new bytes, kept inside its window."""
    ids = encode_bytes(prompt)[None]  # (1, T)
    model.eval()
    for _ in range(n_new):
        window = ids[:, -model.config.max_seq_len:]
        nxt = model(window, logits_to_keep=1).logits[:, -1].argmax(-1, keepdim=True)  # (1, 1)
        ids = torch.cat([ids, nxt], dim=1)
    return decode_bytes(ids[0, -n_new:].tolist())


@torch.no_grad()
def step0_stats(model: DecoderLM, batch: torch.Tensor) -> dict:
    """What the untrained model says: its loss, and how spread out its logits and its residual
    stream are (standard deviations over every position and entry)."""
    out = model(batch)
    x = model.embed_tokens(batch)
    return {"loss": lm_loss(out.logits, batch).item(), "logit_std": out.logits.std().item(),
            "logit_max": out.logits.abs().max().item(), "embed_std": x.std().item(),
            "uniform_loss": math.log(model.config.vocab_size)}


def training_flops(n_params: float, n_tokens: float) -> float:
    """About 6 N D: a forward pass costs 2 multiply-adds' worth (2 FLOPs) per parameter per token,
    the backward pass twice that (Kaplan et al. 2020, sec. 2.1)."""
    return 6.0 * n_params * n_tokens
