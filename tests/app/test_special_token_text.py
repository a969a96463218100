"""Free text that spells a tokenizer's special token is something a client can send: never a 5xx.

Review part2 W3 found `training_signal` answering 500 for `<|endoftext|>` (bpe-openai refuses
such text unless told how to read it). This sends the special-token strings of every tokenizer
behind the book's widgets (cl100k_base, the book model's BPE, MiniLM's WordPiece) through every
text parameter of every widget, with the switches that make the text count turned on.
"""

from __future__ import annotations

import pytest

from backend.compute import REGISTRY

# A marker alone, and every marker of every family in one passage (a request each: the model
# widgets take a second or more per request on a 2-core CPU).
SPECIAL = [
    "<|endoftext|>", "[SEP]",
    "hello <|endoftext|> world <|fim_prefix|> x <|fim_suffix|><|fim_middle|> y <|endofprompt|> "
    "<|im_start|>user hi<|im_end|> [CLS] a [SEP] b [MASK] [PAD] [UNK] <s> c </s> <unk>",
]


def text_params():
    """(widget, text param, the other values that make it count, e.g. use_text=True), per model."""
    cases = []
    for name, module in sorted(REGISTRY.items()):
        spec = module.SPEC
        for p in spec.params:
            if p.type != "text":
                continue
            enable = {}
            for d in p.depends:  # turn on whatever would grey the text out
                off = [k for k, patch in d.cases.items() if patch.get("disabled")]
                on = [v for v in (True, False) if v not in off]
                if off and on:
                    enable[d.on] = on[0]
            models = next((q.options for q in spec.params if q.name == "model"), (None,))
            for model in models:
                if model == "local":
                    continue  # only with an instructor's checkpoint
                extra = dict(enable, **({"model": model} if model else {}))
                cases.append(pytest.param(name, p.name, extra, id=f"{name}.{p.name}:{model}"))
    return cases


def test_the_cases_cover_every_free_text_widget():
    names = {c.values[0] for c in text_params()}
    assert {"training_signal", "attention_map", "sampling"} <= names


@pytest.mark.parametrize("widget, param, extra", text_params())
def test_special_token_strings_are_never_a_5xx(client, widget, param, extra):
    for text in SPECIAL:
        r = client.post(f"/api/widgets/{widget}", json={**extra, param: text})
        assert r.status_code < 500, (text, r.get_json())
        if r.status_code >= 400:  # a refusal must say what is wrong, naming the control
            assert r.get_json()["error"], text
