"""The rmsnorm widget through the API, against independent oracles."""

import math

import pytest
import torch
import torch.nn.functional as F

from backend.compute.rmsnorm import D, make_input
from tests.support.api import poster

URL = "/api/widgets/rmsnorm"

values = poster(URL, field="values")  # POST to the widget: a 200's named values


def test_default_reproduces_the_handout_not_centred(client):
    """000 §6.1: off-centre input (+3): RMSNorm's rows keep a mean near 3/sqrt(10) = 0.949 and
    unit RMS; LayerNorm's rows have mean 0."""
    v = values(client, dtype="float32")
    assert v["mean_theory"] == pytest.approx(3 / math.sqrt(10))
    assert v["mean_after"] == pytest.approx(3 / math.sqrt(10), abs=0.01)
    assert v["rms_after"] == pytest.approx(1, abs=1e-5)
    assert abs(v["layernorm_mean_after"]) < 1e-6


def test_against_torch_and_transformers(client):
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    x = make_input(3.0, 1.0, torch.bfloat16)
    ours = LlamaRMSNorm(D, eps=1e-5).to(torch.bfloat16)(x).double()
    v = values(client)
    assert v["mean_after"] == pytest.approx(ours.mean(-1).mean().item(), abs=1e-9)
    x32 = make_input(3.0, 1.0, torch.float32)
    ln = F.layer_norm(x32, (D,), eps=1e-5)
    v = values(client, dtype="float32")
    assert v["layernorm_rms_after"] == pytest.approx(ln.pow(2).mean(-1).sqrt().mean().item(), abs=1e-5)
    rms = torch.nn.RMSNorm(D, eps=1e-5)(x32)
    assert v["rms_after"] == pytest.approx(rms.pow(2).mean(-1).sqrt().mean().item(), abs=1e-5)


def test_errors_by_label(client):
    r = client.post(URL, json={"dtype": "int8"})
    assert r.status_code == 400 and "dtype" in r.get_json()["error"]
    r = client.post(URL, json={"scale": 0})
    assert r.status_code == 400 and "scale (spread of the input)" in r.get_json()["error"]
    r = client.post(URL, json={"upcast": "yes"})
    assert r.status_code == 400 and "upcast to float32" in r.get_json()["error"]


def test_every_baked_point_is_strict_json():
    """JSON has no Infinity: an overflowed running sum must come back as null plus words."""
    import json

    from backend.compute import rmsnorm
    for point in rmsnorm.SPEC.bake:
        body = rmsnorm.compute(rmsnorm.SPEC.resolve(point))
        json.dumps(body, allow_nan=False)


def test_float16_overflow_through_the_api_is_valid_json(client):
    import json
    r = client.post(URL, json={"offset": 300, "scale": 1, "dtype": "float16"})
    assert r.status_code == 200
    v = json.loads(r.get_data(as_text=True))["values"]  # strict parse, as the page's JSON.parse
    assert v["mean_square_running"] is None and v["mean_square_running_overflowed"] is True
    assert "overflows" in v["mean_square_running_text"]
    v = values(client)
    assert v["mean_square_running"] == pytest.approx(float(v["mean_square_running_text"]), rel=1e-3)


def test_the_summary_says_an_overflowed_running_sum_in_a_sentence(client):
    """It read 'gives a mean square of overflows to infinity in float16 (exact: …)'."""
    body = poster(URL)(client, dtype="float16", upcast=False, offset=252)
    assert body["values"]["mean_square_running_overflowed"]
    assert "held in float16 overflows to infinity; the exact mean square is 6.35e+04." in body["summary"]
    assert "mean square of overflows" not in body["summary"]
