"""defrag's model: nodes alike up to pod names form a class; for each class, every option is enumerated (which
movable pods leave, counted per class of interchangeable pods, how many target pods it then hosts, and which
maximal combination of incoming pods it can take besides: an exact island packing, cpu and memory included).
CP-SAT picks how many nodes of each class take each option, so that every pod that leaves lands where it fits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import product

from ortools.sat.python import cp_model

from ....models.cluster import RunningPod
from ..disrupt import choices_per_class, solve_counts
from ..solver import SolverConfig, SolveReport
from .report import TargetShape
from .world import MoverClass, World

__all__ = ["DefragNodeClass", "MoveOption", "caps_after", "move_options", "node_classes", "pack", "solve_moves"]


@dataclass(frozen=True)
class MoveOption:
    leave: tuple[int, ...]  # per occupant class of the node class
    targets: int
    take: tuple[int, ...]  # incoming capacity per mover class (a maximal combination)
    out: tuple[int, ...]  # leavers per mover class
    moves: int
    gpus: int


@dataclass
class DefragNodeClass:
    nodes: list[str]
    occupants: list[tuple[int, tuple[int, ...]]]  # (mover class, GPUs per island)
    members: dict[str, list[list[RunningPod]]] = field(default_factory=dict)
    options: list[MoveOption] = field(default_factory=list)


@lru_cache(maxsize=200_000)
def pack(caps: tuple[int, ...], nvlink: tuple[int, ...], loose: int) -> tuple[int, ...] | None:
    """Islands for the NVLink items (given largest first) so that the loose GPUs fit in what is left; None if none.

    Exact: a depth-first search that tries islands with equal free capacity once.
    """
    left = list(caps)
    chosen: list[int] = []

    def place(index: int) -> bool:
        if index == len(nvlink):
            return sum(left) >= loose
        tried = set()
        for island, free in enumerate(left):
            if free >= nvlink[index] and free not in tried:
                tried.add(free)
                left[island] -= nvlink[index]
                chosen.append(island)
                if place(index + 1):
                    return True
                chosen.pop()
                left[island] += nvlink[index]
        return False

    return tuple(chosen) if place(0) else None


def _items(
    shape: TargetShape, targets: int, classes: Sequence[MoverClass], counts: dict[int, int]
) -> tuple[tuple[int, ...], int]:
    """NVLink item sizes (largest first) and loose GPUs for targets plus incoming movers."""
    nvlink, loose = [], 0
    if shape.island and shape.gpus > 1:
        nvlink += [shape.gpus] * targets
    else:
        loose += shape.gpus * targets
    for index, count in counts.items():
        if classes[index].nvlink:
            nvlink += [classes[index].gpus] * count
        else:
            loose += classes[index].gpus * count
    return tuple(sorted(nvlink, reverse=True)), loose


@lru_cache(maxsize=50_000)
def _patterns(
    caps: tuple[int, ...],
    targets: int,
    shape: TargetShape,
    classes: tuple[MoverClass, ...],
    room: tuple[int | None, int | None],
) -> tuple[tuple[int, ...], ...]:
    """Every maximal combination of incoming movers (counts per given class) that fits beside the targets."""
    cpu_left, memory_left = room

    def fits(vector: tuple[int, ...]) -> bool:
        # pods asking no cpu (memory) pass on a node already over its allocatable, as kube-scheduler lets them
        cpu = sum(c.cpu * n for c, n in zip(classes, vector, strict=True))
        if cpu_left is not None and cpu and cpu > cpu_left:
            return False
        memory = sum(c.memory * n for c, n in zip(classes, vector, strict=True))
        if memory_left is not None and memory and memory > memory_left:
            return False
        nvlink, loose = _items(shape, targets, classes, dict(enumerate(vector)))
        return pack(caps, nvlink, loose) is not None

    found: list[tuple[int, ...]] = []
    if not fits((0,) * len(classes)):
        return ()

    def visit(prefix: tuple[int, ...]) -> None:
        if len(prefix) == len(classes):
            bumped = (prefix[:i] + (prefix[i] + 1,) + prefix[i + 1 :] for i in range(len(prefix)))
            if not any(fits(vector) for vector in bumped):
                found.append(prefix)
            return
        count = 0
        while fits((*prefix, count) + (0,) * (len(classes) - len(prefix) - 1)):
            visit((*prefix, count))
            count += 1

    visit(())
    return tuple(found)


def caps_after(world: World, node: str, gone: Sequence[RunningPod]) -> tuple[int, ...]:
    """Free whole GPUs per island once `gone` have left."""
    state = world.nodes[node]
    leaving = {pod.name for pod in gone}
    return tuple(
        sum(1 for g in members if not state.gpus[g].holders or state.gpus[g].holders[0][0] in leaving)
        for members in world.islands[node]
    )


def _room(world: World, node: str, gone: Sequence[RunningPod]) -> tuple[int | None, int | None]:
    """cpu and memory left once `gone` have left; None where it cannot bind (or the node does not model it)."""
    state = world.nodes[node]
    cpu, memory = state.spec.cpu_milli, state.spec.memory_bytes
    freed_cpu = sum(pod.needs.cpu_milli for pod in gone)
    freed_memory = sum(pod.needs.memory_bytes for pod in gone)
    return (
        None if cpu is None or not world.cpu_binds else cpu - state.cpu_requested + freed_cpu,
        None if memory is None or not world.memory_binds else memory - state.memory_requested + freed_memory,
    )


def node_classes(world: World) -> list[DefragNodeClass]:
    """Group eligible nodes into classes; occupants are the movers on the node, by class and island counts."""
    classes: dict[tuple, DefragNodeClass] = {}
    for name in world.islands:
        state = world.nodes[name]
        island_of = {g: i for i, members in enumerate(world.islands[name]) for g in members}
        keyed: dict[tuple, list[RunningPod]] = {}
        fixed: Counter[int] = Counter()
        for members in world.islands[name]:
            for g in members:
                holder = state.gpus[g].holders[0][0] if state.gpus[g].holders else None
                if holder is not None and holder not in world.movers:
                    fixed[island_of[g]] += 1
        for pod in world.movers.values():
            if pod.node == name:
                spread = tuple(sum(1 for g in pod.gpus if island_of[g] == i) for i in range(len(world.islands[name])))
                keyed.setdefault((world.mover_class[pod.name], spread), []).append(pod)
        occupants = sorted(keyed)
        spec = state.spec.model_dump_json(
            exclude={
                "name": True,
                "gpu": {"busy": True, "mig": True},
                "cpu": not world.cpu_binds,
                "memory": not world.memory_binds,
            }
        )
        sizes = tuple(len(members) for members in world.islands[name])
        signature = (
            spec,
            sizes,
            tuple(sorted(fixed.items())),
            tuple((key, len(keyed[key])) for key in occupants),
            state.cpu_requested if world.cpu_binds else 0,
            state.memory_requested if world.memory_binds else 0,
        )
        node_class = classes.setdefault(signature, DefragNodeClass([], occupants))
        node_class.nodes.append(name)
        node_class.members[name] = [sorted(keyed[key], key=lambda p: (p.gpus, p.name)) for key in occupants]
    return sorted(classes.values(), key=lambda k: k.nodes[0])


def move_options(world: World, node_class: DefragNodeClass, limit: int | None) -> list[MoveOption]:
    """Every (leavers, targets, incoming) option of the class's first node, keeping the fewest leavers per outcome."""
    node = node_class.nodes[0]
    members = node_class.members[node]
    landing = world.landing[node]
    classes = tuple(world.mover_classes[i] for i in landing)
    best: dict[tuple, list[MoveOption]] = {}
    for leave in product(*(range(len(group) + 1) for group in members)):
        gone = [pod for group, count in zip(members, leave, strict=True) for pod in group[:count]]
        caps, room = caps_after(world, node, gone), _room(world, node, gone)
        out = Counter(world.mover_class[pod.name] for pod in gone)
        targets = 0
        while True:
            patterns = (
                _patterns(caps, targets, world.shape, classes, room) if world.hosts_target[node] or not targets else ()
            )
            if not patterns:
                break
            for pattern in patterns:
                take = [0] * len(world.mover_classes)
                for index, count in zip(landing, pattern, strict=True):
                    take[index] = count
                option = MoveOption(
                    tuple(leave),
                    targets,
                    tuple(take),
                    tuple(out[i] for i in range(len(world.mover_classes))),
                    len(gone),
                    sum(len(p.gpus) for p in gone),
                )
                key = (targets, option.take)
                kept = best.setdefault(key, [])
                if not any(all(a <= b for a, b in zip(o.leave, leave, strict=True)) for o in kept):
                    kept[:] = [o for o in kept if not all(a <= b for a, b in zip(leave, o.leave, strict=True))] + [
                        option
                    ]
            targets += 1
            if limit is not None and targets > limit:
                break
    return [option for options in best.values() for option in options]


def solve_moves(
    world: World, classes: list[DefragNodeClass], config: SolverConfig, max_moves: int | None
) -> tuple[list[list[int]] | None, SolveReport]:
    """How many nodes of each class take each option; None when the time ran out before any plan was found."""
    model = cp_model.CpModel()
    take, flat = choices_per_class(model, [k.nodes for k in classes], [k.options for k in classes])
    for index in range(len(world.mover_classes)):
        leaving = [option.out[index] * var for option, var in flat if option.out[index]]
        if leaving:
            model.add(sum(leaving) <= sum(option.take[index] * var for option, var in flat if option.take[index]))
    targets = sum(option.targets * var for option, var in flat)
    moves = sum(option.moves * var for option, var in flat)
    if max_moves is not None:
        model.add(moves <= max_moves)
    levels = []
    if world.shape.pods is None:
        levels.append(("target pods", "maximize", targets))
    else:
        model.add(targets >= world.shape.pods)
    levels += [
        ("moves", "minimize", moves),
        ("GPUs moved", "minimize", sum(option.gpus * var for option, var in flat)),
    ]
    return solve_counts(model, take, flat, levels, config)
