"""The book's DecoderLM against Hugging Face's LlamaForCausalLM: same weights, same tokens, measured.

``compare(config)`` returns a ``ParityReport`` (a dataclass; ``to_dict()`` for JSON) with the
largest absolute differences in logits, loss, attention weights, logits through the KV cache and
logits of a left-padded batch, and ``ok`` when every one is within tolerance; also where the
logits part (per position, per layer's hidden state, and whether the top token changes);
``dtype`` runs both models in bfloat16 instead of float32. A widget or a test calls it directly
(the parity widget hands it a ``pair`` whose book's side it has broken on purpose);
``python -m backend.reference.parity`` is the command-line front end. ``transformers`` is
imported only inside functions, so importing this module is cheap.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch

from ..hf_import import LOCK as HF_IMPORT_LOCK
from .config import ModelConfig
from .counting import count_parameters
from .model import DecoderLM, positions_from_mask
from .norms import RMSNorm
from .rng import isolated_rng

LOGIT_TOLERANCE = 1e-5  # fp32; eager attention on both sides (bf16: the same, see test_parity)
LOSS_TOLERANCE = 1e-5
ATTENTION_TOLERANCE = 1e-6  # weights lie in [0, 1]; fp32 softmax on both sides
DECODE_STEPS = 16  # positions checked one at a time through the cache
GAIN_STD = 0.1  # RMSNorm gains drawn as 1 + N(0, GAIN_STD): see build_pair
PAD_ID = 0  # the token id put in padded slots (masked, so any id gives the same real-token logits)


def hf_config(config: ModelConfig):
    with HF_IMPORT_LOCK:  # transformers resolves names lazily; not safe from two threads at once
        from transformers import LlamaConfig

    hf = LlamaConfig(
        vocab_size=config.vocab_size, hidden_size=config.d_model, intermediate_size=config.d_ff,
        num_hidden_layers=config.n_layers, num_attention_heads=config.n_heads,
        num_key_value_heads=config.n_kv_heads, max_position_embeddings=config.max_seq_len,
        rms_norm_eps=config.norm_eps, tie_word_embeddings=config.tie_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": config.rope_theta},
        attention_bias=config.attention_bias, pad_token_id=None, bos_token_id=None, eos_token_id=None,
    )
    hf._attn_implementation = "eager"  # the readable path, and the only one that returns attention weights
    return hf


def hf_state_dict(reference_state: dict) -> dict:
    """Rename the book's parameter names to Hugging Face's (the tensors are shared, not copied)."""
    renames = {".attn.": ".self_attn.", ".attn_norm.": ".input_layernorm.", ".mlp_norm.": ".post_attention_layernorm."}
    out = {}
    for name, tensor in reference_state.items():
        hf_name = name if name.startswith("lm_head") else "model." + name
        for old, new in renames.items():
            hf_name = hf_name.replace(old, new)
        out[hf_name] = tensor
    return out


def build_pair(config: ModelConfig, seed: int, dtype: torch.dtype = torch.float32):
    """The book's model with seeded random weights, and a LlamaForCausalLM holding the same weights.

    The weights are drawn from a private generator (never the global seed: requests run on
    threads), N(0, 0.02) for every matrix as ``DecoderLM._init_weights`` does, then every RMSNorm
    gain as 1 + N(0, GAIN_STD): left at its initial 1 a gain multiplies by nothing, and a gain
    forgotten, applied at the wrong step or given to the other norm of the block in the name
    mapping would change no number. Only parameters are cast to ``dtype``: Llama's RoPE
    frequencies stay a float32 buffer, as when loading a checkpoint.
    """
    with HF_IMPORT_LOCK:
        from transformers import LlamaForCausalLM

    with isolated_rng():  # every weight is drawn from gen below
        ours = DecoderLM(config).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in ours.parameters():  # the tied head is one parameter, drawn once
            if p.dim() == 2:
                p.normal_(0.0, 0.02, generator=gen)
        for m in ours.modules():  # after the matrices, so they are the same draws as without
            if isinstance(m, RMSNorm):
                m.weight.normal_(1.0, GAIN_STD, generator=gen)
        for p in ours.parameters():
            p.data = p.data.to(dtype)
    with isolated_rng():  # the same weights are loaded below
        theirs = LlamaForCausalLM(hf_config(config)).eval()
    theirs.load_state_dict(hf_state_dict(ours.state_dict()), strict=True)
    with torch.no_grad():
        for p in theirs.parameters():
            p.data = p.data.to(dtype)
    return ours, theirs


def left_pad_mask(batch: int, seq_len: int) -> torch.Tensor:
    """(B, T) 1/0 mask: row b has b * T // (2B) pads on the left (row 0 none, the last about half)."""
    mask = torch.ones(batch, seq_len, dtype=torch.long)
    for b in range(batch):
        mask[b, : b * seq_len // (2 * batch)] = 0
    return mask


@dataclass(frozen=True)
class ParityReport:
    config: dict
    seed: int
    seq_len: int
    batch: int
    n_params: int
    hf_n_params: int
    loss: float
    hf_loss: float
    abs_loss_diff: float
    max_abs_attention_diff: float
    max_abs_cached_logit_diff: float
    max_abs_padded_logit_diff: float  # real positions of a left-padded batch, both models given the mask
    tolerance: float  # logits (cached and padded too)
    attention_tolerance: float
    ok: bool
    dtype: str
    position_logit_diff: list  # (T,): largest |Δ logit| at each position, over the batch and vocabulary
    position_argmax_changed: list  # (T,): True where some row's top token differs
    layer_hidden_diff: list  # (L,): largest |Δ| of each layer's output hidden state
    max_abs_logit_diff: float  # last, so the JSON line ends with it (the README says so)

    def to_dict(self) -> dict:
        return asdict(self)


# --8<-- [start:compare]
@torch.no_grad()
def compare(config: ModelConfig, seed: int = 0, seq_len: int = 16, batch: int = 2,
            dtype: torch.dtype = torch.float32, pair=None,
            tolerance: float = LOGIT_TOLERANCE) -> ParityReport:
    """Run both models on the same random tokens; return the measured differences. `pair`:
    two models already holding the same weights (trained ones, say), else seeded random ones;
    `tolerance`: on the logits (a trained model's are larger, and so is their rounding)."""
    ours, theirs = pair or build_pair(config, seed, dtype)
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, config.vocab_size, (batch, seq_len), generator=gen)
    with layer_outputs(ours.layers) as ha, layer_outputs(theirs.model.layers) as hb:
        a = ours(ids, labels=ids, output_attentions=True)
        b = theirs(input_ids=ids, labels=ids, output_attentions=True)
    gap = (a.logits.float() - b.logits.float()).abs()  # (B, T, V)
    logit_diff = gap.max().item()
    changed = (a.logits.argmax(-1) != b.logits.argmax(-1)).any(dim=0)  # (T,)
    layer_diff = [(x.float() - y.float()).abs().max().item() for x, y in zip(ha, hb)]
    loss_diff = abs(a.loss.item() - b.loss.item())
    attn_diff = max((x.float() - y.float()).abs().max().item() for x, y in zip(a.attentions, b.attentions))

    # the same positions through the KV cache: prefill a prefix at once, then decode one token at a time
    prefix = max(1, seq_len - DECODE_STEPS)
    cache = ours.new_cache()
    cached_logits = [ours(ids[:, :prefix], cache=cache).logits]
    for t in range(prefix, seq_len):
        cached_logits.append(ours(ids[:, t : t + 1], cache=cache).logits)
    cached_diff = (torch.cat(cached_logits, dim=1).float() - b.logits.float()).abs().max().item()

    # a left-padded batch: HF's forward is given the positions its generate() would compute
    mask = left_pad_mask(batch, seq_len)
    padded = ids.masked_fill(mask == 0, PAD_ID)
    pa = ours(padded, attention_mask=mask, output_attentions=True)
    pb = theirs(input_ids=padded, attention_mask=mask, position_ids=positions_from_mask(mask, seq_len),
                output_attentions=True)
    real = mask.bool()  # (B, T): pads' own outputs are never read, so only real positions count
    padded_diff = (pa.logits.float() - pb.logits.float()).abs()[real].max().item()
    attn_diff = max(attn_diff, *((x.float() - y.float()).abs()[real[:, None, :, None].expand_as(x)].max().item()
                                 for x, y in zip(pa.attentions, pb.attentions)))

    ok = (max(logit_diff, cached_diff, padded_diff) <= tolerance and loss_diff <= LOSS_TOLERANCE
          and attn_diff <= ATTENTION_TOLERANCE)
    return ParityReport(
        config=config.to_dict(), seed=seed, seq_len=seq_len, batch=batch,
        n_params=count_parameters(config).total, hf_n_params=sum(p.numel() for p in theirs.parameters()),
        loss=a.loss.item(), hf_loss=b.loss.item(), abs_loss_diff=loss_diff,
        max_abs_attention_diff=attn_diff, max_abs_cached_logit_diff=cached_diff,
        max_abs_padded_logit_diff=padded_diff, tolerance=tolerance,
        attention_tolerance=ATTENTION_TOLERANCE, ok=ok, dtype=str(dtype).removeprefix("torch."),
        position_logit_diff=gap.amax(dim=(0, 2)).tolist(), position_argmax_changed=changed.tolist(),
        layer_hidden_diff=layer_diff, max_abs_logit_diff=logit_diff,
    )
# --8<-- [end:compare]


@contextmanager
def layer_outputs(layers):
    """Collect each layer's output hidden state (B, T, d) during one forward, via hooks on these
    modules, removed on exit. Only for the private pair ``build_pair`` made for one request."""
    seen: list[torch.Tensor] = []
    hooks = [m.register_forward_hook(lambda _m, _i, out: seen.append(out[0] if isinstance(out, tuple) else out))
             for m in layers]
    try:
        yield seen
    finally:
        for h in hooks:
            h.remove()
