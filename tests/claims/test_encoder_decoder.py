"""Every qualitative sentence of docs/chapters/encoder-decoder.md, asserted over computed values."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from backend.compute import enc_dec_masks as w
from backend.reference import masks
from backend.reference.encoder_decoder import EncoderDecoder, seq2seq_masks

N = w.MAX_LEN
# every setting the sliders allow: lengths 1..12, padding below each length
ALL = [(s, t, sp, tp) for s, t in itertools.product(range(1, N + 1), repeat=2)
       for sp in range(s) for tp in range(t)]
# the slider's corners and middle for each pair of lengths: 0, half, and the most padding allowed
EDGES = [(s, t, sp, tp) for s, t in itertools.product(range(1, N + 1), repeat=2)
         for sp in sorted({0, (s - 1) // 2, s - 1}) for tp in sorted({0, (t - 1) // 2, t - 1})]


@pytest.fixture(autouse=True)
def one_thread():
    """Thousands of tiny forward passes: one thread each is far faster on a shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def run(**params):
    return w.compute(w.SPEC.resolve(params))["values"]


def masks_for(s, t, sp, tp):
    return seq2seq_masks(torch.tensor([s, s - sp]), s, t, torch.tensor([t, t - tp]))


def test_every_row_of_every_mask_is_non_empty_across_the_range():
    """'The rule ... is what keeps every row of every mask non-empty'."""
    for s, t, sp, tp in ALL:
        m = masks_for(s, t, sp, tp)
        for grid in (m.encoder.expand(2, 1, s, s), m.decoder, m.cross):
            assert grid.any(-1).all(), (s, t, sp, tp)


def test_breaking_the_rule_gives_an_empty_row():
    """...and without it a row would be empty (a softmax over nothing)."""
    m = seq2seq_masks(torch.tensor([3, 0]), 3, 2, torch.tensor([2, 0]))
    assert not m.cross[1].any(-1).all() and not m.decoder[1].any(-1).all()


@torch.no_grad()
def test_zero_weight_on_every_blocked_cell_and_no_nan_across_the_range():
    """'Anywhere in the widget's range, the model's attention puts exactly zero weight on every
    blocked cell and its logits contain no NaN.' The widget's own model, every setting."""
    model = w._model()
    for s, t, sp, tp in ALL:
        src_l, tgt_l = torch.tensor([s, s - sp]), torch.tensor([t, t - tp])
        m = seq2seq_masks(src_l, s, t, tgt_l)
        out = model(torch.ones(2, s, dtype=torch.long), src_l, torch.ones(2, t, dtype=torch.long), tgt_l)
        assert not out.logits.isnan().any()
        for weights, allowed in ((out.encoder_attentions[0], m.encoder), (out.decoder_attentions[0], m.decoder),
                                 (out.cross_attentions[0], m.cross)):
            blocked = ~allowed.expand_as(weights)
            assert torch.all(weights[blocked] == 0), (s, t, sp, tp)


@pytest.mark.parametrize("s, t, sp, tp", [(6, 5, 2, 1), (12, 12, 11, 11), (1, 1, 0, 0), (12, 1, 5, 0)])
def test_widget_reports_zero_leak_no_nan_no_empty_rows(s, t, sp, tp):
    v = run(src_len=s, tgt_len=t, src_pad=sp, tgt_pad=tp)
    assert v["max_weight_on_masked"] == 0.0 and not v["nan_in_logits"] and v["empty_rows"] == 0


def test_encoder_padding_is_a_set_of_columns_and_pad_rows_are_not_blocked():
    """'every row has the same real keys ... The pad queries are not blocked.'"""
    for s, t, sp, tp in ALL[::97]:
        v = run(src_len=s, tgt_len=t, src_pad=sp, tgt_pad=tp)
        row = [1] * (s - sp) + [0] * sp
        assert v["encoder_mask"] == [row] * s
        assert v["encoder_allowed"] == s * (s - sp)


