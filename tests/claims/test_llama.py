"""Every qualitative sentence of docs/chapters/llama.md, checked over computed values (from
"Break one piece" on: test_llama_faults.py)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from backend.compute import REGISTRY
from backend.reference.llama_compare import ATTENTION_TOLERANCE, LOGIT_TOLERANCE
from backend.reference.presets import PRESETS

PARITY = REGISTRY["parity"]


def values(**params):
    return PARITY.compute(PARITY.SPEC.resolve(params))["values"]


# 'Identical, bit for bit' (max_abs_logit_diff == 0.0) holds on any CPU: the book's forward is
# written op for op as transformers' eager Llama (the same torch calls in the same order, on
# tensors of the same shapes), and compare() runs the two in one call on one thread count, so
# whatever kernels this CPU's torch picks, both sides get the same ones and the same sums. Held
# with MKL's AVX2 and generic x86 kernels (MKL_ENABLE_INSTRUCTIONS=AVX2, MKL_CBWR=COMPATIBLE),
# ATen's AVX2 and scalar code (ATEN_CPU_CAPABILITY) and 1 to 16 threads. The cached logits are
# another computation (one position at a time): close, not equal.


def test_start_values_identical_bit_for_bit_cache_only_close():
    """'the full-forward logits agree ... identical, bit for bit'; 'cached logits only close'."""
    v = values()
    assert v["max_abs_logit_diff"] == 0.0 and v["max_abs_attention_diff"] == 0.0
    assert 0.0 < v["cached_vs_uncached_diff"] <= LOGIT_TOLERANCE  # 'well inside the tolerance'
    assert v["abs_loss_diff"] <= LOGIT_TOLERANCE  # 'only rounding separates them'


# 'Move any control: more layers, one key/value head, as many as query heads, a tied head, another
# RoPE base, a longer sequence, another seed': each end of each slider the text names.
MOVES = [
    {"n_layers": 1}, {"n_layers": 4}, {"n_kv": 1}, {"n_kv": 8}, {"tied": True},
    {"rope_theta": 100.0}, {"rope_theta": 1_000_000.0}, {"seq_len": 2}, {"seq_len": 64},
    {"seed": 999}, {"n_layers": 1, "d_model": 256, "n_heads": 16, "n_kv": 4, "d_ff": 896, "vocab": 256},
    {"d_model": 16, "n_heads": 1, "n_kv": 1, "d_ff": 8, "vocab": 16},
]


@pytest.mark.parametrize("move", MOVES, ids=[str(m) for m in MOVES])
def test_identical_and_within_tolerance_across_the_controls(move):
    v = values(**move)
    assert v["max_abs_logit_diff"] == 0.0 and v["max_abs_attention_diff"] == 0.0  # 'stay identical'
    assert v["cached_vs_uncached_diff"] <= LOGIT_TOLERANCE  # 'stay below the tolerance'
    assert v["max_abs_padded_logit_diff"] <= LOGIT_TOLERANCE
    assert v["max_abs_attention_diff"] <= ATTENTION_TOLERANCE
    assert v["ok"]


def test_rmsnorm_does_not_centre():
    """'a vector shifted well off zero comes out with a mean far from zero but with rms one'."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    torch.manual_seed(0)
    x = torch.randn(4, 16) + 3.0
    with torch.no_grad():
        y = LlamaRMSNorm(16)(x)
    assert (y.mean(-1) > 0.9).all()
    assert torch.allclose(y.pow(2).mean(-1).sqrt(), torch.ones(4), atol=1e-4)
    assert F.layer_norm(x, (16,)).mean(-1).abs().max() < 1e-5


def test_default_eps_differs_as_stated():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    from backend.reference.config import ModelConfig

    assert LlamaRMSNorm(4).variance_epsilon == 1e-6 and LlamaConfig().rms_norm_eps == 1e-6
    assert ModelConfig(vocab_size=8, d_model=8, n_layers=1, n_heads=2, d_ff=8).norm_eps == 1e-5


def test_tying_declared_but_llama_3_8b_does_not_tie():
    from transformers import LlamaForCausalLM

    assert LlamaForCausalLM._tied_weights_keys == {"lm_head.weight": "model.embed_tokens.weight"}
    assert PRESETS["llama-3-8b"].tie_embeddings is False and PRESETS["llama-3.2-1b"].tie_embeddings


