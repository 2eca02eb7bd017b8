"""The real control plane for the conformance tests: built once per pin (cached), started once per session.

Every test here but those in `offline/` (the generator and the report, no cluster) is marked `conformance`
(deselect with `-m "not conformance"`); CI runs them. The fixture stops every process it started when the session
ends, whatever the tests did.
"""

from __future__ import annotations

import pytest

from gpusched.conformance.api import Rest
from gpusched.conformance.build import ensure_built
from gpusched.conformance.cluster import RunningCluster, start


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.replace("\\", "/")
        if "tests/conformance/" in path and "tests/conformance/offline/" not in path:
            item.add_marker(pytest.mark.conformance)


@pytest.fixture(scope="session")
def control_plane() -> RunningCluster:
    """etcd, kube-apiserver, kube-scheduler and kube-controller-manager on free loopback ports."""
    binaries = ensure_built()
    cluster = start(binaries, controller_manager=True)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def rest(control_plane: RunningCluster) -> Rest:
    client = Rest(control_plane.kubeconfig)
    yield client
    client.close()
