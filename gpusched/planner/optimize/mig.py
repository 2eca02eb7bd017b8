"""MIG repartitioning with CP-SAT: the fewest GPUs reconfigured that serve a demand for MIG instances.

build → solve → extract → validate. Identical GPUs (same family, same busy and free instances, same allowed
profiles; on a single-strategy node, the same node) form a class. For each class the layouts it may take are
enumerated once and reduced to the ones that matter: layouts that give the same demanded instances are
interchangeable, so only the one with the fewest unused slices stays, and a layout that another beats on every
count is dropped. The integer program then chooses how many GPUs of each class take each layout; extraction
hands the layouts to the class's GPUs in cluster order. Its size depends on the kinds of GPU, not their number.

Objective, in order: serve as much of the demand as possible (compute slices of demanded instances), then
reconfigure the fewest GPUs, then leave the fewest unused slices on them (terms: planner.mig_repartition).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass

from ortools.sat.python import cp_model
from pydantic import BaseModel

from ...models.cluster import Cluster, GpuBlock, MigInstance, Node
from ...models.mig import COMPUTE_SLICES, profiles_for
from ..mig_heuristics import all_balanced, first_fit
from ..mig_repartition import (
    Instance,
    Layout,
    MigGpu,
    Outcome,
    compute_of,
    free_layouts,
    inventory,
    is_reconfigured,
    outcome,
)
from ..mig_validate import NewInstance, mig_plan_violations
from ..state import ClusterState, advertised
from .solver import Infeasible, SolverConfig, SolveReport, solve_lexicographic

__all__ = [
    "GpuChange",
    "InstanceOut",
    "MigPlan",
    "NodeResources",
    "PlanRow",
    "TieBreak",
    "layout_violations",
    "mig_parted",
    "plan_mig",
]

MIXED = "*"  # the profile of a layout with more than one profile


@dataclass(frozen=True)
class Option:
    """One layout a class of GPUs may take, reduced to what the objective sees."""

    layout: Layout
    supply: tuple[int, ...]  # free instances of each demanded profile, capped at the demand
    unused: int  # compute slices in no instance (counted when reconfigured)
    reconfigured: bool
    profile: str | None  # the one profile of all its instances (None: no instance, MIXED: several)


@dataclass
class GpuClass:
    members: list[MigGpu]
    options: list[Option]  # options[0] keeps the GPUs as they are

    @property
    def single_node(self) -> str | None:
        return self.members[0].node if self.members[0].single else None


class InstanceOut(BaseModel):
    profile: str
    start: int
    holder: str | None = None


class GpuChange(BaseModel):
    """One reconfigured GPU: its instances before and after (None: MIG disabled, a whole GPU)."""

    node: str
    gpu: int
    before: list[InstanceOut] | None
    after: list[InstanceOut]
    destroyed: list[InstanceOut]
    created: list[InstanceOut]
    holders: list[str]  # pods on its busy instances: kept in the plan, but drain them before mig-manager applies it


class NodeResources(BaseModel):
    """What the device plugin advertises on a relabelled node, before and after, under each MIG strategy."""

    node: str
    strategy: str  # the strategy the node's device plugin runs
    before: dict[str, int]
    mixed: dict[str, int]
    single: dict[str, int] | None  # None: the single strategy cannot describe the node (see single_problem)
    single_problem: str | None


class PlanRow(BaseModel):
    plan: str  # optimum | first-fit | all-balanced
    outcome: Outcome


class TieBreak(BaseModel):
    status: str  # OPTIMAL | FEASIBLE: a plan among the optima was picked (the levels above stay optimal either way)
    seconds: float


class MigPlan(BaseModel):
    demand: dict[str, int]
    outcome: Outcome
    message: str | None  # why the demand is not (or not provably) met
    solve: SolveReport
    tie_break: TieBreak | None  # the solve that picks one plan among the optima; None: not run (nothing proven)
    gpus: int  # GPUs that could change
    classes: int
    options: int  # layouts over all classes: the integer variables
    changes: list[GpuChange]
    mig_parted: dict  # the NVIDIA mig-parted file: version v1, mig-configs
    labels: dict[str, str]  # node -> nvidia.com/mig.config value
    resources: list[NodeResources]
    comparison: list[PlanRow]


def plan_mig(cluster: Cluster, demand: dict[str, int], config: SolverConfig) -> MigPlan:
    """The optimal repartitioning for the demand (checked by the validator), beside first-fit and all-balanced."""
    gpus = inventory(cluster)
    classes = _classes(gpus, demand)
    model, counts, levels = _build(classes, gpus, demand)
    try:
        solver, report = solve_lexicographic(model, levels, config)
    except Infeasible as error:  # every class may keep its layout, so this is a bug, not an answer
        raise RuntimeError(f"the MIG model has no solution: {error}") from None
    if report.levels[0].objective is None:
        raise Infeasible(f"no plan found within the time limit of {config.time_limit:g} s (nothing is proven)")
    values = _values(model, solver)
    tie_break = None
    if report.optimal:
        tie_break, values = _canonical(model, classes, counts, config, report.seconds, values)
    layouts = _extract(classes, [[values[v.index] for v in row] for row in counts])
    result = outcome(gpus, layouts, demand)
    problems = layout_violations(cluster, gpus, layouts, demand)
    problems += _disagreements(gpus, result, report)
    if problems:
        raise RuntimeError("the MIG plan failed validation: " + "; ".join(problems))
    return _report(cluster, gpus, classes, demand, layouts, result, report, tie_break)


# build


def _class_key(gpu: MigGpu) -> tuple:
    return (gpu.family, gpu.kept, gpu.free, gpu.allowed, gpu.node if gpu.single else None)


def _classes(gpus: list[MigGpu], demand: dict[str, int]) -> list[GpuClass]:
    """Group interchangeable GPUs and give each group the layouts worth considering."""
    grouped: dict[tuple, list[MigGpu]] = {}
    for gpu in gpus:
        grouped.setdefault(_class_key(gpu), []).append(gpu)
    return [GpuClass(members, _options(members[0], demand)) for members in grouped.values()]


def _option(gpu: MigGpu, layout: Layout, demand: dict[str, int]) -> Option:
    instances = gpu.kept + (layout or ())
    have = Counter(name for name, _ in layout or ())
    names = {name for name, _ in instances}
    used = sum(gpu.profiles[name].compute for name, _ in instances)
    return Option(
        layout=layout,
        supply=tuple(min(have[name], count) for name, count in demand.items()),
        unused=COMPUTE_SLICES - used if layout is not None else 0,
        reconfigured=is_reconfigured(gpu, layout),
        profile=(MIXED if len(names) > 1 else next(iter(names))) if names else None,
    )


def _options(gpu: MigGpu, demand: dict[str, int]) -> list[Option]:
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
        key = (tuple(min(n, c) for n, c in zip(supply, demand.values())), next(iter(names)) if gpu.single and names else None)
        unused = COMPUTE_SLICES - kept_compute - sum(gpu.profiles[name].compute for name, _ in layout)
        rank = (unused, -len(retained & set(layout)), order)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, layout)
    found = [_option(gpu, layout, demand) for _, layout in best.values()]
    return [keep] + [o for o in found if not _dominated(o, found, keep, gpu.single)]


def _dominated(option: Option, others: list[Option], keep: Option, single: bool) -> bool:
    """Another layout (or keeping) serves at least as much with no more unused slices: this one never helps."""
    if not single and all(a >= b for a, b in zip(keep.supply, option.supply, strict=True)):
        return True
    return any(
        other is not option and (not single or other.profile == option.profile)
        and all(a >= b for a, b in zip(other.supply, option.supply, strict=True)) and other.unused <= option.unused
        and (other.supply, other.unused) != (option.supply, option.unused)
        for other in others
    )


def _build(
    classes: list[GpuClass], gpus: list[MigGpu], demand: dict[str, int]
) -> tuple[cp_model.CpModel, list[list[cp_model.IntVar]], list]:
    """Counts of GPUs per (class, layout), demanded supply, single-strategy nodes and the three objective levels."""
    model = cp_model.CpModel()
    counts = []
    for c, gpu_class in enumerate(classes):
        size = len(gpu_class.members)
        row = [model.new_int_var(0, size, f"x{c}_{o}") for o in range(len(gpu_class.options))]
        model.add(sum(row) == size)
        model.add_hint(row[0], size)
        counts.append(row)
    served = []
    for p, (name, count) in enumerate(demand.items()):
        supply = sum(o.supply[p] * x for cl, row in zip(classes, counts) for o, x in zip(cl.options, row) if o.supply[p])
        variable = model.new_int_var(0, count, f"served_{name}")
        model.add(variable <= supply)
        served.append(compute_of(gpus, name) * variable)
    _single_strategy(model, classes, counts)
    pairs = [(o, x) for cl, row in zip(classes, counts) for o, x in zip(cl.options, row)]
    levels = [
        ("demand served (compute slices)", "maximize", sum(served)),
        ("GPUs reconfigured", "minimize", sum(x for o, x in pairs if o.reconfigured)),
        ("unused slices", "minimize", sum(o.unused * x for o, x in pairs if o.reconfigured and o.unused)),
    ]
    return model, counts, levels


def _single_strategy(model: cp_model.CpModel, classes: list[GpuClass], counts: list[list[cp_model.IntVar]]) -> None:
    """On a single-strategy node one profile is chosen, and every layout there uses only it."""
    chosen: dict[str, dict[str, cp_model.IntVar]] = {}
    for gpu_class, row in zip(classes, counts):
        node = gpu_class.single_node
        if node is None:
            continue
        for option, variable in zip(gpu_class.options, row):
            if option.profile is None or option.profile == MIXED:
                continue
            picks = chosen.setdefault(node, {})
            if option.profile not in picks:
                picks[option.profile] = model.new_bool_var(f"single_{node}_{option.profile}")
            model.add(variable <= len(gpu_class.members) * picks[option.profile])
    for picks in chosen.values():
        model.add(sum(picks.values()) <= 1)


def _churn(gpu: MigGpu, option: Option) -> int:
    """Instances created or destroyed by taking this layout."""
    return len(set(gpu.free or ()) ^ set(option.layout or ()))


def _canonical(
    model: cp_model.CpModel, classes: list[GpuClass], counts: list[list[cp_model.IntVar]], config: SolverConfig,
    spent: float, values: list[int],
) -> tuple[TieBreak | None, list[int]]:
    """Among the proven optima, the one with the fewest instances created or destroyed, then a fixed order.

    Optimal plans are seldom unique and parallel workers find different ones; this solve has the levels fixed
    at their optima, no hint and one worker, so the same input gives the same plan.
    """
    remaining = config.time_limit - spent
    if remaining <= 0:
        return None, values
    model.clear_hints()
    rank, objective = 0, []
    for gpu_class, row in zip(classes, counts):
        for option, variable in zip(gpu_class.options[1:], row[1:]):
            rank += 1
            objective.append((_churn(gpu_class.members[0], option) * 100_000 + rank) * variable)
    model.minimize(sum(objective))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = remaining
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = config.seed
    began = time.perf_counter()
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, values
    found = _values(model, solver)
    return TieBreak(status=solver.status_name(status), seconds=time.perf_counter() - began), found


# extract


def _values(model: cp_model.CpModel, solver: cp_model.CpSolver) -> list[int]:
    """Every variable's value in the solver's solution, by proto index."""
    return [solver.value(model.get_int_var_from_proto_index(i)) for i in range(len(model.proto.variables))]


def _extract(classes: list[GpuClass], taken: list[list[int]]) -> dict[str, Layout]:
    """Hand each class's layouts to its GPUs in cluster order, the changes first; returns the changed GPUs."""
    layouts: dict[str, Layout] = {}
    for gpu_class, row in zip(classes, taken):
        members = iter(gpu_class.members)
        for option, count in zip(gpu_class.options[1:], row[1:]):
            for _ in range(count):
                layouts[next(members).name] = option.layout
    return layouts