def test_silu_is_the_default_activation_and_the_mask_is_built_outside_attention():
    import inspect

    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as ml

    assert LlamaConfig().hidden_act == "silu"
    assert "create_causal_mask" in inspect.getsource(ml.LlamaModel.forward)
    attn = inspect.getsource(ml.LlamaAttention.forward)
    assert "create_causal_mask" not in attn and "ALL_ATTENTION_FUNCTIONS.get_interface" in attn
    assert "slice_logits_to_keep" in inspect.getsource(ml.LlamaForCausalLM.forward)


def test_bad_heads_refused_with_the_rule():
    from backend.compute.spec import ParamError

    with pytest.raises(ParamError, match="must divide"):
        values(n_heads=8, n_kv=3)


@pytest.mark.parametrize("move", [{"d_model": 256, "n_layers": 4},
                                  {"d_model": 256, "n_heads": 16, "n_kv": 16},
                                  {"d_model": 256, "vocab": 4096}])
def test_the_parameter_cap_refuses_what_the_text_says(move):
    """'The widest combinations are refused, with the parameter count and the controls to lower'
    (chapter); 'at the widest width four layers, sixteen query and sixteen key/value heads, or the
    largest vocabulary are refused' (docs/chapters/_compute/llama.md)."""
    from backend.compute.spec import ParamError

    assert PARITY.SPEC.params[[p.name for p in PARITY.SPEC.params].index("vocab")].max == 4096
    with pytest.raises(ParamError, match=f"{PARITY.MAX_PARAMS:,}"):
        values(**move)
    PARITY.config_of(PARITY.SPEC.resolve({"d_model": 256}))  # the width alone passes


def test_head_sliders_follow_the_rules():
    """'query heads must divide the width and leave an even head width; key/value heads must
    divide the query heads; any other value is refused with the rule it breaks'."""
    from backend.compute.spec import ParamError

    for d in range(16, 257, 16):
        for h in range(1, 17):
            ok = d % h == 0 and (d // h) % 2 == 0
            assert (h in PARITY.head_counts(d)) == ok
    with pytest.raises(ParamError, match="even"):
        PARITY.SPEC.resolve({"d_model": 48, "n_heads": 16})
    with pytest.raises(ParamError, match="query heads h"):
        PARITY.SPEC.resolve({"n_heads": 8, "n_kv": 3})


def test_mask_is_additive_for_eager_only_and_default_kernel_is_not_eager():
    """'create_causal_mask ... additive for eager, boolean for SDPA, None when nothing is padded';
    'a model built from a bare LlamaConfig reports sdpa'; the registry has no 'eager' entry of its
    own: get_interface falls back to eager_attention_forward."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.llama import modeling_llama as ml

    from widgets.build import hf_source

    assert hf_source.mask_dtype("eager") == "torch.float32"
    assert hf_source.mask_dtype("sdpa") == "torch.bool"
    assert hf_source.mask_dtype("sdpa", padded=False) == "None"
    assert hf_source.default_attention() != "eager"
    kernels = hf_source.attention_kernels()
    assert "eager" not in kernels and {"sdpa", "flex_attention"} <= set(kernels)
    assert ALL_ATTENTION_FUNCTIONS.get_interface("eager", ml.eager_attention_forward) \
        is ml.eager_attention_forward


def test_position_ids_given_as_generate_would_and_leaving_them_out_changes_only_rounding():
    """'The check passes Llama those same positions ... Leaving them out would change only rounding
    here: RoPE makes each score depend on the difference of two positions'. The positions really
    differ (the shift is not zero), yet the real tokens' logits agree within tolerance either way."""
    from backend.reference.config import ModelConfig
    from backend.reference.llama_compare import build_pair, left_pad_mask
    from backend.reference.model import positions_from_mask

    cfg = ModelConfig(vocab_size=64, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=64,
                      max_seq_len=12)
    ours, theirs = build_pair(cfg, 0)
    mask = left_pad_mask(2, 12)
    ids = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(0))
    real = mask.bool()
    with torch.no_grad():
        a = ours(ids, attention_mask=mask).logits
        wrong = theirs(input_ids=ids, attention_mask=mask).logits
        right = theirs(input_ids=ids, attention_mask=mask,
                       position_ids=positions_from_mask(mask, 12)).logits
    assert (positions_from_mask(mask, 12) != torch.arange(12)).any()
    assert (a - right).abs()[real].max() <= LOGIT_TOLERANCE
    assert (a - wrong).abs()[real].max() <= LOGIT_TOLERANCE


