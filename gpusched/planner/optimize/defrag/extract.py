"""defrag's extraction: where each pod that leaves lands, on which GPUs, and in which order the moves run.

The moves are ordered so that every intermediate state is valid: a pod lands only on GPUs already free, and a cycle
is broken by evicting one pod first and re-creating it last.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ....models.cluster import RunningPod
from ....models.kube import kubectl_pod
from ..disrupt import Budgets, spread_over_classes
from .model import DefragNodeClass, MoveOption, caps_after, pack
from .report import Move, Step, TargetPlacement
from .world import World

__all__ = ["DefragPlan", "Unorderable", "commands_for", "extract", "order_moves", "schedule"]


@dataclass
class DefragPlan:
    moves: list[Move]
    targets: list[TargetPlacement]


def _landing(world: World, picks: list[tuple[str, MoveOption]], leavers: list[RunningPod]) -> dict[str, str]:
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
    world: World, node: str, gone: list[RunningPod], incoming: list[RunningPod], targets: int
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
    wants = [(pod.name, len(pod.gpus), world.mover_classes[world.mover_class[pod.name]].nvlink) for pod in incoming]
    wants += [(f"\0target-{i}", shape.gpus, shape.island and shape.gpus > 1) for i in range(targets)]
    linked = sorted((w for w in wants if w[2]), key=lambda w: -w[1])
    found = pack(caps_after(world, node, gone), tuple(w[1] for w in linked), sum(w[1] for w in wants if not w[2]))
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


def extract(world: World, classes: list[DefragNodeClass], counts: list[list[int]]) -> DefragPlan:
    picks = [(node, classes[k].options[o]) for k, node, o in spread_over_classes([k.nodes for k in classes], counts)]
    class_of = {node: node_class for node_class in classes for node in node_class.nodes}
    gone: dict[str, list[RunningPod]] = {}
    for node, option in picks:
        members = class_of[node].members[node]
        gone[node] = [pod for group, count in zip(members, option.leave, strict=True) for pod in group[:count]]
    leavers = [pod for node, _ in picks for pod in gone[node]]
    destination = _landing(world, picks, leavers)
    moves: list[Move] = []
    targets: list[TargetPlacement] = []
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
    return DefragPlan(moves, targets)


@dataclass
class _Ledger:
    """What the ordering tracks besides GPUs: each node's free cpu and memory (None: unlimited), each pod's
    requests, the disruption budgets each pod counts against and how many of each may be down at once."""

    free: dict[str, list[int | None]]
    requests: dict[str, tuple[int, int]]
    budgets: dict[str, tuple[int, ...]]
    allowed: tuple[int, ...] = ()

    @classmethod
    def of(cls, world: World | None, moves: list[Move]) -> _Ledger:
        if world is None:
            return cls({}, {}, {})
        budgets = Budgets.of(world.cluster)
        free: dict[str, list[int | None]] = {}
        for name in {m.to_node for m in moves} | {m.from_node for m in moves} | set(world.islands):
            node = world.nodes[name]
            cpu, memory = node.spec.cpu_milli, node.spec.memory_bytes
            free[name] = [
                None if cpu is None else cpu - node.cpu_requested,
                None if memory is None else memory - node.memory_requested,
            ]
        pods = {m.pod: world.movers[m.pod] for m in moves}
        requests = {name: (pod.needs.cpu_milli, pod.needs.memory_bytes) for name, pod in pods.items()}
        return cls(free, requests, {name: budgets.selecting(pod) for name, pod in pods.items()}, budgets.allowed)

    def fits(self, move: Move, still_there: bool) -> bool:
        """Room for the pod's cpu and memory on its destination, its own requests given back first if it moves
        within one node (a pod asking none always fits, as kube-scheduler lets it through)."""
        for resource, asked in enumerate(self.requests.get(move.pod, (0, 0))):
            room = self.free.get(move.to_node, [None, None])[resource]
            if room is None or not asked:
                continue
            if still_there and move.from_node == move.to_node:
                room += asked
            if asked > room:
                return False
        return True

    def shift(self, pod: str, node: str, sign: int) -> None:
        for resource, asked in enumerate(self.requests.get(pod, (0, 0))):
            room = self.free.get(node, [None, None])[resource]
            if room is not None:
                self.free[node][resource] = room + sign * asked

    def within_budgets(self, down: set[str]) -> bool:
        """These pods down at once overdraw no disruption budget."""
        used = Counter(i for pod in down for i in self.budgets.get(pod, ()))
        return all(n <= self.allowed[i] for i, n in used.items())


def order_moves(moves: list[Move], world: World | None = None) -> list[Step]:
    """The steps of `moves` as they are (see schedule)."""
    return schedule(moves, world)[1]


def schedule(
    moves: list[Move], world: World | None = None, targets: Sequence[TargetPlacement] = ()
) -> tuple[list[Move], list[Step]]:
    """Steps in which a pod lands only on free GPUs and where its cpu and memory fit, and no step takes more pods
    of a disruption budget down than it allows (a moved pod is down while it moves; an evicted one until it is
    re-created). When every remaining move waits on another, one is first sent instead to GPUs that are free now
    and stay free in the plan (same pod, same cost, no cycle: needs `world`); failing that, one pod is evicted
    first, one whose budgets allow it and the fewest other moves share. Returns the moves (so re-sent) and steps."""
    ledger = _Ledger.of(world, moves)
    held = {(m.from_node, g): m.pod for m in moves for g in m.from_gpus}
    moves = list(moves)
    waiting = list(moves)
    evicted: set[str] = set()
    steps: list[Step] = []

    def ready(m: Move) -> bool:
        gpus_free = all(held.get((m.to_node, g), m.pod) == m.pod for g in m.to_gpus)
        return gpus_free and ledger.fits(m, m.pod not in evicted) and ledger.within_budgets(evicted | {m.pod})

    def shared(m: Move) -> int:
        """Other waiting moves whose pods share a disruption budget with this one."""
        mine = set(ledger.budgets.get(m.pod, ()))
        return sum(bool(mine & set(ledger.budgets.get(o.pod, ()))) for o in waiting if o is not m)

    while waiting:
        candidates = [m for m in waiting if ready(m)]
        if not candidates and world is not None:
            resent = _resend(world, ledger, held, moves, waiting, evicted, targets)
            if resent is not None:
                old, new = resent
                moves[moves.index(old)] = waiting[waiting.index(old)] = new
                candidates = [new]
        if not candidates:
            blockers = [m for m in waiting if m.pod not in evicted and ledger.within_budgets(evicted | {m.pod})]
            if not blockers:
                raise Unorderable("every pod left to move waits on another, and none may go down first")
            blocker = min(blockers, key=shared)
            steps.append(Step(action="evict", pod=blocker.pod, node=blocker.from_node, gpus=blocker.from_gpus))
            _leave(held, blocker, evicted)
            ledger.shift(blocker.pod, blocker.from_node, +1)
            continue
        chosen = min(candidates, key=lambda m: m.pod not in evicted)  # bring a pod back up first
        recreate = chosen.pod in evicted
        if not recreate:
            _leave(held, chosen, evicted)
            ledger.shift(chosen.pod, chosen.from_node, +1)
        evicted.discard(chosen.pod)
        ledger.shift(chosen.pod, chosen.to_node, -1)
        steps.append(
            Step(action="create" if recreate else "move", pod=chosen.pod, node=chosen.to_node, gpus=chosen.to_gpus)
        )
        held.update({(chosen.to_node, g): chosen.pod for g in chosen.to_gpus})
        waiting.remove(chosen)
    return moves, steps


class Unorderable(RuntimeError):
    """The moves form a cycle that cannot be broken within the disruption budgets."""


def _resend(
    world: World,
    ledger: _Ledger,
    held: dict[tuple[str, int], str],
    moves: list[Move],
    waiting: list[Move],
    evicted: set[str],
    targets: Sequence[TargetPlacement],
) -> tuple[Move, Move] | None:
    """A waiting move sent instead to GPUs free now that no pod or target of the plan takes at its end, where its
    class may land (its NVLink island kept, its cpu and memory fitting): it then waits for nobody."""
    taken = {(m.to_node, g) for m in moves for g in m.to_gpus} | {(t.node, g) for t in targets for g in t.gpus}
    moving = {m.pod for m in moves}  # where they are now is `held`; every other holder stays put
    for move in waiting:
        if move.pod in evicted or not ledger.within_budgets(evicted | {move.pod}):
            continue
        kind = world.mover_classes[world.mover_class[move.pod]]
        for node in sorted(world.islands):
            if world.mover_class[move.pod] not in world.landing[node]:
                continue
            state = world.nodes[node]
            fixed = {g for g, gpu in enumerate(state.gpus) if any(h not in moving for h, _ in gpu.holders)}
            free = [
                [g for g in island if g not in fixed and (node, g) not in held and (node, g) not in taken]
                for island in world.islands[node]
            ]
            pools = free if kind.nvlink else [[g for island in free for g in island]]
            pool = next((p for p in pools if len(p) >= move.gpus), None)
            if pool is None:
                continue
            new = move.model_copy(update={"to_node": node, "to_gpus": sorted(pool[: move.gpus])})
            if ledger.fits(new, True):
                return move, new
    return None


def _leave(held: dict[tuple[str, int], str], move: Move, evicted: set[str]) -> None:
    for g in move.from_gpus:
        held.pop((move.from_node, g), None)
    evicted.add(move.pod)


def commands_for(steps: list[Step]) -> list[str]:
    """What a user runs: evictions of named pods, each with where the pod must land (kubectl drain-free)."""
    lines = []
    for step in steps:
        if step.action == "move":
            lines.append(f"kubectl delete pod {kubectl_pod(step.pod)}   # re-create on {step.node}, GPUs {step.gpus}")
        elif step.action == "evict":
            lines.append(
                f"kubectl delete pod {kubectl_pod(step.pod)}   # keep it down until the step that re-creates it"
            )
        else:
            lines.append(f"# re-create {step.pod} on {step.node}, GPUs {step.gpus}")
    return lines
