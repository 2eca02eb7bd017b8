"""Fragmentation: free GPUs that no job of a given size can use, and what MIG GPUs could still offer."""

from __future__ import annotations

from pydantic import BaseModel

from ..models.mig import addable_profiles, profiles_for
from .state import ClusterState, GpuState, NodeState

__all__ = ["FragRow", "NodeFree", "MigGpuReport", "FragReport", "fragmentation", "stranded", "DEFAULT_SIZES"]

DEFAULT_SIZES = (1, 2, 4, 8)


class FragRow(BaseModel):
    size: int
    pods_by_count: int  # what extended resources allow
    pods_in_island: int  # what a communication-heavy job needs
    stranded: int  # free GPUs no pod of this size (placed by count) can use
    stranded_pct: float


class NodeFree(BaseModel):
    node: str
    free: list[int]
    islands: list[list[int]]  # free GPUs per NVLink island (islands with none left out)

    @property
    def largest_island(self) -> int:
        return max((len(members) for members in self.islands), default=0)


class MigInstanceReport(BaseModel):
    profile: str
    start: int
    holder: str | None


class MigGpuReport(BaseModel):
    node: str
    gpu: int
    used: list[MigInstanceReport]
    free: dict[str, int]  # free instances per profile
    addable: list[str]  # profiles a repartition could create without touching the used instances


class FragReport(BaseModel):
    free: int
    largest_node: int
    largest_island: int
    rows: list[FragRow]
    nodes: list[NodeFree]
    mig: list[MigGpuReport]


def _free_gpus(node: NodeState) -> list[GpuState]:
    """The node's free exclusive GPUs: whole (not MIG-partitioned), not time-sliced, not busy."""
    return [] if node.time_sliced else [gpu for gpu in node.whole_gpus() if gpu.free_replicas > 0]


def _free_exclusive(node: NodeState) -> NodeFree:
    free = _free_gpus(node)
    islands: dict[int, list[int]] = {}
    for gpu in free:
        islands.setdefault(gpu.island, []).append(gpu.index)
    return NodeFree(node=node.name, free=[gpu.index for gpu in free], islands=[islands[k] for k in sorted(islands)])


def _pods_by_count(size: int, counts: list[int]) -> int:
    return sum(count // size for count in counts)


def stranded(state: ClusterState, sizes: tuple[int, ...] = DEFAULT_SIZES) -> dict[int, int]:
    """The rows' stranded GPUs alone, per size: what the planners ask of every plan they compare, without the
    report's per-node and MIG detail (a tenth of the time at 10,000 nodes)."""
    counts = [len(_free_gpus(node)) for node in state.nodes]
    free = sum(counts)
    return {size: free - _pods_by_count(size, counts) * size for size in sorted(set(sizes))}


def _row(size: int, nodes: list[NodeFree], free: int) -> FragRow:
    by_count = _pods_by_count(size, [len(node.free) for node in nodes])
    in_island = sum(len(members) // size for node in nodes for members in node.islands)
    stranded = free - by_count * size
    pct = round(100.0 * stranded / free, 1) if free else 0.0
    return FragRow(size=size, pods_by_count=by_count, pods_in_island=in_island, stranded=stranded, stranded_pct=pct)


def _mig_reports(node: NodeState) -> list[MigGpuReport]:
    block = node.spec.gpu
    if block is None:
        return []
    profiles = profiles_for(block.model, block.memory_gib)
    reports = []
    for gpu in node.gpus:
        if not gpu.mig:
            continue
        used = [slot for slot in gpu.mig if slot.holder is not None]
        free: dict[str, int] = {}
        for name in profiles:
            count = sum(1 for slot in gpu.mig if slot.holder is None and slot.profile == name)
            if count:
                free[name] = count
        kept = [(slot.profile, slot.start) for slot in used]
        reports.append(
            MigGpuReport(
                node=node.name,
                gpu=gpu.index,
                used=[MigInstanceReport(profile=s.profile, start=s.start, holder=s.holder) for s in used],
                free=free,
                addable=addable_profiles(profiles, kept, block.mig_profiles),
            )
        )
    return reports


def fragmentation(state: ClusterState, sizes: tuple[int, ...] = DEFAULT_SIZES) -> FragReport:
    """Free exclusive GPUs per job size (time-sliced replicas and MIG instances are not whole GPUs)."""
    nodes = [_free_exclusive(node) for node in state.nodes]
    free = sum(len(node.free) for node in nodes)
    return FragReport(
        free=free,
        largest_node=max((len(node.free) for node in nodes), default=0),
        largest_island=max((node.largest_island for node in nodes), default=0),
        rows=[_row(size, nodes, free) for size in sorted(set(sizes))],
        nodes=[node for node in nodes if node.free],
        mig=[report for node in state.nodes for report in _mig_reports(node)],
    )