def test_rmsnorm_bf16_mean_error_does_not_grow_with_width():
    """'PyTorch already accumulates a bfloat16 mean at higher precision internally, so its error is
    about the same for a short row as for a long one'."""
    errs = []
    for width in (16, 4096, 65536):
        torch.manual_seed(0)
        x = torch.randn(64, width).pow(2)
        truth = x.double().mean(-1)
        got = x.to(torch.bfloat16).mean(-1).double()
        errs.append(((got - truth).abs() / truth).max().item())
    assert max(errs) < 2 * min(errs) and max(errs) < 2 ** -7


def test_rotate_half_and_apply_rotary_pos_emb_are_the_books():
    """'rotate_half ... returns (-x2, x1): coordinate i is paired with i + d_k/2'; the book's
    apply_rope computes what apply_rotary_pos_emb computes."""
    from transformers.models.llama import modeling_llama as hf

    from backend.reference import rope

    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 4, 5, 16, generator=g), torch.randn(2, 4, 5, 16, generator=g)
    assert torch.equal(hf.rotate_half(q), rope.rotate_half(q))
    assert torch.equal(hf.rotate_half(q)[..., 8:], q[..., :8])  # i + d/2 takes i
    cos, sin = rope.rope_cos_sin(torch.arange(5).expand(2, 5), 16)
    ours = rope.apply_rope(q, k, cos, sin)
    theirs = hf.apply_rotary_pos_emb(q, k, cos, sin)
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))


def _interleaved_rope(x, positions, theta=10000.0):
    """RoPE pairing neighbours (2i, 2i+1), as RoFormer and Meta's original code do."""
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = positions[:, None].double() * inv  # (T, d/2)
    c, s = ang.cos(), ang.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x1 * c - x2 * s
    out[..., 1::2] = x1 * s + x2 * c
    return out


def test_reordering_the_rows_makes_the_two_layouts_agree_and_skipping_it_does_not():
    """'reorder the rows of W_Q and W_K so that neighbours become halves and the half-split
    rotation reproduces the interleaved one exactly ... Load interleaved weights without that
    reordering and the model still runs, with its positions scrambled'"""
    from backend.reference import rope

    d, T, d_model = 16, 7, 32
    g = torch.Generator().manual_seed(0)
    W_q = torch.randn(d, d_model, generator=g, dtype=torch.float64)
    W_k = torch.randn(d, d_model, generator=g, dtype=torch.float64)
    x = torch.randn(T, d_model, generator=g, dtype=torch.float64)
    pos = torch.arange(T)
    scores_meta = _interleaved_rope(x @ W_q.T, pos) @ _interleaved_rope(x @ W_k.T, pos).T

    perm = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])  # neighbours -> halves
    cos, sin = rope.rope_cos_sin(pos[None], d, precision=torch.float64, dtype=torch.float64)
    def half(W):
        y = (x @ W.T)[None, None]  # (1, 1, T, d)
        return rope.apply_rope(y, y, cos, sin)[0][0, 0]
    assert torch.allclose(half(W_q[perm]) @ half(W_k[perm]).T, scores_meta, atol=1e-10)
    unpermuted = half(W_q) @ half(W_k).T
    assert torch.isfinite(unpermuted).all()
    assert (unpermuted - scores_meta).abs().max() > 0.1 * scores_meta.abs().max()


