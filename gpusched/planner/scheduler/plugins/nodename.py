"""NodeName: a pod that names its node fits nowhere else; from 1.37 its PreFilter also narrows the nodes to it."""

from __future__ import annotations

from ....models.kube import KubePod
from ..framework import SUCCESS, Status, Version, unresolvable
from ..names import NODE_NAME as NAME
from ..nodeinfo import KubeNodeInfo

__all__ = ["NAME", "ERR_REASON", "NodeName"]

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    """Only in the kubectl view: gpusched's model pods never name a node."""

    name = NAME

    def filter(self, pod: KubePod, node: KubeNodeInfo) -> Status:
        return SUCCESS if not pod.node_name or pod.node_name == node.name else unresolvable(NAME, ERR_REASON)

    @staticmethod
    def prefilter(pod: KubePod, version: Version) -> frozenset[str] | None:
        """1.37's PreFilter result: the named node alone; None when every node is considered."""
        return frozenset({pod.node_name}) if version[:2] >= (1, 37) and pod.node_name else None
