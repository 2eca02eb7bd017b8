"""preempt's own check of every plan, sharing no code with the model."""

from __future__ import annotations

from ....models.cluster import Cluster, RunningPod
from ...validate import Assignment, Violation
from ..disrupt import Budgets, problems
from .report import Pending

__all__ = ["preempt_violations"]


def preempt_violations(
    cluster: Cluster, pending: Pending, victims: list[RunningPod], placed: list[Assignment], budgets: Budgets
) -> list[Violation]:
    """Everything wrong with a preemption plan, by checks that share no code with the model: victims of lower
    priority only, budgets kept, every pod placed, and the cluster without the victims valid with the pods."""
    found = [
        Violation("budget", f"{v.name} has priority {v.needs.priority}, not below {pending.needs.priority}")
        for v in victims
        if v.needs.priority >= pending.needs.priority
    ]
    found += [Violation("budget", text) for text in budgets.overdrawn(victims)]
    if len(placed) != pending.pods:
        found.append(Violation("gang", f"{len(placed)} of {pending.pods} pods placed"))
    return found + problems(cluster, [v.name for v in victims], placed)