def test_cross_mask_hides_the_source_pads_and_nothing_else():
    """'rectangular, T x S, with the source's pad columns hidden and nothing else. No causal part'."""
    for s, t, sp, tp in ALL[::97]:
        v = run(src_len=s, tgt_len=t, src_pad=sp, tgt_pad=tp)
        assert v["cross_mask"] == [[1] * (s - sp) + [0] * sp] * t
        assert v["cross_shape"] == f"(2, {t}, {s})"


def test_cross_mask_is_square_only_when_the_lengths_agree():
    """'Set the source and target lengths equal and the cross mask becomes square'."""
    for s, t in itertools.product(range(1, N + 1), repeat=2):
        v = run(src_len=s, tgt_len=t, src_pad=0, tgt_pad=0)
        assert v["cross_is_square"] == (s == t)


def test_right_padding_the_causal_triangle_already_hides_target_pads_from_real_queries():
    """'the causal triangle already hides them from every real query. The padding part changes
    only the pad rows.'"""
    for t in range(1, N + 1):
        for tp in range(t):
            real = t - tp
            full = masks.and_masks(masks.causal_mask(t), masks.padding_mask(torch.tensor([real]), t))[0, 0]
            causal = masks.causal_mask(t)
            assert torch.equal(full[:real], causal[:real])
            if tp:
                assert not torch.equal(full[real:], causal[real:])


def test_with_left_padding_the_causal_mask_alone_would_not_do():
    """Check yourself: 'With padding at the front it would matter.'"""
    t, real = 5, 3
    causal = masks.causal_mask(t)
    left = masks.left_padding_mask(torch.tensor([real]), t)[0, 0]
    real_rows = slice(t - real, t)
    assert causal[real_rows][:, : t - real].any()  # real queries could see the front pads
    assert not masks.and_masks(causal, left)[real_rows][:, : t - real].any()


def _pair(seed=0):
    torch.manual_seed(seed)
    from backend.reference.config import ModelConfig

    model = EncoderDecoder(ModelConfig(vocab_size=11, d_model=16, n_layers=2, n_heads=2, d_ff=32,
                                       max_seq_len=16)).eval()
    src = torch.randint(1, 11, (2, 7))
    tgt = torch.randint(1, 11, (2, 6))
    return model, src, torch.tensor([7, 4]), tgt, torch.tensor([6, 3])


@torch.no_grad()
def test_causal_only_decoder_mask_trains_the_same_model():
    """'That is why the handout's decoder mask, causal only, trains the same model': real-position
    logits, and so the loss with pads ignored, are identical with and without target padding."""
    model, src, sl, tgt, tl = _pair()
    with_pad = model(src, sl, tgt, tl).logits
    causal_only = model(src, sl, tgt).logits
    for b, n in enumerate(tl.tolist()):
        torch.testing.assert_close(with_pad[b, :n], causal_only[b, :n], rtol=0, atol=0)
    labels = tgt.clone()
    labels[1, 3:] = -100
    assert F.cross_entropy(with_pad.transpose(1, 2), labels) == F.cross_entropy(causal_only.transpose(1, 2), labels)


@torch.no_grad()
def test_pad_outputs_are_computed_and_then_ignored():
    """'their outputs are computed and then ignored (nothing reads them)': change what sits in the
    pad positions and no real position's logits move."""
    model, src, sl, tgt, tl = _pair(1)
    ref = model(src, sl, tgt, tl).logits
    src2, tgt2 = src.clone(), tgt.clone()
    src2[1, 4:] = torch.tensor([3, 9, 2])
    tgt2[1, 3:] = torch.tensor([5, 1, 8])
    got = model(src2, sl, tgt2, tl).logits
    torch.testing.assert_close(got[1, :3], ref[1, :3], rtol=0, atol=1e-6)
    torch.testing.assert_close(got[0], ref[0], rtol=0, atol=0)


def test_only_the_cross_attention_weights_carry_both_lengths():
    """'The source length and the target length meet in one of these tensors only.'"""
    v = run(src_len=7, tgt_len=3, src_pad=0, tgt_pad=0)
    both = [k for k, shape in v["flow"].items() if "7" in shape and "3" in shape]
    assert both == ["cross-attention weights"]