# report


def _instances(items: list[NewInstance] | None) -> list[InstanceOut] | None:
    return None if items is None else [InstanceOut(profile=p, start=s, holder=h) for p, s, h in items]


def _after(gpu: MigGpu, layout: Layout) -> list[NewInstance] | None:
    if layout is None:
        return None
    return sorted(list(gpu.busy) + [(p, s, None) for p, s in layout], key=lambda i: i[1])


def _change(gpu: MigGpu, layout: Layout) -> GpuChange:
    before = _after(gpu, gpu.free)
    after = _after(gpu, layout) or []
    old, new = set(before or []), set(after)
    return GpuChange(
        node=gpu.node,
        gpu=gpu.index,
        before=_instances(before),
        after=_instances(after) or [],
        destroyed=_instances(sorted(old - new, key=lambda i: i[1])) or [],
        created=_instances(sorted(new - old, key=lambda i: i[1])) or [],
        holders=[holder for _, _, holder in gpu.busy],
    )


def _node_layouts(block: GpuBlock, node: str, gpus: dict[str, MigGpu], layouts: dict[str, Layout]) -> list:
    """Every GPU of the node after the plan: its instances, or None for MIG disabled."""
    result = []
    for index in range(block.count):
        gpu = gpus.get(f"{node}/{index}")
        if gpu is None:
            instances = [(m.profile, m.start, m.holder) for m in block.mig if m.gpu == index]
            result.append(sorted(instances, key=lambda i: i[1]) or None)
        else:
            result.append(_after(gpu, layouts.get(gpu.name, gpu.free)))
    return result


