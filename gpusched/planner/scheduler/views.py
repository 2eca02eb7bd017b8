"""The filter pipelines: which plugins run, in which order, in each view of the cluster.

gpusched's model has two views: `gpu` (the hardware, as DRA sees it) and `extended` (the device plugin's integers,
as kube-scheduler sees them). Each runs the node filters, then one allocator that picks the GPUs. The kubectl JSON
view runs the default profile's filters of the release; `predict` appends DynamicResources when the pod needs it.
The first plugin that rejects a node decides its Status.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from ...models.workload import GpuNeeds
from ..state import NodeState
from .framework import SUCCESS, Status, Version
from .plugins.gpudevices import ExtendedGpus, GpuChoice, GpuDevices
from .plugins.nodeaffinity import NodeAffinity
from .plugins.nodename import NodeName
from .plugins.nodeports import NodePorts
from .plugins.noderesources import HostResourcesFit, NodeResourcesFit
from .plugins.nodeunschedulable import NodeUnschedulable
from .plugins.tainttoleration import TaintToleration

__all__ = ["View", "Filter", "Allocator", "run_filters", "node_filters", "evaluate", "MODEL_VIEWS", "kubectl_filters"]

View = Literal["gpu", "extended"]


class Filter(Protocol):
    name: str

    def filter(self, pod: Any, node: Any) -> Status: ...


class Allocator(Protocol):
    """The model views' last step: a Filter that also says which GPUs the pod gets."""

    name: str

    def allocate(self, pod: GpuNeeds, count: int, node: NodeState) -> Status | GpuChoice: ...


def run_filters(filters: Sequence[Filter], pod: Any, node: Any) -> Status:
    for plugin in filters:
        status = plugin.filter(pod, node)
        if not status.ok:
            return status
    return SUCCESS


_NODE_FILTERS: tuple[Filter, ...] = (NodeUnschedulable(), TaintToleration(), NodeAffinity())
MODEL_VIEWS: dict[View, tuple[tuple[Filter, ...], Allocator]] = {
    "gpu": ((*_NODE_FILTERS, HostResourcesFit()), GpuDevices()),
    "extended": (_NODE_FILTERS, ExtendedGpus()),  # it counts cpu and memory with the GPUs, in one Status
}


def node_filters(pod: GpuNeeds, node: NodeState) -> Status | None:
    """NodeUnschedulable, TaintToleration, NodeAffinity: the checks before any resource is counted; None if passed."""
    status = run_filters(_NODE_FILTERS, pod, node)
    return None if status.ok else status


def evaluate(pod: GpuNeeds, gpus: int, node: NodeState, view: View) -> Status | GpuChoice:
    """Can this pod go on this node, and on which GPUs, in gpusched's model."""
    filters, allocator = MODEL_VIEWS[view]
    status = run_filters(filters, pod, node)
    return status if not status.ok else allocator.allocate(pod, gpus, node)


def kubectl_filters(version: Version) -> tuple[Filter, ...]:
    """The default profile's order; 1.37 moved NodeName ahead of NodeUnschedulable."""
    head: tuple[Filter, ...] = (NodeName(), NodeUnschedulable())
    if version[:2] < (1, 37):
        head = head[::-1]
    return (*head, TaintToleration(version), NodeAffinity(), NodePorts(), NodeResourcesFit())
