"""Candidate changes for a Pending pod, each tried on the model: a change that schedules the pod becomes a Change
(with its cost), one that was worth trying and does not becomes a NotHelp (with the reason it still fails).

The planners supply the changes that touch other pods: preempt (the fewest, lowest evictions), defrag (the fewest
moves), mig plan (a repartition that keeps busy instances). The rest are edits to the pod's own spec.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import networkx as nx

from ...errors import InputError
from ...models.cluster import Cluster, MigInstance
from ...models.graph import allreduce_seconds, build_graph, gpu_id
from ...models.mig import profiles_for
from ...models.scheduling import Toleration
from ...models.workload import GpuNeeds, Pod
from ..allreduce import allreduce_for
from ..optimize.defrag import TargetShape, defrag
from ..optimize.mig import plan_mig
from ..optimize.mig.layouts import inventory
from ..optimize.preempt import preempt
from ..optimize.solver import Infeasible, SolverConfig
from ..place import DEFAULT_GRADIENT_GB
from ..scheduler.framework import Diagnosis
from ..scheduler.names import NODE_AFFINITY, NODE_UNSCHEDULABLE, TAINT_TOLERATION
from ..scheduler.plugins.gpudevices import GpuChoice
from ..state import ClusterState, mig_resource
from .edit import Edit, MigLayout, MovedPod, apply_edit, place_one
from .report import Change, Cost, NotHelp

__all__ = ["Context", "candidates"]

Found = Change | NotHelp


@dataclass
class Context:
    cluster: Cluster
    pod: Pod
    state: ClusterState  # running pods' requests counted
    diagnosis: Diagnosis
    config: SolverConfig
    gradient_gb: float = DEFAULT_GRADIENT_GB

    @cached_property
    def graph(self) -> nx.Graph:
        return build_graph(self.cluster)

    def attempt(self, edit: Edit) -> GpuChoice | Diagnosis:
        cluster, pod = apply_edit(self.cluster, self.pod, edit)
        return place_one(cluster, pod, pod.gpus)


def _still(found: Diagnosis) -> str:
    return f"still Pending: {found.message}"


def _try(ctx: Context, kind, summary: str, edit: Edit, cost: Cost, details: list[str] | None = None) -> Found:
    found = ctx.attempt(edit)
    if isinstance(found, Diagnosis):
        return NotHelp(change=summary, why=_still(found))
    return Change(kind=kind, summary=summary, details=details or [], cost=cost, lands_on=found.node.name, edit=edit)


# --- edits to the pod's own spec ----------------------------------------------------------------------------------


def _taints(ctx: Context) -> Iterator[Found]:
    """Tolerate every NoSchedule/NoExecute taint of one tainted node (fewest tolerations first)."""
    sets = dict.fromkeys(  # in node order, so that ties repeat
        tuple(t for t in ctx.state.node(name).spec.taints if t.effect != "PreferNoSchedule")
        for name in ctx.diagnosis.failing(TAINT_TOLERATION)
    )
    for taints in sorted(sets, key=len):
        tolerations = [Toleration(key=t.key, operator="Equal", value=t.value, effect=t.effect) for t in taints]
        text = ", ".join(f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in taints)
        edit = Edit(pod={"tolerations": [*ctx.pod.tolerations, *tolerations]})
        yield _try(ctx, "toleration", f"add a toleration for {text}", edit, Cost(edits=1))


def _selector(ctx: Context) -> Iterator[Found]:
    if ctx.diagnosis.failing(NODE_AFFINITY) and ctx.pod.node_selector:
        wanted = ", ".join(f"{k}={v}" for k, v in ctx.pod.node_selector.items())
        yield _try(ctx, "selector", f"drop the nodeSelector {wanted}", Edit(pod={"node_selector": {}}), Cost(edits=1))


def _uncordon(ctx: Context) -> Iterator[Found]:
    for name in ctx.diagnosis.failing(NODE_UNSCHEDULABLE):
        yield _try(ctx, "uncordon", f"uncordon {name} (kubectl uncordon {name})", Edit(uncordon=[name]), Cost(edits=1))


def _memory_needed(ctx: Context) -> float | None:
    """The pod's GPU memory need: declared, or that of the model it asks for (its nodes, else its name: -80GB)."""
    pod = ctx.pod
    if pod.memory_gib:
        return pod.memory_gib
    sizes = [node.memory_gib for node in ctx.state.nodes if pod.model and node.model == pod.model]
    named = re.search(r"(\d+)GB", pod.model or "")
    return max(sizes, default=float(named[1]) if named else None)


