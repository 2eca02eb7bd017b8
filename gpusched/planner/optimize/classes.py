"""Aggregation for the planners: identical nodes become one class, identical pods one shape, and what a node can
host becomes a list of patterns (multisets of shapes that fit together), each with its exact arrangement.

A CP-SAT model over pattern counts per class is exact — pods never span nodes, so a node's contents are a
pattern — and its size depends on how many classes of node and shapes of pod there are, not how many nodes and pods.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from itertools import combinations

from ...models.workload import GpuNeeds
from ..deadline import OutOfTime
from ..scheduler.plugins.gpudevices import GpuChoice
from ..scheduler.views import evaluate
from ..state import NodeState

__all__ = [
    "Arrangement",
    "Item",
    "NodeClass",
    "PodShape",
    "arrange",
    "canonical_free",
    "compatible",
    "node_classes",
    "patterns",
    "room_of",
]

MAX_PATTERNS = 20000  # per class; beyond this the instance is too varied for the class model


@dataclass(frozen=True)
class PodShape:
    """What one pod takes from a node: interchangeable pods have the same shape."""

    gpus: int
    nvlink: bool
    shared_gib: float | None  # GPU memory per GPU when the pod takes time-sliced replicas
    mig_profile: str | None
    cpu: int  # millicores
    memory: int  # bytes

    @classmethod
    def of(cls, needs: GpuNeeds, gpus: int) -> PodShape:
        return cls(
            gpus=gpus,
            nvlink=needs.nvlink and gpus > 1 and not needs.mig_profile,
            shared_gib=(needs.memory_gib or 0.0) if needs.shared else None,
            mig_profile=needs.mig_profile,
            cpu=needs.cpu_milli,
            memory=needs.memory_bytes,
        )

    @property
    def gpu_view(self) -> PodShape:
        """What the node's GPUs see of the pod: patterns are built over these, cpu and memory counted apart."""
        return PodShape(self.gpus, self.nvlink, self.shared_gib, self.mig_profile, 0, 0)


@dataclass(frozen=True)
class Item:
    """One pod's place in an arrangement: GPU slots by canonical position on the node."""

    shape: PodShape
    slots: tuple[int, ...]  # canonical whole-GPU positions, time-sliced GPU positions, or MIG instance positions
    split: bool = False  # spans NVLink islands


@dataclass(frozen=True)
class Arrangement:
    items: tuple[Item, ...]
    splits: int
    free_whole: int  # exclusive whole GPUs left free


@dataclass
class NodeClass:
    key: tuple
    nodes: list[NodeState] = field(default_factory=list)

    @property
    def representative(self) -> NodeState:
        return self.nodes[0]


def canonical_free(node: NodeState) -> tuple[list[list[int]], list[int], list[tuple[int, int]]]:
    """The node's free capacity in canonical order, so identical nodes line up position by position:
    whole-GPU islands by free count (descending) with their free GPU indices; time-sliced GPUs island by island
    (islands by their GPUs' states, descending), each by (free replicas, free memory) descending; free MIG
    instances as (gpu, start) by profile then position."""
    islands: dict[int, list[int]] = {}
    for gpu in node.whole_gpus():
        if not node.time_sliced and gpu.free_replicas > 0:
            islands.setdefault(gpu.island, []).append(gpu.index)
    whole = [islands[k] for k in sorted(islands, key=lambda k: (-len(islands[k]), k))]
    shared = [index for _, island in _sliced_islands(node) for index in island]
    mig = sorted(((gpu.index, slot.start) for gpu, slot in node.free_mig()), key=lambda m: (_profile_at(node, m), m))
    return whole, shared, mig


def _sliced_state(node: NodeState, index: int) -> tuple[int, float]:
    gpu = node.gpus[index]
    return gpu.free_replicas, gpu.memory_gib - gpu.declared_gib


