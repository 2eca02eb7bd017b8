"""What preempt and defrag share: the running pods as the planners see them, disruption budgets, nodes grouped
into classes, and the independent check of a cluster after pods were evicted, moved or added.

Running pods' cpu and memory requests count against their node here (kube-scheduler counts every bound pod), so
an eviction frees them and a moved pod takes them along.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from ortools.sat.python import cp_model
from pydantic import BaseModel

from ...models.cluster import Cluster, RunningPod
from ...models.scheduling import selector_matches
from ..place import Placer
from ..state import ClusterState, GpuState, MigSlot, NodeState
from ..validate import Assignment, Violation, violations
from .solver import SolverConfig, SolveReport, solve_lexicographic

__all__ = [
    "Budgets",
    "ChoiceCount",
    "ClassPick",
    "counts_per_class",
    "choices_per_class",
    "solve_counts",
    "out_of_time",
    "problems",
    "running_state",
    "scratch",
    "spread_over_classes",
    "without",
]


@dataclass(frozen=True)
class Budgets:
    """The disruption budgets, each with how many of the pods it selects may still be evicted."""

    selectors: tuple[dict[str, str], ...]
    names: tuple[str, ...]
    allowed: tuple[int, ...]

    @classmethod
    def of(cls, cluster: Cluster) -> Budgets:
        """allowed = max_unavailable, or the selected running pods beyond min_available (never below 0)."""
        running = cluster.running_pods()
        allowed = []
        for budget in cluster.disruption_budgets:
            if budget.max_unavailable is not None:
                allowed.append(budget.max_unavailable)
            else:
                selected = sum(selector_matches(budget.selector, pod.needs.labels) for pod in running)
                allowed.append(max(0, selected - (budget.min_available or 0)))
        return cls(
            tuple(b.selector for b in cluster.disruption_budgets),
            tuple(b.name for b in cluster.disruption_budgets),
            tuple(allowed),
        )

    def selecting(self, pod: RunningPod) -> tuple[int, ...]:
        """Indices of the budgets that select this pod (an empty selector selects every pod)."""
        return tuple(i for i, selector in enumerate(self.selectors) if selector_matches(selector, pod.needs.labels))

    def pinned(self, pod: RunningPod) -> bool:
        """A pod no budget lets go: it can be neither evicted nor moved."""
        return any(self.allowed[i] == 0 for i in self.selecting(pod))

    def overdrawn(self, pods: Iterable[RunningPod]) -> list[str]:
        """Budgets these evictions break, with by how much."""
        used = Counter(i for pod in pods for i in self.selecting(pod))
        return [
            f"disruption budget {self.names[i]} allows {self.allowed[i]}, {n} evicted"
            for i, n in sorted(used.items())
            if n > self.allowed[i]
        ]


def running_state(cluster: Cluster) -> ClusterState:
    """The cluster's state with every running pod's cpu and memory counted on its node (ClusterState.from_cluster
    counts them, for every planner alike)."""
    return ClusterState.from_cluster(cluster)


def node_copy(node: NodeState) -> NodeState:
    """A copy of one node's state whose GPUs, holders and MIG slots can change without touching the original."""
    gpus = [
        GpuState(
            g.index,
            g.island,
            g.replicas,
            g.memory_gib,
            list(g.holders),
            [MigSlot(s.profile, s.start, s.holder) for s in g.mig],
        )
        for g in node.gpus
    ]
    return NodeState(node.spec, gpus, node.cpu_requested, node.memory_requested, node.cpu_nonzero, node.memory_nonzero)


def scratch(node: NodeState) -> tuple[NodeState, Placer]:
    """A copy of one node to try evictions and placements on, with a Placer to bind and release on it."""
    copy = node_copy(node)
    return copy, Placer(ClusterState([copy], 0.0))


