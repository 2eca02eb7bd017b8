"""plan's extraction: pattern counts → concrete nodes and GPUs → concrete pods of concrete jobs, and the metrics
the plan is compared on."""

from __future__ import annotations

from collections import defaultdict

from ortools.sat.python import cp_model

from ....models.cluster import Cluster
from ...frag import FragRow, fragmentation
from ...state import ClusterState, NodeState
from ..classes import NodeClass, PodShape, canonical_free
from .model import JobType, PlanModel, SupplyGroup
from .report import Metrics, PendingJob, PlannedPod, weight_of

__all__ = ["extract", "plan_metrics", "stranded"]

Slot = tuple[NodeState, list[int], list[tuple[int, int]], bool]  # node, GPUs, MIG instances, split


def _gpus_of(node: NodeState, shape: PodShape, slots: tuple[int, ...]) -> tuple[list[int], list[tuple[int, int]]]:
    whole, shared, mig = canonical_free(node)
    if shape.mig_profile:
        return sorted({mig[s][0] for s in slots}), [mig[s] for s in slots]
    if shape.shared_gib is not None:
        return [shared[s] for s in slots], []
    flat = [index for island in whole for index in island]
    return [flat[s] for s in slots], []


def extract(
    solver: cp_model.CpSolver, built: PlanModel, classes: list[NodeClass], types: list[JobType]
) -> tuple[list[PlannedPod], list[str]]:
    """Pattern counts -> concrete nodes and GPUs -> concrete pods of concrete jobs."""
    slots: dict[tuple[int, PodShape], list[Slot]] = defaultdict(list)  # (class, GPU shape) -> free places
    for c, found in enumerate(built.class_patterns):
        nodes = iter(classes[c].nodes)
        for k, (_, arrangement) in enumerate(found):
            for _ in range(solver.value(built.counts[c][k])):
                node = next(nodes)
                for item in arrangement.items:
                    gpus, mig = _gpus_of(node, item.shape, item.slots)
                    slots[(c, item.shape)].append((node, gpus, mig, item.split))
    pooled: dict[SupplyGroup, list[Slot]] = {}  # group -> its places on its family's classes
    for family, kin in built.families.items():
        shape, places = family[0], []
        for c, share in built.family_supply[family].items():
            free = slots[(c, shape)]
            places += free[: solver.value(share)]
            free[:] = free[solver.value(share) :]
        for group in kin:
            count = solver.value(built.pooled[group])
            pooled[group], places = places[:count], places[count:]
    assignments: list[PlannedPod] = []
    unplaced: list[str] = []
    for group, members in built.groups.items():
        quotas = {}
        for c, share in built.supply[group].items():
            free = slots[(c, group.shape.gpu_view)]
            quotas[c], free[:] = free[: solver.value(share)], free[solver.value(share) :]
        if group.confined is None:
            pods = []
            for j in members:
                chosen = types[j].jobs[: solver.value(built.placed[j])]
                unplaced += [job.name for job in types[j].jobs[len(chosen) :]]
                pods += [(job, name) for job in chosen for name in job.pod_names()]
            own = [slot for c in group.classes if c in quotas for slot in quotas[c]]
            portions = [(pods, own + pooled.get(group, []))]
        else:  # each domain's jobs take that domain's slots
            waiting = list(types[group.confined].jobs)
            portions = []
            for domain, var in built.placed_in[group.confined].items():
                chosen, waiting = waiting[: solver.value(var)], waiting[solver.value(var) :]
                free = [slot for c in group.classes if built.tags[c] == domain for slot in quotas[c]]
                portions.append(([(job, name) for job in chosen for name in job.pod_names()], free))
            unplaced += [job.name for job in waiting]
        for pods, free in portions:
            for (job, name), (node, gpus, mig, split) in zip(pods, free, strict=False):
                assignments.append(PlannedPod(pod=name, job=job.name, node=node.name, gpus=gpus, mig=mig, split=split))
    return assignments, unplaced


def stranded(state: ClusterState, sizes: tuple[int, ...]) -> dict[int, int]:
    """Free exclusive GPUs stranded per pod size."""
    rows: list[FragRow] = fragmentation(state, sizes).rows
    return {row.size: row.stranded for row in rows}


def plan_metrics(
    cluster: Cluster, jobs: list[PendingJob], assignments: list[PlannedPod], sizes: tuple[int, ...]
) -> Metrics:
    state = ClusterState.from_cluster(cluster)
    needs = {job.name: job for job in jobs}
    for a in assignments:
        state.node(a.node).occupy(a.pod, needs[a.job].needs, a.gpus, a.mig)
    placed = {a.job for a in assignments}
    lowest = min((job.needs.priority for job in jobs), default=0)
    return Metrics(
        weighted_gpus=sum(weight_of(j.needs.priority, lowest) * j.pods * j.gpus for j in jobs if j.name in placed),
        gpus_placed=sum(j.pods * j.gpus for j in jobs if j.name in placed),
        jobs_placed=len(placed),
        stranded=stranded(state, sizes),
        islands_split=sum(a.split for a in assignments),
    )