def _sliced_islands(node: NodeState) -> list[tuple[tuple[tuple[int, float], ...], list[int]]]:
    """A time-sliced node's GPUs by NVLink island, canonical: (the island's GPU states, its GPU indices)."""
    if not node.time_sliced:
        return []
    islands: dict[int, list[int]] = {}
    for gpu in node.whole_gpus():
        islands.setdefault(gpu.island, []).append(gpu.index)
    found = []
    for members in islands.values():
        members.sort(key=lambda i: (tuple(-x for x in _sliced_state(node, i)), i))
        found.append((tuple(_sliced_state(node, i) for i in members), members))
    found.sort(key=lambda item: (tuple(tuple(-x for x in state) for state in item[0]), item[1]))
    return found


def _sliced_room(node: NodeState) -> tuple[tuple[int, float, int], ...]:
    """(free replicas, free GiB, canonical island) per canonical time-sliced GPU."""
    return tuple(
        (replicas, gib, number) for number, (states, _) in enumerate(_sliced_islands(node)) for replicas, gib in states
    )


def _profile_at(node: NodeState, where: tuple[int, int]) -> str:
    gpu, start = where
    return next(slot.profile for slot in node.gpus[gpu].mig if slot.start == start)


def _class_key(node: NodeState, label_keys: frozenset[str], host: bool) -> tuple:
    """Everything a filter reads, and of the labels only those some pending pod selects on (a hostname label
    would otherwise make every node a class of its own); cpu and memory only where they may bind (`host`)."""
    exclude: dict = {"name": True, "labels": True, "gpu": {"busy", "mig", "islands", "nvlink_gbps", "pcie_gbps"}}
    if not host:
        exclude |= {"cpu": True, "memory": True}
    spec = node.spec.model_dump_json(exclude=exclude)
    labels = tuple(sorted((key, node.spec.labels.get(key)) for key in label_keys))
    whole, _, mig = canonical_free(node)
    profiles = tuple(_profile_at(node, m) for m in mig)
    used = (node.cpu_requested, node.memory_requested) if host else ()
    return (spec, labels, tuple(len(island) for island in whole), _sliced_room(node), profiles, used)


def node_classes(
    nodes: list[NodeState], label_keys: frozenset[str] = frozenset(), binding: frozenset[str] = frozenset()
) -> list[NodeClass]:
    """Interchangeable nodes. A node named in `binding` (its cpu or memory may run out) is a class of its own,
    since the model counts its cpu and memory node by node; the others are grouped on what their GPUs see."""
    classes: dict[tuple, NodeClass] = {}
    for node in nodes:
        key = _class_key(node, label_keys, node.name in binding) + ((node.name,) if node.name in binding else ())
        classes.setdefault(key, NodeClass(key)).nodes.append(node)
    return list(classes.values())


def compatible(needs: GpuNeeds, gpus: int, node: NodeState) -> bool:
    """Could one such pod run on this (empty-of-pending) node at all: filters, model, memory, sharing, islands."""
    return isinstance(evaluate(needs, gpus, node, "gpu"), GpuChoice)


# --- arrangements -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Room:
    """A class's free capacity, as counts, for the arrangement search."""

    islands: tuple[int, ...]  # free whole GPUs per canonical island
    sliced: tuple[tuple[int, float, int], ...]  # (free replicas, free GiB, island) per canonical time-sliced GPU
    mig: tuple[str, ...]  # profile of each free instance, canonical order
    cpu: int | None
    memory: int | None


def room_of(node: NodeState) -> _Room:
    whole, _, mig = canonical_free(node)
    cpu, memory = node.spec.cpu_milli, node.spec.memory_bytes
    return _Room(
        islands=tuple(len(island) for island in whole),
        sliced=_sliced_room(node),
        mig=tuple(_profile_at(node, m) for m in mig),
        cpu=None if cpu is None else max(0, cpu - node.cpu_requested),  # over-used by running pods: none left
        memory=None if memory is None else max(0, memory - node.memory_requested),
    )


