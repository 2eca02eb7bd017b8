"""The harness itself: the pinned build is cached, and no process or port outlives a cluster, even on failure."""

from __future__ import annotations

import os
import socket

import pytest

from gpusched.conformance.build import cache_root, ensure_built, release, releases
from gpusched.conformance.cluster import start


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ")[-1].startswith("Z")


def free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize("pin", [r.pin for r in releases()])
def test_each_release_is_cached_under_its_own_key(pin):
    ensure_built(version=pin)
    binaries = ensure_built(version=pin)  # the second call never compiles
    assert binaries.built is False and binaries.seconds == 0
    assert binaries.bin_dir == cache_root() / release(pin).key / "bin"
    assert binaries.pin == pin and binaries.key.startswith(f"{pin}-")


def test_the_default_is_the_newest_release():
    assert ensure_built().pin == releases()[-1].pin == "v1.37.2"


def test_a_failing_test_still_stops_every_process():
    with pytest.raises(RuntimeError, match="a test failed"):
        with start(ensure_built()) as cluster:
            processes = list(cluster.info.processes)
            workdir = cluster.info.workdir
            raise RuntimeError("a test failed")
    assert [p.name for p in processes] == ["etcd", "kube-apiserver", "kube-scheduler"]
    assert all(gone(p.pid) for p in processes)
    assert all(free(p.port) for p in processes)
    assert not workdir.exists()


def test_cluster_up_and_down(gpusched, tmp_path):
    folder = tmp_path / "cluster"
    up = gpusched("cluster", "up", "--dir", folder, "--json")
    assert up.exit_code == 0, up.stderr
    info = up.json()
    assert gpusched("cluster", "up", "--dir", folder).exit_code == 2  # one cluster per folder
    result = gpusched("k8s", "--kubeconfig", info["kubeconfig"], "default/none")
    assert result.exit_code == 2 and "404" in result.stderr  # reachable, authenticated, and no such pod
    down = gpusched("cluster", "down", "--dir", folder)
    assert down.exit_code == 0, down.stderr
    assert all(gone(p["pid"]) for p in info["processes"])
    assert all(free(p["port"]) for p in info["processes"])
    assert gpusched("cluster", "down", "--dir", folder).exit_code == 2
