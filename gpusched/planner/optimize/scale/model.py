"""The scale-up model: how many nodes of each offering, and how many pods of each group on them.

Pods are aggregated into groups (what the GPUs see); nodes into counts per offering. Per offering the pods' GPUs,
MIG instances, cpu, memory and pod slots add up within the nodes' (with cuts for pods larger than half a node and
for NVLink pods that need an island of their size), so the model is a relaxation of packing pods node by node:
its optimum is a lower bound, and the packing (extract.py) either meets it (proven optimal) or says how far off it
is. A new node's MIG-capable GPUs are partitioned one profile per GPU (`world.homogeneous`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from .world import Capacity, Group, Offering, homogeneous

__all__ = ["ScaleModel", "build"]


@dataclass
class ScaleModel:
    """The variables, in typed containers: `placed[g]` jobs of group g, `items[g, o]` of its packing items on
    offering o, `nodes[o]` launched, `partitioned[o, q]` GPUs of o cut into profile q."""

    model: cp_model.CpModel
    groups: list[Group]
    offerings: list[Offering]
    placed: list[cp_model.IntVar]
    nodes: list[cp_model.IntVar]
    upper: list[int]  # the bound of each nodes[o]
    items: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    partitioned: dict[tuple[int, str], cp_model.IntVar] = field(default_factory=dict)

    def items_of(self, group: int, offering: int) -> cp_model.IntVar | None:
        return self.items.get((group, offering))

    def levels(self, lowest: int) -> list[tuple[str, str, cp_model.LinearExprT]]:
        """The objective, in order: everything placed (GPUs weighted by priority), then cost, then node count."""
        placed = sum(v * g.weight(lowest) for v, g in zip(self.placed, self.groups, strict=True))
        cost = sum(n * o.cost for n, o in zip(self.nodes, self.offerings, strict=True))
        return [("placed", "maximize", placed), ("cost", "minimize", cost), ("nodes", "minimize", sum(self.nodes))]


def _units(group: Group) -> int:
    """GPUs (or replicas, or MIG instances) one packing item takes."""
    return group.gpus * (group.pods if group.confined else 1)


def _pods(group: Group) -> int:
    return group.pods if group.confined else 1


def build(
    groups: list[Group], offerings: list[Offering], compatible: dict[tuple[int, int], str | None], capacity: Capacity
) -> ScaleModel:
    """`compatible[g, o]`: group g fits one fresh node of offering o, on whole GPUs (None) or on MIG profile q."""
    model = cp_model.CpModel()
    placed = [model.new_int_var(0, len(g.jobs), f"placed[{i}]") for i, g in enumerate(groups)]
    upper = [_node_bound(o, oi, groups, compatible, capacity) for oi, o in enumerate(offerings)]
    nodes = [model.new_int_var(0, ub, f"nodes[{o.key}]") for o, ub in zip(offerings, upper, strict=True)]
    built = ScaleModel(model, groups, offerings, placed, nodes, upper)
    for (gi, oi), _profile in compatible.items():
        group = groups[gi]
        built.items[gi, oi] = model.new_int_var(0, len(group.jobs) * group.items_per_job, f"items[{gi},{oi}]")
    for gi, group in enumerate(groups):
        on = [v for (g, _), v in built.items.items() if g == gi]
        model.add(sum(on) == placed[gi] * group.items_per_job)
    for oi, offering in enumerate(offerings):
        _offering_capacity(built, oi, offering, compatible)
    _pool_limits(built, capacity)
    return built


def _node_bound(
    offering: Offering, oi: int, groups: list[Group], compatible: dict[tuple[int, int], str | None], capacity: Capacity
) -> int:
    """No plan launches more nodes of an offering than items could go there (an empty node is never needed)."""
    items = sum(len(groups[g].jobs) * groups[g].items_per_job for (g, o) in compatible if o == oi)
    limit = capacity.per_type.get(offering.kind.name)
    return items if limit is None else min(items, limit)


def _offering_capacity(
    built: ScaleModel, oi: int, offering: Offering, compatible: dict[tuple[int, int], str | None]
) -> None:
    model, n = built.model, built.nodes[oi]
    gpu = offering.gpu
    here = [(gi, profile, built.items[gi, oi]) for (gi, o), profile in compatible.items() if o == oi]
    if not here:
        model.add(n == 0)
        return
    whole = [(built.groups[gi], x) for gi, profile, x in here if profile is None]
    profiles = sorted({profile for _, profile, _ in here if profile is not None})
    cut = []
    for profile in profiles:
        m = model.new_int_var(0, gpu.count * built.upper[oi], f"partitioned[{oi},{profile}]")
        built.partitioned[oi, profile] = m
        cut.append(m)
        per_gpu = len(homogeneous(gpu, profile))
        model.add(sum(_units(built.groups[gi]) * x for gi, p, x in here if p == profile) <= m * per_gpu)
    if cut:
        model.add(sum(cut) <= n * gpu.count)
    model.add(sum(_units(g) * x for g, x in whole) <= (n * gpu.count - sum(cut)) * gpu.replicas)
    _island_cuts(built, n, offering, whole)
    kind = offering.kind
    groups_here = [(built.groups[gi], x) for gi, _, x in here]
    sizes = (
        (gpu.count * gpu.replicas, lambda g: _units(g) if g.needs.mig_profile is None else 0),
        (kind.cpu_milli, lambda g: g.needs.cpu_milli * _pods(g)),
        (kind.memory_bytes, lambda g: g.needs.memory_bytes * _pods(g)),
    )
    for room, size in sizes:  # items of more than 1/(k+1) of a node's room: at most k of them per node
        for most in (1, 2, 3):
            large = [x for g, x in groups_here if size(g) * (most + 1) > room]
            if large:
                model.add(sum(large) <= most * n)
    cpu = [(g.needs.cpu_milli * _pods(g), x) for g, x in groups_here if g.needs.cpu_milli]
    if cpu:
        model.add(sum(c * x for c, x in cpu) <= n * kind.cpu_milli)
    memory = [(g.needs.memory_bytes * _pods(g), x) for g, x in groups_here if g.needs.memory_bytes]
    if memory:
        model.add(sum(c * x for c, x in memory) <= n * kind.memory_bytes)
    model.add(sum(_pods(g) * x for g, x in groups_here) <= n * kind.pods)


def _island_cuts(
    built: ScaleModel, n: cp_model.IntVar, offering: Offering, whole: list[tuple[Group, cp_model.IntVar]]
) -> None:
    """A pod needing NVLink takes its GPUs from one island: pods of at least s GPUs fit only islands of at least s."""
    gpu = offering.gpu
    sizes: dict[int, int] = {}
    for island in gpu.island_of().values():
        sizes[island] = sizes.get(island, 0) + 1
    islands = sorted(sizes.values())
    if len(islands) < 2:
        return
    linked = [(g, x) for g, x in whole if g.needs.nvlink and g.gpus > 1]
    for size in sorted({g.gpus for g, _ in linked}):
        room = sum(i for i in islands if i >= size)
        terms = [g.gpus * _pods(g) * x for g, x in linked if g.gpus >= size]
        built.model.add(sum(terms) <= n * room * gpu.replicas)


def _pool_limits(built: ScaleModel, capacity: Capacity) -> None:
    model = built.model
    pairs = list(zip(built.nodes, built.offerings, strict=True))
    if capacity.cpu_milli is not None:
        model.add(sum(n * o.kind.cpu_milli for n, o in pairs) <= capacity.cpu_milli)
    if capacity.gpus is not None:
        model.add(sum(n * o.gpu.count for n, o in pairs) <= capacity.gpus)
    if capacity.cost is not None:
        model.add(sum(n * o.cost for n, o in pairs) <= capacity.cost)
    for name, limit in capacity.per_type.items():
        model.add(sum(n for n, o in pairs if o.kind.name == name) <= limit)