def mig_parted(cluster: Cluster, gpus: list[MigGpu], layouts: dict[str, Layout]) -> tuple[dict, dict[str, str]]:
    """One mig-parted config per distinct node layout (named by its content), and the label of each changed node."""
    by_name = {gpu.name: gpu for gpu in gpus}
    changed = {by_name[name].node for name in layouts}
    configs: dict[str, list[dict]] = {}
    labels: dict[str, str] = {}
    for node in cluster.nodes:
        if node.name not in changed or node.gpu is None:
            continue
        order = list(profiles_for(node.gpu.model, node.gpu.memory_gib))
        entries: dict[str, dict] = {}
        for index, instances in enumerate(_node_layouts(node.gpu, node.name, by_name, layouts)):
            have = Counter(p for p, _, _ in instances or [])
            devices = {p: have[p] for p in order if have[p]}
            entry = {"mig-enabled": True, "mig-devices": devices} if instances else {"mig-enabled": False}
            key = json.dumps(entry, sort_keys=True)
            entries.setdefault(key, {"devices": [], **entry})["devices"].append(index)
        config = list(entries.values())
        name = "gpusched-" + hashlib.sha1(json.dumps(config, sort_keys=True).encode()).hexdigest()[:8]
        configs[name] = config
        labels[node.name] = name
    return {"version": "v1", "mig-configs": configs}, labels


