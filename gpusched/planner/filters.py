"""kube-scheduler's node filters that do not depend on GPUs, with their exact reason strings.

Shared by `place` (gpusched's model) and `k8s` (kubectl JSON), so a reason is worded in one place only.
"""

from __future__ import annotations

import sys

from ..models.scheduling import Taint, Toleration, untolerated
from .framework import SUCCESS, Status, unresolvable

__all__ = [
    "UNSCHEDULABLE_NODE",
    "NODE_AFFINITY",
    "NODE_NAME",
    "TOO_MANY_PODS",
    "DEFAULT_VERSION",
    "check_unschedulable",
    "check_taints",
    "check_selector",
    "check_node_name",
    "taint_reason",
    "insufficient",
]

UNSCHEDULABLE_NODE = "node(s) were unschedulable"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
NODE_NAME = "node(s) didn't match the requested node name"
TOO_MANY_PODS = "Too many pods"
DEFAULT_VERSION = (1, 37)
_CORDON_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


def insufficient(resource: str) -> str:
    return f"Insufficient {resource}"


def taint_reason(taint: Taint, version: tuple[int, ...] = DEFAULT_VERSION) -> str:
    """Up to 1.34.1 the reason named the taint; 1.34.2 (a backport) dropped it. A bare (1, 34) means the latest patch."""
    patched = tuple(version) + (sys.maxsize,) * (3 - len(version))
    if patched < (1, 34, 2):
        return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    return "node(s) had untolerated taint(s)"


def check_unschedulable(cordoned: bool, tolerations: list[Toleration]) -> Status:
    if cordoned and not any(t.tolerates(_CORDON_TAINT) for t in tolerations):
        return unresolvable("NodeUnschedulable", UNSCHEDULABLE_NODE)
    return SUCCESS


def check_taints(taints: list[Taint], tolerations: list[Toleration], version: tuple[int, ...] = DEFAULT_VERSION) -> Status:
    taint = untolerated(taints, tolerations)
    if taint is not None:
        return unresolvable("TaintToleration", taint_reason(taint, version))
    return SUCCESS


def check_selector(matches: bool) -> Status:
    return SUCCESS if matches else unresolvable("NodeAffinity", NODE_AFFINITY)


def check_node_name(wanted: str, node: str) -> Status:
    """NodeName: a pod that names its node fits nowhere else."""
    return SUCCESS if not wanted or wanted == node else unresolvable("NodeName", NODE_NAME)
