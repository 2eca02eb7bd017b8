"""kube-scheduler's result vocabulary: one Status per node, one Diagnosis per pod, one FitError text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property

__all__ = [
    "Version",
    "OLDEST",
    "NEWEST",
    "Code",
    "Status",
    "SUCCESS",
    "Diagnosis",
    "fit_error",
    "unschedulable",
    "unresolvable",
    "outside_prefilter",
]

Version = tuple[int, ...]  # a Kubernetes release: (1, 37) or (1, 34, 1)
OLDEST, NEWEST = (1, 34), (1, 37)  # the releases whose behaviour is simulated
ERR_REASON_OUTSIDE_PREFILTER = "node(s) didn't satisfy plugin(s) [{plugins}]"
ERR_REASON_PREFILTER_DISJOINT = ERR_REASON_OUTSIDE_PREFILTER + " simultaneously"  # no node left by the PreFilters


class Code(Enum):
    """What a plugin's Status means to the scheduler and to preemption."""

    SUCCESS = "Success"  # the node passes this plugin
    UNSCHEDULABLE = "Unschedulable"  # the pod does not fit now; evicting pods might make room
    UNRESOLVABLE = "UnschedulableAndUnresolvable"  # the pod cannot fit whatever is evicted: preemption skips the node
    ERROR = "Error"  # a bug or bad input, never an expected failure


@dataclass(frozen=True)
class Status:
    """One plugin's verdict on one node; `plugin` names who rejected it, empty when no plugin did."""

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


def outside_prefilter(plugins: Iterable[str]) -> Status:
    """What a node left out by the PreFilter results shows: no plugin of its own rejected it."""
    return unresolvable("", ERR_REASON_OUTSIDE_PREFILTER.format(plugins=" ".join(plugins)))


@dataclass(frozen=True)
class Diagnosis:
    """Why a pod fits nowhere: every node's Status, the PreFilter and PostFilter messages, and the plugins that failed.

    `total` counts all nodes in the snapshot, cordoned ones included.
    """

    total: int
    statuses: dict[str, Status] = field(default_factory=dict)
    prefilter: str = ""
    postfilter: str = ""

    @cached_property
    def message(self) -> str:
        return fit_error(self.total, self.statuses.values(), self.prefilter, self.postfilter)

    @cached_property
    def unschedulable_plugins(self) -> frozenset[str]:
        """The plugins that rejected at least one node."""
        return frozenset(status.plugin for status in self.statuses.values() if not status.ok and status.plugin)

    def failing(self, plugin: str) -> list[str]:
        """The nodes that plugin rejected, sorted by name."""
        return sorted(name for name, status in self.statuses.items() if not status.ok and status.plugin == plugin)


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
