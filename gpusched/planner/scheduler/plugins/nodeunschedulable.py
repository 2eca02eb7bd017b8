"""NodeUnschedulable: a cordoned node takes only pods that tolerate the cordon's taint."""

from __future__ import annotations

from typing import Protocol

from ....models.scheduling import Toleration, cordon_blocks
from ..framework import SUCCESS, Status, unresolvable
from ..names import NODE_UNSCHEDULABLE as NAME

__all__ = ["NAME", "ERR_REASON", "NodeUnschedulable"]

ERR_REASON = "node(s) were unschedulable"


class _Pod(Protocol):
    @property
    def tolerations(self) -> list[Toleration]: ...


class _Node(Protocol):
    @property
    def unschedulable(self) -> bool: ...


class NodeUnschedulable:
    """The same in every view: it reads only the node's cordon and the pod's tolerations."""

    name = NAME

    def filter(self, pod: _Pod, node: _Node) -> Status:
        if cordon_blocks(node.unschedulable, pod.tolerations):
            return unresolvable(NAME, ERR_REASON)
        return SUCCESS
