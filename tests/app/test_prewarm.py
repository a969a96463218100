"""`python -m backend.prewarm`: every baked point and every chapter setting, into Redis or
through a running server's API; with neither it says why it cannot warm anything."""

from __future__ import annotations


from backend import prewarm
from backend.app import create_app
from backend.widgets import REGISTRY


def test_points_cover_every_baked_point_and_the_chapters_settings():
    todo = prewarm.points()
    keys = {(n, tuple(sorted(p.items()))) for n, p in todo}
    assert len(keys) == len(todo)  # no duplicates
    for name, module in REGISTRY.items():
        for params in module.SPEC.bake_points():
            assert (name, tuple(sorted(module.SPEC.resolve(params).items()))) in keys
    for name, params in prewarm.chapter_settings():
        if name in REGISTRY:
            resolved = REGISTRY[name].SPEC.resolve(params)
            assert (name, tuple(sorted(resolved.items()))) in keys


def test_without_redis_or_url_it_explains(monkeypatch, capsys):
    monkeypatch.delenv("BOOK_CACHE_URL", raising=False)
    assert prewarm.main([]) == 2
    assert "--url" in capsys.readouterr().err


SOME = [("attention_scaling", {"d_k": 5, "n_positions": 16, "seed": 0}),
        ("enc_dec_masks", REGISTRY["enc_dec_masks"].SPEC.defaults())]


def test_warms_redis_and_the_server_then_answers_from_it(monkeypatch, capsys, tmp_path,
                                                         redis_server):
    monkeypatch.setenv("BOOK_CACHE_URL", redis_server.url)
    monkeypatch.setattr(prewarm, "points", lambda: SOME)
    assert prewarm.main([]) == 0
    assert "2 settings" in capsys.readouterr().out
    client = create_app({"TESTING": True, "SITE_DIR": str(tmp_path)}).test_client()
    for name, params in SOME:
        assert client.post(f"/api/widgets/{name}", json=params).get_json()["cached"] is True
    assert prewarm.main([]) == 0
    assert "0 computed, 2 already cached, 0 failed" in capsys.readouterr().out


def test_warms_a_running_server_over_http(monkeypatch, capsys, slow_server):
    monkeypatch.setattr(prewarm, "points", lambda: SOME)
    with slow_server() as port:
        assert prewarm.main(["--url", f"http://127.0.0.1:{port}"]) == 0
        assert "2 computed, 0 already cached" in capsys.readouterr().out
        assert prewarm.main(["--url", f"http://127.0.0.1:{port}/api"]) == 0
        assert "0 computed, 2 already cached" in capsys.readouterr().out
