"""plan's own check: the independent validator, plus what only a batch plan can get wrong."""

from __future__ import annotations

from collections import Counter, defaultdict

from ....models.cluster import Cluster
from ...validate import Assignment, Violation, violations
from .report import PendingJob, PlannedPod

__all__ = ["check_plan"]


def check_plan(
    cluster: Cluster, jobs: list[PendingJob], assignments: list[PlannedPod], unplaced: list[str] | None = None
) -> list[Violation]:
    """The independent validator, plus what only a batch plan can get wrong: each pod one of its job's, placed
    once, gangs all or nothing, and (when the plan lists them) the jobs left out exactly those not placed."""
    needs = {job.name: job for job in jobs}
    problems = [Violation("unknown", f"{a.pod}: unknown job {a.job}") for a in assignments if a.job not in needs]
    known = [a for a in assignments if a.job in needs]
    problems += violations(
        cluster,
        [Assignment(a.pod, needs[a.job].needs, a.node, tuple(a.gpus), tuple(a.mig), needs[a.job].gpus) for a in known],
    )
    pods = {job.name: set(job.pod_names()) for job in jobs}
    problems += [
        Violation("unknown", f"{a.pod}: not a pod of job {a.job} (its pods: {', '.join(needs[a.job].pod_names())})")
        for a in known
        if a.pod not in pods[a.job]
    ]
    problems += [
        Violation("gang", f"{pod}: placed {n} times") for pod, n in Counter(a.pod for a in assignments).items() if n > 1
    ]
    bound: dict[str, set[str]] = defaultdict(set)
    for a in known:
        if a.pod in pods[a.job]:
            bound[a.job].add(a.pod)
    problems += [
        Violation("gang", f"job {name}: {len(placed)} of {needs[name].pods} pods placed")
        for name, placed in bound.items()
        if len(placed) != needs[name].pods
    ]
    if unplaced is not None:
        placed_jobs = {a.job for a in assignments}
        problems += [
            Violation("unknown", f"unplaced names {name}, which is not a job of the plan")
            for name in unplaced
            if name not in needs
        ]
        problems += [
            Violation("gang", f"job {name}: both placed and unplaced") for name in unplaced if name in placed_jobs
        ]
        problems += [
            Violation("gang", f"job {job.name}: neither placed nor unplaced")
            for job in jobs
            if job.name not in placed_jobs and job.name not in unplaced
        ]
        problems += [
            Violation("gang", f"unplaced names {name} {n} times") for name, n in Counter(unplaced).items() if n > 1
        ]
    domain_of = cluster.domain_of()
    domains: dict[str, set[str]] = defaultdict(set)
    for a in known:
        if needs[a.job].confined:
            domains[a.job].add(domain_of.get(a.node, a.node))
    problems += [
        Violation(
            "constraint",
            f"job {name}: pods span NVLink domains {', '.join(sorted(found))}, but it needs one (nvlink_domain)",
        )
        for name, found in domains.items()
        if len(found) > 1
    ]
    return problems
