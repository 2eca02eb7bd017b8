"""Existing free capacity first: what kube-scheduler would place on the cluster as it is, before any node is
added (the autoscalers provision only for the pods still pending after that). Jobs go in priority order, each
whole or not at all; a confined gang within one NVLink domain."""

from __future__ import annotations

from ....models.cluster import Cluster
from ...pending import PendingJob
from ...place import Placer
from ...scheduler.plugins.gpudevices import GpuChoice
from ...state import ClusterState
from ...validate import Assignment

__all__ = ["use_existing"]


def use_existing(cluster: Cluster, jobs: list[PendingJob]) -> tuple[list[Assignment], list[PendingJob]]:
    """The placements on existing nodes, and the jobs left for new ones."""
    placer = Placer(ClusterState.from_cluster(cluster))
    domains: dict[str, set[str]] = {}
    for node, domain in cluster.domain_of().items():
        domains.setdefault(domain, set()).add(node)
    placed: list[Assignment] = []
    left: list[PendingJob] = []
    for job in sorted(jobs, key=lambda j: -j.needs.priority):
        scopes: list[set[str] | None] = list(domains.values()) if job.confined else [None]
        for scope in scopes:
            bound = _bind(placer, job, scope)
            if bound is not None:
                placed += bound
                break
        else:
            left.append(job)
    return placed, left


def _bind(placer: Placer, job: PendingJob, within: set[str] | None) -> list[Assignment] | None:
    bound: list[tuple[str, GpuChoice]] = []
    for name in job.pod_names():
        choice = placer.choose(job.needs, job.gpus, within)
        if choice is None:
            for done, option in bound:
                placer.release(done, job.needs, option.node)
            return None
        placer.bind(name, job.needs, choice)
        bound.append((name, choice))
    return [Assignment(n, job.needs, c.node.name, tuple(c.gpus), tuple(c.mig), job.gpus) for n, c in bound]