def test_layers_keep_the_shape_so_they_stack():
    """'Every encoder layer maps (B, S, d) to (B, S, d) and every decoder layer (B, T, d) to (B, T, d).'"""
    model, src, sl, tgt, tl = _pair()
    m = seq2seq_masks(sl, 7, 6, tl)
    x = model.frontend(src)
    for layer in model.encoder_layers:
        y, _ = layer(x, m.encoder)
        assert y.shape == x.shape
    memory, _ = model.encode(src, m.encoder)
    z = model.tgt_embed(tgt)
    for layer in model.decoder_layers:
        out = layer(z, memory, m.decoder, m.cross)[0]
        assert out.shape == z.shape


def test_handout_lengths_never_reach_the_full_100_frames():
    """'every utterance is 1 to 99 frames, never the full 100': randint's upper end is exclusive."""
    g = torch.Generator().manual_seed(0)
    lens = torch.randint(1, 100, (100_000,), generator=g)
    assert lens.min() == 1 and lens.max() == 99


def _decoder_kinds_expected(t, tp):
    """The decoder panel's colours as the text states them: red strictly above the diagonal,
    grey only in pad rows from the first pad column up to the diagonal, blue elsewhere."""
    real = t - tp
    return [[w.CAUSAL if j > i else (w.PAD if j >= real else w.ALLOWED) for j in range(t)]
            for i in range(t)]


def test_figure_colours_match_the_text_at_every_edge_of_the_range():
    """'A decoder cell that both rules block ... is drawn red'; 'the real rows are the causal
    mask's rows, with no grey in them'; grey 'in the pad rows, from the first pad column to the
    diagonal (p(p+1)/2 ...)'; encoder and cross panels have no red."""
    for s, t, sp, tp in EDGES[::3]:
        r = w.compute(w.SPEC.resolve({"src_len": s, "tgt_len": t, "src_pad": sp, "tgt_pad": tp}))
        enc, dec, cross = [tr["z"] for tr in r["figure"]["data"] if tr["type"] == "heatmap"]
        assert dec == _decoder_kinds_expected(t, tp), (s, t, sp, tp)
        assert not any(w.PAD in row for row in dec[: t - tp])  # no grey in real rows
        grey = sum(row.count(w.PAD) for row in dec)
        assert grey == r["values"]["decoder_pad_only"] == tp * (tp + 1) // 2
        assert enc == [[w.ALLOWED] * (s - sp) + [w.PAD] * sp] * s
        assert cross == [[w.ALLOWED] * (s - sp) + [w.PAD] * sp] * t


def test_default_decoder_panel_greys_only_the_last_diagonal_cell():
    """At the default (6, 5, 2, 1) the one pad-only cell is (t4, t4)."""
    r = w.compute(w.SPEC.resolve({}))
    dec = [tr["z"] for tr in r["figure"]["data"] if tr["type"] == "heatmap"][1]
    assert [(i, j) for i, row in enumerate(dec) for j, k in enumerate(row) if k == w.PAD] == [(4, 4)]
    assert r["values"]["decoder_pad_only"] == 1


@torch.no_grad()
def test_teacher_forcing_needs_the_causal_mask():
    """'without the mask position i could read token i + 1, the very token it is asked to predict'."""
    model, src, sl, tgt, _ = _pair()
    m = seq2seq_masks(sl, src.size(1), tgt.size(1))
    memory, _ = model.encode(src, m.encoder)
    tgt2 = tgt.clone()
    tgt2[:, 3] = (tgt[:, 3] % 10) + 1  # change token 3 only
    def logits(ids, mask):
        return model.lm_head(model.decode(ids, memory, mask, m.cross)[0])
    open_mask = torch.ones_like(m.decoder)
    assert not torch.allclose(logits(tgt, open_mask)[:, 2], logits(tgt2, open_mask)[:, 2])
    torch.testing.assert_close(logits(tgt, m.decoder)[:, :3], logits(tgt2, m.decoder)[:, :3], rtol=0, atol=0)


