"""The scale planners' own checks, beside the one validator (planner/validate.py) run on the cluster with the new
nodes added: pods per node (the kubelet's maxPods, which the validator does not model), the limits, gangs whole."""

from __future__ import annotations

from collections import Counter

from ....models.cluster import Cluster
from ...pending import PendingJob
from ...validate import Assignment, Violation, violations
from .world import Capacity, Fleet

__all__ = ["grown", "plan_violations"]


def grown(cluster: Cluster, fleet: Fleet) -> Cluster:
    """The cluster with the launched nodes added (empty: the pods are the plan's assignments)."""
    return cluster.model_copy(update={"nodes": [*cluster.nodes, *(node.state.spec for node in fleet.nodes)]})


def plan_violations(
    cluster: Cluster,
    existing: list[Assignment],
    fleet: Fleet,
    jobs: list[PendingJob],
    capacity: Capacity,
    unplaced: list[str],
) -> list[Violation]:
    assignments = [*existing, *fleet.assignments()]
    problems = violations(grown(cluster, fleet), assignments)
    for node in fleet.nodes:
        if len(node.pods) > node.offering.kind.pods:
            problems.append(
                Violation("capacity", f"{node.name}: {len(node.pods)} pods, the kubelet runs {node.offering.kind.pods}")
            )
    launched = [node.offering for node in fleet.nodes]
    for name, count in Counter(o.kind.name for o in launched).items():
        limit = capacity.per_type.get(name)
        if limit is not None and count > limit:
            problems.append(Violation("capacity", f"{count} nodes of {name}, at most {limit}"))
    totals = (
        ("cpu", capacity.cpu_milli, sum(o.kind.cpu_milli for o in launched)),
        ("GPUs", capacity.gpus, sum(o.gpu.count for o in launched)),
        ("cost", capacity.cost, sum(o.cost for o in launched)),
    )
    problems += [
        Violation("capacity", f"the NodePool's {what} limit exceeded")
        for what, cap, used in totals
        if cap is not None and used > cap
    ]
    on = Counter(a.pod for a in assignments)
    for job in jobs:
        held = sum(on[name] for name in job.pod_names())
        if held not in (0, job.pods):
            problems.append(
                Violation("gang", f"{job.name}: {held} of its {job.pods} pods placed (a gang is placed whole)")
            )
        if (held == 0) != (job.name in unplaced):
            said = "neither placed nor" if held == 0 else "placed and"
            problems.append(Violation("gang", f"{job.name}: {said} reported pending"))
        if job.confined and held:
            nodes = {a.node for a in assignments if a.pod in set(job.pod_names())}
            new = {n.name for n in fleet.nodes}
            if len(nodes) > 1 and nodes & new:
                problems.append(
                    Violation(
                        "constraint", f"{job.name}: confined to one NVLink domain, spread over {len(nodes)} nodes"
                    )
                )
    problems += [Violation("gang", f"{pod}: placed {n} times") for pod, n in on.items() if n > 1]
    return problems
