"""The rate limit per client address (Flask-Limiter): a 429 with Retry-After, the address
behind trusted proxies, and the shipped limits against a whole class behind one address (by
arithmetic, and on a live gunicorn)."""

from __future__ import annotations

import http.client
import threading
import time
from pathlib import Path

from limits import parse_many

from backend import settings
from backend.app import create_app

URL = "/api/widgets/attention_scaling"


# ----------------------------------------------------------------------- through the app

def test_rate_limit_is_429_json_with_retry_after(tmp_path):
    app = create_app({"TESTING": True, "RATE_LIMIT": "3/minute", "SITE_DIR": str(tmp_path)})
    client = app.test_client()
    codes = [client.post(URL, json={"d_k": 2}).status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    r = client.post(URL, json={"d_k": 2})
    assert "too many requests from your address" in r.get_json()["error"]
    assert r.is_json and 1 <= int(r.headers["Retry-After"]) <= 61
    # another address has its own allowance; pages and the liveness probe are not limited
    other = client.post(URL, json={"d_k": 2}, environ_base={"REMOTE_ADDR": "10.0.0.9"})
    assert other.status_code == 200
    assert client.get("/api/health").status_code == 200
    assert client.get("/").status_code == 503  # the unbuilt book, not a 429


def test_the_client_address_honours_trusted_proxies(tmp_path):
    def codes(proxies):
        app = create_app({"TESTING": True, "RATE_LIMIT": "2/minute", "SITE_DIR": str(tmp_path),
                          "TRUSTED_PROXIES": proxies})
        c = app.test_client()
        return [c.post(URL, json={"d_k": 2},
                       headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
                for i in range(4)]
    assert codes(0) == [200, 200, 429, 429]   # X-Forwarded-For is not trusted by default
    assert codes(1) == [200] * 4              # behind one proxy: four readers, four addresses

def _codes(tmp_path, addresses, proxies=1, limit="2/minute"):
    app = create_app({"TESTING": True, "RATE_LIMIT": limit, "SITE_DIR": str(tmp_path),
                      "TRUSTED_PROXIES": proxies})
    c = app.test_client()
    return [c.post(URL, json={"d_k": 2}, headers={"X-Forwarded-For": a}).status_code
            for a in addresses]


def test_an_ipv6_client_is_its_64_not_its_address(tmp_path):
    """A machine may take any address of its /64 (privacy addresses, or a script choosing a
    fresh one per request): four addresses of one /64 share one allowance, as four ports of one
    IPv4 address would; another /64 has its own. IPv4 stays per address."""
    same_64 = ["2001:db8:1:2::1", "2001:db8:1:2:ffff:1:2:3", "2001:db8:1:2:a::b",
               "2001:db8:1:2:8000::"]
    assert _codes(tmp_path, same_64) == [200, 200, 429, 429]
    assert _codes(tmp_path, [f"2001:db8:1:{i}::1" for i in range(4)]) == [200] * 4
    assert _codes(tmp_path, [f"198.51.100.{i}" for i in range(4)]) == [200] * 4
    # the same IPv4 client, whether or not a dual-stack socket wrote it as IPv6
    assert _codes(tmp_path, ["198.51.100.7", "::ffff:198.51.100.7", "198.51.100.7"]) == \
        [200, 200, 429]


def test_the_client_key():
    from backend.app.rate import client_key

    assert client_key("203.0.113.9") == "203.0.113.9"
    assert client_key("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64"
    assert client_key("2001:DB8:1:2::") == "2001:db8:1:2::/64"
    assert client_key("fe80::1%eth0") == "fe80::/64"
    assert client_key("::ffff:203.0.113.9") == "203.0.113.9"
    assert client_key("::1") == "::/64"
    assert client_key("") == client_key(None) == "unknown"
    assert client_key("not-an-address") == "not-an-address"


def test_the_fair_queue_shares_its_slots_per_64(tmp_path, monkeypatch):
    """The fair queue counts the same clients as the rate limit: a computation from any address
    of a /64 waits as that /64."""
    app = create_app({"TESTING": True, "SITE_DIR": str(tmp_path)})
    slots = app.extensions["book_fair_queue"]
    clients = []
    real = slots.queue.slot

    def spy(client, wait):
        clients.append(client)
        return real(client, wait)

    monkeypatch.setattr(slots.queue, "slot", spy)
    for address in ("2001:db8:1:2::1", "2001:db8:1:2:dead:beef::9", "192.0.2.1"):
        with app.test_request_context(URL, environ_base={"REMOTE_ADDR": address}):
            with slots.compute_slot():
                pass
    assert clients == ["2001:db8:1:2::/64", "2001:db8:1:2::/64", "192.0.2.1"]


def test_the_default_limit_leaves_a_lecture_hall_room():
    """500 readers behind one address, a move every 1-3 s each, is about 250 requests/s
    (500 / 2 s); the default allows at least twice that, per second and per minute."""
    class_rate = 500 / 2
    for item in parse_many(settings.load({})["BOOK_RATE_LIMIT"]):
        per_second = item.amount / item.get_expiry()
        assert per_second >= 2 * class_rate, item


def test_the_lecture_hall_configs_leave_a_class_room_too():
    """compose.yaml and the cluster's ConfigMap ship their own limit: the same rule holds."""
    import re

    import yaml

    root = Path(__file__).resolve().parents[2]
    compose = (root / "compose.yaml").read_text()
    shipped = {"compose": re.search(r"BOOK_RATE_LIMIT: \$\{BOOK_RATE_LIMIT:-([^}]+)\}",
                                    compose).group(1),
               "kubernetes": yaml.safe_load((root / "deploy/kubernetes/base/configmap.yaml")
                                            .read_text())["data"]["BOOK_RATE_LIMIT"]}
    for where, limit in shipped.items():
        for item in parse_many(limit):
            assert item.amount / item.get_expiry() >= 2 * 500 / 2, (where, item)


# ----------------------------------------------------------------------- a live gunicorn

def test_a_class_behind_one_address_is_never_throttled(slow_server, post):
    """The default limits, 500 readers behind one address moving a slider every 1-3 s: about
    250 requests/s for 4 s, to the ~40 settings a slider has (so most answers are cached)."""
    with slow_server(BOOK_TEST_COMPUTE_SECONDS="0.005") as port:
        statuses: list = []
        rate, seconds, n_threads = 250, 4.0, 25
        start = time.perf_counter() + 0.2

        def reader(k):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            per_thread = rate / n_threads
            for i in range(int(seconds * per_thread)):
                wait = start + (i + k / n_threads) / per_thread - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                status, _, _, _ = post(port, "127.0.0.1", {"d_k": 1 + (i * 7 + k) % 40},
                                        conn=conn)
                statuses.append(status)
            conn.close()

        threads = [threading.Thread(target=reader, args=(k,)) for k in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
    print(f"{len(statuses)} requests in {elapsed:.1f} s ({len(statuses) / elapsed:.0f}/s), "
          f"statuses {sorted(set(statuses))}")
    assert len(statuses) == 1000
    assert set(statuses) == {200}
