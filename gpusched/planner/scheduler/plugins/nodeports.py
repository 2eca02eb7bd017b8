"""NodePorts: a node where a pod already binds one of the pod's host ports (same protocol, overlapping address) is
out. The pod's containers and sidecars count, plain init containers do not; 0.0.0.0 overlaps every address.

Unschedulable, not unresolvable: evicting the pod that holds the port makes room, so preemption may help.
"""

from __future__ import annotations

from ....models.kube import HostPort, KubePod
from ..framework import SUCCESS, Status, unschedulable
from ..names import NODE_PORTS as NAME
from ..nodeinfo import KubeNodeInfo

__all__ = ["NAME", "ERR_REASON", "NodePorts", "conflicts"]

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
_ANY = "0.0.0.0"


def conflicts(wanted: HostPort, used: HostPort) -> bool:
    """HostPortInfo.CheckConflict: same port and protocol, and the same address or either the wildcard."""
    if (wanted.port, wanted.protocol) != (used.port, used.protocol):
        return False
    return _ANY in (wanted.ip, used.ip) or wanted.ip == used.ip


class NodePorts:
    """Only in the kubectl view: gpusched's model pods bind no host ports."""

    name = NAME

    def filter(self, pod: KubePod, node: KubeNodeInfo) -> Status:
        if not pod.host_ports:
            return SUCCESS
        used = [port for other in (*node.pods, *node.nominated) for port in other.host_ports]
        if any(conflicts(wanted, held) for wanted in pod.host_ports for held in used):
            return unschedulable(NAME, ERR_REASON)
        return SUCCESS
