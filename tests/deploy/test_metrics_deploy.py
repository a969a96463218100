"""Watching the book run, as deployed: the compose stack's optional Prometheus scrapes every app
replica at the path and port the app serves its metrics on, the Grafana dashboard asks only for
metrics and labels the app exports, the cluster's pods say where to scrape them, and the
queue-depth autoscaler is an overlay that validates while the base stays valid on a cluster with
no metrics adapter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from backend.app import create_app, metrics
from tests.deploy.test_kubernetes import (
    K8S,
    K8S_VERSION,
    base_objects,
    book_container,
    find,
    kustomization,
    strategic_merge,
)

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
DASHBOARD = ROOT / "deploy" / "grafana" / "lecture-hall.json"
QUEUE_HPA = K8S / "queue-hpa"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, tuple[str, set[str]]]:
    """{sample name: (family, label names)} of everything a scrape of the app can hold."""
    site = tmp_path_factory.mktemp("no-site")
    client = create_app({"TESTING": True, "SITE_DIR": str(site)}).test_client()
    client.get("/api/widgets/attention_scaling/result?d_k=8")
    body = client.get("/metrics").get_data(as_text=True)
    labels = {m._name: set(m._labelnames) for m in vars(metrics).values()
              if isinstance(m, MetricWrapperBase)}
    out = {}
    for family in text_string_to_metric_families(body):
        if not family.name.startswith("book_"):
            continue
        names = {"counter": [family.name + "_total"], "gauge": [family.name],
                 "histogram": [family.name + s for s in ("_bucket", "_sum", "_count")]}
        for name in names[family.type]:
            out[name] = (family.name, labels[family.name] | ({"le"} if name.endswith("_bucket")
                                                              else set()))
    return out


def test_the_prometheus_config_scrapes_every_app_replica(client):
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "book"]
    (sd,) = job["dns_sd_configs"]
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    # the compose service name, which the network's DNS answers with every replica's address
    assert sd["names"] == ["app"] and "app" in compose["services"] and sd["type"] == "A"
    assert str(sd["port"]) == compose["x-app-env"]["PORT"]
    assert f"{sd['port']}" in compose["services"]["app"]["expose"]
    client.get("/api/health")
    resp = client.get(job["metrics_path"])
    assert resp.status_code == 200 and "book_requests_total" in resp.get_data(as_text=True)
    assert "static_configs" not in job  # every replica, however many, not a fixed list


def test_the_prometheus_image_is_debians_package_with_that_config():
    text = (PROMETHEUS / "Containerfile").read_text()
    assert re.search(r"^ARG DEBIAN_BASE=debian:bookworm-slim$", text, re.M)
    assert re.search(r"^FROM \$\{DEBIAN_BASE\}$", text, re.M)
    assert "apt-get install -y --no-install-recommends prometheus" in text
    assert "COPY prometheus.yml /etc/prometheus/prometheus.yml" in text
    assert "promtool check config /etc/prometheus/prometheus.yml" in text  # fails the build
    assert "--config.file=/etc/prometheus/prometheus.yml" in text
    assert re.search(r"^USER prometheus$", text, re.M)
    # the local stand-in for DEBIAN_BASE is the one the nginx and redis stand-ins build on
    assert 'DEBIAN=localhost/book-debian:bookworm' in (ROOT / "deploy/local-bases.sh").read_text()


def _compose_config(*profile: str) -> dict:
    env = {**os.environ, "BOOK_REDIS_PASSWORD": "pw-for-the-test"}
    proc = subprocess.run([sys.executable, "-m", "podman_compose", *profile, "-f",
                           "compose.yaml", "config"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return yaml.safe_load(proc.stdout)["services"]


def test_prometheus_is_an_optional_compose_profile():
    assert "prometheus" not in _compose_config()
    services = _compose_config("--profile", "prometheus")
    prom = services["prometheus"]
    assert prom["build"]["context"].endswith("deploy/prometheus")
    assert prom["depends_on"]["app"]["condition"] == "service_healthy"
    (port,) = prom["ports"]
    assert port.startswith("127.0.0.1:") and port.endswith(":9090")  # loopback, as the proxy
    assert services["app"]["environment"]["BOOK_METRICS"] in ("", None)  # the default: on


def _selectors(expr: str) -> list[tuple[str, set[str]]]:
    """(metric name, label names matched) of each selector in a PromQL expression, and every
    label that a `by (...)` groups on, as ("", labels)."""
    out = []
    text = re.sub(r'"[^"]*"', '""', expr)
    for m in re.finditer(r"\b(by|without)\s*\(([^)]*)\)", text):
        out.append(("", {x.strip() for x in m.group(2).split(",") if x.strip()}))
    text = re.sub(r"\b(by|without)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges
    for m in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?", text):
        name, matchers = m.group(1), m.group(2) or ""
        after = text[m.end():].lstrip()
        if after.startswith("(") and not matchers:
            continue  # a function or an aggregation
        labels = set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", matchers))
        out.append((name, labels))
    return out


def test_the_dashboard_asks_only_for_what_the_app_exports(exported):
    import json

    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert exprs
    used = set()
    for expr in exprs:
        selectors = _selectors(expr)
        grouped = set().union(*(labels for name, labels in selectors if not name))
        names = [(name, labels) for name, labels in selectors if name]
        assert names, expr
        for name, labels in names:
            assert name in exported, f"{name} is not a metric the app exports ({expr})"
            assert labels <= exported[name][1], f"{name} has no label {labels} ({expr})"
            used.add(name)
        known = set().union(*(exported[name][1] for name, _ in names))
        assert grouped <= known, f"grouped by labels the metrics lack: {grouped - known} ({expr})"
    # a lecture hall at a glance: requests/s, p95 by widget, the queue, the cache hit rate
    assert {"book_requests_total", "book_request_duration_seconds_bucket", "book_queue_waiting",
            "book_cache_lookups_total", "book_refusals_total"} <= used
    assert any("histogram_quantile(0.95" in e and "widget" in e for e in exprs)
    # every panel reads the dashboard's Prometheus, chosen when it is imported
    assert all(p["datasource"]["uid"] == "${datasource}" for p in dashboard["panels"])


def test_the_dashboard_check_can_fail(exported):
    """A misspelt metric, or a label the app never sets, is caught."""
    ((name, _),) = [s for s in _selectors("sum by (route) (rate(book_requests[1m]))") if s[0]]
    assert name == "book_requests" and name not in exported
    ((name, labels),) = [s for s in _selectors('rate(book_requests_total{path="/x"}[1m])') if s[0]]
    assert labels == {"path"} and not labels <= exported[name][1]


def test_the_pods_say_where_to_scrape_them(client):
    objs = base_objects()
    template = find(objs, "Deployment", "book")["spec"]["template"]
    notes = template["metadata"]["annotations"]
    (port,) = book_container(objs)["ports"]
    assert notes["prometheus.io/scrape"] == "true"
    assert int(notes["prometheus.io/port"]) == port["containerPort"]
    client.get("/api/health")
    resp = client.get(notes["prometheus.io/path"])
    assert resp.status_code == 200 and "book_requests_total" in resp.get_data(as_text=True)


def _queue_hpa_objects() -> list[dict]:
    kust = kustomization(QUEUE_HPA)
    assert kust["resources"] == ["../base"]
    objs = base_objects()
    for entry in kust["patches"]:
        patch = yaml.safe_load((QUEUE_HPA / entry["path"]).read_text())
        target = find(objs, patch["kind"], patch["metadata"]["name"])
        objs[objs.index(target)] = strategic_merge(target, patch)
    return objs


def test_the_queue_overlay_lists_its_files_and_validates():
    listed = {p["path"] for p in kustomization(QUEUE_HPA)["patches"]}
    assert {p.name for p in QUEUE_HPA.glob("*.yaml")} - {"kustomization.yaml"} == listed
    for obj in _queue_hpa_objects():
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_the_queue_overlay_scales_on_the_queue_and_on_cpu(exported):
    base_hpa = find(base_objects(), "HorizontalPodAutoscaler", "book")
    hpa = find(_queue_hpa_objects(), "HorizontalPodAutoscaler", "book")
    # the base needs nothing but metrics-server: it stays valid on any cluster
    assert {m["type"] for m in base_hpa["spec"]["metrics"]} == {"Resource"}
    (cpu,) = base_hpa["spec"]["metrics"]
    assert cpu in hpa["spec"]["metrics"]  # the patch replaces the list: CPU must stay in it
    (queue,) = [m for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
    name = queue["pods"]["metric"]["name"]
    assert name in exported and name == "book_queue_waiting"
    assert float(queue["pods"]["target"]["averageValue"]) > 0
    rest = {k: v for k, v in hpa["spec"].items() if k != "metrics"}
    assert rest == {k: v for k, v in base_hpa["spec"].items() if k != "metrics"}
    # the adapter rule the patch's comment gives asks for the metric the pods export
    text = (QUEUE_HPA / "hpa-queue.yaml").read_text()
    assert f"seriesQuery: '{name}{{" in text


def test_the_image_keeps_the_metrics_client():
    sys.path.insert(0, str(ROOT / "deploy"))
    try:
        import prune_venv
    finally:
        sys.path.remove(str(ROOT / "deploy"))
    assert not [rel for rel, _ in prune_venv.REMOVE if rel.split("/")[0] == "prometheus_client"]
    assert re.search(r"^prometheus-client==\S+$", (ROOT / "requirements.txt").read_text(), re.M)