def _resources(cluster: Cluster, gpus: list[MigGpu], layouts: dict[str, Layout], labels: dict[str, str]) -> list[NodeResources]:
    """The device plugin's counts on every relabelled node: before, and after under mixed and single strategy."""
    before = ClusterState.from_cluster(cluster)
    by_name = {gpu.name: gpu for gpu in gpus}
    found = []
    for node in cluster.nodes:
        if node.name not in labels or node.gpu is None:
            continue
        layout = _node_layouts(node.gpu, node.name, by_name, layouts)
        mig = [MigInstance(gpu=i, profile=p, start=s, holder=h) for i, items in enumerate(layout) for p, s, h in items or []]
        mixed, single = (_advertise(node, mig, strategy) for strategy in ("mixed", "single"))
        problem = _single_problem(layout)
        found.append(NodeResources(
            node=node.name, strategy=node.gpu.mig_strategy, before=advertised(before.node(node.name)),
            mixed=mixed, single=None if problem else single, single_problem=problem,
        ))
    return found


def _advertise(node: Node, mig: list[MigInstance], strategy: str) -> dict[str, int]:
    assert node.gpu is not None
    block = node.gpu.model_copy(update={"mig": mig, "mig_strategy": strategy})
    state = ClusterState.from_cluster(Cluster(nodes=[node.model_copy(update={"gpu": block})]))
    return advertised(state.nodes[0])


def _single_problem(layout: list) -> str | None:
    names = sorted({p for items in layout for p, _, _ in items or []})
    if len(names) > 1:
        return f"profiles {', '.join(names)} on one node"
    if any(items is None for items in layout) and names:
        return "some GPUs have MIG disabled"
    return None