def test_book_causal_mask_is_the_complement_of_the_handouts_triu():
    """'The handout builds the mask as torch.triu(ones, diagonal=1) ... the book's causal_mask is
    its complement'."""
    for t in range(1, N + 1):
        handout = torch.triu(torch.ones(t, t), diagonal=1).bool()
        assert torch.equal(masks.causal_mask(t), ~handout)


@torch.no_grad()
def test_embeddings_are_not_scaled_and_weights_are_not_tied():
    """'this model adds the positions to the raw embedding'; 'the target embedding and lm_head are
    separate matrices'."""
    model, src, sl, tgt, tl = _pair()
    seen = {}

    def keep(name):
        def hook(module, args):
            seen[name] = args[0]  # returns None: the input is left as it is
        return hook

    model.encoder_layers[0].register_forward_pre_hook(keep("enc"))
    model.decoder_layers[0].register_forward_pre_hook(keep("dec"))
    model(src, sl, tgt, tl)
    torch.testing.assert_close(seen["enc"], model.frontend(src) + model.pos[: src.size(1)], rtol=0, atol=0)
    torch.testing.assert_close(seen["dec"], model.tgt_embed(tgt) + model.pos[: tgt.size(1)], rtol=0, atol=0)
    assert model.tgt_embed.weight.data_ptr() != model.lm_head.weight.data_ptr()
    # 'The book keeps its table in a buffer': not counted among the parameters
    assert "pos" in dict(model.named_buffers()) and "pos" not in dict(model.named_parameters())


def test_the_mlp_path_is_dropped_out_twice_like_pytorchs_layer():
    """'on the MLP's hidden activation, and on every sublayer's output': remove either dropout and
    the training-mode output changes; in eval() neither acts."""
    from backend.reference.config import ModelConfig
    from backend.reference.encoder_decoder import EncoderLayer

    torch.manual_seed(0)
    layer = EncoderLayer(ModelConfig(vocab_size=11, d_model=16, n_layers=1, n_heads=2, d_ff=32,
                                     max_seq_len=8, dropout=0.5)).train()
    layer.self_attn.dropout = 0.0  # isolate the MLP path
    x = torch.randn(2, 5, 16)

    def out():
        torch.manual_seed(1)
        return layer(x)[0]

    both = out()
    hidden, layer.mlp.dropout = layer.mlp.dropout, torch.nn.Identity()
    assert not torch.allclose(both, out())
    layer.mlp.dropout, layer.dropout = hidden, torch.nn.Identity()
    assert not torch.allclose(both, out())
    ref = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.5, batch_first=True)
    assert isinstance(ref.dropout, torch.nn.Dropout) and isinstance(ref.dropout2, torch.nn.Dropout)
    layer.dropout = torch.nn.Dropout(0.5)
    layer.eval()
    torch.testing.assert_close(layer(x)[0], layer(x)[0], rtol=0, atol=0)


def test_handout_parameter_count_includes_its_frozen_tables():
    """Instructors' note: '§9.8 runs the model and prints only the logits' shape, (16, 50, 26),
    and counts no parameters'; 'frozen, the tables are still parameters: count the handout's model
    the usual way, sum(p.numel() ...), and you get 46,303,770, of which 2,097,152 are never
    trained; the trainable parameters are 44,206,618'. Hand arithmetic for the handout's 6 + 6
    model at d 512, and what nn.Embedding.from_pretrained(..., freeze=True) makes of a table."""
    table = torch.nn.Embedding.from_pretrained(torch.zeros(2048, 512), freeze=True)
    assert [p.requires_grad for p in table.parameters()] == [False]
    assert sum(p.numel() for p in table.parameters()) == 2048 * 512
    c = run()
    assert (c["check_batch"], c["check_tgt_len"], c["check_vocab"]) == (16, 50, 26)  # what §9.8 prints
    assert c["check"]["logits"] == "(16, 50, 26)"
    d, ff, v, fb, n = 512, 2048, 26, 80, 6
    attn = 4 * (d * d + d)
    mlp = d * ff + ff + ff * d + d
    enc = attn + 2 * 2 * d + mlp
    dec = 2 * attn + 3 * 2 * d + mlp
    trainable = n * (enc + dec) + (fb * d + d) + v * d + (d * v + v)
    r = run()
    assert r["check_parameters"] == trainable == 44_206_618
    assert r["check_position_tables"] == 2 * 2048 * d
    assert r["check_parameters_handout"] == trainable + 2 * 2048 * d == 46_303_770


