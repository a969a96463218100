"""deploy/kubernetes/: every manifest is a valid Kubernetes object (schemas bundled with the
`kubernetes-validate` package, so no cluster and no network), and the manifests agree with the
app: the port gunicorn binds, the health route Flask serves, the environment variables the
server reads.

The GPU overlay is a kustomize strategic-merge patch; the test applies it to the base the way
kustomize does (maps merge, lists of named items merge by `name`) and validates the result.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from backend import settings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
# The oldest Kubernetes minor still supported upstream when this was written; the manifests use
# nothing newer (autoscaling/v2, policy/v1, networking.k8s.io/v1 are all GA well before).
K8S_VERSION = "1.30.0"


def load_all(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def kustomization(folder: Path) -> dict:
    return yaml.safe_load((folder / "kustomization.yaml").read_text())


def base_objects() -> list[dict]:
    objs = []
    for name in kustomization(K8S / "base")["resources"]:
        objs += load_all(K8S / "base" / name)
    return objs


def find(objs: list[dict], kind: str, name: str) -> dict:
    matches = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind}/{name}, found {len(matches)}"
    return matches[0]


def strategic_merge(base, patch):
    """kustomize's strategic merge for the fields the overlay touches."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = strategic_merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    if (isinstance(base, list) and isinstance(patch, list)
            and all(isinstance(x, dict) and "name" in x for x in base + patch)):
        out = [copy.deepcopy(x) for x in base]
        for item in patch:
            for i, existing in enumerate(out):
                if existing["name"] == item["name"]:
                    out[i] = strategic_merge(existing, item)
                    break
            else:
                out.append(copy.deepcopy(item))
        return out
    return copy.deepcopy(patch)


def gpu_objects() -> list[dict]:
    kust = kustomization(K8S / "gpu")
    assert kust["resources"] == ["../base"]
    objs = base_objects()
    for entry in kust["patches"]:
        patch = yaml.safe_load((K8S / "gpu" / entry["path"]).read_text())
        target = find(objs, patch["kind"], patch["metadata"]["name"])
        objs[objs.index(target)] = strategic_merge(target, patch)
    return objs


def book_container(objs: list[dict]) -> dict:
    (container,) = find(objs, "Deployment", "book")["spec"]["template"]["spec"]["containers"]
    return container


def test_every_file_is_listed_in_its_kustomization():
    for folder in (K8S / "base", K8S / "gpu"):
        kust = kustomization(folder)
        listed = set(kust.get("resources", [])) | {p["path"] for p in kust.get("patches", [])}
        on_disk = {p.name for p in folder.glob("*.yaml")} - {"kustomization.yaml"}
        assert on_disk == listed - {"../base"}, folder


@pytest.mark.parametrize("variant", ["base", "gpu"])
def test_manifests_validate_against_the_kubernetes_schemas(variant):
    objs = base_objects() if variant == "base" else gpu_objects()
    kinds = {o["kind"] for o in objs}
    assert {"ConfigMap", "Deployment", "Service", "Ingress", "HorizontalPodAutoscaler",
            "PodDisruptionBudget"} <= kinds
    for obj in objs:
        # strict: an unknown field (a typo such as `readinesProbe`) is an error, not ignored.
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_the_validator_rejects_a_misspelt_field():
    """The check above can fail: a probe under a wrong name is caught."""
    deployment = copy.deepcopy(find(base_objects(), "Deployment", "book"))
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinesProbe"] = container.pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S_VERSION, strict=True)


