"""What defrag reads, computed once: the eligible nodes' NVLink islands, the pods that may move and their classes,
and how many target pods a node holds as it is."""

from __future__ import annotations

from dataclasses import dataclass, field

from ....models.cluster import Cluster, RunningPod
from ....models.workload import GpuNeeds
from ...scheduler.plugins.gpudevices import mismatch
from ...scheduler.views import node_filters
from ...state import NodeState
from ..disrupt import Budgets, running_state
from .report import TargetShape

__all__ = ["MoverClass", "World", "build_world", "room_for", "room_on"]


@dataclass(frozen=True)
class MoverClass:
    """Movers that are interchangeable wherever they land: same GPU count, NVLink need and requests."""

    gpus: int
    nvlink: bool
    cpu: int
    memory: int
    needs: GpuNeeds = field(compare=False)  # what placement filters read; the fields above decide packing


@dataclass
class World:
    """Everything the planner reads, computed once."""

    cluster: Cluster
    shape: TargetShape
    nodes: dict[str, NodeState]
    islands: dict[str, list[list[int]]]  # exclusive whole GPUs per island, for eligible nodes
    movers: dict[str, RunningPod]
    mover_class: dict[str, int]
    mover_classes: list[MoverClass]
    landing: dict[str, tuple[int, ...]]  # node -> mover classes that may land there
    hosts_target: dict[str, bool]
    cpu_binds: bool  # False: no placement of movers can run out of cpu, so cpu is left out of mover and node classes
    memory_binds: bool


def _exclusive_islands(node: NodeState) -> list[list[int]]:
    by_island: dict[int, list[int]] = {}
    for gpu in node.whole_gpus():
        by_island.setdefault(gpu.island, []).append(gpu.index)
    return [members for _, members in sorted(by_island.items())]


def _static_ok(needs: GpuNeeds, node: NodeState) -> bool:
    """The checks that do not depend on what is free: taints, selector, cordon, model, memory, sharing."""
    return node_filters(needs, node) is None and not mismatch(needs, node) and not needs.mig_profile


def _binds(
    world_nodes: dict[str, NodeState],
    islands: dict[str, list[list[int]]],
    movers: list[RunningPod],
    allocatable: str,
    requested: str,
    need: str,
) -> bool:
    """Whether cpu (or memory) can ever stop a mover from landing: only if some node's fixed requests plus the
    hungriest mover's request per GPU times the node's GPUs exceed what it has. If not, ignore it, exactly."""
    if not movers:
        return False
    per_gpu = max(getattr(pod.needs, need) / len(pod.gpus) for pod in movers)
    moving: dict[str, int] = {}
    for pod in movers:
        moving[pod.node] = moving.get(pod.node, 0) + getattr(pod.needs, need)
    for name, members in islands.items():
        node = world_nodes[name]
        have = getattr(node.spec, allocatable)
        fixed = getattr(node, requested) - moving.get(name, 0)
        if have is not None and fixed + per_gpu * sum(map(len, members)) > have:
            return True
    return False


def build_world(cluster: Cluster, shape: TargetShape, budgets: Budgets) -> World:
    state = running_state(cluster)
    nodes = {node.name: node for node in state.nodes}
    islands = {n.name: _exclusive_islands(n) for n in state.nodes if not n.time_sliced and n.whole_gpus()}
    candidates = [
        pod
        for pod in cluster.running_pods()
        if pod.node in islands and pod.gpus and not pod.mig and not pod.needs.mig_profile and not budgets.pinned(pod)
    ]
    cpu = _binds(nodes, islands, candidates, "cpu_milli", "cpu_requested", "cpu_milli")
    memory = _binds(nodes, islands, candidates, "memory_bytes", "memory_requested", "memory_bytes")
    ignored = {"labels", "priority"} | ({"cpu"} if not cpu else set()) | ({"memory"} if not memory else set())
    keys: dict[tuple, int] = {}
    mover_class: dict[str, int] = {}
    classes: list[MoverClass] = []
    for pod in candidates:
        nvlink = pod.needs.nvlink and len(pod.gpus) > 1
        key = (len(pod.gpus), nvlink, pod.needs.model_dump_json(exclude=ignored))
        if key not in keys:
            keys[key] = len(classes)
            classes.append(
                MoverClass(
                    len(pod.gpus),
                    nvlink,
                    pod.needs.cpu_milli if cpu else 0,
                    pod.needs.memory_bytes if memory else 0,
                    pod.needs,
                )
            )
        mover_class[pod.name] = keys[key]
    landing = {name: tuple(i for i, c in enumerate(classes) if _static_ok(c.needs, nodes[name])) for name in islands}
    hosts = {name: _static_ok(shape.needs, nodes[name]) for name in islands}
    return World(
        cluster,
        shape,
        nodes,
        islands,
        {p.name: p for p in candidates},
        mover_class,
        classes,
        landing,
        hosts,
        cpu,
        memory,
    )


def room_on(world: World, node: NodeState) -> int:
    """Target pods that fit on this node as its GPUs are now (identical pods: island by island, or by count)."""
    if not world.hosts_target[node.name]:
        return 0
    shape = world.shape
    free = [sum(1 for g in island if not node.gpus[g].holders) for island in world.islands[node.name]]
    return sum(f // shape.gpus for f in free) if shape.island else sum(free) // shape.gpus


def room_for(world: World, nodes: dict[str, NodeState]) -> int:
    return sum(room_on(world, nodes[name]) for name in world.islands)
