"""Can this pod go on this node, and on which GPUs? The two views of one question.

`extended` is kube-scheduler with the device plugin's integers: it filters on counts alone and the kubelet then
takes the lowest free device IDs. `gpu` sees the hardware (what DRA makes possible): model, memory, sharing,
MIG instances and NVLink islands. Both return a Status (why not) or an Option (where exactly).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..models.workload import GpuNeeds
from .filters import check_selector, check_taints, check_unschedulable, insufficient
from .framework import Status, unschedulable
from .state import GPU_RESOURCE, SHARED_RESOURCE, GpuState, NodeState, mig_resource

__all__ = ["View", "Option", "evaluate", "node_filters", "resources_status", "choose_gpus"]

View = Literal["gpu", "extended"]
GPU_PLUGIN = "GpuDevices"


@dataclass(frozen=True)
class Option:
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


def node_filters(pod: GpuNeeds, node: NodeState) -> Status | None:
    """NodeUnschedulable, TaintToleration, NodeAffinity: the checks before any resource is counted."""
    spec = node.spec
    for status in (
        check_unschedulable(spec.unschedulable, pod.tolerations),
        check_taints(spec.taints, pod.tolerations),
        check_selector(all(spec.labels.get(k) == v for k, v in pod.node_selector.items())),
    ):
        if not status.ok:
            return status
    return None


def resources_status(pod: GpuNeeds, node: NodeState, extra: tuple[str, ...] = ()) -> Status | None:
    """NodeResourcesFit over cpu and memory (where the node models them), plus any reasons passed in. As in
    kube-scheduler, a pod requesting none of a resource fits even where running pods already over-use it."""
    reasons = []
    cpu, memory = node.spec.cpu_milli, node.spec.memory_bytes
    if cpu is not None and 0 < pod.cpu_milli > cpu - node.cpu_requested:
        reasons.append(insufficient("cpu"))
    if memory is not None and 0 < pod.memory_bytes > memory - node.memory_requested:
        reasons.append(insufficient("memory"))
    reasons.extend(extra)
    return unschedulable("NodeResourcesFit", *reasons) if reasons else None


def evaluate(pod: GpuNeeds, gpus: int, node: NodeState, view: View) -> Status | Option:
    failed = node_filters(pod, node)
    if failed:
        return failed
    if view == "extended":
        return _extended(pod, gpus, node)
    failed = resources_status(pod, node)
    if failed:
        return failed
    if pod.mig_profile:
        return _mig(pod.mig_profile, gpus, node)
    return _whole_or_shared(pod, gpus, node)


def requested_resource(pod: GpuNeeds, node: NodeState) -> str:
    """The extended resource the pod asks this node for: its MIG profile, the renamed shared name when it wants a
    replica and the node's device plugin renames them, else nvidia.com/gpu."""
    if pod.mig_profile:
        return mig_resource(pod.mig_profile)
    return SHARED_RESOURCE if pod.shared and node.gpu_resource == SHARED_RESOURCE else GPU_RESOURCE


def _extended(pod: GpuNeeds, count: int, node: NodeState) -> Status | Option:
    """The integer view: the count is the only GPU filter; the lowest free device IDs are taken."""
    resource = requested_resource(pod, node)
    units = _extended_units(node, resource)
    failed = resources_status(pod, node, (insufficient(resource),) if len(units) < count else ())
    if failed:
        return failed
    taken = units[:count]
    gpus = tuple(gpu for gpu, _ in taken)
    mig = tuple((gpu, start) for gpu, start in taken if start is not None)
    return Option(node, resource, gpus, mig, free_after=len(units) - count, spans=_islands(node, gpus) - 1)


def _extended_units(node: NodeState, resource: str) -> list[tuple[int, int | None]]:
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


def _islands(node: NodeState, gpus: tuple[int, ...]) -> int:
    return len({node.gpus[index].island for index in gpus}) if gpus else 1


def _mig(profile: str, count: int, node: NodeState) -> Status | Option:
    free = node.free_mig(profile)
    if len(free) < count:
        return unschedulable(GPU_PLUGIN, insufficient(mig_resource(profile)))
    taken = free[:count]
    gpus = tuple(gpu.index for gpu, _ in taken)
    return Option(
        node,
        mig_resource(profile),
        gpus,
        tuple((gpu.index, slot.start) for gpu, slot in taken),
        free_after=len(node.free_mig()) - count,
        spans=_islands(node, gpus) - 1,
    )


def mismatch(pod: GpuNeeds, node: NodeState) -> str:
    """One reason per node, so reasons add up into the scheduler's histogram."""
    if pod.shared and not node.time_sliced:
        return "node is not time-sliced"
    if node.time_sliced and not pod.shared:
        return "node is time-sliced"
    if pod.model and pod.model != node.model:
        return f"GPU model is not {pod.model}"
    if pod.memory_gib and pod.memory_gib > node.memory_gib:
        return f"GPU memory below {pod.memory_gib:g} GiB"
    return ""


def _whole_or_shared(pod: GpuNeeds, count: int, node: NodeState) -> Status | Option:
    if count == 0:
        return Option(node, GPU_RESOURCE, ())
    reason = mismatch(pod, node)
    if reason:
        return unschedulable(GPU_PLUGIN, reason)
    need = pod.memory_gib or 0.0
    candidates = [
        gpu
        for gpu in node.whole_gpus()
        if gpu.free_replicas > 0 and (not node.time_sliced or gpu.declared_gib + need <= gpu.memory_gib)
    ]
    if len(candidates) < count:
        return unschedulable(GPU_PLUGIN, insufficient(GPU_RESOURCE))
    chosen, spans, island_left = choose_gpus(candidates, count)
    if pod.nvlink and spans:
        return unschedulable(GPU_PLUGIN, f"no NVLink island with {count} free GPUs")
    free_after = sum(gpu.free_replicas for gpu in node.whole_gpus()) - count
    return Option(node, GPU_RESOURCE, chosen, free_after=free_after, spans=spans, island_left=island_left)


def choose_gpus(candidates: list[GpuState], count: int) -> tuple[tuple[int, ...], int, int]:
    """Best fit among islands: the smallest island that holds them all; else the fewest islands, largest first.

    Returns (GPU indices, islands spanned beyond the first, free GPUs left in the islands used).
    """
    by_island: dict[int, list[int]] = {}
    for gpu in candidates:
        by_island.setdefault(gpu.island, []).append(gpu.index)
    fitting = [(len(members), island) for island, members in by_island.items() if len(members) >= count]
    if fitting:
        size, island = min(fitting)
        return tuple(by_island[island][:count]), 0, size - count
    chosen: list[int] = []
    largest_first = [members for _, members in sorted(by_island.items(), key=lambda item: (-len(item[1]), item[0]))]
    for used, members in enumerate(largest_first):
        take = members[: count - len(chosen)]
        chosen.extend(take)
        if len(chosen) == count:
            return tuple(sorted(chosen)), used, len(members) - len(take)
    raise AssertionError("choose_gpus called with too few candidates")
