"""preempt's model: nodes alike up to pod names form a class, each with every minimal eviction per number of pods,
and CP-SAT chooses how many nodes of each class take each choice.

A pod lives on one node, so an eviction plan is one choice per node: how many of the gang's pods it takes and which
of its pods go. For each node class and each number of pods m, every minimal set of evictions that lets m pods fit
is enumerated with gpusched's own fit (`evaluate`), the victims counted per class of interchangeable pods.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from ....models.cluster import Cluster, RunningPod
from ...scheduler.framework import Status
from ...scheduler.plugins.gpudevices import GpuChoice
from ...scheduler.views import View, evaluate
from ...state import ClusterState, NodeState
from ..disrupt import Budgets, choices_per_class, scratch, solve_counts
from ..solver import SolverConfig, SolveReport
from .report import Pending

__all__ = [
    "EvictionChoice",
    "PreemptNodeClass",
    "eviction_choices",
    "node_classes",
    "place_pending",
    "solve_evictions",
    "units_of",
]


@dataclass(frozen=True)
class EvictionChoice:
    """One way to make room on one node: m of the gang's pods, with so many victims of each class gone."""

    pods: int
    evict: tuple[int, ...]  # per victim class of the node class
    top: int | None
    units: int
    victims: int
    budgets: tuple[int, ...]  # evictions counted against each budget


@dataclass
class PreemptNodeClass:
    """Nodes identical up to the names of interchangeable pods, with their victim classes and eviction choices."""

    nodes: list[str]
    victim_classes: list[tuple]  # victim class keys: (priority, GPUs held, MIG profiles, cpu, memory, budgets)
    members: dict[str, list[list[RunningPod]]] = field(default_factory=dict)  # node -> members per victim class
    choices: list[EvictionChoice] = field(default_factory=list)


def units_of(pod: RunningPod) -> int:
    return len(pod.gpus) + len(pod.mig)


def _victim_class_key(pod: RunningPod, node: NodeState, budgets: Budgets, binds: tuple[bool, bool]) -> tuple:
    """Pods with equal keys are interchangeable victims on this node: same priority, budgets, GPUs that are alike
    (the same island counts; exact GPUs and declared memory when time-sliced), and requests where they can bind."""
    if node.time_sliced:
        held = tuple(sorted((g, mem) for g in set(pod.gpus) for name, mem in node.gpus[g].holders if name == pod.name))
    else:
        held = tuple(sorted(Counter(node.gpus[g].island for g in pod.gpus).items()))
    profiles = tuple(sorted(s.profile for g, start in pod.mig for s in node.gpus[g].mig if s.start == start))
    cpu = pod.needs.cpu_milli if binds[0] else 0
    memory = pod.needs.memory_bytes if binds[1] else 0
    return (pod.needs.priority, held, profiles, cpu, memory, budgets.selecting(pod))


def _signature(node: NodeState, tags: dict[str, tuple], binds: tuple[bool, bool]) -> tuple:
    """Nodes with equal signatures are the same up to the names of interchangeable pods: exclusive GPUs by
    island and holder class, time-sliced and MIG GPUs one by one; cpu and memory only where they can bind."""
    spec = node.spec.model_dump_json(
        exclude={"name": True, "gpu": {"busy": True, "mig": True}, "cpu": not binds[0], "memory": not binds[1]}
    )

    def tag(name: str | None) -> tuple:
        return () if name is None else tags.get(name, ("keep",))

    exact = []
    islands: dict[int, Counter] = {}
    for gpu in node.gpus:
        if node.time_sliced or gpu.mig:
            mig = tuple((s.profile, s.start, tag(s.holder)) for s in gpu.mig)
            exact.append((gpu.index, mig, tuple(sorted((tag(h), mem) for h, mem in gpu.holders))))
        else:
            islands.setdefault(gpu.island, Counter())[tag(gpu.holders[0][0]) if gpu.holders else ("free",)] += 1
    whole = tuple((island, tuple(sorted(held.items()))) for island, held in sorted(islands.items()))
    return (spec, tuple(exact), whole, node.cpu_requested if binds[0] else 0, node.memory_requested if binds[1] else 0)


