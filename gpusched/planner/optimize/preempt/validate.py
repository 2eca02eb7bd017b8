"""preempt's own check of every plan, sharing no code with the model."""

from __future__ import annotations

from ....models.cluster import Cluster, RunningPod
from ...validate import Assignment
from ..disrupt import Budgets, problems
from .report import Pending

__all__ = ["validate"]


def validate(
    cluster: Cluster, pending: Pending, victims: list[RunningPod], placed: list[Assignment], budgets: Budgets
) -> None:
    """Every plan passes checks that share no code with the model: a failure is a gpusched bug, never the user's."""
    found = [
        f"{v.name} has priority {v.needs.priority}, not below {pending.needs.priority}"
        for v in victims
        if v.needs.priority >= pending.needs.priority
    ]
    found += budgets.overdrawn(victims)
    if len(placed) != pending.pods:
        found.append(f"{len(placed)} of {pending.pods} pods placed")
    found += problems(cluster, [v.name for v in victims], placed)
    if found:
        raise RuntimeError("internal error: a preemption plan failed validation: " + "; ".join(found))
