"""A model that fails to load answers a clear JSON error at once, never a 500 or a hung worker.

In process (Flask client): the book's own weights corrupted on disk. In a real gunicorn:
`BOOK_HF_CHECKPOINT` naming a folder that is not a checkpoint."""

from __future__ import annotations

import shutil
import time
from functools import lru_cache

import pytest

from tests.support.api import http_post
from tests.support.server import serve

# Each widget that runs the book's model, with settings no other test caches.
BOOK_MODEL_REQUESTS = {
    "attention_map": {"text": "A corrupted model cannot read this sentence", "model": "book"},
    "sampling": {"prompt": "The corrupted model", "seed": 7},
}


@pytest.fixture()
def corrupted_book_model(tmp_path, monkeypatch):
    """The book's weights folder with its safetensors file cut short, loaded in place of the
    shipped one (the loader's cache is swapped for a fresh one, restored afterwards)."""
    from backend.bookmodel import WEIGHTS_DIR, load

    broken = tmp_path / "weights"
    shutil.copytree(WEIGHTS_DIR, broken)
    data = (broken / "model.safetensors").read_bytes()
    (broken / "model.safetensors").write_bytes(data[: len(data) // 3])
    monkeypatch.setattr(load, "_load_shared", lru_cache(maxsize=1)(lambda: load.load_model(broken)))
    return broken


@pytest.mark.parametrize("widget", sorted(BOOK_MODEL_REQUESTS))
def test_corrupted_book_model_is_a_clear_503(client, corrupted_book_model, widget):
    t0 = time.monotonic()
    resp = client.post(f"/api/widgets/{widget}", json=BOOK_MODEL_REQUESTS[widget])
    assert time.monotonic() - t0 < 10
    assert resp.status_code == 503, resp.get_data(as_text=True)[:500]
    body = resp.get_json()
    assert "model" in body["error"] and "Traceback" not in body["error"]
    assert str(corrupted_book_model) not in body["error"]  # no server path in a response
    assert resp.headers.get("Retry-After")
    # The same worker goes on answering everything else.
    assert client.post("/api/widgets/attention_scaling", json={"d_k": 5}).status_code == 200


def test_broken_hf_checkpoint_is_a_clear_400_in_gunicorn(tmp_path):
    broken = tmp_path / "checkpoint"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "bert", "hidden_size": ')  # cut short
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    with serve(tmp_path / "no-site", env={"BOOK_HF_CHECKPOINT": str(broken)}, workers=1,
               log=tmp_path / "gunicorn.log") as server:
        for _ in range(2):  # the second try fails as fast: nothing half-loaded is kept
            t0 = time.monotonic()
            status, body = http_post(server.base, "attention_map",
                                     {"text": "a broken checkpoint", "model": "local"}, timeout=30)
            assert time.monotonic() - t0 < 20
            assert status == 400 and body.get("param") == "model", body
            assert "BOOK_HF_CHECKPOINT" in body["error"] and "Traceback" not in body["error"]
        status, _ = http_post(server.base, "attention_scaling", {"d_k": 7}, timeout=30)
        assert status == 200  # the worker is not hung
