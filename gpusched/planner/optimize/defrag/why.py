"""Why defrag finds no plan: the one constraint that stops it, found by lifting each in turn.

Room for the target pods is counted with every movable pod gone (an upper bound on what any moves can give);
then again as if one constraint were lifted: the disruption budgets that pin pods, the target's taints (and
cordons, node selectors, GPU model or memory), MIG partitions, time-slicing. The first that alone gives room is
the answer; if none does, capacity is; if room there is already, the pods that leave fit nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...scheduler.plugins.gpudevices import mismatch
from ...scheduler.views import node_filters
from ...state import NodeState
from ..disrupt import Budgets
from .world import World

__all__ = ["why_no_plan"]

LIFTS = ("budget", "taint", "MIG", "time-slicing")  # "taint" covers every node filter: the reason says which


def _static(world: World, node: NodeState) -> str | None:
    """What keeps the target off this node whatever moves: a taint (or cordon, selector), or the GPUs' model."""
    status = node_filters(world.shape.needs, node)
    if status is not None:
        return "; ".join(status.reasons) or status.plugin
    return mismatch(world.shape.needs, node) or None


def _room(world: World, budgets: Budgets, lifted: Iterable[str]) -> tuple[int, dict[str, set[str]]]:
    """Target pods that fit with every movable pod gone and these constraints lifted; and what each constraint
    kept out (budget names, node reasons, nodes) when it was not lifted."""
    lift = set(lifted)
    pinned = {pod.name for pod in world.cluster.running_pods() if budgets.pinned(pod)}
    blocked: dict[str, set[str]] = {name: set() for name in LIFTS}
    shape = world.shape
    total = 0
    for node in world.nodes.values():
        if node.spec.gpu is None:
            continue
        reason = _static(world, node)
        if reason:
            blocked["taint"].add(f"{reason}\0{node.name}")
            if "taint" not in lift:
                continue
        if node.time_sliced:
            blocked["time-slicing"].add(node.name)
            if "time-slicing" not in lift:
                continue
        islands: dict[int, int] = {}
        for gpu in node.gpus:
            if gpu.mig:
                blocked["MIG"].add(node.name)
                if "MIG" not in lift:
                    continue
            holders = {name for name, _ in gpu.holders} | {s.holder for s in gpu.mig if s.holder}
            if holders & pinned:
                blocked["budget"].update(
                    budgets.names[i] for pod in world.cluster.running_pods() if pod.name in holders & pinned
                    for i in budgets.selecting(pod) if budgets.allowed[i] == 0
                )  # fmt: skip
                if "budget" not in lift:
                    continue
            islands[gpu.island if shape.island else 0] = islands.get(gpu.island if shape.island else 0, 0) + 1
        total += sum(free // shape.gpus for free in islands.values())
    return total, blocked


def why_no_plan(world: World, budgets: Budgets, max_moves: int | None) -> str:
    """The constraint that stops every plan (each one that alone would make room), in one sentence."""
    shape = world.shape
    wanted = shape.pods if shape.pods is not None else 1
    room, blocked = _room(world, budgets, ())
    if room >= wanted:
        limit = f" within {max_moves} moves" if max_moves is not None else ""
        return f"the pods that would have to leave fit nowhere else{limit}"
    found = []
    for lift in LIFTS:
        more, _ = _room(world, budgets, (lift,))
        if more >= wanted and blocked[lift]:
            taints = all("taint" in r.partition("\0")[0] for r in blocked[lift])
            label = lift if lift != "taint" or taints else "node constraints"
            found.append(f"{label}: {_what(lift, blocked[lift])} (without it there would be room for {more})")
    if found:
        return "; ".join(found) + (" (lifting any one would make room)" if len(found) > 1 else "")
    everything, _ = _room(world, budgets, LIFTS)
    return (
        f"capacity: even with every pod moved and nothing pinned, tainted, MIG-partitioned or time-sliced there is "
        f"room for {everything} of the {wanted} target pods"
    )


def _listed(names: Iterable[str]) -> str:
    names = sorted(names)
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _what(lift: str, found: set[str]) -> str:
    if lift == "taint":  # the node's reason, then the nodes that give it
        by_reason: dict[str, list[str]] = {}
        for entry in found:
            reason, _, node = entry.partition("\0")
            by_reason.setdefault(reason, []).append(node)
        return "the target pods cannot go on " + "; ".join(
            f"{_listed(nodes)} ({reason})" for reason, nodes in sorted(by_reason.items())
        )
    shown = _listed(found)
    return {
        "budget": f"disruption budget(s) {shown} pin the pods in the way",
        "MIG": f"the GPUs are MIG-partitioned on {shown}",
        "time-slicing": f"the GPUs are time-sliced on {shown}",
    }[lift]
