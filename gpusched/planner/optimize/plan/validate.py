"""plan's own check: the independent validator, plus what only a batch plan can get wrong."""

from __future__ import annotations

from collections import defaultdict

from ....models.cluster import Cluster
from ...validate import Assignment, violations
from .report import PendingJob, PlannedPod

__all__ = ["check_plan"]


def check_plan(cluster: Cluster, jobs: list[PendingJob], assignments: list[PlannedPod]) -> list[str]:
    """The independent validator, plus what only a batch plan can get wrong: gangs all or nothing."""
    needs = {job.name: job for job in jobs}
    problems = violations(
        cluster,
        [
            Assignment(a.pod, needs[a.job].needs, a.node, tuple(a.gpus), tuple(a.mig), needs[a.job].gpus)
            for a in assignments
        ],
    )
    bound: dict[str, int] = defaultdict(int)
    for a in assignments:
        bound[a.job] += 1
    problems += [
        f"job {name}: {n} of {needs[name].pods} pods placed" for name, n in bound.items() if n != needs[name].pods
    ]
    domain_of = cluster.domain_of()
    domains: dict[str, set[str]] = defaultdict(set)
    for a in assignments:
        if needs[a.job].confined:
            domains[a.job].add(domain_of.get(a.node, a.node))
    problems += [
        f"job {name}: pods span NVLink domains {', '.join(sorted(found))}, but it needs one (nvlink_domain)"
        for name, found in domains.items()
        if len(found) > 1
    ]
    return problems
