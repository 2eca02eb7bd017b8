"""What defrag is compared with: a descheduler-style greedy (HighNodeUtilization: empty the least-used nodes first)."""

from __future__ import annotations

from dataclasses import dataclass

from ....models.cluster import RunningPod
from ...place import Placer
from ...scheduler.plugins.gpudevices import GpuChoice
from ...scheduler.views import evaluate
from ...state import NodeState
from ...validate import Assignment
from ..disrupt import problems, running_state
from .report import Greedy, Move
from .world import World, room_on

__all__ = ["descheduler"]


@dataclass
class DeschedulerRun:
    """The descheduler's running state: free GPUs and room per node, kept up to date move by move."""

    world: World
    nodes: dict[str, NodeState]
    placer: Placer
    free: dict[str, int]
    room: dict[str, int]

    def shift(self, pod: RunningPod, source: NodeState, option: GpuChoice) -> None:
        self.placer.release(pod.name, pod.needs, source)
        self.placer.bind(pod.name, pod.needs, option)
        for node in (source, option.node):
            self.free[node.name] = sum(gpu.free_replicas for gpu in node.whole_gpus())
            self.room[node.name] = room_on(self.world, node)


def descheduler(world: World, max_moves: int | None) -> Greedy:
    """HighNodeUtilization: take the least-used node, evict its movable pods, let a MostAllocated scheduler place
    them on other nodes (never back on emptied ones); skip a node whose pods would not all fit; stop when the
    shape fits, the move budget is spent or no node is left."""
    state = running_state(world.cluster)
    nodes = {node.name: node for node in state.nodes}
    free = {n: sum(gpu.free_replicas for gpu in nodes[n].whole_gpus()) for n in world.islands}
    run = DeschedulerRun(
        world, nodes, Placer(state, "gpu", "binpack"), free, {n: room_on(world, nodes[n]) for n in world.islands}
    )
    on: dict[str, list[RunningPod]] = {}
    for pod in world.movers.values():
        on.setdefault(pod.node, []).append(pod)
    done: set[str] = set()
    moves: list[Move] = []
    shape = world.shape
    while shape.pods is None or sum(run.room.values()) < shape.pods:
        left = [n for n in on if n not in done]
        if not left:
            break
        source = min(left, key=lambda n: (1 - run.free[n] / sum(map(len, world.islands[n])), n))
        done.add(source)
        pods = sorted(on[source], key=lambda p: (-len(p.gpus), p.name))
        if max_moves is not None and len(moves) + len(pods) > max_moves:
            continue
        landed = _evacuate(run, pods, done)
        if landed is not None:
            moves += landed
    moved = [Assignment(m.pod, world.movers[m.pod].needs, m.to_node, tuple(m.to_gpus)) for m in moves]
    issues = problems(world.cluster, [m.pod for m in moves], moved)
    room = sum(run.room.values())
    return Greedy(
        name="descheduler HighNodeUtilization",
        moves=moves,
        gpus_moved=sum(m.gpus for m in moves),
        targets=room,
        fits=shape.pods is None or room >= shape.pods,
        valid=not issues,
        problems=issues,
    )


def _evacuate(run: DeschedulerRun, pods: list[RunningPod], done: set[str]) -> list[Move] | None:
    """Move every pod off its node onto the fullest node that fits it (MostAllocated: the fewest free GPUs left,
    ties by name); undo and return None if one fits nowhere."""
    world, nodes = run.world, run.nodes
    landed: list[tuple[RunningPod, GpuChoice]] = []
    for pod in pods:
        index = world.mover_class[pod.name]
        fullest = sorted(
            (run.free[n], n)
            for n in world.islands
            if n not in done and index in world.landing[n] and run.free[n] >= len(pod.gpus)
        )
        found = (evaluate(pod.needs, len(pod.gpus), nodes[n], "gpu") for _, n in fullest)
        best = next((option for option in found if isinstance(option, GpuChoice)), None)
        if best is None:
            for moved, option in reversed(landed):
                run.shift(moved, option.node, GpuChoice(nodes[moved.node], "nvidia.com/gpu", tuple(moved.gpus)))
            return None
        run.shift(pod, nodes[pod.node], best)
        landed.append((pod, best))
    return [
        Move(
            pod=p.name,
            gpus=len(p.gpus),
            from_node=p.node,
            from_gpus=sorted(p.gpus),
            to_node=o.node.name,
            to_gpus=sorted(o.gpus),
        )
        for p, o in landed
    ]
