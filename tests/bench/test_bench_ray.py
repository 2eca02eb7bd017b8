"""`--ray`: a small sweep on a local Ray instance gives exactly the numbers of the same sweep in this process.

The test starts the instance itself (two CPUs, a small object store, no dashboard), as CI can afford; `bench`
finds it initialised and runs its tasks there. Ray is part of the `test` extra (pip install '.[test]').
"""

from __future__ import annotations

import pytest

from gpusched.scenarios.openb import openb_dir

DATA = openb_dir()  # $GPUSCHED_OPENB: tests/conftest.py points it at ../shared/data/openb beside the repository
pytestmark = [
    pytest.mark.skipif(
        not (DATA / "openb_pod_list_default.csv").exists(),
        reason=f"openb trace not found at {DATA} (set $GPUSCHED_OPENB, or run `gpusched bench openb --download`)",
    ),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=2,
        object_store_memory=100 * 2**20,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    yield ray
    ray.shutdown()


def _figures(result):
    runs = [(r["policy"], r["seed"], r["allocation_pct"], r["curve"]) for r in result["runs"]]
    brackets = [{k: v for k, v in b.items() if k != "cpu_seconds"} for b in result["brackets"]]
    return runs, brackets


def test_ray_sweep_matches_the_local_sweep(gpusched, local_ray):
    args = ("bench", "openb", "--data", DATA, "--nodes", 40, "--seeds", "42,43", "--policies", "binpack,FGD", "--json")
    local = gpusched(*args, "--workers", 1)
    remote = gpusched(*args, "--ray")
    assert local.exit_code == 0, local.stderr
    assert remote.exit_code == 0, remote.stderr
    assert local.json()["executor"] == "inline"
    assert remote.json()["executor"] == "ray"
    assert local_ray.is_initialized()  # bench used the instance it found, and left it running
    assert len(remote.json()["runs"]) == 4 and len(remote.json()["brackets"]) == 2
    assert _figures(remote.json()) == _figures(local.json())