@cache
def arrange(room: _Room, shapes: tuple[PodShape, ...]) -> Arrangement | None:
    """The arrangement of these pods on a node with this room that splits the fewest pods, or None if none fits."""
    if room.cpu is not None and sum(s.cpu for s in shapes) > room.cpu:
        return None
    if room.memory is not None and sum(s.memory for s in shapes) > room.memory:
        return None
    mig_items = _arrange_mig(room.mig, [s for s in shapes if s.mig_profile])
    sliced = _arrange_sliced(room.sliced, [s for s in shapes if s.shared_gib is not None])
    whole = _arrange_whole(room.islands, [s for s in shapes if s.mig_profile is None and s.shared_gib is None])
    if mig_items is None or sliced is None or whole is None:
        return None
    (whole_items, whole_splits), (sliced_items, sliced_splits) = whole, sliced
    used = sum(s.gpus for s in shapes if s.mig_profile is None and s.shared_gib is None)
    return Arrangement(
        tuple(whole_items + sliced_items + mig_items), whole_splits + sliced_splits, sum(room.islands) - used
    )


def _arrange_mig(free: tuple[str, ...], shapes: list[PodShape]) -> list[Item] | None:
    taken: set[int] = set()
    items = []
    for shape in shapes:
        slots = [i for i, profile in enumerate(free) if profile == shape.mig_profile and i not in taken][: shape.gpus]
        if len(slots) < shape.gpus:
            return None
        taken.update(slots)
        items.append(Item(shape, tuple(slots)))
    return items


def _arrange_sliced(gpus: tuple[tuple[int, float, int], ...], shapes: list[PodShape]) -> tuple[list[Item], int] | None:
    """Exact: each shared pod takes one replica (and its declared memory) on each of `gpus` distinct GPUs; an
    NVLink pod's GPUs lie in one island (as the filter demands); fewest pods spanning islands."""
    state = [[replicas, gib] for replicas, gib, _ in gpus]
    island = [number for _, _, number in gpus]
    order = sorted(range(len(shapes)), key=lambda i: (-shapes[i].gpus, -(shapes[i].shared_gib or 0)))
    placed: dict[int, tuple[int, ...]] = {}
    best: list = [None]
    widest = max(Counter(island).values(), default=0)
    least = sum(shape.gpus > widest for shape in shapes)  # pods wider than every island: split whatever happens

    def search(k: int, splits: int) -> None:
        if best[0] is not None and (splits >= best[0][1] or best[0][1] == least):
            return
        if k == len(order):
            best[0] = (dict(placed), splits)
            return
        shape = shapes[order[k]]
        need = shape.shared_gib or 0.0
        fitting = [j for j, (replicas, gib) in enumerate(state) if replicas > 0 and gib >= need]
        for combo in _distinct_combos(fitting, shape.gpus, state, island):
            spans = len({island[j] for j in combo}) > 1
            if spans and shape.nvlink:
                continue
            for j in combo:
                state[j][0] -= 1
                state[j][1] -= need
            placed[order[k]] = combo
            search(k + 1, splits + spans)
            for j in combo:
                state[j][0] += 1
                state[j][1] += need
        placed.pop(order[k], None)

    search(0, 0)
    if best[0] is None:
        return None
    chosen, splits = best[0]
    return [Item(shape, chosen[i], len({island[j] for j in chosen[i]}) > 1) for i, shape in enumerate(shapes)], splits


def _distinct_combos(candidates: list[int], size: int, state: list[list], island: list[int]) -> list[tuple[int, ...]]:
    """Combinations of GPUs, one per class of symmetric ones: two combinations are the same up to swapping GPUs
    of equal state within an island and whole islands of equal state. Those within one island come first."""
    members: dict[int, list[int]] = {}
    for j, number in enumerate(island):
        members.setdefault(number, []).append(j)
    seen: set[tuple] = set()
    combos = []
    for combo in combinations(candidates, size):
        taken: dict[int, list[tuple]] = {}
        for j in combo:
            taken.setdefault(island[j], []).append(tuple(state[j]))
        signature = tuple(
            sorted((tuple(sorted(tuple(state[g]) for g in members[k])), tuple(sorted(v))) for k, v in taken.items())
        )
        if signature not in seen:
            seen.add(signature)
            combos.append(combo)
    return sorted(combos, key=lambda combo: len({island[j] for j in combo}))