def _models(ctx: Context) -> dict[str, float]:
    """GPU models with whole GPUs (or replicas) in the cluster -> memory per GPU."""
    return {node.model: node.memory_gib for node in ctx.state.nodes if node.whole_gpus()}


def _other_models(ctx: Context) -> Iterator[Found]:
    """Relax the model selector to another model with enough memory; smaller models will not help."""
    need = _memory_needed(ctx)
    if ctx.pod.mig_profile or not (ctx.pod.model or ctx.pod.memory_gib):
        return
    for model, memory in sorted(_models(ctx).items(), key=lambda item: (-item[1], item[0])):
        if model == ctx.pod.model:
            continue
        if need and memory < need:
            yield NotHelp(
                change=f"more {model} GPUs, or accepting them", why=f"{memory:g} GiB each; the pod needs {need:g} GiB"
            )
        elif ctx.pod.model:
            edit = Edit(pod={"model": model, "memory_gib": need})
            enough = f" ≥ {need:g} GiB" if need else ""
            summary = f"accept {model} ({memory:g} GiB{enough}): relax the model selector"
            yield _try(ctx, "model", summary, edit, Cost(edits=1))


def _mig_profiles_with(ctx: Context, need: float) -> list[tuple[str, float]]:
    """MIG profiles the cluster's MIG nodes offer with at least `need` GiB, smallest first."""
    found: dict[str, float] = {}
    for node in ctx.cluster.nodes:
        block = node.gpu
        if block is None or not block.mig:
            continue
        for name, profile in profiles_for(block.model, block.memory_gib).items():
            allowed = block.mig_profiles is None or name in block.mig_profiles
            memory = profile.memory_gib(block.memory_gib)
            if allowed and memory >= need:
                found.setdefault(name, memory)
    return sorted(found.items(), key=lambda item: (item[1], item[0]))


def _as_mig(ctx: Context) -> Iterator[Found]:
    """A one-GPU pod that states its memory can run on a MIG instance with that much memory, repartitioned if need be."""
    pod = ctx.pod
    if pod.mig_profile or pod.gpus != 1 or not pod.memory_gib or pod.shared:
        return
    for profile, memory in _mig_profiles_with(ctx, pod.memory_gib)[:1]:
        request = {"mig_profile": profile, "model": None}
        summary = f"run it on a MIG {profile} instance ({memory:g} GiB): request {mig_resource(profile)}"
        found = _try(ctx, "mig", summary, Edit(pod=request), Cost(edits=1))
        if isinstance(found, Change):
            yield found
            continue
        yield from _repartition(ctx, profile, 1, request, summary)


def _mig_layouts(ctx: Context, profile: str, count: int) -> tuple[list[MigLayout], list[str]] | None:
    """The optimal repartition serving `count` free instances of the profile (busy instances untouched)."""
    if not any(profile in gpu.allowed for gpu in inventory(ctx.cluster)):
        return None
    try:
        plan = plan_mig(ctx.cluster, {profile: count}, ctx.config)
    except Infeasible:
        return None
    if not plan.outcome.met or not plan.changes:
        return None
    layouts, details = [], []
    for change in plan.changes:
        instances = [
            MigInstance(gpu=change.gpu, profile=i.profile, start=i.start, holder=i.holder) for i in change.after
        ]
        layouts.append(MigLayout(node=change.node, gpu=change.gpu, instances=instances))
        created = ", ".join(f"{i.profile}@{i.start}" for i in change.created) or "nothing"
        destroyed = ", ".join(f"{i.profile}@{i.start}" for i in change.destroyed) or "nothing"
        details.append(f"{change.node} GPU {change.gpu}: destroy free {destroyed}; create {created}")
    return layouts, details


