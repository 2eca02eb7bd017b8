"""kube-scheduler's result vocabulary: one Status per node, one Diagnosis per pod, one FitError text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property

__all__ = ["Code", "Status", "SUCCESS", "Diagnosis", "fit_error", "unschedulable", "unresolvable"]


class Code(Enum):
    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    UNRESOLVABLE = "UnschedulableAndUnresolvable"  # no preemption can help this node
    ERROR = "Error"


@dataclass(frozen=True)
class Status:
    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS


SUCCESS = Status(Code.SUCCESS)


def unschedulable(plugin: str, *reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reasons, plugin)


def unresolvable(plugin: str, *reasons: str) -> Status:
    return Status(Code.UNRESOLVABLE, reasons, plugin)


@dataclass(frozen=True)
class Diagnosis:
    """Every node's Status for one pod; `total` counts all nodes in the snapshot, cordoned ones included."""

    total: int
    statuses: dict[str, Status] = field(default_factory=dict)

    @cached_property
    def message(self) -> str:
        return fit_error(self.total, self.statuses.values())


def fit_error(total: int, statuses: Iterable[Status], prefilter: str = "", postfilter: str = "") -> str:
    """`0/N nodes are available: <count> <reason>, ...` — reasons counted, then sorted as plain strings.

    A PreFilter message replaces the histogram; a PostFilter message follows after a space, with no period added.
    """
    if prefilter:
        text = f"0/{total} nodes are available: {prefilter}."
    else:
        counts = Counter(reason for status in statuses for reason in status.reasons)
        parts = sorted(f"{count} {reason}" for reason, count in counts.items())
        text = f"0/{total} nodes are available: {', '.join(parts)}." if parts else f"0/{total} nodes are available:"
    return f"{text} {postfilter}" if postfilter else text