def _message(plan_outcome: Outcome, demand: dict[str, int], alone: dict[str, int], report: SolveReport) -> str | None:
    """Why the demand is not met: the most served together, and per profile the most it could get alone."""
    if plan_outcome.met:
        return None
    served = ", ".join(f"{name} {plan_outcome.served[name]} of {count}" for name, count in demand.items())
    first = report.levels[0]
    if first.status == "OPTIMAL":
        text = f"demand cannot be met: the most served together (counted in compute slices) is {served}"
    else:
        text = (f"demand not met within the time limit, and not proven impossible (the bound allows "
                f"{first.best_bound:g} compute slices): the best plan found serves {served}")
    short = [f"{alone[name]} {name}" for name, count in demand.items() if alone[name] < count]
    return text + ("; even alone, no plan gives more than " + ", ".join(short) if short else "")


def _alone(classes: list[GpuClass], demand: dict[str, int]) -> dict[str, int]:
    """The most of each demanded profile the GPUs could give if nothing else were asked for (exact: off
    single-strategy nodes GPUs are independent; on one, every GPU must be able to take that profile alone)."""
    most = {}
    for p, (name, count) in enumerate(demand.items()):
        blocked = {cl.single_node for cl in classes if cl.single_node
                   and not any(o.profile in (name, None) for o in cl.options)}
        total = sum(
            len(cl.members) * max(o.supply[p] for o in cl.options if not cl.single_node or o.profile in (name, None))
            for cl in classes if cl.single_node not in blocked
        )
        most[name] = min(count, total)
    return most


def _report(
    cluster: Cluster, gpus: list[MigGpu], classes: list[GpuClass], demand: dict[str, int],
    layouts: dict[str, Layout], result: Outcome, report: SolveReport, tie_break: TieBreak | None,
) -> MigPlan:
    config, labels = mig_parted(cluster, gpus, layouts)
    by_name = {gpu.name: gpu for gpu in gpus}
    rows = [PlanRow(plan="optimum", outcome=result)]
    for name, heuristic in (("first-fit", first_fit(gpus, demand)), ("all-balanced", all_balanced(gpus))):
        problems = layout_violations(cluster, gpus, heuristic, demand)
        if problems:
            raise RuntimeError(f"the {name} plan failed validation: " + "; ".join(problems))
        rows.append(PlanRow(plan=name, outcome=outcome(gpus, heuristic, demand)))
    return MigPlan(
        demand=demand,
        outcome=result,
        message=_message(result, demand, _alone(classes, demand), report),
        solve=report,
        tie_break=tie_break,
        gpus=len(gpus),
        classes=len(classes),
        options=sum(len(cl.options) for cl in classes),
        changes=[_change(by_name[name], layout) for name, layout in layouts.items()],
        mig_parted=config,
        labels=labels,
        resources=_resources(cluster, gpus, layouts, labels),
        comparison=rows,
    )


def _disagreements(gpus: list[MigGpu], result: Outcome, report: SolveReport) -> list[str]:
    """The plan, recounted, scores what the solver said: a proven level exactly, an unproven one or better
    (a later level's solution may improve on it: it is kept no worse, not fixed)."""
    served = sum(compute_of(gpus, name) * count for name, count in result.served.items())
    recount = (served, result.reconfigured, result.unused_slices)
    found = []
    for level, value in zip(report.levels, recount):
        if level.objective is None:
            continue
        said = round(level.objective)
        worse = value < said if level.sense == "maximize" else value > said
        if worse or (level.status == "OPTIMAL" and value != said):
            found.append(f"level {level.name}: the solver says {said}, the plan gives {value}")
    return found


def layout_violations(cluster: Cluster, gpus: list[MigGpu], layouts: dict[str, Layout], demand: dict[str, int]) -> list[str]:
    """Run any plan's layouts (optimal or heuristic), with their config, labels and score, past the validator."""
    by_name = {gpu.name: gpu for gpu in gpus}
    after = {(by_name[name].node, by_name[name].index): _after(by_name[name], layout) for name, layout in layouts.items()}
    result = outcome(gpus, layouts, demand)
    config, labels = mig_parted(cluster, gpus, layouts)
    claimed = (result.served, result.reconfigured, result.unused_slices)
    return mig_plan_violations(cluster, demand, after, claimed, config["mig-configs"], labels)
