"""Cluster.running_pods: worked out once per model, again for a copy with other nodes or running pods."""

from __future__ import annotations

from gpusched.models.cluster import Cluster
from gpusched.models.workload import GpuNeeds


def _cluster() -> Cluster:
    gpu = {"model": "A100-SXM4-80GB", "count": 2, "memory_gib": 80}
    return Cluster.model_validate(
        {
            "nodes": [
                {"name": "a", "gpu": gpu | {"busy": [{"gpu": 0, "pod": "x"}, {"gpu": 1, "pod": "x"}]}},
                {"name": "b", "gpu": gpu | {"busy": [{"gpu": 1, "pod": "y"}]}},
            ],
            "running": {"y": {"priority": 7}},
        }
    )


def test_the_same_pods_every_time_and_a_callers_list_is_its_own():
    cluster = _cluster()
    first = cluster.running_pods()
    assert [(p.name, p.node, p.gpus, p.needs.priority) for p in first] == [("x", "a", (0, 1), 0), ("y", "b", (1,), 7)]
    first.clear()
    assert [p.name for p in cluster.running_pods()] == ["x", "y"]


def test_a_copy_with_other_nodes_or_running_pods_works_them_out_again():
    cluster = _cluster()
    cluster.running_pods()
    fewer = cluster.model_copy(update={"nodes": cluster.nodes[1:]})
    assert [p.name for p in fewer.running_pods()] == ["y"]
    raised = cluster.model_copy(update={"running": {"y": GpuNeeds(priority=9)}})
    assert [p.needs.priority for p in raised.running_pods()] == [0, 9]
    assert [p.needs.priority for p in cluster.running_pods()] == [0, 7]
