"""`bench replay`: the openb trace with its own times, checked against an allocation computed here from the CSV."""

from __future__ import annotations

import csv

import pytest

from gpusched.scenarios.openb import openb_dir

DATA = openb_dir()  # $GPUSCHED_OPENB: tests/conftest.py points it at ../shared/data/openb beside the repository
pytestmark = pytest.mark.skipif(
    not (DATA / "openb_pod_list_default.csv").exists(),
    reason=f"openb trace not found at {DATA} (set $GPUSCHED_OPENB, or run `gpusched bench openb --download`)",
)


def _mean_allocation_if_nothing_waits() -> float:
    """Each pod holds its GPU milli from creation to deletion; time-weighted over the arrival window."""
    with (DATA / "openb_pod_list_default.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    start = min(float(r["creation_time"]) for r in rows)
    end = max(float(r["creation_time"]) for r in rows) - start
    held = 0.0
    for r in rows:
        begin = float(r["creation_time"]) - start
        finish = min(end, begin + max(0.0, float(r["deletion_time"]) - float(r["creation_time"])))
        held += int(r["num_gpu"]) * int(r["gpu_milli"]) * max(0.0, finish - begin)
    return 100 * held / (6212 * 1000 * end)


def test_replay_at_the_trace_own_pace_matches_the_trace(gpusched):
    result = gpusched("bench", "replay", "--data", DATA, "--policies", "binpack", "--workers", 1, "--json")
    assert result.exit_code == 0, result.stderr
    replay = result.json()
    (binpack,) = replay["policies"]
    assert binpack["waited"] == 0 and binpack["never_placed"] == 0  # a few dozen pods at once: nothing waits
    assert binpack["mean_allocation_pct"] == pytest.approx(_mean_allocation_if_nothing_waits(), abs=1e-3)


def test_faster_arrivals_make_pods_wait(gpusched, tmp_path):
    args = ("bench", "replay", "--data", DATA, "--nodes", 150, "--speedup", 1e6, "--workers", 1)
    result = gpusched(*args, "--policies", "binpack,BestFit", "--output-dir", tmp_path, "--json")
    assert result.exit_code == 0, result.stderr
    for policy in result.json()["policies"]:
        assert policy["waited"] > 0 and policy["never_placed"] == 0
        assert 0 <= policy["mean_allocation_pct"] <= policy["peak_allocation_pct"] <= 100
        assert policy["last_arrival_pct"] <= policy["peak_allocation_pct"]
        assert policy["mean_wait_s"] <= policy["max_wait_s"]
        assert len(policy["timeline"]) == 200
    assert sorted(p.name for p in tmp_path.iterdir()) == ["replay.csv", "replay.json", "replay.png"]
    binpack = result.json()["policies"][0]
    text = gpusched(*args, "--policies", "binpack", "--no-timing")
    assert text.lines[0].startswith("replay default: 150 nodes,")
    assert text.lines[0].endswith("(arrivals 1e+06× faster, lifetimes kept)")
    assert text.words[2][:4] == [
        "binpack",
        f"{binpack['last_arrival_pct']:.2f}",
        f"{binpack['peak_allocation_pct']:.2f}",
        str(binpack["waited"]),
    ]


def test_a_trace_without_times_cannot_be_replayed(gpusched):
    result = gpusched("bench", "replay", "--data", DATA, "--trace", "multigpu20", "--policies", "binpack")
    assert result.exit_code == 2
    assert "replay needs creation_time and deletion_time" in result.stderr
