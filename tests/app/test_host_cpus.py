"""torch's threads follow the CPU quota a container, pod or systemd unit is given, read from
fake cgroup trees: a pod given one core on a 64-core node runs one thread per worker, not 32.
(tests/app/test_host.py holds the simple cases: a quota at the mount's root.)"""

from __future__ import annotations

import pytest

from backend import host, settings

NODE = set(range(64))  # the scheduler lets the process run on all of a 64-core node


def _tree(root, files: dict[str, str]):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture()
def node(tmp_path, monkeypatch):
    """A 64-core node whose cgroup files the test writes; host reads them by default."""
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: NODE)
    root, proc = tmp_path / "cgroup", tmp_path / "proc-self-cgroup"
    root.mkdir()
    # raising=False: the code before this read the mount's root alone, and had neither
    monkeypatch.setattr(host, "CGROUP_ROOT", str(root), raising=False)
    monkeypatch.setattr(host, "PROC_CGROUP", str(proc), raising=False)

    def write(files: dict[str, str], own: str = "0::/\n"):
        _tree(root, files)
        proc.write_text(own)
        return str(root)
    return write


@pytest.mark.parametrize("files, own, cpus", [
    # cgroup v2 inside a container (its own cgroup namespace): the quota at the mount's root
    ({"cgroup.controllers": "cpu memory\n", "cpu.max": "100000 100000\n"}, "0::/\n", 1),
    # v2, a systemd service (CPUQuota=200%): the process's cgroup lies below the root
    ({"cgroup.controllers": "cpu memory\n",
      "system.slice/book.service/cpu.max": "200000 100000\n"},
     "0::/system.slice/book.service\n", 2),
    # v2, Kubernetes: the pod's cgroup holds the tighter quota, the container's says `max`
    ({"cgroup.controllers": "cpu\n", "kubepods/pod1/cpu.max": "100000 100000\n",
      "kubepods/pod1/ctr/cpu.max": "max 100000\n"}, "0::/kubepods/pod1/ctr\n", 1),
    # v2, a slice above allows less than the unit (the smallest applies), in 50 ms periods
    ({"cgroup.controllers": "cpu\n", "user.slice/cpu.max": "150000 50000\n",
      "user.slice/app.scope/cpu.max": "800000 100000\n"}, "0::/user.slice/app.scope\n", 3),
    # v1, the cpu controller mounted as `cpu,cpuacct` (Docker on cgroup v1), which lists the
    # host's path for the container while its mount's root is the container's own cgroup
    ({"cpu,cpuacct/cpu.cfs_quota_us": "100000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
     "4:cpu,cpuacct:/docker/0123abcd\n0::/\n", 1),
    # v1, a process in a child cgroup of the one with the quota
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n",
      "cpu/batch/cpu.cfs_quota_us": "250000\n", "cpu/batch/cpu.cfs_period_us": "100000\n",
      "cpu/batch/book/cpu.cfs_quota_us": "-1\n", "cpu/batch/book/cpu.cfs_period_us": "100000\n"},
     "3:cpu:/batch/book\n", 3),
    # no quota anywhere: the node's cores
    ({"cgroup.controllers": "cpu\n", "a/cpu.max": "max 100000\n"}, "0::/a\n", 64),
    # a path that would leave the mount is not followed
    ({"cgroup.controllers": "cpu\n", "cpu.max": "max 100000\n"}, "0::/../../etc\n", 64),
])
def test_the_quota_is_the_tightest_on_the_way_up(node, files, own, cpus):
    root = node(files, own)
    assert host.available_cpus(root) == cpus


def test_no_proc_file_reads_the_mounts_root(tmp_path, monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: NODE)
    _tree(tmp_path, {"cpu.max": "300000 100000\n"})
    assert host.available_cpus(str(tmp_path), str(tmp_path / "absent")) == 3


def test_a_pod_given_one_core_runs_one_thread_per_worker(node):
    """A CPU limit of one core (cpu.max 100000 100000) on a 64-core node, two workers: one
    torch thread each (today's code gave each `64 // 2` = 32 where the quota sat below the
    mount's root). The settings' default and gunicorn's division, as the server runs them."""
    node({"cgroup.controllers": "cpu\n", "kubepods/burstable/pod7/cpu.max": "100000 100000\n",
          "kubepods/burstable/pod7/book/cpu.max": "100000 100000\n"},
         "0::/kubepods/burstable/pod7/book\n")
    values = settings.load({"WEB_CONCURRENCY": "2"})
    assert values["BOOK_CPUS"] == 1
    assert host.torch_threads(values["BOOK_CPUS"], values["WEB_CONCURRENCY"]) == 1


def test_a_pods_cpu_request_caps_the_threads_without_a_limit(node):
    """No CPU limit (cpu.max `max`), but the pod asked for one core: the manifests pass the
    request as BOOK_CPUS (the downward API), and each worker runs one thread, not 32."""
    node({"cgroup.controllers": "cpu\n", "cpu.max": "max 100000\n"})
    assert host.available_cpus() == 64
    values = settings.load({"WEB_CONCURRENCY": "2", "BOOK_CPUS": "1"})
    assert host.torch_threads(values["BOOK_CPUS"], values["WEB_CONCURRENCY"]) == 1
    with pytest.raises(settings.SettingError, match="BOOK_CPUS"):
        settings.load({"BOOK_CPUS": "0"})


@pytest.mark.parametrize("cpus, workers, threads", [(64, 2, 32), (1, 2, 1), (2, 2, 1),
                                                    (16, 4, 4), (3, 2, 1)])
def test_each_worker_takes_a_share(cpus, workers, threads):
    assert host.torch_threads(cpus, workers) == threads


def test_gunicorn_gives_each_worker_its_share(monkeypatch):
    """post_fork sets torch's threads from the CPUs gunicorn's master read."""
    import logging

    import torch

    import backend.app  # noqa: F401  (gunicorn's preload_app imports the app before it forks)
    import backend.compute as widgets
    import backend.gunicorn_conf as conf

    monkeypatch.setattr(widgets, "REGISTRY", {})  # nothing to warm
    set_to: list[int] = []
    monkeypatch.setattr(torch, "set_num_threads", set_to.append)
    monkeypatch.setattr(conf, "workers", 2)
    for cpus in (1, 64):
        monkeypatch.setattr(conf, "cpus", cpus)
        conf.post_fork(None, type("W", (), {"log": logging.getLogger("test")})())
    assert set_to == [1, 32]