def test_probes_ports_and_service_match_the_app(client):
    objs = base_objects()
    container = book_container(objs)
    config = find(objs, "ConfigMap", "book-env")["data"]
    (port,) = container["ports"]
    assert port["containerPort"] == int(config["PORT"]) == 8000
    # the port the server binds when PORT is the ConfigMap's (read through the one settings table)
    assert settings.load({"PORT": config["PORT"]})["PORT"] == port["containerPort"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["port"] in (port["name"], port["containerPort"]), probe
        assert client.get(get["path"]).status_code == 200, probe   # the app serves that route
        assert get["path"] == "/api/health"
    service = find(objs, "Service", "book")
    assert service["spec"]["selector"] == find(objs, "Deployment", "book")["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]
    backend = find(objs, "Ingress", "book")["spec"]["rules"][0]["http"]["paths"][0]["backend"]
    assert backend["service"] == {"name": "book", "port": {"name": "http"}}
    assert backend["service"]["port"]["name"] == service["spec"]["ports"][0]["name"]
    for kind in ("HorizontalPodAutoscaler",):
        assert find(objs, kind, "book")["spec"]["scaleTargetRef"]["name"] == "book"
    pdb = find(objs, "PodDisruptionBudget", "book")
    assert pdb["spec"]["selector"] == find(objs, "Deployment", "book")["spec"]["selector"]


def test_the_environment_names_are_the_apps():
    objs = base_objects()
    container = book_container(objs)
    names = set(find(objs, "ConfigMap", "book-env")["data"])
    names |= {e["name"] for e in container.get("env", []) if e["name"] != "TMPDIR"}
    names |= {e["name"] for e in book_container(gpu_objects()).get("env", []) if e["name"] != "TMPDIR"}
    unknown = names - {var.name for var in settings.TABLE}
    assert not unknown, f"not variables the server reads (backend/settings.py): {sorted(unknown)}"
    config = find(objs, "ConfigMap", "book-env")["data"]
    assert config["BOOK_CACHE_URL"] == "redis://redis:6379/0"
    redis_service = find(objs, "Service", "redis")
    assert redis_service["spec"]["ports"][0]["port"] == 6379
    assert config["BOOK_TRUSTED_PROXIES"] == "1"


def test_the_pods_run_as_the_images_non_root_user():
    dockerfile = (ROOT / "Dockerfile").read_text()
    uid = int(re.findall(r"^USER\s+(\d+)", dockerfile, re.M)[-1])
    pod = find(base_objects(), "Deployment", "book")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == uid
    sc = book_container(base_objects())["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    for obj in base_objects():
        if obj["kind"] == "Deployment":
            for c in obj["spec"]["template"]["spec"]["containers"]:
                assert c["resources"]["requests"] and c["resources"]["limits"]["memory"], c["name"]


def test_the_gpu_variant_requests_a_gpu_and_computes_on_cuda():
    container = book_container(gpu_objects())
    for part in ("requests", "limits"):
        assert container["resources"][part]["nvidia.com/gpu"] == 1
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["BOOK_DEVICE"] == "cuda"
    assert env["TMPDIR"] == "/tmp"          # the base's entries survive the merge
    assert container["readinessProbe"] == book_container(base_objects())["readinessProbe"]


def _secret_ref(env: list[dict], name: str) -> dict:
    (var,) = [e for e in env if e["name"] == name]
    return var["valueFrom"]["secretKeyRef"]


def test_redis_requires_a_password_from_a_secret_the_book_is_given():
    objs = base_objects()
    redis = find(objs, "Deployment", "redis")["spec"]["template"]["spec"]["containers"][0]
    assert "args" not in redis and redis["command"][:2] == ["sh", "-c"]
    assert "--protected-mode" not in redis["command"][-1]
    secret = _secret_ref(redis["env"], "REDIS_PASSWORD")
    assert _secret_ref(redis["env"], "REDISCLI_AUTH") == secret  # the readiness probe's redis-cli
    for container in (book_container(objs), book_container(gpu_objects())):
        assert _secret_ref(container["env"], "BOOK_CACHE_PASSWORD") == secret
    assert not [o for o in objs if o["kind"] == "Secret"]  # created by the instructor, not shipped


def test_only_the_books_pods_reach_redis():
    objs = base_objects()
    policy = find(objs, "NetworkPolicy", "redis")["spec"]
    redis_labels = find(objs, "Deployment", "redis")["spec"]["template"]["metadata"]["labels"]
    book_labels = find(objs, "Deployment", "book")["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= redis_labels.items()
    assert policy["policyTypes"] == ["Ingress"]
    (rule,) = policy["ingress"]
    (source,) = rule["from"]
    assert source["podSelector"]["matchLabels"].items() <= book_labels.items()
    assert not source["podSelector"]["matchLabels"].items() <= redis_labels.items()
    assert rule["ports"] == [{"protocol": "TCP", "port": 6379}]


def test_no_secret_is_on_a_command_line(tmp_path):
    """The kubelet expands `$(VAR)` in a container's command and args, which would put the
    password where `ps` on the node shows it. Redis reads it on its standard input instead (run
    here by /bin/sh with a stand-in redis-server, as tests/deploy/test_compose_config.py does)."""
    from tests.deploy.test_compose_config import run_redis_script

    secrets = {e["name"] for o in base_objects() if o["kind"] == "Deployment"
               for c in o["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])
               if "secretKeyRef" in e.get("valueFrom", {})}
    assert secrets == {"REDIS_PASSWORD", "REDISCLI_AUTH", "BOOK_CACHE_PASSWORD"}
    for obj in base_objects():
        if obj["kind"] == "Deployment":
            for c in obj["spec"]["template"]["spec"]["containers"]:
                argv = yaml.safe_dump([c.get("command"), c.get("args")])
                assert not any(f"$({name})" in argv for name in secrets), c["name"]
    redis = find(base_objects(), "Deployment", "redis")["spec"]["template"]["spec"]["containers"][0]
    code, _, argv, stdin = run_redis_script(redis["command"][-1], tmp_path, "0123abcdef")
    assert code == 0 and argv.splitlines()[0] == "-" and "0123abcdef" not in argv
    assert 'requirepass "0123abcdef"' in stdin
    assert "--maxmemory\n256mb" in argv


def test_a_pod_given_one_core_plans_for_one():
    """The pod has a CPU quota (a limit), and the workers plan their torch threads for its CPU
    request, passed as BOOK_CPUS: one core requested on a 64-core node is one thread per worker
    (backend/host.py divides; tests/app/test_host_cpus.py reads fake cgroups)."""
    from backend import host

    for objs in (base_objects(), gpu_objects()):
        container = book_container(objs)
        resources = container["resources"]
        assert "cpu" in resources["limits"]
        (cpus,) = [e for e in container["env"] if e["name"] == "BOOK_CPUS"]
        ref = cpus["valueFrom"]["resourceFieldRef"]
        assert ref["resource"] == "requests.cpu" and ref["containerName"] == container["name"]
        assert str(ref["divisor"]) == "1"  # whole cores, rounded up by the kubelet
        request = float(str(resources["requests"]["cpu"]).rstrip("m")) / (
            1000 if str(resources["requests"]["cpu"]).endswith("m") else 1)
        assert request <= float(resources["limits"]["cpu"])
    config = find(base_objects(), "ConfigMap", "book-env")["data"]
    request = book_container(base_objects())["resources"]["requests"]["cpu"]
    assert host.torch_threads(int(request), int(config["WEB_CONCURRENCY"])) == 1


def test_a_terminating_pod_waits_for_its_endpoints_to_go():
    """preStop: the pod keeps serving a few seconds after it is marked terminating, while the
    endpoints and the nodes' proxies drop it; the wait and gunicorn's graceful stop fit in the
    grace period."""
    import backend.gunicorn_conf as conf

    pod = find(base_objects(), "Deployment", "book")["spec"]["template"]["spec"]
    pre_stop = book_container(base_objects())["lifecycle"]["preStop"]
    command = pre_stop["exec"]["command"]
    assert command[0] == "sleep"
    assert 3 <= int(command[1]) and int(command[1]) + conf.graceful_timeout < pod["terminationGracePeriodSeconds"]


def test_the_image_tag_is_fixed():
    """Not `latest`: with IfNotPresent a node keeps whichever `latest` it pulled first. The
    tag is the project's version, the GPU overlay's the same version's CUDA build."""
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for folder, tag in (("base", version), ("gpu", f"{version}-gpu")):
        (image,) = kustomization(K8S / folder)["images"]
        assert image["name"] == "transformer-book"
        assert str(image["newTag"]) == tag
        assert image["newTag"] not in ("latest", "", "gpu")


def test_the_pods_temporary_folder_holds_two_conversions():
    """Both workers convert SmolLM2's weights (538,159,619 bytes, measured in the image) at
    once at the first start, so /tmp briefly holds two copies; an emptyDir over its sizeLimit
    gets the pod evicted."""
    pod = find(base_objects(), "Deployment", "book")["spec"]["template"]["spec"]
    (tmp,) = [v for v in pod["volumes"] if v["name"] == "tmp"]
    limit = tmp["emptyDir"]["sizeLimit"]
    units = {"Gi": 2**30, "Mi": 2**20}
    size = int(limit[:-2]) * units[limit[-2:]]
    assert size >= 2 * 538_159_619 + 64 * 2**20  # and room for the tokenizer, metrics, torch


def test_only_the_ingress_and_prometheus_reach_the_books_pods():
    """The app trusts one proxy's X-Forwarded-For: a pod that reached it directly could choose
    its own client address. The policy admits the app's port from the ingress controller's
    namespace and the monitoring one, nothing else."""
    objs = base_objects()
    policy = find(objs, "NetworkPolicy", "book")["spec"]
    book_labels = find(objs, "Deployment", "book")["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= book_labels.items()
    assert policy["policyTypes"] == ["Ingress"]
    (rule,) = policy["ingress"]
    namespaces = {s["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                  for s in rule["from"]}
    assert namespaces == {"ingress-nginx", "monitoring"}
    assert all(set(s) == {"namespaceSelector"} for s in rule["from"])  # no pod of any namespace
    (port,) = book_container(objs)["ports"]
    assert rule["ports"] == [{"protocol": "TCP", "port": port["containerPort"]}]
    config = find(objs, "ConfigMap", "book-env")["data"]
    assert config["BOOK_TRUSTED_PROXIES"] == "1"
    assert find(objs, "Ingress", "book")["spec"]["ingressClassName"] == "nginx"
