"""`--ray`: the same runs on a local Ray instance as in this process.

Starting Ray takes tens of seconds, so this runs only when asked: GPUSCHED_RAY_TESTS=1 (and Ray installed:
pip install 'gpusched[ray]').
"""

from __future__ import annotations

import os

import pytest

from gpusched.scenarios.openb import openb_dir

DATA = openb_dir()  # $GPUSCHED_OPENB: tests/conftest.py points it at ../shared/data/openb beside the repository
pytestmark = [
    pytest.mark.skipif(not os.environ.get("GPUSCHED_RAY_TESTS"), reason="starts Ray (slow): set GPUSCHED_RAY_TESTS=1"),
    pytest.mark.skipif(
        not (DATA / "openb_pod_list_default.csv").exists(),
        reason=f"openb trace not found at {DATA} (set $GPUSCHED_OPENB, or run `gpusched bench openb --download`)",
    ),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def test_ray_runs_match_local_runs(gpusched):
    pytest.importorskip("ray")
    args = ("bench", "openb", "--data", DATA, "--nodes", 40, "--seeds", "42,43", "--policies", "binpack,FGD", "--json")
    local = gpusched(*args, "--workers", 1).json()
    remote = gpusched(*args, "--ray")
    assert remote.exit_code == 0, remote.stderr
    assert remote.json()["executor"] == "ray"

    def key(run):
        return (run["policy"], run["seed"], run["allocation_pct"], run["curve"])

    assert [key(r) for r in remote.json()["runs"]] == [key(r) for r in local["runs"]]
    assert [{k: v for k, v in b.items() if k != "cpu_seconds"} for b in remote.json()["brackets"]] == [
        {k: v for k, v in b.items() if k != "cpu_seconds"} for b in local["brackets"]
    ]
