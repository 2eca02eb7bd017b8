"""NodeResourcesFit: does the pod's request fit in what the node has left, resource by resource.

Two views of the node: gpusched's model counts cpu and memory (where the node models them; its GPUs are counted by
`gpudevices`), kubectl JSON counts the pod slots and every allocatable resource, and shows the numbers behind each
reason (a Shortfall), which the scheduler's event never shows.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ....models.kube import KubePod, is_scalar
from ....models.quantity import format_quantity
from ....models.workload import GpuNeeds
from ...state import NodeState
from ..framework import SUCCESS, Status, unresolvable, unschedulable
from ..names import NODE_RESOURCES_FIT as NAME
from ..nodeinfo import KubeNodeInfo

__all__ = [
    "NAME",
    "ERR_REASON_INSUFFICIENT",
    "ERR_REASON_TOO_MANY_PODS",
    "insufficient",
    "host_reasons",
    "HostResourcesFit",
    "Shortfall",
    "shortfalls",
    "NodeResourcesFit",
]

ERR_REASON_INSUFFICIENT = "Insufficient {resource}"
ERR_REASON_TOO_MANY_PODS = "Too many pods"
_NATIVE = ("cpu", "memory", "ephemeral-storage")


def insufficient(resource: str) -> str:
    return ERR_REASON_INSUFFICIENT.format(resource=resource)


def host_reasons(pod: GpuNeeds, node: NodeState) -> list[str]:
    """The model view's cpu and memory reasons, for the nodes that model them. As in kube-scheduler, a pod requesting
    none of a resource fits even where running pods already over-use it."""
    reasons = []
    cpu, memory = node.spec.cpu_milli, node.spec.memory_bytes
    if cpu is not None and 0 < pod.cpu_milli > cpu - node.cpu_requested:
        reasons.append(insufficient("cpu"))
    if memory is not None and 0 < pod.memory_bytes > memory - node.memory_requested:
        reasons.append(insufficient("memory"))
    return reasons


class HostResourcesFit:
    """The GPU view's NodeResourcesFit: cpu and memory only, GPUs being GpuDevices' to judge."""

    name = NAME

    def filter(self, pod: GpuNeeds, node: NodeState) -> Status:
        reasons = host_reasons(pod, node)
        return unschedulable(NAME, *reasons) if reasons else SUCCESS


class Shortfall(BaseModel):
    """One NodeResourcesFit reason with the numbers behind it (cpu in millicores)."""

    resource: str
    reason: str
    requested: int
    free: int
    allocatable: int
    unresolvable: bool = Field(False, description="the request alone exceeds the node's allocatable")
    nominated: int = Field(0, description="of the free amount, what pods nominated to the node by preemption hold")

    def text(self) -> str:
        requested, free, total, held = (
            format_quantity(self.resource, n) for n in (self.requested, self.free, self.allocatable, self.nominated)
        )
        kept = f", {held} held for nominated pods" if self.nominated else ""
        return f"{self.reason} ({self.resource}: requested {requested}, free {free} of {total}{kept})"


def shortfalls(pod: KubePod, info: KubeNodeInfo) -> list[Shortfall]:
    """Pod count, then cpu, memory, ephemeral-storage, then scalar resources (sorted)."""
    found = []
    room, present, held = info.node.allocatable.get("pods", 0), len(info.pods), len(info.nominated)
    if present + held + 1 > room:
        found.append(Shortfall(resource="pods", reason=ERR_REASON_TOO_MANY_PODS, requested=1, free=room - present,
                               allocatable=room, nominated=held))  # fmt: skip
    scalars = sorted(name for name in pod.requests if is_scalar(name))
    for name in (*_NATIVE, *scalars):
        if info.delegated(name):
            continue  # DynamicResources allocates it from the DeviceClass's devices
        need = pod.requests.get(name, 0)
        total = info.node.allocatable.get(name, 0)
        held = sum(nominated.requests.get(name, 0) for nominated in info.nominated)
        free = total - info.requested.get(name, 0) + held
        if need > 0 and need > free - held:
            found.append(
                Shortfall(
                    resource=name,
                    reason=insufficient(name),
                    requested=need,
                    free=free,
                    allocatable=total,
                    unresolvable=need > total,
                    nominated=held,
                )
            )
    return found


class NodeResourcesFit:
    """The kubectl view's. Unresolvable for the whole node when any request alone exceeds allocatable (1.34+):
    preemption skips it."""

    name = NAME

    def filter(self, pod: KubePod, node: KubeNodeInfo) -> Status:
        found = shortfalls(pod, node)
        if not found:
            return SUCCESS
        make = unresolvable if any(s.unresolvable for s in found) else unschedulable
        return make(NAME, *(s.reason for s in found))
