"""What plan is compared with: kube-scheduler-style placement, job by job, under each policy."""

from __future__ import annotations

import time

from ....models.cluster import Cluster
from ...place import Placer
from ...scheduler.plugins.gpudevices import GpuChoice
from ...state import ClusterState
from .extract import stranded
from .report import Metrics, PendingJob, PlannedPod, weight_of

__all__ = ["greedy", "greedy_cut", "greedy_plan"]


def greedy(cluster: Cluster, jobs: list[PendingJob], policy: str, mode: str, sizes: tuple[int, ...]) -> Metrics:
    """kube-scheduler-style placement, job by job: pod mode keeps partial jobs' pods, gang mode gives them back."""
    found = greedy_plan(cluster, jobs, policy, mode, sizes)
    assert found is not None  # no deadline
    return found[0]


def greedy_plan(
    cluster: Cluster,
    jobs: list[PendingJob],
    policy: str,
    mode: str,
    sizes: tuple[int, ...],
    deadline: float | None = None,
) -> tuple[Metrics, list[PlannedPod]] | None:
    """greedy's metrics, and the pods of the jobs it placed completely (in gang mode a plan plan can start from);
    None when `deadline` passed before the last job (half a heuristic's run is no heuristic's result)."""
    metrics, placements, finished = greedy_cut(cluster, jobs, policy, mode, sizes, deadline)
    return (metrics, placements) if finished else None


def greedy_cut(
    cluster: Cluster,
    jobs: list[PendingJob],
    policy: str,
    mode: str,
    sizes: tuple[int, ...],
    deadline: float | None = None,
) -> tuple[Metrics, list[PlannedPod], bool]:
    """greedy_plan's run, stopped at `deadline`: the jobs placed completely by then, and whether it finished.
    In gang mode a run cut short is still a valid plan (every job in it whole): the floor when nothing else is."""
    state = ClusterState.from_cluster(cluster)
    placer = Placer(state, "gpu", policy)  # type: ignore[arg-type]
    lowest = min((job.needs.priority for job in jobs), default=0)
    complete: list[PendingJob] = []
    placements: list[PlannedPod] = []
    partial_gpus = 0
    domain_of = cluster.domain_of()
    members: dict[str, set[str]] = {}  # domain -> its nodes, once (not once per pod)
    for node, domain in domain_of.items():
        members.setdefault(domain, set()).add(node)
    finished = True
    for job in jobs:
        if deadline is not None and time.perf_counter() > deadline:
            finished = False
            break
        bound: list[tuple[str, GpuChoice]] = []
        for name in job.pod_names():
            within = None  # a confined job's pods follow its first pod's domain, as pod affinity would
            if job.confined and bound:
                within = members[domain_of[bound[0][1].node.name]]
            option = placer.choose(job.needs, job.gpus, within)
            if option is None:
                break
            placer.bind(name, job.needs, option)
            bound.append((name, option))
        if len(bound) == job.pods:
            complete.append(job)
            placements += [
                PlannedPod(
                    pod=name,
                    job=job.name,
                    node=option.node.name,
                    gpus=list(option.gpus),
                    mig=list(option.mig),
                    split=option.spans > 0,
                )
                for name, option in bound
            ]
        elif mode == "gang":
            for name, option in bound:
                placer.release(name, job.needs, option.node)
        else:
            partial_gpus += len(bound) * job.gpus
    metrics = Metrics(
        weighted_gpus=sum(weight_of(j.needs.priority, lowest) * j.pods * j.gpus for j in complete),
        gpus_placed=sum(j.pods * j.gpus for j in complete),
        jobs_placed=len(complete),
        gpus_held_by_partial_jobs=partial_gpus,
        stranded=stranded(state, sizes),
    )
    return metrics, placements, finished
