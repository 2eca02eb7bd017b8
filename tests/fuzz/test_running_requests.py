"""Planners and the validator count running pods' cpu and memory alike: every plan and placement validates."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.models.cluster import Cluster
from gpusched.models.workload import Pod
from gpusched.planner.optimize.plan import check_plan, pending_jobs, plan
from gpusched.planner.optimize.solver import SolverConfig
from gpusched.planner.place import place
from gpusched.planner.validate import Assignment, violations


@st.composite
def busy_clusters(draw):
    """Nodes with cpu and memory, some GPUs held by running pods that request cpu and memory; pending pods too."""
    nodes, running = [], {}
    for n in range(draw(st.integers(1, 3))):
        count = draw(st.sampled_from([2, 4, 8]))
        busy = draw(st.lists(st.integers(0, count - 1), unique=True, max_size=count))
        for gpu in busy:
            running[f"run-{n}-{gpu}"] = {"cpu": draw(st.integers(0, 16)), "memory": f"{draw(st.integers(0, 64))}Gi"}
        nodes.append(
            {
                "name": f"n{n}",
                "cpu": draw(st.integers(4, 32)),
                "memory": f"{draw(st.integers(16, 128))}Gi",
                "gpu": {
                    "model": "A100-SXM4-80GB",
                    "count": count,
                    "memory_gib": 80,
                    "islands": [list(range(count))],
                    "busy": [{"gpu": gpu, "pod": f"run-{n}-{gpu}"} for gpu in busy],
                },
            }
        )
    pods = [
        Pod(
            name=f"p{i}",
            gpus=draw(st.integers(1, 4)),
            cpu=draw(st.integers(0, 16)),
            memory=f"{draw(st.integers(0, 64))}Gi",
        )
        for i in range(draw(st.integers(1, 5)))
    ]
    return Cluster.model_validate({"nodes": nodes, "running": running}), pods


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_clusters())
def test_every_plan_and_placement_validates(case) -> None:
    cluster, pods = case
    jobs = pending_jobs(pods, [])
    report = plan(cluster, jobs, SolverConfig(time_limit=5, workers=1))
    assert check_plan(cluster, jobs, report.assignments) == []
    for view in ("gpu", "extended"):
        placed = place(cluster, pods, view=view)
        needs = {pod.name: pod for pod in pods}
        assignments = [Assignment(r.pod, needs[r.pod], r.node, tuple(r.gpus)) for r in placed.results if r.node]
        assert violations(cluster, assignments, hardware=view == "gpu") == []


def test_a_running_pods_cpu_is_counted_everywhere() -> None:
    """One node, 8 cpu, a running pod requesting 6: a pending 4-cpu pod fits in no planner, and the validator
    refuses a plan that puts it there."""
    cluster = Cluster.model_validate(
        {
            "nodes": [
                {
                    "name": "n",
                    "cpu": 8,
                    "gpu": {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80, "busy": [{"gpu": 0, "pod": "r"}]},
                }
            ],
            "running": {"r": {"cpu": 6}},
        }
    )
    pod = Pod(name="p", gpus=1, cpu=4)
    jobs = pending_jobs([pod], [])
    assert plan(cluster, jobs, SolverConfig(time_limit=5, workers=1)).unplaced == ["p"]
    assert place(cluster, [pod]).results[0].node is None
    assert [str(v) for v in violations(cluster, [Assignment("p", pod, "n", (1,))])] == ["n: cpu over allocatable"]
