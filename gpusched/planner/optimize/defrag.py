"""defrag: the fewest pod moves that make room for a target shape, as an ordered sequence of valid states.

build → solve → extract → validate. Only exclusive whole GPUs matter (a time-sliced replica or a MIG instance is
never room for the shape), so the planner works on NVLink islands: inside one, GPUs are interchangeable. Nodes
identical up to pod names form one *kind*. For each kind, every option is enumerated: which of its movable pods
leave (counted per class of interchangeable pods), how many target pods it then hosts, and which maximal
combination of incoming pods it can take besides (an exact island packing, cpu and memory included). CP-SAT picks
how many nodes of each kind take each option, so that every pod that leaves lands somewhere it fits.

Objective: fewest moves, then fewest GPUs moved, then the earliest nodes by name (so that runs repeat); with
`xmax`, first the most target pods within --max-moves. The moves are then ordered so that every intermediate state
is valid: a pod lands only on GPUs already free, and a cycle is broken by evicting one pod first and re-creating
it last. Beside it, a descheduler-style greedy (HighNodeUtilization: empty the least-used nodes first).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import product
from typing import Literal

from ortools.sat.python import cp_model
from pydantic import BaseModel, Field

from ...errors import InputError
from ...models.cluster import Cluster, RunningPod
from ...models.workload import GpuNeeds
from ..fit import Option, evaluate, mismatch, node_filters
from ..place import Placer
from ..state import NodeState
from ..validate import Assignment
from .disrupt import (
    Budgets,
    choices_per_kind,
    out_of_time,
    problems,
    running_pods,
    running_state,
    solve_counts,
    spread_over_kinds,
)
from .solver import Infeasible, SolverConfig, SolveReport

__all__ = ["Shape", "parse_shape", "Move", "Step", "TargetPlacement", "Greedy", "DefragReport", "defrag"]

# --- the target shape --------------------------------------------------------------------------------------------

_SHAPE = re.compile(r"^(\d+)(?:x(\d+|max))?(@island)?$")


@dataclass(frozen=True)
class Shape:
    """`GPUS[xPODS|xmax][@island]`: PODS pods of GPUS GPUs each (default 1 pod), each inside one NVLink island
    with @island; `xmax` asks for as many as --max-moves allows."""

    gpus: int
    pods: int | None  # None: as many as possible
    island: bool
    target: GpuNeeds | None = field(default=None, compare=False)  # the real pod's needs (model, taints...), if known

    @property
    def needs(self) -> GpuNeeds:
        return self.target or GpuNeeds(nvlink=self.island)

    def describe(self) -> str:
        size = f"{self.gpus} GPU{'s' if self.gpus != 1 else ''}"
        where = ", each inside one NVLink island" if self.island and self.gpus > 1 else ""
        if self.pods is None:
            return f"as many pods of {size} as possible{where}"
        return f"{self.pods} pod{'s' if self.pods != 1 else ''} x {size}{where}"


def parse_shape(text: str) -> Shape:
    match = _SHAPE.match(text.strip())
    if not match:
        raise ValueError(f"--for: expected GPUS[xPODS|xmax][@island] (e.g. 8@island, 8x2, 4xmax@island), got {text!r}")
    gpus, pods, island = int(match[1]), match[2], bool(match[3])
    if gpus < 1 or pods == "0":
        raise ValueError(f"--for: GPUs and pods must be at least 1, got {text!r}")
    return Shape(gpus, None if pods == "max" else int(pods or 1), island)


# --- output ------------------------------------------------------------------------------------------------------


class Move(BaseModel):
    pod: str
    gpus: int
    from_node: str
    from_gpus: list[int]
    to_node: str
    to_gpus: list[int]


class Step(BaseModel):
    """One action: `move` (evict, then re-create at once), or `evict` and later `create` to break a cycle."""

    action: Literal["move", "evict", "create"]
    pod: str
    node: str = Field(description="where it runs after the step (the node it left, for evict)")
    gpus: list[int]


class TargetPlacement(BaseModel):
    pod: str
    node: str
    gpus: list[int]
    islands: list[int]


class Greedy(BaseModel):
    """The descheduler-style answer on the same input, judged by the same validator."""

    name: str
    moves: list[Move]
    gpus_moved: int
    targets: int = Field(description="target pods that fit afterwards")
    fits: bool
    valid: bool
    problems: list[str] = Field(default_factory=list)


class ShapeInfo(BaseModel):
    gpus: int
    pods: int | None
    island: bool
    text: str


class DefragReport(BaseModel):
    shape: ShapeInfo
    max_moves: int | None
    feasible: bool
    reason: str | None = Field(None, description="why there is no plan (exit 1)")
    before: int = Field(description="target pods that fit before any move")
    moves: list[Move] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    targets: list[TargetPlacement] = Field(default_factory=list)
    gpus_moved: int = 0
    commands: list[str] = Field(default_factory=list)
    solve: SolveReport | None = None
    kinds: int = Field(0, description="kinds of node the model was built on (identical nodes aggregated)")
    comparison: list[Greedy] = Field(default_factory=list)


# --- build: islands, movers, kinds and options -------------------------------------------------------------------


@dataclass(frozen=True)
class _Class:
    """Movers that are interchangeable wherever they land: same GPU count, NVLink need and requests."""

    gpus: int
    nvlink: bool
    cpu: int
    memory: int
    needs: GpuNeeds = field(compare=False)  # what placement filters read; the fields above decide packing


@dataclass(frozen=True)
class _Option:
    leave: tuple[int, ...]  # per occupant class of the kind
    targets: int
    take: tuple[int, ...]  # incoming capacity per mover class (a maximal combination)
    out: tuple[int, ...]  # leavers per mover class
    moves: int
    gpus: int


@dataclass
class _Kind:
    nodes: list[str]
    occupants: list[tuple[int, tuple[int, ...]]]  # (mover class, GPUs per island)
    members: dict[str, list[list[RunningPod]]] = field(default_factory=dict)
    options: list[_Option] = field(default_factory=list)


@dataclass
class _World:
    """Everything the planner reads, computed once."""

    cluster: Cluster
    shape: Shape
    nodes: dict[str, NodeState]
    islands: dict[str, list[list[int]]]  # exclusive whole GPUs per island, for eligible nodes
    movers: dict[str, RunningPod]
    mover_class: dict[str, int]
    classes: list[_Class]
    landing: dict[str, tuple[int, ...]]  # node -> mover classes that may land there
    hosts_target: dict[str, bool]
    cpu_binds: bool  # False: no placement of movers can run out of cpu, so cpu is left out of classes and kinds
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


def _world(cluster: Cluster, shape: Shape, budgets: Budgets) -> _World:
    state = running_state(cluster)
    nodes = {node.name: node for node in state.nodes}
    islands = {n.name: _exclusive_islands(n) for n in state.nodes if not n.time_sliced and n.whole_gpus()}
    candidates = [
        pod
        for pod in running_pods(cluster)
        if pod.node in islands and pod.gpus and not pod.mig and not pod.needs.mig_profile and not budgets.pinned(pod)
    ]
    cpu = _binds(nodes, islands, candidates, "cpu_milli", "cpu_requested", "cpu_milli")
    memory = _binds(nodes, islands, candidates, "memory_bytes", "memory_requested", "memory_bytes")
    ignored = {"labels", "priority"} | ({"cpu"} if not cpu else set()) | ({"memory"} if not memory else set())
    keys: dict[tuple, int] = {}
    mover_class: dict[str, int] = {}
    classes: list[_Class] = []
    for pod in candidates:
        nvlink = pod.needs.nvlink and len(pod.gpus) > 1
        key = (len(pod.gpus), nvlink, pod.needs.model_dump_json(exclude=ignored))
        if key not in keys:
            keys[key] = len(classes)
            classes.append(
                _Class(
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
    return _World(
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


@lru_cache(maxsize=200_000)
def _pack(caps: tuple[int, ...], nvlink: tuple[int, ...], loose: int) -> tuple[int, ...] | None:
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
    shape: Shape, targets: int, classes: Sequence[_Class], counts: dict[int, int]
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
    caps: tuple[int, ...], targets: int, shape: Shape, classes: tuple[_Class, ...], room: tuple[int | None, int | None]
) -> tuple[tuple[int, ...], ...]:
    """Every maximal combination of incoming movers (counts per given class) that fits beside the targets."""
    cpu_left, memory_left = room

    def fits(vector: tuple[int, ...]) -> bool:
        if cpu_left is not None and sum(c.cpu * n for c, n in zip(classes, vector, strict=True)) > cpu_left:
            return False
        if memory_left is not None and sum(c.memory * n for c, n in zip(classes, vector, strict=True)) > memory_left:
            return False
        nvlink, loose = _items(shape, targets, classes, dict(enumerate(vector)))
        return _pack(caps, nvlink, loose) is not None

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


def _caps(world: _World, node: str, gone: Sequence[RunningPod]) -> tuple[int, ...]:
    """Free whole GPUs per island once `gone` have left."""
    state = world.nodes[node]
    leaving = {pod.name for pod in gone}
    return tuple(
        sum(1 for g in members if not state.gpus[g].holders or state.gpus[g].holders[0][0] in leaving)
        for members in world.islands[node]
    )


def _room(world: _World, node: str, gone: Sequence[RunningPod]) -> tuple[int | None, int | None]:
    """cpu and memory left once `gone` have left; None where it cannot bind (or the node does not model it)."""
    state = world.nodes[node]
    cpu, memory = state.spec.cpu_milli, state.spec.memory_bytes
    freed_cpu = sum(pod.needs.cpu_milli for pod in gone)
    freed_memory = sum(pod.needs.memory_bytes for pod in gone)
    return (
        None if cpu is None or not world.cpu_binds else cpu - state.cpu_requested + freed_cpu,
        None if memory is None or not world.memory_binds else memory - state.memory_requested + freed_memory,
    )


def _kinds(world: _World) -> list[_Kind]:
    """Group eligible nodes into kinds; occupants are the movers on the node, by class and island counts."""
    kinds: dict[tuple, _Kind] = {}
    for name in world.islands:
        state = world.nodes[name]
        island_of = {g: i for i, members in enumerate(world.islands[name]) for g in members}
        keyed: dict[tuple, list[RunningPod]] = {}
        fixed = Counter()
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
        kind = kinds.setdefault(signature, _Kind([], occupants))
        kind.nodes.append(name)
        kind.members[name] = [sorted(keyed[key], key=lambda p: (p.gpus, p.name)) for key in occupants]
    return sorted(kinds.values(), key=lambda k: k.nodes[0])


def _options(world: _World, kind: _Kind, limit: int | None) -> list[_Option]:
    """Every (leavers, targets, incoming) option of the kind's first node, keeping the fewest leavers per outcome."""
    node = kind.nodes[0]
    members = kind.members[node]
    landing = world.landing[node]
    classes = tuple(world.classes[i] for i in landing)
    best: dict[tuple, list[_Option]] = {}
    for leave in product(*(range(len(group) + 1) for group in members)):
        gone = [pod for group, count in zip(members, leave, strict=True) for pod in group[:count]]
        caps, room = _caps(world, node, gone), _room(world, node, gone)
        out = Counter(world.mover_class[pod.name] for pod in gone)
        targets = 0
        while True:
            patterns = (
                _patterns(caps, targets, world.shape, classes, room) if world.hosts_target[node] or not targets else ()
            )
            if not patterns:
                break
            for pattern in patterns:
                take = [0] * len(world.classes)
                for index, count in zip(landing, pattern, strict=True):
                    take[index] = count
                option = _Option(
                    tuple(leave),
                    targets,
                    tuple(take),
                    tuple(out[i] for i in range(len(world.classes))),
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


# --- solve -------------------------------------------------------------------------------------------------------


def _solve(
    world: _World, kinds: list[_Kind], config: SolverConfig, max_moves: int | None
) -> tuple[list[list[int]] | None, SolveReport]:
    """How many nodes of each kind take each option; None when the time ran out before any plan was found."""
    model = cp_model.CpModel()
    take, flat = choices_per_kind(model, [k.nodes for k in kinds], [k.options for k in kinds])
    for index in range(len(world.classes)):
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


# --- extract: where each pod lands, and in which order -----------------------------------------------------------


@dataclass
class _Plan:
    moves: list[Move]
    targets: list[TargetPlacement]


def _landing(world: _World, picks: list[tuple[str, _Option]], leavers: list[RunningPod]) -> dict[str, str]:
    """Each leaver's destination node: the first node (by name, another node if possible) with a slot of its class."""
    slots = {node: list(option.take) for node, option in picks}
    order = sorted(slots)
    destination = {}
    for pod in leavers:
        index = world.mover_class[pod.name]
        open_nodes = [n for n in order if slots[n][index] > 0]
        chosen = next((n for n in open_nodes if n != pod.node), open_nodes[0])
        slots[chosen][index] -= 1
        destination[pod.name] = chosen
    return destination


def _arrange(
    world: _World, node: str, gone: list[RunningPod], incoming: list[RunningPod], targets: int
) -> tuple[dict[str, list[int]], list[list[int]]]:
    """Concrete GPUs on one node: incoming pods take GPUs free now first (so they wait for nobody), targets the rest."""
    state = world.nodes[node]
    leaving = {pod.name for pod in gone}
    pools = []
    for members in world.islands[node]:
        free = [g for g in members if not state.gpus[g].holders]
        vacated = [g for g in members if state.gpus[g].holders and state.gpus[g].holders[0][0] in leaving]
        pools.append(free + vacated)
    shape = world.shape
    wants = [(pod.name, len(pod.gpus), world.classes[world.mover_class[pod.name]].nvlink) for pod in incoming]
    wants += [(f"\0target-{i}", shape.gpus, shape.island and shape.gpus > 1) for i in range(targets)]
    linked = sorted((w for w in wants if w[2]), key=lambda w: -w[1])
    found = _pack(_caps(world, node, gone), tuple(w[1] for w in linked), sum(w[1] for w in wants if not w[2]))
    if found is None:
        raise RuntimeError(f"internal error: the option chosen for {node} does not pack")
    island_of = {w[0]: island for w, island in zip(linked, found, strict=True)}
    taken: dict[str, list[int]] = {}
    for name, gpus, nvlink in sorted(wants, key=lambda w: w[0].startswith("\0")):  # movers before targets
        if nvlink:
            pool = pools[island_of[name]]
            taken[name], pool[:] = pool[:gpus], pool[gpus:]
    everywhere = sorted(
        (g for pool in pools for g in pool), key=lambda g: bool(state.gpus[g].holders)
    )  # free now first
    for name, gpus, nvlink in sorted(wants, key=lambda w: w[0].startswith("\0")):
        if not nvlink:
            taken[name], everywhere = everywhere[:gpus], everywhere[gpus:]
    placed = {name: sorted(g) for name, g in taken.items() if not name.startswith("\0")}
    return placed, [sorted(taken[f"\0target-{i}"]) for i in range(targets)]


def _extract(world: _World, kinds: list[_Kind], counts: list[list[int]]) -> _Plan:
    picks = [(node, kinds[k].options[o]) for k, node, o in spread_over_kinds([k.nodes for k in kinds], counts)]
    kind_of = {node: kind for kind in kinds for node in kind.nodes}
    gone: dict[str, list[RunningPod]] = {}
    for node, option in picks:
        members = kind_of[node].members[node]
        gone[node] = [pod for group, count in zip(members, option.leave, strict=True) for pod in group[:count]]
    leavers = [pod for node, _ in picks for pod in gone[node]]
    destination = _landing(world, picks, leavers)
    moves, targets = [], []
    for node, option in sorted(picks):
        incoming = [pod for pod in leavers if destination[pod.name] == node]
        placed, blocks = _arrange(world, node, gone[node], incoming, option.targets)
        for pod in incoming:
            moves.append(
                Move(
                    pod=pod.name,
                    gpus=len(pod.gpus),
                    from_node=pod.node,
                    from_gpus=sorted(pod.gpus),
                    to_node=node,
                    to_gpus=placed[pod.name],
                )
            )
        for gpus in blocks:
            islands = sorted({world.nodes[node].gpus[g].island for g in gpus})
            targets.append(TargetPlacement(pod=f"target-{len(targets)}", node=node, gpus=gpus, islands=islands))
    if world.shape.pods is not None:
        targets = targets[: world.shape.pods]
    moves.sort(key=lambda m: (m.from_node, m.pod))
    return _Plan(moves, targets)


def _order(moves: list[Move]) -> list[Step]:
    """Steps in which a pod lands only on free GPUs; when every remaining move waits on another, evict one first."""
    held = {(m.from_node, g): m.pod for m in moves for g in m.from_gpus}
    waiting = list(moves)
    evicted: set[str] = set()
    steps: list[Step] = []
    while waiting:
        ready = next((m for m in waiting if all(held.get((m.to_node, g), m.pod) == m.pod for g in m.to_gpus)), None)
        if ready is None:
            blocker = next(m for m in waiting if m.pod not in evicted)
            steps.append(Step(action="evict", pod=blocker.pod, node=blocker.from_node, gpus=blocker.from_gpus))
            _leave(held, blocker, evicted)
            continue
        if ready.pod not in evicted:
            _leave(held, ready, evicted)
        steps.append(
            Step(
                action="create" if any(s.pod == ready.pod for s in steps) else "move",
                pod=ready.pod,
                node=ready.to_node,
                gpus=ready.to_gpus,
            )
        )
        held.update({(ready.to_node, g): ready.pod for g in ready.to_gpus})
        waiting.remove(ready)
    return steps


def _leave(held: dict[tuple[str, int], str], move: Move, evicted: set[str]) -> None:
    for g in move.from_gpus:
        held.pop((move.from_node, g), None)
    evicted.add(move.pod)


# --- validate ----------------------------------------------------------------------------------------------------


def _validate(world: _World, plan: _Plan, steps: list[Step]) -> None:
    """Every intermediate state and the final one pass the validator (with cpu and memory), and the targets fit."""
    cluster = world.cluster
    pods = {m.pod: world.movers[m.pod] for m in plan.moves}
    where = {name: (pod.node, tuple(sorted(pod.gpus))) for name, pod in pods.items()}

    def state() -> list[Assignment]:
        return [Assignment(name, pods[name].needs, node, gpus) for name, (node, gpus) in where.items() if node]

    baseline = set(problems(cluster, pods, state()))
    found: list[str] = []
    for step in steps:
        where[step.pod] = ("", ()) if step.action == "evict" else (step.node, tuple(step.gpus))
        found += [f"after {step.action} {step.pod}: {p}" for p in problems(cluster, pods, state()) if p not in baseline]
    shape = world.shape
    targets = [Assignment(t.pod, shape.needs, t.node, tuple(t.gpus)) for t in plan.targets]
    found += [f"with the targets: {p}" for p in problems(cluster, pods, state() + targets) if p not in baseline]
    if any(not node for node, _ in where.values()):
        found.append("a pod evicted but never re-created")
    if shape.pods is not None and len(targets) < shape.pods:
        found.append(f"{len(targets)} of {shape.pods} target pods placed")
    if found:
        raise RuntimeError("internal error: a defrag plan failed validation: " + "; ".join(found))


def _commands(steps: list[Step]) -> list[str]:
    """What a user runs: evictions of named pods, each with where the pod must land (kubectl drain-free)."""
    lines = []
    for step in steps:
        if step.action == "move":
            lines.append(f"kubectl delete pod {step.pod}   # re-create on {step.node}, GPUs {step.gpus}")
        elif step.action == "evict":
            lines.append(f"kubectl delete pod {step.pod}   # keep it down until the step that re-creates it")
        else:
            lines.append(f"# re-create {step.pod} on {step.node}, GPUs {step.gpus}")
    return lines


# --- the descheduler-style greedy --------------------------------------------------------------------------------


def _room_on(world: _World, node: NodeState) -> int:
    """Target pods that fit on this node as its GPUs are now (identical pods: island by island, or by count)."""
    if not world.hosts_target[node.name]:
        return 0
    shape = world.shape
    free = [sum(1 for g in island if not node.gpus[g].holders) for island in world.islands[node.name]]
    return sum(f // shape.gpus for f in free) if shape.island else sum(free) // shape.gpus


def _room_for(world: _World, nodes: dict[str, NodeState]) -> int:
    return sum(_room_on(world, nodes[name]) for name in world.islands)


@dataclass
class _Greedy:
    """The descheduler's running state: free GPUs and room per node, kept up to date move by move."""

    world: _World
    nodes: dict[str, NodeState]
    placer: Placer
    free: dict[str, int]
    room: dict[str, int]

    def shift(self, pod: RunningPod, source: NodeState, option: Option) -> None:
        self.placer.release(pod.name, pod.needs, source)
        self.placer.bind(pod.name, pod.needs, option)
        for node in (source, option.node):
            self.free[node.name] = sum(gpu.free_replicas for gpu in node.whole_gpus())
            self.room[node.name] = _room_on(self.world, node)


def _descheduler(world: _World, max_moves: int | None) -> Greedy:
    """HighNodeUtilization: take the least-used node, evict its movable pods, let a MostAllocated scheduler place
    them on other nodes (never back on emptied ones); skip a node whose pods would not all fit; stop when the
    shape fits, the move budget is spent or no node is left."""
    state = running_state(world.cluster)
    nodes = {node.name: node for node in state.nodes}
    free = {n: sum(gpu.free_replicas for gpu in nodes[n].whole_gpus()) for n in world.islands}
    run = _Greedy(
        world, nodes, Placer(state, "gpu", "binpack"), free, {n: _room_on(world, nodes[n]) for n in world.islands}
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


def _evacuate(run: _Greedy, pods: list[RunningPod], done: set[str]) -> list[Move] | None:
    """Move every pod off its node onto the fullest node that fits it (MostAllocated: the fewest free GPUs left,
    ties by name); undo and return None if one fits nowhere."""
    world, nodes = run.world, run.nodes
    landed: list[tuple[RunningPod, Option]] = []
    for pod in pods:
        index = world.mover_class[pod.name]
        fullest = sorted(
            (run.free[n], n)
            for n in world.islands
            if n not in done and index in world.landing[n] and run.free[n] >= len(pod.gpus)
        )
        found = (evaluate(pod.needs, len(pod.gpus), nodes[n], "gpu") for _, n in fullest)
        best = next((option for option in found if isinstance(option, Option)), None)
        if best is None:
            for moved, option in reversed(landed):
                run.shift(moved, option.node, Option(nodes[moved.node], "nvidia.com/gpu", tuple(moved.gpus)))
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


# --- the planner -------------------------------------------------------------------------------------------------


def _check_shape(world: _World) -> None:
    """A shape no node could ever hold is bad input (exit 2), not an infeasible plan."""
    shape = world.shape
    if shape.island and shape.gpus > 1:
        largest = max((len(island) for islands in world.islands.values() for island in islands), default=0)
        if largest < shape.gpus:
            raise InputError(
                "--for", f"no node has {shape.gpus} GPUs in one NVLink island (the largest island has {largest})"
            )
    else:
        largest = max((sum(len(i) for i in islands) for islands in world.islands.values()), default=0)
        if largest < shape.gpus:
            raise InputError("--for", f"no node has {shape.gpus} exclusive whole GPUs (the largest has {largest})")


def _why(world: _World, max_moves: int | None) -> str:
    """Why no plan exists: too little room even with every movable pod gone, or the pods that leave fit nowhere."""
    shape = world.shape
    bound = 0
    for name in world.islands:
        if world.hosts_target[name]:
            caps = _caps(world, name, [p for p in world.movers.values() if p.node == name])
            bound += sum(c // shape.gpus for c in caps) if shape.island else sum(caps) // shape.gpus
    if shape.pods is not None and bound < shape.pods:
        return (
            f"even with every movable pod elsewhere there is room for {bound} of the {shape.pods} target pods "
            "(pods pinned by disruption budgets, MIG instances, time-sliced nodes and taints stay in the way)"
        )
    limit = f" within {max_moves} moves" if max_moves is not None else ""
    return f"the pods that would have to leave fit nowhere else{limit}"


def defrag(
    cluster: Cluster, shape: Shape, max_moves: int | None = None, config: SolverConfig | None = None
) -> DefragReport:
    """The fewest moves that make room for the shape, ordered and validated, beside the descheduler's greedy."""
    config = config or SolverConfig()
    if max_moves is not None and max_moves < 0:
        raise ValueError(f"--max-moves: must be 0 or more, got {max_moves}")
    if shape.pods is None and max_moves is None:
        raise ValueError("--for GPUSxmax asks for as many as the moves allow: give --max-moves")
    world = _world(cluster, shape, Budgets.of(cluster))
    _check_shape(world)
    kinds = _kinds(world)
    for kind in kinds:
        kind.options = _options(world, kind, shape.pods)
    report = DefragReport(
        shape=ShapeInfo(gpus=shape.gpus, pods=shape.pods, island=shape.island, text=shape.describe()),
        max_moves=max_moves,
        feasible=False,
        before=_room_for(world, world.nodes),
        kinds=len(kinds),
        comparison=[_descheduler(world, max_moves)],
    )
    try:
        counts, solve = _solve(world, kinds, config, max_moves)
    except Infeasible:
        return report.model_copy(update={"reason": _why(world, max_moves)})
    if counts is None:
        return out_of_time(report, solve, config)
    plan = _extract(world, kinds, counts)
    steps = _order(plan.moves)
    _validate(world, plan, steps)
    return report.model_copy(
        update={
            "feasible": True,
            "moves": plan.moves,
            "steps": steps,
            "targets": plan.targets,
            "gpus_moved": sum(m.gpus for m in plan.moves),
            "commands": _commands(steps),
            "solve": solve,
        }
    )
