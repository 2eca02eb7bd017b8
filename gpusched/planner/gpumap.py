"""The cluster map: the state of every GPU, with the free ones no job of a given size can use marked stranded.

`frag` counts; the map says which GPUs. Free GPUs are stranded when they are left over after as many N-GPU pods
as fit have been cut from their group: an NVLink island (placement "island", what a communication-heavy job
needs) or the whole node (placement "count", what extended resources allow). How many are stranded matches
`frag`; which ones is a convention (the highest indices of the group), since any of them could be the leftover.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from ..models.mig import profiles_for
from .state import ClusterState, GpuState, NodeState

__all__ = ["PLACEMENTS", "STATES", "ClusterMap", "MapGpu", "MapInstance", "Placement", "cluster_map"]

GpuMapState = Literal["free", "stranded", "busy", "mig", "time-sliced"]
STATES: tuple[GpuMapState, ...] = ("free", "stranded", "busy", "mig", "time-sliced")
Placement = Literal["island", "count"]
PLACEMENTS: tuple[Placement, ...] = ("island", "count")


class MapInstance(BaseModel):
    profile: str
    start: int  # first memory slice
    slices: int  # memory slices it spans (of 8)
    holder: str | None


class MapGpu(BaseModel):
    node: str
    index: int
    island: int
    state: GpuMapState
    holders: list[str]  # pods on it: one entry per replica in use; a MIG GPU's pods by instance
    replicas: int  # time-slicing replicas per GPU (1: exclusive)
    instances: list[MapInstance]  # MIG instances in slice order (empty: MIG off)


class ClusterMap(BaseModel):
    size: int
    placement: Placement
    counts: dict[str, int]  # GPUs per state, every state listed
    gpus: list[MapGpu]


def _instances(node: NodeState, gpu: GpuState) -> list[MapInstance]:
    """MIG instances with the memory slices they span, so a picture can draw them where they sit."""
    block = node.spec.gpu
    profiles = profiles_for(block.model, block.memory_gib) if block else {}
    return [
        MapInstance(
            profile=slot.profile, start=slot.start, slices=profiles[slot.profile].memory_slices, holder=slot.holder
        )
        for slot in gpu.mig
    ]


def _state(node: NodeState, gpu: GpuState) -> GpuMapState:
    """Before strandedness: MIG and time-sliced GPUs are not whole GPUs, so they are never free or stranded."""
    if gpu.mig:
        return "mig"
    if node.time_sliced:
        return "time-sliced"
    return "busy" if gpu.holders else "free"


def _groups(free: list[GpuState], placement: Placement) -> list[list[GpuState]]:
    """The sets one pod must come from: each NVLink island, or the node as a whole."""
    if placement == "count":
        return [free]
    islands: dict[int, list[GpuState]] = {}
    for gpu in free:
        islands.setdefault(gpu.island, []).append(gpu)
    return list(islands.values())


def _stranded(node: NodeState, size: int, placement: Placement) -> set[int]:
    """Indices of free GPUs left over once every group has given as many `size`-GPU pods as it can."""
    free = [gpu for gpu in node.gpus if _state(node, gpu) == "free"]
    left: set[int] = set()
    for group in _groups(free, placement):
        usable = len(group) // size * size
        left |= {gpu.index for gpu in group[usable:]}
    return left


def _node_cells(node: NodeState, size: int, placement: Placement) -> list[MapGpu]:
    """The node's GPUs in index order, with who holds each (pods by replica, or by MIG instance)."""
    stranded = _stranded(node, size, placement)
    return [
        MapGpu(
            node=node.name,
            index=gpu.index,
            island=gpu.island,
            state="stranded" if gpu.index in stranded else _state(node, gpu),
            holders=[slot.holder for slot in gpu.mig if slot.holder] if gpu.mig else [pod for pod, _ in gpu.holders],
            replicas=gpu.replicas,
            instances=_instances(node, gpu),
        )
        for gpu in node.gpus
    ]


def cluster_map(state: ClusterState, size: int = 8, placement: Placement = "island") -> ClusterMap:
    """Every GPU of every node, in node order, with free GPUs split into usable and stranded for `size`."""
    if size < 1:
        raise ValueError(f"job size: at least 1 GPU, got {size}")
    gpus = [cell for node in state.nodes for cell in _node_cells(node, size, placement)]
    counts: dict[str, int] = {name: sum(1 for gpu in gpus if gpu.state == name) for name in STATES}
    return ClusterMap(size=size, placement=placement, counts=counts, gpus=gpus)