def test_repeat_kv_copy_is_the_eager_kernels_choice_not_a_requirement():
    """'reshaping the queries into groups, SDPA's enable_gqa ... use the shared heads without
    copying them': same output as repeat_kv then plain attention."""
    from transformers.models.llama.modeling_llama import repeat_kv

    g = torch.Generator().manual_seed(0)
    B, h, kv, T, dk = 2, 8, 2, 6, 16
    q = torch.randn(B, h, T, dk, generator=g)
    k, v = torch.randn(B, kv, T, dk, generator=g), torch.randn(B, kv, T, dk, generator=g)
    copied = F.scaled_dot_product_attention(q, repeat_kv(k, h // kv), repeat_kv(v, h // kv), is_causal=True)
    shared = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert torch.allclose(copied, shared, atol=1e-6)
    grouped = q.view(B, kv, h // kv * T, dk)  # each key/value head's query heads in one block
    mask = torch.ones(T, T, dtype=torch.bool).tril().repeat(h // kv, 1)
    by_group = F.scaled_dot_product_attention(grouped, k, v, attn_mask=mask).view(B, h, T, dk)
    assert torch.allclose(copied, by_group, atol=1e-6)


def test_llama_model_forward_builds_the_mask_and_the_tables_once():
    """'create_causal_mask, called here and only here'; 'RoPE's tables: self.rotary_emb(...) once'"""
    import inspect

    from transformers.models.llama import modeling_llama as hf

    file = inspect.getsource(hf)
    model_fwd = inspect.getsource(hf.LlamaModel.forward)
    assert file.count("create_causal_mask(") == model_fwd.count("create_causal_mask(") == 1
    assert model_fwd.count("self.rotary_emb(") == 1
    loop = model_fwd.index("for decoder_layer in self.layers")
    assert model_fwd.index("create_causal_mask(") < loop and model_fwd.index("self.rotary_emb(") < loop
    assert model_fwd.index("self.norm(") > loop and "lm_head" not in model_fwd


def test_the_norm_gains_are_drawn_so_a_mistake_with_them_shows():
    """'every RMSNorm gain too, around 1 with a spread of 0.1: left at their initial 1, the gains
    would multiply by nothing, and a gain forgotten, applied before the rounding instead of after,
    or handed to the block's other norm when the names are mapped would leave every number the
    same.' Each of the three mistakes, made in the pair `build_pair` returns: the comparison fails
    with the drawn gains, and with every gain put back to 1 it passes, bit for bit."""
    from backend.reference.config import ModelConfig
    from backend.reference.llama_compare import GAIN_STD, build_pair, compare
    from backend.reference.norms import RMSNorm

    class NoGain(RMSNorm):
        def forward(self, x):
            wide = x.float()
            return (wide * (wide * wide).mean(-1, keepdim=True).add(self.eps).rsqrt()).to(x.dtype)

    class GainBeforeRounding(RMSNorm):
        def forward(self, x):
            wide = x.float()
            unit = wide * (wide * wide).mean(-1, keepdim=True).add(self.eps).rsqrt()
            return (self.weight.float() * unit).to(x.dtype)

    def swap_class(model, cls):
        for m in model.modules():
            if type(m) is RMSNorm:
                m.__class__ = cls

    def swap_norms_in_llama(theirs):
        with torch.no_grad():
            for layer in theirs.model.layers:
                a, b = layer.input_layernorm.weight, layer.post_attention_layernorm.weight
                a_old = a.clone()
                a.copy_(b)
                b.copy_(a_old)

    mistakes = {  # name -> (dtype it shows in, what it does to the pair)
        "gain forgotten": (torch.float32, lambda ours, theirs: swap_class(ours, NoGain)),
        "gain before the rounding": (torch.bfloat16, lambda ours, theirs: swap_class(ours, GainBeforeRounding)),
        "norms swapped in the mapping": (torch.float32, lambda ours, theirs: swap_norms_in_llama(theirs)),
    }
    cfg = ModelConfig(vocab_size=512, d_model=64, n_layers=2, n_heads=8, n_kv_heads=2, d_ff=172,
                      max_seq_len=16)
    assert values()["gain_std"] == GAIN_STD == 0.1
    for name, (dtype, make) in mistakes.items():
        ours, theirs = build_pair(cfg, 999, dtype)
        gains = [m.weight for m in ours.modules() if isinstance(m, RMSNorm)]
        assert all(bool((g != 1).any()) for g in gains)
        make(ours, theirs)
        assert not compare(cfg, seed=999, dtype=dtype, pair=(ours, theirs)).ok, name
        with torch.no_grad():  # the same mistake with every gain at 1, in both models
            for m in [*ours.modules(), *theirs.modules()]:
                if isinstance(m, RMSNorm) or type(m).__name__ == "LlamaRMSNorm":
                    m.weight.fill_(1.0)
        r = compare(cfg, seed=999, dtype=dtype, pair=(ours, theirs))
        assert r.ok and r.max_abs_logit_diff == 0.0, name


def test_a_gain_moved_past_the_rounding_shows_only_in_bfloat16():
    """'A gain applied before the rounding to bfloat16 instead of after shows only in bfloat16:
    in float32 nothing is rounded between the two.' Every RMSNorm computing in its input's own
    dtype (the norm_upcast fault, which moves the gain's product past the cast) leaves float32
    bit for bit and changes bfloat16; the gains are drawn, not all 1 ('drawn around 1')."""
    assert values(fault="norm_upcast", dtype="float32")["max_abs_logit_diff"] == 0.0
    assert values(fault="norm_upcast", dtype="bfloat16")["max_abs_logit_diff"] > 0.0
    from backend.reference.llama_compare import GAIN_STD
    assert values()["gain_std"] == GAIN_STD > 0
