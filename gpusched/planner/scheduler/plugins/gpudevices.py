"""Which GPUs a pod gets on a node, in gpusched's two model views, or why it gets none.

`GpuDevices` (gpusched's own plugin) sees the hardware, as DRA makes possible: model, memory, sharing, MIG
instances and NVLink islands. `ExtendedGpus` is kube-scheduler with the device plugin's integers: NodeResourcesFit
counts the extended resource alone and the kubelet then takes the lowest free device IDs.
Both answer with a Status (why not) or a GpuChoice (where exactly).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....models.graph import choose_gpus
from ....models.workload import GpuNeeds
from ...state import GPU_RESOURCE, SHARED_RESOURCE, NodeState, mig_resource
from ..framework import Status, unschedulable
from ..names import GPU_DEVICES as NAME
from ..names import NODE_RESOURCES_FIT
from .noderesources import host_reasons, insufficient

__all__ = [
    "NAME",
    "ERR_REASON_NOT_TIME_SLICED",
    "ERR_REASON_TIME_SLICED",
    "ERR_REASON_MODEL",
    "ERR_REASON_MEMORY",
    "ERR_REASON_NVLINK",
    "GpuChoice",
    "GpuDevices",
    "ExtendedGpus",
    "requested_resource",
    "mismatch",
]

ERR_REASON_NOT_TIME_SLICED = "node is not time-sliced"
ERR_REASON_TIME_SLICED = "node is time-sliced"
ERR_REASON_MODEL = "GPU model is not {model}"
ERR_REASON_MEMORY = "GPU memory below {gib:g} GiB"
ERR_REASON_NVLINK = "no NVLink island with {count} free GPUs"


@dataclass(frozen=True)
class GpuChoice:
    """A feasible placement of one pod on one node, with what a policy needs to rank it."""

    node: NodeState
    resource: str
    gpus: tuple[int, ...]  # one entry per unit taken; a GPU appears twice when two replicas of it are taken
    mig: tuple[tuple[int, int], ...] = ()  # (gpu, start) of MIG instances taken
    free_after: int = 0  # free units of the kind taken, left on the node
    spans: int = 0  # NVLink islands used beyond the first
    island_left: int = 0  # free GPUs left in the islands used

    @property
    def islands(self) -> list[int]:
        return sorted({self.node.gpus[index].island for index in self.gpus})


def mismatch(pod: GpuNeeds, node: NodeState) -> str:
    """One reason per node, so reasons add up into the scheduler's histogram."""
    if pod.shared and not node.time_sliced:
        return ERR_REASON_NOT_TIME_SLICED
    if node.time_sliced and not pod.shared:
        return ERR_REASON_TIME_SLICED
    if pod.model and pod.model != node.model:
        return ERR_REASON_MODEL.format(model=pod.model)
    if pod.memory_gib and pod.memory_gib > node.memory_gib:
        return ERR_REASON_MEMORY.format(gib=pod.memory_gib)
    return ""


def _islands(node: NodeState, gpus: tuple[int, ...]) -> int:
    return len({node.gpus[index].island for index in gpus}) if gpus else 1


class GpuDevices:
    """The GPU view: MIG instances of the pod's profile, or whole GPUs (replicas) that suit it."""

    name = NAME

    def allocate(self, pod: GpuNeeds, count: int, node: NodeState) -> Status | GpuChoice:
        if pod.mig_profile:
            return _mig(pod.mig_profile, count, node)
        return _whole_or_shared(pod, count, node)


def _mig(profile: str, count: int, node: NodeState) -> Status | GpuChoice:
    free = node.free_mig(profile)
    if len(free) < count:
        return unschedulable(NAME, insufficient(mig_resource(profile)))
    taken = free[:count]
    gpus = tuple(gpu.index for gpu, _ in taken)
    return GpuChoice(
        node,
        mig_resource(profile),
        gpus,
        tuple((gpu.index, slot.start) for gpu, slot in taken),
        free_after=len(node.free_mig()) - count,
        spans=_islands(node, gpus) - 1,
    )


def _whole_or_shared(pod: GpuNeeds, count: int, node: NodeState) -> Status | GpuChoice:
    if count == 0:
        return GpuChoice(node, GPU_RESOURCE, ())
    reason = mismatch(pod, node)
    if reason:
        return unschedulable(NAME, reason)
    need = pod.memory_gib or 0.0
    candidates = [
        gpu
        for gpu in node.whole_gpus()
        if gpu.free_replicas > 0 and (not node.time_sliced or gpu.declared_gib + need <= gpu.memory_gib)
    ]
    if len(candidates) < count:
        return unschedulable(NAME, insufficient(GPU_RESOURCE))
    chosen, spans, island_left = choose_gpus(candidates, count)
    if pod.nvlink and spans:
        return unschedulable(NAME, ERR_REASON_NVLINK.format(count=count))
    free_after = sum(gpu.free_replicas for gpu in node.whole_gpus()) - count
    return GpuChoice(node, GPU_RESOURCE, chosen, free_after=free_after, spans=spans, island_left=island_left)


def requested_resource(pod: GpuNeeds, node: NodeState) -> str:
    """The extended resource the pod asks this node for: its MIG profile, the renamed shared name when it wants a
    replica and the node's device plugin renames them, else nvidia.com/gpu."""
    if pod.mig_profile:
        return mig_resource(pod.mig_profile)
    return SHARED_RESOURCE if pod.shared and node.gpu_resource == SHARED_RESOURCE else GPU_RESOURCE


class ExtendedGpus:
    """The extended view: NodeResourcesFit counts the resource with cpu and memory; the lowest free IDs are taken."""

    name = NODE_RESOURCES_FIT

    def allocate(self, pod: GpuNeeds, count: int, node: NodeState) -> Status | GpuChoice:
        resource = requested_resource(pod, node)
        units = _extended_units(node, resource)
        reasons = host_reasons(pod, node)
        if len(units) < count:
            reasons.append(insufficient(resource))
        if reasons:
            return unschedulable(NODE_RESOURCES_FIT, *reasons)
        taken = units[:count]
        gpus = tuple(gpu for gpu, _ in taken)
        mig = tuple((gpu, start) for gpu, start in taken if start is not None)
        return GpuChoice(node, resource, gpus, mig, free_after=len(units) - count, spans=_islands(node, gpus) - 1)


def _extended_units(node: NodeState, resource: str) -> list[tuple[int, int | None]]:
    """Every free unit advertised under the resource: (GPU, MIG start or None for a whole GPU or replica)."""
    single = node.mig_strategy == "single"
    units: list[tuple[int, int | None]] = []
    for gpu in node.gpus:
        if not gpu.mig and resource == node.gpu_resource:
            units.extend((gpu.index, None) for _ in range(gpu.free_replicas))
        for slot in gpu.mig:
            name = GPU_RESOURCE if single else mig_resource(slot.profile)
            if slot.holder is None and name == resource:
                units.append((gpu.index, slot.start))
    return units