def _repartition(ctx: Context, profile: str, count: int, request: dict, summary: str) -> Iterator[Found]:
    planned = _mig_layouts(ctx, profile, count)
    if planned is None:
        yield NotHelp(
            change=summary, why=f"no free {profile} instance, and no repartition of free MIG slices makes one"
        )
        return
    layouts, details = planned
    where = ", ".join(f"{layout.node} GPU {layout.gpu}" for layout in layouts)
    edit = Edit(pod=request, mig=layouts)
    text = f"{summary}, after repartitioning {where}" if request else f"repartition {where} to add {profile}"
    yield _try(ctx, "mig", text, edit, Cost(repartitioned=len(layouts), edits=1 if request else 0), details)


def _mig_pod(ctx: Context) -> Iterator[Found]:
    """A pod asking for a MIG profile: repartition free slices to make the instances."""
    if ctx.pod.mig_profile:
        yield from _repartition(ctx, ctx.pod.mig_profile, ctx.pod.gpus, {}, f"repartition to add {ctx.pod.mig_profile}")


def _shared(ctx: Context) -> Iterator[Found]:
    """A replica is only worth suggesting to a pod that declares its memory; it never adds memory."""
    pod = ctx.pod
    sliced = [node for node in ctx.state.nodes if node.time_sliced]
    if pod.shared or pod.mig_profile or not sliced or not pod.memory_gib:
        return
    small = sorted({(node.model, node.memory_gib) for node in sliced if node.memory_gib < pod.memory_gib})
    for model, memory in small:
        yield NotHelp(
            change="time-slicing (more replicas of nvidia.com/gpu)",
            why=f"a replica shares one {model}'s {memory:g} GiB with the other pods on it; the pod needs {pod.memory_gib:g} GiB",
        )
    if len(small) < len({node.model for node in sliced}):
        summary = "accept a time-sliced replica (its declared memory fits; no memory or fault isolation)"
        yield _try(ctx, "shared", summary, Edit(pod={"shared": True}), Cost(edits=1))


def _nvlink(ctx: Context) -> Iterator[Found]:
    """Drop the NVLink requirement, and say what the all-reduce then costs."""
    pod = ctx.pod
    if not pod.nvlink or pod.gpus < 2:
        return
    edit = Edit(pod={"nvlink": False})
    found = ctx.attempt(edit)
    summary = "drop the NVLink requirement"
    if isinstance(found, Diagnosis):
        yield NotHelp(change=summary, why=_still(found))
        return
    block = found.node.spec.gpu
    assert block is not None
    ring = allreduce_for(ctx.graph, [gpu_id(found.node.name, i) for i in found.gpus], ctx.gradient_gb)
    ideal = allreduce_seconds(pod.gpus, ctx.gradient_gb, block.nvlink_gbps)
    slowdown = ring.seconds / ideal if ideal else 1.0
    detail = (
        f"on {found.node.name} GPUs {list(found.gpus)} (islands {found.islands}): all-reduce of {ctx.gradient_gb:g} GB "
        f"{ring.seconds:.3f} s per step over {ring.link} instead of {ideal:.3f} s inside one island ({slowdown:.1f}x slower)"
    )
    yield Change(
        kind="nvlink",
        summary=summary,
        details=[detail],
        cost=Cost(slowdown=slowdown, edits=1),
        lands_on=found.node.name,
        edit=edit,
    )


# --- changes to other pods and to the cluster ---------------------------------------------------------------------


def _evict(ctx: Context) -> Iterator[Found]:
    """The proven-minimal evictions; if its priority is too low for any, what a higher PriorityClass would evict."""
    report = preempt(ctx.cluster, ctx.pod, ctx.config)
    if report.feasible:
        yield _eviction(ctx, report, {})
        return
    top = max((pod.needs.priority for pod in ctx.cluster.running_pods()), default=None)
    if top is None or top < ctx.pod.priority:
        yield NotHelp(change="evicting lower-priority pods", why=report.reason or "no eviction plan")
        return
    raised = ctx.pod.model_copy(update={"priority": top + 1})
    higher = preempt(ctx.cluster, raised, ctx.config)
    if higher.feasible:
        yield _eviction(ctx, higher, {"priority": top + 1})
    else:
        yield NotHelp(change="raising its priority", why=higher.reason or "no eviction plan")


