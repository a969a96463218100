"""The host's side of serving: workers answer at once and warm in the background, torch's
threads follow the container's CPU quota, the thread count leaves room for the fair queue, and
on a GPU each worker plans against its share of the card and gives back what a ceiling run
reserved. (No GPU here: the CUDA calls are stood in for.)"""

from __future__ import annotations

import threading
import time

import pytest
import torch

from backend import device, settings
from backend.host import available_cpus


class _Log:
    def __init__(self):
        self.warnings, self.errors = [], []

    def warning(self, msg, *args):
        self.warnings.append(msg % args)

    def info(self, msg, *args):
        pass

    def exception(self, msg, *args):
        self.errors.append(msg % args)


class _Worker:
    def __init__(self):
        self.log = _Log()


class _Module:
    def __init__(self, name, hint, calls, seconds, warm=True, measured=False):
        from types import SimpleNamespace

        self.SPEC = SimpleNamespace(name=name, cost_hint=hint, warm=warm, measured=measured,
                                    defaults=lambda: {"at": "default"},
                                    bake_points=lambda: [{"at": 1}, {"at": 2}])
        self._calls, self._seconds = calls, seconds

    def compute(self, params):
        time.sleep(self._seconds)
        self._calls.append((self.SPEC.name, params))


def test_a_worker_answers_at_once_and_warms_in_the_background(monkeypatch):
    import backend.app  # noqa: F401  (gunicorn's preload_app imports the app before it forks)
    import backend.compute as widgets
    import backend.gunicorn_conf as conf

    calls: list = []
    fake = {"slow_light": _Module("slow_light", "light", calls, 0.5),
            "heavy": _Module("heavy", "heavy", calls, 0.1),
            "cold": _Module("cold", "heavy", calls, 0.1, warm=False),
            "timed": _Module("timed", "heavy", calls, 0.1, measured=True),
            "light": _Module("light", "light", calls, 0.0)}
    monkeypatch.setattr(widgets, "REGISTRY", fake)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    t0 = time.perf_counter()
    conf.post_fork(None, _Worker())
    assert time.perf_counter() - t0 < 0.4  # the slow light widget alone takes 0.5 s
    from backend.app.demand import WARMING

    assert WARMING.is_set()  # readers who arrive now wait longer for a slot instead of a 503
    (thread,) = [t for t in threading.enumerate() if t.name == "warm-widgets"]
    thread.join(timeout=10)
    assert not WARMING.is_set()
    assert calls == [("slow_light", {"at": "default"}), ("light", {"at": "default"}),
                     ("heavy", {"at": 1}), ("heavy", {"at": 2})]  # light first; "cold", "timed" never


def test_too_few_threads_for_the_fair_queue_is_said_at_start(monkeypatch):
    import backend.gunicorn_conf as conf
    from backend.app.fair_queue import threads_needed

    server = _Worker()
    conf.when_ready(server)
    assert server.log.warnings == []  # the shipped defaults leave room
    assert settings.load({})["BOOK_THREADS"] >= threads_needed(settings.load({})["BOOK_MAX_CONCURRENT"])
    monkeypatch.setattr(conf, "threads", 4)  # the old default
    conf.when_ready(server)
    (said,) = server.log.warnings
    assert "BOOK_THREADS=4" in said and "BOOK_MAX_CONCURRENT=2" in said


@pytest.mark.parametrize("files, cpus", [
    ({"cpu.max": "max 100000\n"}, None),                  # no quota: the affinity
    ({"cpu.max": "150000 100000\n"}, 2),                   # 1.5 CPUs, rounded up
    ({"cpu.max": "50000 100000\n"}, 1),
    ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3),  # cgroup v1
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({"cpu.max": "garbage\n"}, None),
    ({}, None),
])
def test_cpus_follow_a_containers_quota(tmp_path, monkeypatch, files, cpus):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(16)))
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert available_cpus(str(tmp_path)) == (cpus if cpus is not None else 16)


@pytest.fixture()
def fake_cuda(monkeypatch):
    state = {"free": 80 * 10**9, "reserved": 0, "allocated": 0, "emptied": 0}
    device.device.cache_clear()
    device.memory_bytes.cache_clear()
    monkeypatch.setattr(device, "device", lambda: "cuda:0")
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index=None: (state["free"], 0))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda index=None: state["reserved"])
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda index=None: state["allocated"])
    monkeypatch.setattr(torch.cuda, "empty_cache",
                        lambda: state.update(emptied=state["emptied"] + 1, reserved=state["allocated"]))
    yield state
    device.memory_bytes.cache_clear()


def test_each_worker_plans_against_its_share_of_the_card(fake_cuda, monkeypatch):
    monkeypatch.setenv("WEB_CONCURRENCY", "4")
    assert device.memory_bytes() == 20 * 10**9


