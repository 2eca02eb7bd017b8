"""plan's extraction: pattern counts → concrete nodes and GPUs → concrete pods of concrete jobs, and the metrics
the plan is compared on.

The counts leave open which node of a class takes which pattern, which of a type's jobs go, and which pod takes
which place. Where cpu or memory may run out those choices matter, and are made for them: the patterns using the
most GPU units go to the nodes with the most cpu and memory left, a type's least demanding jobs go, and each pod,
hungriest first, takes the place whose node has the most left. A job with a pod that fits nowhere is left out
(its places stay free), so the plan is always valid; the caller compares it with what the model counted.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from ...frag import stranded
from ...state import ClusterState, NodeState
from ..classes import NodeClass, PodShape, canonical_free
from ..disrupt import node_copy
from .model import JobType, PlanModel, host_fits, host_room
from .report import Metrics, PendingJob, PlannedPod, weight_of

__all__ = ["extract", "plan_metrics", "stranded"]

Slot = tuple[NodeState, list[int], list[tuple[int, int]], bool]  # node, GPUs, MIG instances, split


Free = tuple[list[list[int]], list[int], list[tuple[int, int]]]  # classes.canonical_free of a node


def _gpus_of(free: Free, shape: PodShape, slots: tuple[int, ...]) -> tuple[list[int], list[tuple[int, int]]]:
    """The GPUs of a pod's canonical slots on this node; a MIG pod's are its instances' GPUs, one per instance
    (two instances on one GPU name it twice, as the scheduler's GpuChoice does)."""
    whole, shared, mig = free
    if shape.mig_profile:
        instances = [mig[s] for s in slots]
        return [gpu for gpu, _ in instances], instances
    if shape.shared_gib is not None:
        return [shared[s] for s in slots], []
    flat = [index for island in whole for index in island]
    return [flat[s] for s in slots], []


class _Host:
    """cpu and memory left per node, and scored in GPU units' worth: a resource's amount over the most any
    pending pod asks of it per GPU unit, so that a node's score and a pod's demand compare. Only the binding
    nodes' are counted: on the others no placement the GPUs allow runs out of either (model.binding_nodes)."""

    def __init__(self, jobs: list[PendingJob], binding: frozenset[str]) -> None:
        self.binding = binding
        self.asks = {job.name: (job.needs.cpu_milli, job.needs.memory_bytes) for job in jobs}
        self.scale = [max((self.asks[job.name][i] / job.gpus for job in jobs), default=0.0) for i in (0, 1)]
        self.left: dict[str, list[int | None]] = {}
        self.refused: dict[str, set[str]] = defaultdict(set)  # job -> nodes that had a place but not the cpu or memory

    def of(self, node: NodeState) -> list[int | None]:
        if node.name not in self.left:
            self.left[node.name] = list(host_room(node)) if node.name in self.binding else [None, None]
        return self.left[node.name]

    def score(self, node: NodeState) -> float:
        return min(
            (left / scale for left, scale in zip(self.of(node), self.scale, strict=True) if left is not None and scale),
            default=math.inf,
        )

    def demand(self, job: PendingJob) -> float:
        return max(ask / scale if scale else 0.0 for ask, scale in zip(self.asks[job.name], self.scale, strict=True))

    def fits(self, node: NodeState, job: PendingJob) -> bool:
        left = self.of(node)
        return host_fits(self.asks[job.name], (left[0], left[1]))

    def take(self, node: NodeState, job: PendingJob, sign: int = 1) -> None:
        left = self.of(node)
        for i, ask in enumerate(self.asks[job.name]):
            value = left[i]
            if value is not None:
                left[i] = value - sign * ask


@dataclass
class _Pool:
    """Places that any of some pods may take, by node; nodes in a heap by what they have left (lazily updated:
    an entry whose node has less left than when it was pushed is pushed again)."""

    places: dict[str, list[Slot]] = field(default_factory=dict)
    heap: list[tuple[float, str]] = field(default_factory=list)

    def add(self, slots: list[Slot], host: _Host) -> None:
        for slot in slots:
            name = slot[0].name
            if name not in self.places:
                self.places[name] = []
                heapq.heappush(self.heap, (-host.score(slot[0]), name))
            self.places[name].append(slot)

    def put(self, slot: Slot, host: _Host) -> None:
        self.places[slot[0].name].append(slot)
        heapq.heappush(self.heap, (-host.score(slot[0]), slot[0].name))

    def take(self, host: _Host, job: PendingJob, tries: int = 64) -> Slot | None:
        """A place on the node with the most left where the pod fits (among the first `tries` nodes by that)."""
        aside: list[tuple[float, str]] = []
        found = None
        while self.heap and len(aside) < tries:
            key, name = heapq.heappop(self.heap)
            if not self.places[name]:
                continue
            node = self.places[name][-1][0]
            now = -host.score(node)
            if now > key:
                heapq.heappush(self.heap, (now, name))
            elif host.fits(node, job):
                found = name
                aside.append((key, name))
                break
            else:
                aside.append((key, name))
                host.refused[job.name].add(name)
        for entry in aside:
            heapq.heappush(self.heap, entry)
        return None if found is None else self.places[found].pop()


def _places(
    solver: cp_model.CpSolver, built: PlanModel, classes: list[NodeClass], host: _Host
) -> dict[tuple[int, PodShape], list[Slot]]:
    """(class, GPU shape) -> free places: within a class, the patterns using the most GPU units on the nodes with
    the most cpu and memory left (where some node's may run out)."""
    slots: dict[tuple[int, PodShape], list[Slot]] = defaultdict(list)
    for c, found in enumerate(built.class_patterns):
        copies = [k for k, row in enumerate(built.counts[c]) for _ in range(solver.value(row))]
        nodes = classes[c].nodes
        scores = [host.score(node) for node in nodes]
        if any(found[k][0] for k in copies) and not all(score == math.inf for score in scores):
            copies.sort(key=lambda k: -sum(len(item.slots) for item in found[k][1].items))
            nodes = [node for _, node in sorted(zip(scores, nodes, strict=True), key=lambda pair: -pair[0])]
        for k, node in zip(copies, nodes, strict=False):
            free = canonical_free(node) if found[k][1].items else ([], [], [])
            for item in found[k][1].items:
                gpus, mig = _gpus_of(free, item.shape, item.slots)
                slots[(c, item.shape)].append((node, gpus, mig, item.split))
    return slots


def extract(
    solver: cp_model.CpSolver,
    built: PlanModel,
    classes: list[NodeClass],
    types: list[JobType],
    jobs: list[PendingJob],
    binding: frozenset[str],
) -> tuple[list[PlannedPod], list[str], set[str]]:
    """Pattern counts -> concrete nodes and GPUs -> concrete pods of concrete jobs, within the cpu and memory of
    every node where they may run out (`binding`); the jobs left out, and the nodes whose cpu or memory made them
    (a model that counts those nodes' cpu and memory would not choose the same)."""
    host = _Host(jobs, binding)
    slots = _places(solver, built, classes, host)

    def draw(c: int, shape: PodShape, count: int) -> list[Slot]:
        free = slots[(c, shape)]
        drawn, free[:] = free[:count], free[count:]
        return drawn

    family_pool: dict[tuple, _Pool] = {}
    for family in built.families:
        pool = family_pool[family] = _Pool()
        for c, share in built.family_supply[family].items():
            pool.add(draw(c, family[0], solver.value(share)), host)
    family_of = {group: family for family, kin in built.families.items() for group in kin}
    pods: list[tuple[PendingJob, str, _Pool]] = []  # every pod to place, and where it may go
    unplaced: list[str] = []

    def chosen(waiting: list[PendingJob], count: int) -> tuple[list[PendingJob], list[PendingJob]]:
        ordered = sorted(waiting, key=lambda job: host.demand(job))
        return ordered[:count], ordered[count:]

    for group, members in built.groups.items():
        shape = group.shape.gpu_view
        if group.confined is None:
            going: list[PendingJob] = []
            for j in members:
                picked, left = chosen(types[j].jobs, solver.value(built.placed[j]))
                going += picked
                unplaced += [job.name for job in left]
            queue = [(job, name) for job in going for name in job.pod_names()]
            for c, share in built.supply[group].items():
                own = _Pool()
                own.add(draw(c, shape, solver.value(share)), host)
                count = sum(len(places) for places in own.places.values())
                pods += [(job, name, own) for job, name in queue[:count]]
                queue = queue[count:]
            if queue:
                pods += [(job, name, family_pool[family_of[group]]) for job, name in queue]
        else:  # each domain's jobs take that domain's places
            t = types[group.confined]
            waiting = sorted(t.jobs, key=lambda job: host.demand(job))
            for domain, var in built.placed_in[group.confined].items():
                going, waiting = waiting[: solver.value(var)], waiting[solver.value(var) :]
                pool = _Pool()
                for c, share in built.supply[group].items():
                    if built.tags[c] == domain:
                        pool.add(draw(c, shape, solver.value(share)), host)
                pods += [(job, name, pool) for job in going for name in job.pod_names()]
            unplaced += [job.name for job in waiting]
    return _seat(pods, host, unplaced)


def _seat(
    pods: list[tuple[PendingJob, str, _Pool]], host: _Host, unplaced: list[str]
) -> tuple[list[PlannedPod], list[str], set[str]]:
    """Each pod, hungriest first (a job's pods together), on the place of its pool whose node has the most cpu and
    memory left; a job with a pod that fits nowhere gives its places back and is left out. Also the nodes that
    turned such a pod away for want of cpu or memory."""
    seated: dict[str, list[tuple[int, PlannedPod, Slot, _Pool]]] = defaultdict(list)
    failed: set[str] = set()
    order = sorted(range(len(pods)), key=lambda i: (-host.demand(pods[i][0]), pods[i][0].name))
    for index in order:
        job, name, pool = pods[index]
        if job.name in failed:
            continue
        slot = pool.take(host, job)
        if slot is None:
            failed.add(job.name)
            for _, _, given, owner in seated.pop(job.name, []):
                host.take(given[0], job, -1)
                owner.put(given, host)
            continue
        node, gpus, mig, split = slot
        host.take(node, job)
        pod = PlannedPod(pod=name, job=job.name, node=node.name, gpus=gpus, mig=mig, split=split)
        seated[job.name].append((index, pod, slot, pool))
    assignments = sorted((index, pod) for placed in seated.values() for index, pod, _, _ in placed)
    refused = {name for job in failed for name in host.refused[job]}
    return [pod for _, pod in assignments], unplaced + sorted(failed), refused


def after(state: ClusterState, jobs: list[PendingJob], assignments: list[PlannedPod]) -> ClusterState:
    """The state once the plan's pods are bound; `state` itself is left as it is (only the nodes that take a pod
    are copied)."""
    needs = {job.name: job for job in jobs}
    touched = {a.node for a in assignments}
    copies = {name: node_copy(state.node(name)) for name in touched}
    result = ClusterState([copies.get(node.name, node) for node in state.nodes], state.network_gbps)
    for a in assignments:
        copies[a.node].occupy(a.pod, needs[a.job].needs, a.gpus, a.mig)
    return result


def plan_metrics(
    state: ClusterState, jobs: list[PendingJob], assignments: list[PlannedPod], sizes: tuple[int, ...]
) -> Metrics:
    """The plan's values on the objective levels, and the stranded GPUs it leaves (`state`: before the plan)."""
    placed = {a.job for a in assignments}
    lowest = min((job.needs.priority for job in jobs), default=0)
    return Metrics(
        weighted_gpus=sum(weight_of(j.needs.priority, lowest) * j.pods * j.gpus for j in jobs if j.name in placed),
        gpus_placed=sum(j.pods * j.gpus for j in jobs if j.name in placed),
        jobs_placed=len(placed),
        stranded=stranded(after(state, jobs, assignments), sizes),
        islands_split=sum(a.split for a in assignments),
    )
