"""plan_mig's model: identical GPUs form a class, each with the layouts worth considering, and CP-SAT chooses how
many GPUs of each class take each layout.

Identical GPUs: same family, same busy and free instances, same allowed profiles; on a single-strategy node, the
same node. For each class the layouts it may take are enumerated once and reduced to the ones that matter: layouts
that give the same demanded instances are interchangeable, so only the one with the fewest unused slices stays,
and a layout that another beats on every count is dropped. Its size depends on the classes of GPU, not their
number.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from ortools.sat.python import cp_model

from ....models.mig import COMPUTE_SLICES
from ..solver import SolverConfig, cp_solver
from .layouts import Instance, Layout, MigGpu, compute_of, free_layouts, is_reconfigured, mixed_single
from .report import TieBreak

__all__ = ["MIXED", "GpuClass", "MigModel", "MigOption", "build", "canonical_optimum", "gpu_classes", "solution_values"]

MIXED = "*"  # the profile of a layout with more than one profile


@dataclass(frozen=True)
class MigOption:
    """One layout a class of GPUs may take, reduced to what the objective sees."""

    layout: Layout
    supply: tuple[int, ...]  # free instances of each demanded profile, capped at the demand
    unused: int  # compute slices in no instance (counted when reconfigured)
    reconfigured: bool
    profile: str | None  # the one profile of all its instances (None: no instance, MIXED: several)


@dataclass
class GpuClass:
    members: list[MigGpu]
    options: list[MigOption]  # options[0] keeps the GPUs as they are

    @property
    def single_node(self) -> str | None:
        return self.members[0].node if self.members[0].single else None


@dataclass
class MigModel:
    model: cp_model.CpModel
    counts: list[list[cp_model.IntVar]]  # per class, per option: GPUs taking it (option 0 keeps the layout)
    levels: list  # the objective levels, for solve_lexicographic


def _class_key(gpu: MigGpu) -> tuple:
    return (gpu.family, gpu.kept, gpu.free, gpu.allowed, gpu.node if gpu.single else None)


def gpu_classes(gpus: list[MigGpu], demand: dict[str, int]) -> list[GpuClass]:
    """Group interchangeable GPUs and give each group the layouts worth considering."""
    grouped: dict[tuple, list[MigGpu]] = {}
    for gpu in gpus:
        grouped.setdefault(_class_key(gpu), []).append(gpu)
    return [GpuClass(members, _options(members[0], demand)) for members in grouped.values()]


def _option(gpu: MigGpu, layout: Layout, demand: dict[str, int]) -> MigOption:
    instances = gpu.kept + (layout or ())
    have = Counter(name for name, _ in layout or ())
    names = {name for name, _ in instances}
    used = sum(gpu.profiles[name].compute for name, _ in instances)
    return MigOption(
        layout=layout,
        supply=tuple(min(have[name], count) for name, count in demand.items()),
        unused=COMPUTE_SLICES - used if layout is not None else 0,
        reconfigured=is_reconfigured(gpu, layout),
        profile=(MIXED if len(names) > 1 else next(iter(names))) if names else None,
    )


def _options(gpu: MigGpu, demand: dict[str, int]) -> list[MigOption]:
    """Keep, then for each distinct demanded supply the layout with the fewest unused slices, undominated.

    Off single-strategy nodes only maximal layouts are looked at: one with room for another instance is beaten
    by itself plus that instance. (On a single-strategy node the extra instance might be of the wrong profile.)
    """
    keep = _option(gpu, gpu.free, demand)
    position = {name: p for p, name in enumerate(demand)}
    kept_compute = sum(gpu.profiles[name].compute for name, _ in gpu.kept)
    retained = set(gpu.free or ())
    best: dict[tuple, tuple[tuple, tuple[Instance, ...]]] = {}
    for order, layout in enumerate(free_layouts(gpu, maximal=not gpu.single)):
        if (gpu.whole and not layout) or not is_reconfigured(gpu, layout):
            continue
        supply = [0] * len(demand)
        for name, _ in layout:
            if name in position:
                supply[position[name]] += 1
        names = {name for name, _ in gpu.kept + layout}
        if gpu.single and len(names) > 1:
            continue
        key = (
            tuple(min(n, c) for n, c in zip(supply, demand.values(), strict=True)),
            next(iter(names)) if gpu.single and names else None,
        )
        unused = COMPUTE_SLICES - kept_compute - sum(gpu.profiles[name].compute for name, _ in layout)
        rank = (unused, -len(retained & set(layout)), order)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, layout)
    found = [_option(gpu, layout, demand) for _, layout in best.values()]
    return [keep] + [o for o in found if not _dominated(o, found, keep, gpu.single)]


def _dominated(option: MigOption, others: list[MigOption], keep: MigOption, single: bool) -> bool:
    """Another layout (or keeping) serves at least as much with no more unused slices: this one never helps."""
    if not single and all(a >= b for a, b in zip(keep.supply, option.supply, strict=True)):
        return True
    return any(
        other is not option
        and (not single or other.profile == option.profile)
        and all(a >= b for a, b in zip(other.supply, option.supply, strict=True))
        and other.unused <= option.unused
        and (other.supply, other.unused) != (option.supply, option.unused)
        for other in others
    )


def build(classes: list[GpuClass], gpus: list[MigGpu], demand: dict[str, int]) -> MigModel:
    """Counts of GPUs per (class, layout), demanded supply, single-strategy nodes and the three objective levels."""
    model = cp_model.CpModel()
    counts = []
    for c, gpu_class in enumerate(classes):
        size = len(gpu_class.members)
        row = [model.new_int_var(0, size, f"x{c}_{o}") for o in range(len(gpu_class.options))]
        model.add(sum(row) == size)
        model.add_hint(row[0], size)
        counts.append(row)
    changed = _single_strategy(model, classes, counts)
    mixed_now = mixed_single(gpus, {})
    advertised = []  # per class, per option: the GPUs whose instances the device plugin advertises
    for cl, row in zip(classes, counts, strict=True):
        node = cl.single_node
        if node not in mixed_now:
            advertised.append(row)
            continue
        keep = model.new_int_var(0, len(cl.members), f"kept_{node}")  # kept as is: counts once the node changed
        model.add(keep <= row[0])
        model.add(keep <= len(cl.members) * changed[node])
        advertised.append([keep, *row[1:]])
    served = []
    for p, (name, count) in enumerate(demand.items()):
        supply = sum(
            o.supply[p] * x
            for cl, row in zip(classes, advertised, strict=True)
            for o, x in zip(cl.options, row, strict=True)
            if o.supply[p]
        )
        variable = model.new_int_var(0, count, f"served_{name}")
        model.add(variable <= supply)
        served.append(compute_of(gpus, name) * variable)
    pairs = [(o, x) for cl, row in zip(classes, counts, strict=True) for o, x in zip(cl.options, row, strict=True)]
    levels = [
        ("demand served (compute slices)", "maximize", sum(served)),
        ("GPUs reconfigured", "minimize", sum(x for o, x in pairs if o.reconfigured)),
        ("unused slices", "minimize", sum(o.unused * x for o, x in pairs if o.reconfigured and o.unused)),
    ]
    return MigModel(model, counts, levels)


def _single_strategy(
    model: cp_model.CpModel, classes: list[GpuClass], counts: list[list[cp_model.IntVar]]
) -> dict[str, cp_model.IntVar]:
    """A single-strategy node the plan changes ends with one profile on all its MIG GPUs: one profile is chosen,
    and every layout there, kept or new, uses only it (busy instances are kept, so they fix it). A node left
    entirely as it is may keep a mix the input gave it, so keeping everything stays a solution, but the device
    plugin then advertises none of its instances (build counts them only once the node changed). Returns each
    node's `changed`."""
    chosen: dict[str, dict[str, cp_model.IntVar]] = {}
    changed: dict[str, cp_model.IntVar] = {}
    for gpu_class, row in zip(classes, counts, strict=True):
        node = gpu_class.single_node
        if node is None:
            continue
        if node not in changed:
            changed[node] = model.new_bool_var(f"changed_{node}")
        size = len(gpu_class.members)
        for k, (option, variable) in enumerate(zip(gpu_class.options, row, strict=True)):
            kept = k == 0  # _options puts keeping first
            if not kept:
                model.add(variable <= size * changed[node])
            if option.profile is None:
                continue
            if option.profile == MIXED:
                model.add(variable <= size * (1 - changed[node]))
                continue
            picks = chosen.setdefault(node, {})
            if option.profile not in picks:
                picks[option.profile] = model.new_bool_var(f"single_{node}_{option.profile}")
            model.add(
                variable <= size * (picks[option.profile] + (1 - changed[node]) if kept else picks[option.profile])
            )
    for picks in chosen.values():
        model.add(sum(picks.values()) <= 1)
    return changed