def _arrange_whole(islands: tuple[int, ...], shapes: list[PodShape]) -> tuple[list[Item], int] | None:
    """Exact: NVLink pods inside one island, others in one island where possible; fewest split pods."""
    order = sorted(range(len(shapes)), key=lambda i: (-shapes[i].gpus, not shapes[i].nvlink))
    if sum(s.gpus for s in shapes) > sum(islands):
        return None
    best: list = [None]

    def search(k: int, remaining: list[int], choice: dict[int, int | None], splits: int) -> None:
        if best[0] is not None and splits >= best[0][1]:
            return
        if k == len(order):
            best[0] = (dict(choice), splits)
            return
        shape = shapes[order[k]]
        tried: set[int] = set()
        for island, room in enumerate(remaining):
            if room >= shape.gpus and room not in tried:
                tried.add(room)
                remaining[island] -= shape.gpus
                choice[order[k]] = island
                search(k + 1, remaining, choice, splits)
                remaining[island] += shape.gpus
        if not shape.nvlink:
            choice[order[k]] = None  # split: takes whatever is left once the others are placed
            search(k + 1, remaining, choice, splits + 1)
        choice.pop(order[k], None)

    search(0, list(islands), {}, 0)
    if best[0] is None:
        return None
    choice, splits = best[0]
    return _slots(islands, shapes, choice), splits


def _slots(islands: tuple[int, ...], shapes: list[PodShape], choice: dict[int, int | None]) -> list[Item]:
    """Canonical GPU positions: island i's GPUs are positions offset[i] .. offset[i] + islands[i] - 1."""
    offsets = [sum(islands[:i]) for i in range(len(islands))]
    cursor = list(offsets)
    slots: dict[int, tuple[int, ...]] = {}
    for index, island in choice.items():
        if island is not None:
            slots[index] = tuple(range(cursor[island], cursor[island] + shapes[index].gpus))
            cursor[island] += shapes[index].gpus
    left = [p for i, start in enumerate(cursor) for p in range(start, offsets[i] + islands[i])]
    for index, island in choice.items():
        if island is None:
            slots[index], left = tuple(left[: shapes[index].gpus]), left[shapes[index].gpus :]
    return [Item(shapes[i], slots[i], choice[i] is None and _spans(islands, slots[i])) for i in range(len(shapes))]


def _spans(islands: tuple[int, ...], slots: tuple[int, ...]) -> bool:
    bounds = [sum(islands[: i + 1]) for i in range(len(islands))]
    return len({next(i for i, b in enumerate(bounds) if p < b) for p in slots}) > 1


def patterns(
    room: _Room,
    shapes: list[PodShape],
    pending: dict[PodShape, int] | None = None,
    deadline: float | None = None,
) -> list[tuple[tuple[PodShape, ...], Arrangement]]:
    """Every multiset of these shapes that fits together in the room (the empty one included), each shape at most
    as often as `pending` has pods of it: the patterns follow the backlog, not the room on the node. OutOfTime
    once `deadline` (perf_counter) passes: the enumeration grows with the shapes, and has no result half done."""
    found: list[tuple[tuple[PodShape, ...], Arrangement]] = []
    tried = [0]

    def extend(start: int, chosen: list[PodShape]) -> None:
        tried[0] += 1
        if deadline is not None and not tried[0] % 64 and time.perf_counter() > deadline:
            raise OutOfTime("model")
        arrangement = arrange(room, tuple(chosen))
        if arrangement is None:
            return
        found.append((tuple(chosen), arrangement))
        if len(found) > MAX_PATTERNS:
            raise ValueError(f"more than {MAX_PATTERNS} ways to fill one kind of node: too many distinct pod shapes")
        for i in range(start, len(shapes)):
            if pending is not None and chosen.count(shapes[i]) >= pending.get(shapes[i], 0):
                continue
            chosen.append(shapes[i])
            extend(i, chosen)
            chosen.pop()

    extend(0, [])
    return found
