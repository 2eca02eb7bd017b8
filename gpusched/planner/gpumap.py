"""The cluster map: the state of every GPU, with the free ones no job of a given size can use marked stranded.

`frag` counts; the map says which GPUs. Free GPUs are stranded when they are left over after as many N-GPU pods
as fit have been cut from their group: an NVLink island (placement "island", what a communication-heavy job
needs) or the whole node (placement "count", what extended resources allow). Only a group that could hold an
N-GPU pod at all (N GPUs in it, busy or not) strands any: the GPUs of an island or node smaller than N are free
for smaller pods, not wasted by fragmentation. Which ones are stranded is a convention (the highest indices of the
group), since any of them could be the leftover. Each node has a kind (GPU model, count, sharing) and its free and
stranded counts, so a picture can group and sort nodes at pool scale.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..errors import InputError
from ..models.mig import profiles_for
from .state import ClusterState, GpuState, NodeState

__all__ = [
    "PLACEMENTS", "STATES", "ClusterMap", "MapGpu", "MapInstance", "MapNode", "Placement", "cluster_map", "kind",
    "node_summaries",
]  # fmt: skip

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


class MapNode(BaseModel):
    node: str
    kind: str  # GPU model x count, and how it is shared: the nodes a picture groups together
    gpus: int
    free: int  # whole free GPUs, stranded ones included
    stranded: int
    fits: int = Field(description="pods of the map's size its free GPUs hold")
    largest_island: int = Field(description="GPUs of its largest NVLink island, busy ones included")
    holds_size: bool = Field(description="it has a group (island, or the node by count) of at least the size")


class ClusterMap(BaseModel):
    size: int
    placement: Placement
    counts: dict[str, int]  # GPUs per state, every state listed
    gpus: list[MapGpu]
    nodes: list[MapNode] = Field(default_factory=list, description="every node with GPUs, in the cluster's order")


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


def _group_sizes(node: NodeState, placement: Placement) -> dict[int, int]:
    """GPUs per group, busy ones included: an island's size by island number, or the node's under -1."""
    if placement == "count":
        return {-1: len(node.gpus)}
    sizes: dict[int, int] = {}
    for gpu in node.gpus:
        sizes[gpu.island] = sizes.get(gpu.island, 0) + 1
    return sizes


def _stranded(node: NodeState, size: int, placement: Placement) -> set[int]:
    """Indices of free GPUs left over once every group that could hold a `size`-GPU pod has given as many as it
    can (a group smaller than `size` strands nothing: no such pod ever fits there)."""
    free = [gpu for gpu in node.gpus if _state(node, gpu) == "free"]
    sizes = _group_sizes(node, placement)
    left: set[int] = set()
    for group in _groups(free, placement):
        if sizes[-1 if placement == "count" else group[0].island] < size:
            continue
        usable = len(group) // size * size
        left |= {gpu.index for gpu in group[usable:]}
    return left


def kind(node: NodeState) -> str:
    """What a node is, as a picture groups nodes: `A100-SXM4-80GB x8`, `L4 x1 time-sliced x4`, `... MIG`."""
    block = node.spec.gpu
    if block is None:
        return "no GPUs"
    shared = " MIG" if block.mig else (f" time-sliced x{block.replicas}" if block.replicas > 1 else "")
    return f"{block.model} x{block.count}{shared}"


def _map_node(node: NodeState, cells: list[MapGpu], size: int, placement: Placement) -> MapNode:
    free = [gpu for gpu in node.gpus if _state(node, gpu) == "free"]
    fits = sum(len(group) // size for group in _groups(free, placement))
    return MapNode(
        node=node.name,
        kind=kind(node),
        gpus=len(node.gpus),
        free=len(free),
        stranded=sum(1 for cell in cells if cell.state == "stranded"),
        fits=fits,
        largest_island=max(_group_sizes(node, "island").values(), default=0),
        holds_size=max(_group_sizes(node, placement).values(), default=0) >= size,
    )


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


def node_summaries(state: ClusterState, size: int = 8, placement: Placement = "island") -> list[MapNode]:
    """Each node with GPUs: its kind, free and stranded GPUs for `size` (what a pool-scale picture draws)."""
    return cluster_map(state, size, placement).nodes


def cluster_map(state: ClusterState, size: int = 8, placement: Placement = "island") -> ClusterMap:
    """Every GPU of every node, in node order, with free GPUs split into usable and stranded for `size`."""
    if size < 1:
        raise InputError("job size", f"at least 1 GPU, got {size}")
    cells = {node.name: _node_cells(node, size, placement) for node in state.nodes}
    gpus = [cell for node in state.nodes for cell in cells[node.name]]
    counts: dict[str, int] = {name: sum(1 for gpu in gpus if gpu.state == name) for name in STATES}
    nodes = [_map_node(node, cells[node.name], size, placement) for node in state.nodes if node.gpus]
    return ClusterMap(size=size, placement=placement, counts=counts, gpus=gpus, nodes=nodes)