def test_decoder_mask_without_target_lengths_is_t_by_t():
    """Summary: 'Without target lengths ... the decoder mask is the causal mask alone, stored as (T, T)'."""
    for t in range(1, N + 1):
        v = run(src_len=3, tgt_len=t, src_pad=0, tgt_pad=0)
        assert v["decoder_stored_shape_no_lengths"] == f"({t}, {t})"
        assert torch.equal(seq2seq_masks(torch.tensor([3, 3]), 3, t).decoder, masks.causal_mask(t))


# ---------------------------------------------------------------- the input, and one worked row

def test_the_input_sizes_at_initialisation():
    """'Every row of the sinusoid table has the same size, an RMS of 0.707 (1/sqrt 2)'; an
    nn.Embedding entry has RMS about 1; 'Added as they are ... 1.42 to 1; with the paper's factor
    ... 32 to 1, and the position would be a faint signal'; unscaled keeps them 'of comparable
    size'."""
    s = run()["input_scale"]
    assert s["d_model"] == 512 and s["sqrt_d_model"] == pytest.approx(22.627, abs=1e-3)
    assert s["pe_rms"] == pytest.approx(2 ** -0.5, abs=1e-6) and s["pe_rms_spread"] < 1e-6
    assert s["embed_rms"] == pytest.approx(1.0, abs=0.02)
    assert s["ratio_unscaled"] == pytest.approx(s["embed_rms"] / s["pe_rms"])
    assert s["ratio_scaled"] == pytest.approx(s["sqrt_d_model"] * s["ratio_unscaled"])
    assert 0.5 < s["ratio_unscaled"] < 2 and s["ratio_scaled"] > 20


def test_worked_row_at_the_defaults_matches_the_table():
    """The table's rows: six source positions, s4 and s5 pads (blocked, weight 0), the four real
    weights sum to one, the highest where the score is highest, near uniform (untrained)."""
    v = run()
    ex = v["cross_example"]
    assert (ex["S"], ex["T"], v["src_real"]) == (6, 5, 4)
    assert ex["real"] == [True] * 4 + [False] * 2 and len(ex["keys"]) == 6
    assert ex["weights"][4] == ex["weights"][5] == 0.0
    assert sum(ex["weights"][:4]) == pytest.approx(1.0, abs=1e-6)
    real_scores = ex["scores"][:4]
    assert ex["argmax"] == real_scores.index(max(real_scores))
    assert all(abs(w - 0.25) < 0.06 for w in ex["weights"][:4])  # "close to uniform"
    assert ex["d_head"] == 4 and ex["sqrt_d_head"] == 2.0


@pytest.mark.parametrize("s, t, sp, tp", [(6, 5, 2, 1), (12, 12, 11, 11), (1, 1, 0, 0), (12, 3, 5, 2), (4, 9, 0, 8)])
def test_worked_row_agrees_with_the_models_own_weights_to_a_millionth(s, t, sp, tp):
    """'Done by hand this way, the row agrees with the one the model itself returns ... to within
    a millionth'; pads get exactly 0. (Bit for bit on many CPUs; on one with AVX-512 FP16 the
    matrix-vector product rounded the last place differently, 1.5e-8, at (4, 9, 0, 8).)"""
    ex = run(src_len=s, tgt_len=t, src_pad=sp, tgt_pad=tp)["cross_example"]
    assert ex["max_diff"] <= 1e-6
    assert ex["weights"] == pytest.approx(ex["model_weights"], abs=1e-6, rel=0)
    assert all(w == 0.0 for w, r in zip(ex["weights"], ex["real"]) if not r)
    assert ex["real"] == [True] * (s - sp) + [False] * sp


# ---------------------------------------------------------------- post-norm after 2017

