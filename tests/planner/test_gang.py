"""The gang simulator beyond the seed's three runs."""

from __future__ import annotations

import pytest

from gpusched.errors import InputError
from gpusched.models.cluster import Cluster
from gpusched.models.workload import Job
from gpusched.planner.gang import simulate
from gpusched.scenarios import load_scenario

TWO_NODES = Cluster.model_validate(
    {"nodes": [{"name": f"n{i}", "gpu": {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80}} for i in range(2)]}
)


def _job(name, pods, gpus, duration, arrival=0.0, **needs):
    return Job(name=name, pods=pods, gpus_per_pod=gpus, duration=duration, arrival=arrival, **needs)


@pytest.mark.parametrize("mode", ["pod", "gang"])
def test_uncontested_jobs_start_on_arrival(mode):
    report = simulate(TWO_NODES, [_job("a", 2, 4, 100), _job("b", 1, 8, 50, arrival=10)], mode)
    assert [(j.start, j.finish) for j in report.jobs] == [(0, 100), (10, 60)]
    assert report.makespan == 100 and report.idle_gpu_hours == 0 and report.deadlock is None


def test_queued_job_waits_for_a_finish():
    report = simulate(TWO_NODES, [_job("a", 2, 8, 100), _job("b", 1, 8, 50, arrival=10)], "gang")
    assert [(j.start, j.finish) for j in report.jobs] == [(0, 100), (100, 150)]


def test_pod_mode_idle_accounting_until_the_blocker_leaves():
    # b binds one 8-GPU pod at t=10 and waits for its second until a finishes at t=100: 8 GPUs x 90 s
    report = simulate(TWO_NODES, [_job("a", 1, 8, 100), _job("b", 2, 8, 50, arrival=10)], "pod")
    assert report.jobs[1].start == 100
    assert report.idle_gpu_hours == pytest.approx(8 * 90 / 3600)


def test_a_job_larger_than_the_cluster_never_fits_and_others_still_run():
    report = simulate(TWO_NODES, [_job("huge", 3, 8, 10), _job("ok", 1, 8, 10)], "gang")
    huge, ok = report.jobs
    assert huge.never_fits and huge.start is None
    assert ok.start == 0 and report.makespan is None


def test_model_requirement_applies_to_every_pod():
    report = simulate(TWO_NODES, [_job("h100", 1, 1, 10, model="H100-SXM5-80GB")], "gang")
    assert report.jobs[0].never_fits


def test_timeout_counts_from_the_first_reservation():
    s = load_scenario("training")
    report = simulate(s.cluster, s.jobs.jobs, "gang", timeout=2000)
    # llm-a reserves at t=10 and, with a 2000 s timeout, is still holding when the blocker leaves at 1200
    assert [(j.job, j.start) for j in report.jobs] == [("blocker", 0), ("llm-a", 1200), ("llm-b", 4800)]
    assert report.idle_gpu_hours == pytest.approx(8 * 1190 / 3600)


def test_pod_mode_refuses_a_timeout():
    with pytest.raises(InputError, match="a timeout applies to mode gang"):
        simulate(TWO_NODES, [_job("a", 1, 1, 1)], "pod", timeout=5)
