"""preempt's extraction: the counts per node class become concrete victims and concrete placements."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ....models.cluster import RunningPod
from ...scheduler.plugins.gpudevices import GpuChoice
from ...state import ClusterState
from ...validate import Assignment
from ..disrupt import Budgets, spread_over_classes
from .model import PreemptNodeClass, place_pending, units_of
from .report import EvictedPod, EvictionCost, Pending, Placement

__all__ = ["assignments_of", "cost_of", "evicted", "extract", "placement_of"]


def placement_of(name: str, option: GpuChoice) -> Placement:
    return Placement(
        pod=name,
        node=option.node.name,
        resource=option.resource,
        gpus=list(option.gpus),
        islands=option.islands,
        mig=list(option.mig),
    )


def evicted(pod: RunningPod) -> EvictedPod:
    return EvictedPod(pod=pod.name, node=pod.node, priority=pod.needs.priority, units=units_of(pod))


def extract(
    classes: list[PreemptNodeClass], counts: list[list[int]], state: ClusterState, pending: Pending
) -> tuple[list[RunningPod], list[tuple[str, GpuChoice]]]:
    """Concrete victims (the first members of each victim class) and where each pending pod lands."""
    names = pending.pod_names()
    victims: list[RunningPod] = []
    placed: list[tuple[str, GpuChoice]] = []
    for class_index, node, option in spread_over_classes([c.nodes for c in classes], counts):
        node_class = classes[class_index]
        choice = node_class.choices[option]
        wanted = min(choice.pods, len(names) - len(placed))  # the model may make room for more pods than wait
        if not wanted:
            continue
        members = node_class.members[node]
        gone = [pod for group, count in zip(members, choice.evict, strict=True) for pod in group[:count]]
        found, stopped = place_pending(state.node(node), gone, pending, wanted)
        if stopped is not None:
            raise RuntimeError(f"internal error: node {node} does not behave like the first node of its class")
        victims += gone
        placed += [(names[len(placed) + i], spot) for i, spot in enumerate(found)]
    return victims, placed


def assignments_of(pending: Pending, placed: list[tuple[str, GpuChoice]]) -> list[Assignment]:
    return [Assignment(name, pending.needs, option.node.name, option.gpus, option.mig) for name, option in placed]


def cost_of(victims: Sequence[RunningPod], budgets: Budgets) -> EvictionCost:
    used = Counter(i for pod in victims for i in budgets.selecting(pod))
    return EvictionCost(
        highest_priority=max((v.needs.priority for v in victims), default=None),
        units=sum(units_of(v) for v in victims),
        victims=len(victims),
        budget_violations=sum(max(0, n - budgets.allowed[i]) for i, n in used.items()),
    )