def _churn(gpu: MigGpu, option: MigOption) -> int:
    """Instances created or destroyed by taking this layout."""
    return len(set(gpu.free or ()) ^ set(option.layout or ()))


def canonical_optimum(
    model: cp_model.CpModel,
    classes: list[GpuClass],
    counts: list[list[cp_model.IntVar]],
    config: SolverConfig,
    spent: float,
    values: list[int],
) -> tuple[TieBreak | None, list[int]]:
    """Among the proven optima, the one with the fewest instances created or destroyed, then a fixed order.

    Optimal plans are seldom unique and parallel workers find different ones; this solve has the levels fixed
    at their optima, no hint and one worker, so the same input gives the same plan.
    """
    remaining = config.time_limit - spent
    if remaining <= 0:
        return None, values
    model.clear_hints()
    churns = [
        (_churn(gpu_class.members[0], option), variable)
        for gpu_class, row in zip(classes, counts, strict=True)
        for option, variable in zip(gpu_class.options[1:], row[1:], strict=True)
    ]
    order = len(churns) + 1  # the rank only breaks ties of churn, whatever the number of options
    model.minimize(sum((churn * order + rank) * variable for rank, (churn, variable) in enumerate(churns, 1)))
    if model.validate():  # coefficients past CP-SAT's range: keep the proven optimum as it came, untie-broken
        return None, values
    solver = cp_solver()
    solver.parameters.max_time_in_seconds = remaining
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = config.seed
    began = time.perf_counter()
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, values
    found = solution_values(model, solver)
    return TieBreak(status=solver.status_name(status), seconds=time.perf_counter() - began), found


def solution_values(model: cp_model.CpModel, solver: cp_model.CpSolver) -> list[int]:
    """Every variable's value in the solver's solution, by proto index."""
    return [solver.value(model.get_int_var_from_proto_index(i)) for i in range(len(model.proto.variables))]