def place_pending(
    node: NodeState, gone: Sequence[RunningPod], pending: Pending, pods: int, view: View = "gpu"
) -> tuple[list[GpuChoice], Status | None]:
    """Place up to `pods` pending pods, one after another, on a copy of the node without `gone`: where they land,
    and the Status that stopped the next one (None when all fit)."""
    copy, placer = scratch(node)
    for pod in gone:
        placer.release(pod.name, pod.needs, copy)
    placed: list[GpuChoice] = []
    for index in range(pods):
        found = evaluate(pending.needs, pending.gpus, copy, view)
        if isinstance(found, Status):
            return placed, found
        placer.bind(f"\0pending-{index}", pending.needs, found)
        placed.append(found)
    return placed, None


def _minimal(limits: Sequence[int], ok: Callable[[tuple[int, ...]], bool]) -> list[tuple[int, ...]]:
    """Every minimal vector v <= limits with ok(v), for an `ok` that more evictions never make false."""
    cache: dict[tuple[int, ...], bool] = {}

    def test(vector: tuple[int, ...]) -> bool:
        if vector not in cache:
            cache[vector] = ok(vector)
        return cache[vector]

    found: list[tuple[int, ...]] = []

    def visit(prefix: tuple[int, ...]) -> None:
        index = len(prefix)
        rest = len(limits) - index - 1
        for count in range(limits[index] + 1):
            vector = (*prefix, count)
            if not test(vector + tuple(limits[index + 1 :])):
                continue  # not even with every later class gone
            if test(vector + (0,) * rest):
                found.append(vector + (0,) * rest)
                break  # more of this class would not be minimal
            if rest:
                visit(vector)

    if limits:
        visit(())
    elif ok(()):
        found.append(())
    return [v for v in found if not any(o != v and all(a <= b for a, b in zip(o, v, strict=True)) for o in found)]


def eviction_choices(
    node_class: PreemptNodeClass, node: NodeState, pending: Pending, budgets: Budgets
) -> list[EvictionChoice] | Status:
    """Every minimal eviction per number of pods on the class's first node; a Status when nothing helps."""
    members = node_class.members[node_class.nodes[0]]
    limits = tuple(len(group) for group in members)
    room: dict[tuple[int, ...], int] = {}

    def capacity(vector: tuple[int, ...]) -> int:
        if vector not in room:
            gone = [pod for group, count in zip(members, vector, strict=True) for pod in group[:count]]
            room[vector] = len(place_pending(node, gone, pending, pending.pods)[0])
        return room[vector]

    placed, stopped = place_pending(node, [pod for group in members for pod in group], pending, pending.pods)
    if not placed:
        assert stopped is not None
        return stopped
    room[limits] = len(placed)

    def room_for(pods: int) -> Callable[[tuple[int, ...]], bool]:
        return lambda v: capacity(v) >= pods

    return [
        _describe(members, pods, vector, budgets)
        for pods in range(1, capacity(limits) + 1)
        for vector in _minimal(limits, room_for(pods))
    ]


def _describe(members: list[list[RunningPod]], pods: int, vector: tuple[int, ...], budgets: Budgets) -> EvictionChoice:
    """A choice's cost, read off the first members of each class (all members of a class cost the same)."""
    gone = [group[0] for group, count in zip(members, vector, strict=True) for _ in range(count)]
    used = Counter(i for pod in gone for i in budgets.selecting(pod))
    return EvictionChoice(
        pods=pods,
        evict=vector,
        top=max((pod.needs.priority for pod in gone), default=None),
        units=sum(units_of(pod) for pod in gone),
        victims=len(gone),
        budgets=tuple(used[i] for i in range(len(budgets.allowed))),
    )