# OPT-350M's published config.json (huggingface.co/facebook/opt-350m) sets
# "do_layer_norm_before": false; every other OPT size sets it true.
OPT_350M_NORM_BEFORE = False


def _rows_normalised(y: torch.Tensor) -> bool:
    """Every row has mean 0 and variance 1: what a layer whose last step is LayerNorm (gain 1 and
    bias 0, as built) returns, whatever its input."""
    y = y[0] if isinstance(y, (tuple, list)) else y
    return bool(y.mean(-1).abs().max() < 1e-4 and (y.var(-1, unbiased=False) - 1).abs().max() < 1e-3)


def test_post_norm_did_not_end_in_2017():
    """'most large decoders since GPT-2 normalise in front of the sublayer instead (pre-norm).
    Post-norm did not end in 2017: GPT-1, BERT, RoBERTa and BART are wired like this model, and
    OPT-350M (2022) kept it.' Each model's layer as the installed transformers implements it,
    at a small width, on rows far from normalised: a post-norm layer ends in its norm, so its
    output rows are normalised, like the book's encoder layer's; a pre-norm one ends in a
    residual add, so they are not."""
    from transformers import (
        BartConfig,
        BertConfig,
        GPT2Config,
        LlamaConfig,
        OpenAIGPTConfig,
        OPTConfig,
        RobertaConfig,
    )
    from transformers.models.bart.modeling_bart import BartEncoderLayer
    from transformers.models.bert.modeling_bert import BertLayer
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding
    from transformers.models.openai.modeling_openai import Block as OpenAIGPTBlock
    from transformers.models.opt.modeling_opt import OPTDecoderLayer
    from transformers.models.roberta.modeling_roberta import RobertaLayer

    from backend.reference.config import ModelConfig
    from backend.reference.encoder_decoder import EncoderLayer

    d, heads, ff, eager = 32, 4, 64, {"attn_implementation": "eager"}
    torch.manual_seed(0)
    x = 5 + 3 * torch.randn(2, 6, d)
    llama = LlamaConfig(hidden_size=d, num_attention_heads=heads, num_key_value_heads=heads,
                        intermediate_size=ff, **eager)
    layers = {  # name -> (its layer, how it is called)
        "the book's encoder layer": (EncoderLayer(ModelConfig(vocab_size=11, d_model=d, n_layers=1, n_heads=heads,
                                                              d_ff=ff, max_seq_len=8)), {}),
        "GPT-1": (OpenAIGPTBlock(16, OpenAIGPTConfig(n_embd=d, n_head=heads, n_positions=16, **eager), scale=True), {}),
        "BERT": (BertLayer(BertConfig(hidden_size=d, num_attention_heads=heads, intermediate_size=ff, **eager)), {}),
        "RoBERTa": (RobertaLayer(RobertaConfig(hidden_size=d, num_attention_heads=heads, intermediate_size=ff,
                                               **eager)), {}),
        "BART": (BartEncoderLayer(BartConfig(d_model=d, encoder_attention_heads=heads, encoder_ffn_dim=ff, **eager)),
                 {"attention_mask": None}),
        "OPT-350M": (OPTDecoderLayer(OPTConfig(hidden_size=d, num_attention_heads=heads, ffn_dim=ff,
                                               do_layer_norm_before=OPT_350M_NORM_BEFORE, **eager), 0), {}),
        "GPT-2": (GPT2Block(GPT2Config(n_embd=d, n_head=heads, **eager)), {}),
        "OPT, every other size": (OPTDecoderLayer(OPTConfig(hidden_size=d, num_attention_heads=heads, ffn_dim=ff,
                                                            do_layer_norm_before=True, **eager), 0), {}),
        "Llama": (LlamaDecoderLayer(llama, 0),
                  {"position_embeddings": LlamaRotaryEmbedding(llama)(x, torch.arange(6)[None])}),
    }
    with torch.no_grad():
        post = {name for name, (layer, kw) in layers.items() if _rows_normalised(layer.eval()(x, **kw))}
    assert post == {"the book's encoder layer", "GPT-1", "BERT", "RoBERTa", "BART", "OPT-350M"}