def without(cluster: Cluster, gone: Iterable[str]) -> Cluster:
    """The cluster model with these running pods taken off their GPUs and MIG instances (copies, no re-validation)."""
    names = set(gone)
    nodes = []
    for node in cluster.nodes:
        block = node.gpu
        if block is not None and (any(b.pod in names for b in block.busy) or any(m.holder in names for m in block.mig)):
            busy = [b for b in block.busy if b.pod not in names]
            mig = [m.model_copy(update={"holder": None}) if m.holder in names else m for m in block.mig]
            node = node.model_copy(update={"gpu": block.model_copy(update={"busy": busy, "mig": mig})})
        nodes.append(node)
    running = {name: needs for name, needs in cluster.running.items() if name not in names}
    return cluster.model_copy(update={"nodes": nodes, "running": running})


def problems(cluster: Cluster, gone: Iterable[str], placed: Sequence[Assignment]) -> list[Violation]:
    """Everything wrong with the cluster once `gone` are off it and `placed` are on it: the independent validator
    on the changed model, which counts cpu and memory with the running pods that stay, on the nodes that take a pod
    (a node already over its allocatable elsewhere is not the plan's doing: kube-scheduler lets it be)."""
    return violations(without(cluster, set(gone)), list(placed))


def counts_per_class(
    model: cp_model.CpModel, sizes: Sequence[int], options: Sequence[int], name: str
) -> list[list[cp_model.IntVar]]:
    """One integer per (class, option): how many of the class's nodes take that option; together at most its size."""
    chosen = []
    for node_class, (size, count) in enumerate(zip(sizes, options, strict=True)):
        row = [model.new_int_var(0, size, f"{name}_{node_class}_{option}") for option in range(count)]
        if row:
            model.add(sum(row) <= size)
        chosen.append(row)
    return chosen


_T = TypeVar("_T")


class ChoiceCount(NamedTuple, Generic[_T]):
    """One choice a class of nodes may take, and the variable counting its nodes that take it."""

    choice: _T
    variable: cp_model.IntVar  # not `count`, which would shadow tuple.count


def choices_per_class(
    model: cp_model.CpModel, nodes: Sequence[Sequence[str]], choices: Sequence[Sequence[_T]]
) -> tuple[list[list[cp_model.IntVar]], list[ChoiceCount[_T]]]:
    """counts_per_class for classes of `nodes` with their `choices`, and every choice with its count in class order."""
    take = counts_per_class(model, [len(n) for n in nodes], [len(c) for c in choices], "take")
    flat = [
        ChoiceCount(choice, var)
        for row_choices, row in zip(choices, take, strict=True)
        for choice, var in zip(row_choices, row, strict=True)
    ]
    return take, flat


def solve_counts(
    model: cp_model.CpModel,
    take: list[list[cp_model.IntVar]],
    flat: Sequence[ChoiceCount],
    levels: list,
    config: SolverConfig,
) -> tuple[list[list[int]] | None, SolveReport]:
    """Solve `levels`, then the earliest nodes by name (so that runs repeat): how many nodes of each class take
    each choice; None when the time ran out before any plan was found."""
    levels = [
        *levels,
        ("earliest nodes by name", "minimize", sum(rank * pair.variable for rank, pair in enumerate(flat))),
    ]
    solver, report = solve_lexicographic(model, levels, config)
    if report.status == "UNKNOWN":
        return None, report
    return [[solver.value(var) for var in row] for row in take], report


_R = TypeVar("_R", bound=BaseModel)


def out_of_time(report: _R, solve: SolveReport, config: SolverConfig) -> _R:
    """The report of a solve that ran out of time before it found any plan."""
    return report.model_copy(
        update={
            "solve": solve,
            "reason": f"no plan found within the time limit of {config.time_limit:g} s (not proven impossible either)",
        }
    )


class ClassPick(NamedTuple):
    """One node of a class and the option it takes."""

    node_class: int
    node: str
    option: int


def spread_over_classes(nodes: Sequence[Sequence[str]], counts: Sequence[Sequence[int]]) -> list[ClassPick]:
    """Disaggregate: each class's options given to its nodes in name order."""
    chosen = []
    for node_class, (members, row) in enumerate(zip(nodes, counts, strict=True)):
        queue = iter(members)
        for option, count in enumerate(row):
            chosen += [ClassPick(node_class, next(queue), option) for _ in range(count)]
    return chosen
