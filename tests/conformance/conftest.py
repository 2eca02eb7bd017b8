"""The real control plane for the conformance tests: built once per release (cached), started once per release.

`control_plane` is parametrized by every release the conformance module builds (conformance/go.mod, the newest,
and conformance/releases/*.mod), so each test that uses it runs against each release in turn, ids `v1.34.4`,
`v1.35.4` and `v1.37.2` (`-k v1.37.2` picks one). A behaviour an older release lacks is skipped there by the test
itself, naming the feature gate (features.py). Every test here but those in `offline/` (the generator and the report, no
cluster) is marked `conformance` (deselect with `-m "not conformance"`); CI runs them. The fixture stops every
process it started when its release's tests are done, whatever they did.
"""

from __future__ import annotations

import pytest

from gpusched.conformance.api import Rest
from gpusched.conformance.build import ensure_built, releases
from gpusched.conformance.cluster import RunningCluster, start

RELEASES = [release.pin for release in releases()]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every live test `conformance`."""
    for item in items:
        path = item.nodeid.replace("\\", "/")
        if "tests/conformance/" in path and "tests/conformance/offline/" not in path:
            item.add_marker(pytest.mark.conformance)


@pytest.fixture(scope="session", params=RELEASES)
def control_plane(request: pytest.FixtureRequest) -> RunningCluster:
    """etcd, kube-apiserver, kube-scheduler and kube-controller-manager of one release on free loopback ports."""
    binaries = ensure_built(version=request.param)
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