def _pods_by_node(pods: list[tuple[str, str]]) -> str:
    """`a, b on dgx-a; c on dgx-b` from (pod, node) pairs."""
    by_node: dict[str, list[str]] = {}
    for pod, node in pods:
        by_node.setdefault(node, []).append(pod)
    return "; ".join(f"{', '.join(names)} on {node}" for node, names in by_node.items())


def _eviction(ctx: Context, report, pod_fields: dict) -> Found:
    victims = [v.pod for v in report.victims]
    priorities = sorted({v.priority for v in report.victims})
    listed = (
        f"{len(victims)} pod{'s' if len(victims) != 1 else ''} of priority {'/'.join(map(str, priorities))}: "
        + _pods_by_node([(v.pod, v.node) for v in report.victims])
    )
    if pod_fields:
        summary = f"give it priority {pod_fields['priority']} (a PriorityClass), which evicts {listed}"
        kind = "priority"
    else:
        summary = f"evict {listed}"
        kind = "evict"
    solve = report.solve
    details = [f"the fewest, lowest-priority evictions: CP-SAT {solve.status}"] if solve else []
    return _try(
        ctx,
        kind,
        summary,
        Edit(pod=pod_fields, evict=victims),
        Cost(evicted=len(victims), edits=len(pod_fields)),
        details,
    )


def _move(ctx: Context) -> Iterator[Found]:
    """The fewest moves of running pods that make room (whole exclusive GPUs only)."""
    pod = ctx.pod
    if pod.mig_profile or pod.shared or not pod.gpus:
        return
    # defrag packs GPUs, not the target's cpu and memory: those are checked when the moves are tried below
    gpu_needs = GpuNeeds.model_validate(pod.model_dump(include=set(GpuNeeds.model_fields), exclude={"cpu", "memory"}))
    shape = TargetShape(pod.gpus, 1, pod.nvlink and pod.gpus > 1, target=gpu_needs)
    try:
        report = defrag(ctx.cluster, shape, None, ctx.config)
    except InputError as error:  # a shape no node could ever hold
        yield NotHelp(change="moving running pods (defragmenting)", why=error.message)
        return
    if not report.feasible or not report.moves:
        yield NotHelp(change="moving running pods (defragmenting)", why=report.reason or "no move makes room")
        return
    moves = [MovedPod(pod=m.pod, from_node=m.from_node, to_node=m.to_node, to_gpus=m.to_gpus) for m in report.moves]
    listed = "; ".join(f"{', '.join(pods)} {route}" for route, pods in _routes(report.moves).items())
    count = len(moves)
    solve = report.solve
    details = [*report.commands, *([f"the fewest moves: CP-SAT {solve.status}"] if solve else [])]
    summary = f"move {count} pod{'s' if count != 1 else ''}: {listed}"
    yield _try(ctx, "move", summary, Edit(moves=moves), Cost(moved=count), details)


def _routes(moves) -> dict[str, list[str]]:
    """`dgx-b→dgx-a` -> the pods taking that route, in move order."""
    routes: dict[str, list[str]] = {}
    for move in moves:
        routes.setdefault(f"{move.from_node}→{move.to_node}", []).append(move.pod)
    return routes


GENERATORS = (_taints, _selector, _uncordon, _other_models, _as_mig, _mig_pod, _shared, _nvlink, _move, _evict)


def candidates(ctx: Context) -> tuple[list[Change], list[NotHelp]]:
    """Every change tried, ranked by cost (kind order breaks ties), and what was tried and does not help."""
    changes: list[Change] = []
    useless: list[NotHelp] = []
    for generator in GENERATORS:
        for found in generator(ctx):
            if isinstance(found, Change):
                changes.append(found)
            else:
                useless.append(found)
    changes.sort(key=lambda change: change.cost.key())  # stable: the generators' order breaks ties
    return changes, useless
