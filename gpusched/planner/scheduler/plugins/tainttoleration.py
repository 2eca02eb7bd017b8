"""TaintToleration: a node with a NoSchedule or NoExecute taint the pod does not tolerate is out."""

from __future__ import annotations

import sys
from typing import Protocol

from ....models.scheduling import Taint, Toleration, untolerated
from ..framework import NEWEST, SUCCESS, Status, Version, unresolvable
from ..names import TAINT_TOLERATION as NAME

__all__ = [
    "NAME",
    "ERR_REASON",
    "ERR_REASON_NAMING_TAINT",
    "TaintToleration",
    "taint_reason",
    "intolerable_prefer_no_schedule",
]

ERR_REASON = "node(s) had untolerated taint(s)"
ERR_REASON_NAMING_TAINT = "node(s) had untolerated taint {{{key}: {value}}}"  # up to 1.34.1


class _Pod(Protocol):
    @property
    def tolerations(self) -> list[Toleration]: ...


class _Node(Protocol):
    @property
    def taints(self) -> list[Taint]: ...


def taint_reason(taint: Taint, version: Version = NEWEST) -> str:
    """Up to 1.34.1 the reason named the taint; 1.34.2 (a backport) dropped it. A bare (1, 34) means the latest patch."""
    patched = tuple(version) + (sys.maxsize,) * (3 - len(version))
    if patched < (1, 34, 2):
        return ERR_REASON_NAMING_TAINT.format(key=taint.key, value=taint.value)
    return ERR_REASON


class TaintToleration:
    """The release decides the wording only; gpusched's model views word it as the newest release."""

    name = NAME

    def __init__(self, version: Version = NEWEST) -> None:
        self.version = version

    def filter(self, pod: _Pod, node: _Node) -> Status:
        taint = untolerated(node.taints, pod.tolerations)
        return SUCCESS if taint is None else unresolvable(NAME, taint_reason(taint, self.version))


def intolerable_prefer_no_schedule(taints: list[Taint], tolerations: list[Toleration]) -> int:
    """Score (countIntolerableTaintsPreferNoSchedule): the node's PreferNoSchedule taints that none of the pod's
    tolerations with effect PreferNoSchedule or none covers; NormalizeScore reverses it (fewer is better)."""
    usable = [t for t in tolerations if t.effect in ("", "PreferNoSchedule")]
    return sum(
        1 for taint in taints if taint.effect == "PreferNoSchedule" and not any(t.tolerates(taint) for t in usable)
    )