def test_a_ceiling_run_gives_its_reserved_memory_back(fake_cuda, monkeypatch):
    monkeypatch.setenv("WEB_CONCURRENCY", "2")
    budget = device.memory_bytes()  # 40 GB
    fake_cuda.update(reserved=budget // 8, allocated=0)  # a small run: kept for the next
    assert device.release_cached_memory() is False and fake_cuda["emptied"] == 0
    fake_cuda.update(reserved=int(budget * 0.9), allocated=budget // 10)  # a ceiling run
    assert device.release_cached_memory() is True and fake_cuda["emptied"] == 1
    assert fake_cuda["reserved"] == budget // 10


def test_on_the_cpu_nothing_is_released():
    assert device.kind() == "cpu" and device.release_cached_memory() is False


def test_while_warming_a_computation_waits_as_long_as_a_model_widget(monkeypatch):
    from backend.app import create_app
    from backend.app.demand import WARMING

    app = create_app({"TESTING": True, "SITE_DIR": "/nonexistent", "COMPUTE_WAIT_SECONDS": 0.2,
                      "HEAVY_WAIT_SECONDS": 3.0})
    slots = app.extensions["book_fair_queue"]
    waits = []
    real = slots.queue.slot

    def spy(client, wait):
        waits.append(wait)
        return real(client, wait)

    monkeypatch.setattr(slots.queue, "slot", spy)
    with app.test_request_context("/api/widgets/x"):
        with slots.compute_slot():
            pass
        WARMING.set()
        try:
            with slots.compute_slot():
                pass
        finally:
            WARMING.clear()
    assert waits == [0.2, 3.0]


def test_the_server_caps_mallocs_arenas():
    """gunicorn's config caps glibc's arenas before it forks (see tests/faults/test_memory.py for
    what it saves); here: the call reaches glibc and says so."""
    from backend.host import limit_malloc_arenas

    assert limit_malloc_arenas(2) is True


def test_a_reader_who_arrives_while_a_worker_warms_is_served_before_the_rest(monkeypatch):
    """The warm-up gives way: a computation that arrives while the worker warms runs before
    the warm-up's next widget (in order, whatever the timing), and /api/health says `warming`
    until the warm-up is done."""
    import backend.compute as widgets
    import backend.gunicorn_conf as conf
    from backend.app import create_app
    from backend.app.demand import DEMAND, WARMING

    order: list = []
    first_started, first_may_end = threading.Event(), threading.Event()

    class _Blocking(_Module):
        def compute(self, params):
            order.append(("warm", self.SPEC.name))
            first_started.set()
            assert first_may_end.wait(10)

    fake = {"first": _Blocking("first", "light", order, 0),
            "second": _Module("second", "light", order, 0),
            "model": _Module("model", "heavy", order, 0)}
    monkeypatch.setattr(widgets, "REGISTRY", fake)
    app = create_app({"TESTING": True, "SITE_DIR": "/nonexistent"})
    client, slots = app.test_client(), app.extensions["book_fair_queue"]
    yields = DEMAND.yields
    thread = threading.Thread(target=conf.warm, args=(_Log(),), name="warm-widgets", daemon=True)
    thread.start()
    assert first_started.wait(10)  # the warm-up is inside its first widget
    assert client.get("/api/health").get_json()["warming"] is True
    with app.test_request_context("/api/widgets/x"), slots.compute_slot():  # a reader arrives
        first_may_end.set()
        deadline = time.monotonic() + 10
        while DEMAND.yields == yields and time.monotonic() < deadline:
            time.sleep(0.01)
        assert DEMAND.yields == yields + 1  # the warm-up waits for the reader ...
        order.append(("reader", "x"))  # ... who computes before the warm-up's next widget
    thread.join(timeout=10)
    assert not thread.is_alive() and not WARMING.is_set()
    assert order == [("warm", "first"), ("reader", "x"), ("second", {"at": "default"}),
                     ("model", {"at": 1}), ("model", {"at": 2})]
    assert client.get("/api/health").get_json()["warming"] is False


def test_under_constant_traffic_the_warm_up_still_ends(monkeypatch):
    from backend.app.demand import Demand

    demand = Demand()
    with demand.held():
        t0 = time.monotonic()
        assert demand.wait_idle(0.05) is False  # gave up waiting: the warm-up goes on
        assert time.monotonic() - t0 >= 0.05 and demand.yields == 1
    assert demand.wait_idle(0.05) is True and demand.yields == 1  # idle: no wait


def test_the_warm_up_waits_for_a_quiet_moment_after_a_reader():
    """A reader's requests come in bursts: the warm-up starts nothing until none has ended for
    `quiet` seconds (a lower bound on the wait, never an upper one)."""
    from backend.app.demand import Demand

    demand = Demand()
    with demand.held():
        pass
    t0 = time.monotonic()
    assert demand.wait_idle(10, quiet=0.2) is True
    assert time.monotonic() - t0 >= 0.15 and demand.yields == 1