def _binds(state: ClusterState, pending: Pending) -> tuple[bool, bool]:
    """Whether cpu, memory can stop the pending pods anywhere: if every node holds them all beside everything
    that runs now, evictions never matter for them and they are left out of victim and node classes, exactly."""

    def short(have: int | None, used: int, need: int) -> bool:
        return have is not None and used + need * pending.pods > have

    return (
        any(short(n.spec.cpu_milli, n.cpu_requested, pending.needs.cpu_milli) for n in state.nodes),
        any(short(n.spec.memory_bytes, n.memory_requested, pending.needs.memory_bytes) for n in state.nodes),
    )


def node_classes(state: ClusterState, cluster: Cluster, pending: Pending, budgets: Budgets) -> list[PreemptNodeClass]:
    """Group nodes into classes, victim classes per node (candidates: strictly lower priority, not pinned)."""
    binds = _binds(state, pending)
    by_node: dict[str, list[RunningPod]] = {}
    for pod in cluster.running_pods():
        if pod.needs.priority < pending.needs.priority and not budgets.pinned(pod):
            by_node.setdefault(pod.node, []).append(pod)
    classes: dict[tuple, PreemptNodeClass] = {}
    for node in state.nodes:
        keyed: dict[tuple, list[RunningPod]] = {}
        for pod in by_node.get(node.name, []):
            keyed.setdefault(_victim_class_key(pod, node, budgets, binds), []).append(pod)
        victim_classes = sorted(keyed)
        tags = {pod.name: ("victim", victim_classes.index(key)) for key, pods in keyed.items() for pod in pods}
        signature = (_signature(node, tags, binds), tuple(victim_classes))
        node_class = classes.setdefault(signature, PreemptNodeClass([], victim_classes))
        node_class.nodes.append(node.name)
        node_class.members[node.name] = [
            sorted(keyed[key], key=lambda p: (p.gpus, p.mig, p.name)) for key in victim_classes
        ]
    return sorted(classes.values(), key=lambda c: c.nodes[0])


def solve_evictions(
    classes: list[PreemptNodeClass], pending: Pending, budgets: Budgets, config: SolverConfig
) -> tuple[list[list[int]] | None, SolveReport]:
    """How many nodes of each class take each choice; None when the time ran out before any plan was found.

    Objective, in order: the highest victim priority, the victims' GPUs, the number of victims (then, in
    solve_counts, the earliest nodes by name). Disruption budgets are hard limits.
    """
    model = cp_model.CpModel()
    take, flat = choices_per_class(model, [c.nodes for c in classes], [c.choices for c in classes])
    model.add(sum(choice.pods * var for choice, var in flat) >= pending.pods)
    for index, allowed in enumerate(budgets.allowed):
        model.add(sum(choice.budgets[index] * var for choice, var in flat) <= allowed)
    # the highest victim priority, as steps: allow[q] says victims of priority q (and below) may go
    tops = sorted({choice.top for choice, _ in flat if choice.top is not None})
    allow = {q: model.new_bool_var(f"allow_{q}") for q in tops}
    for lower, higher in zip(tops, tops[1:], strict=False):
        model.add_implication(allow[higher], allow[lower])
    for (choice, var), class_size in zip(flat, (len(c.nodes) for c in classes for _ in c.choices), strict=True):
        if choice.top is not None:
            model.add(var <= class_size * allow[choice.top])
    nobody = tops[0] - 1 if tops else 0  # the "highest victim priority" of evicting nobody
    top = nobody + sum((q - p) * allow[q] for p, q in zip([nobody, *tops], tops, strict=False))
    levels = [
        ("highest victim priority", "minimize", top),
        ("victims' GPUs", "minimize", sum(choice.units * var for choice, var in flat)),
        ("victims", "minimize", sum(choice.victims * var for choice, var in flat)),
    ]
    return solve_counts(model, take, flat, levels, config)
