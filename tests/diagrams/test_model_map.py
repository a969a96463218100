"""The map of the model is drawn from a configuration: change it and the picture changes."""

from __future__ import annotations

import re

import pytest

from backend.diagrams import model_map
from backend.reference.model import DecoderLM


def test_the_books_map_carries_the_books_shapes():
    texts = model_map.draw("book").texts()
    cfg = model_map.config_for("book")
    assert f"× {cfg.n_layers} blocks" in texts
    assert f"{cfg.vocab_size:,} × {cfg.d_model:,}" in texts
    assert f"{cfg.n_heads} heads, {cfg.n_kv_heads} K/V" in texts
    assert f"{cfg.d_model:,} → {cfg.d_ff:,} → {cfg.d_model:,}" in texts
    assert f"{cfg.d_model:,} → {cfg.vocab_size:,} (tied)" in texts   # the book ties its head


def test_llamas_map_differs_where_the_configs_differ():
    book, llama = model_map.draw("book").texts(), model_map.draw("llama-3-8b").texts()
    assert "× 32 blocks" in llama and "× 32 blocks" not in book
    assert "128,256 × 4,096" in llama
    assert "32 heads, 8 K/V" in llama
    assert "4,096 → 14,336 → 4,096" in llama
    assert "4,096 → 128,256" in llama and not any("(tied)" in t for t in llama)
    assert "÷ √128" in llama and f"÷ √{model_map.config_for('book').d_head}" in book


def test_plain_multi_head_attention_says_so():
    texts = model_map.draw("llama-2-7b").texts()
    assert "32 heads" in texts and not any("K/V" in t for t in texts)


def test_the_shapes_are_the_reference_models_own():
    """The labels agree with what the reference DecoderLM builds from the same config."""
    cfg = model_map.config_for("book")
    model = DecoderLM(cfg)
    emb = [p for n, p in model.named_parameters() if "embed" in n][0]
    assert tuple(emb.shape) == (cfg.vocab_size, cfg.d_model)
    assert f"{emb.shape[0]:,} × {emb.shape[1]:,}" in model_map.draw("book").texts()


def test_every_part_links_to_a_chapter_and_at_least_eight_chapters():
    svg = model_map.draw("book").render("fig-map")
    pages = set(re.findall(r'href="doc:chapters/([\w-]+)\.md', svg))
    assert len(pages) >= 8, pages
    assert {"self-attention", "masks", "scaling", "positions", "heads", "kv-cache", "block",
            "model"} <= pages


def test_its_links_are_named_for_screen_readers_and_the_drawing_between_them_is_hidden():
    """A `role="img"` picture hides its children, links included, from a screen reader: the
    map is a group, each link named by the part and the chapter it opens, every drawn thing
    outside a link in an aria-hidden group (the description tells it all)."""
    svg = model_map.draw("llama-3-8b").render("fig-map")
    assert 'role="group"' in svg and 'role="img"' not in svg
    names = re.findall(r'<a [^>]*><title>([^<]+)</title>', svg)
    assert len(names) == svg.count("<a ") == 15
    assert "causal mask: the masks chapter" in names and len(set(names)) == len(names)
    outside = re.sub(r"<a .*?</a>", "", re.sub(r"<title.*?</desc>", "", svg))
    drawn = re.sub(r'<g aria-hidden="true">.*?</g>', "", outside)
    assert not re.search(r"<(rect|text|line|path|circle|polygon)\b", drawn), drawn[:300]


def test_a_diagram_without_links_is_one_image():
    from backend.diagrams.svg import Canvas

    c = Canvas(100, 100, title="t", desc="d")
    c.box(0, 0, 50, 50, "x")
    assert 'role="img"' in c.render("fig-x") and "aria-hidden" not in c.render("fig-x")


def test_an_unknown_preset_is_refused():
    with pytest.raises(ValueError, match="unknown preset"):
        model_map.draw("gpt-9")
