"""MIG repartitioning with CP-SAT: the fewest GPUs reconfigured that serve a demand for MIG instances.

build (model.py) → solve → extract (extract.py) → validate (validate.py). The words (layout, reconfigured, unused
slices) and the GPUs a plan may change are in layouts.py; the mig-parted config in migparted.py; first-fit and
all-balanced, the plans an operator would try without a solver, in baselines.py.

Objective, in order: serve as much of the demand as possible (compute slices of demanded instances), then
reconfigure the fewest GPUs, then leave the fewest unused slices on them.
"""

from __future__ import annotations

from ....models.cluster import Cluster
from ...deadline import Deadline
from ...validate import require_valid
from ..solver import Infeasible, LevelReport, SolverConfig, SolveReport, solve_lexicographic
from .baselines import first_fit
from .extract import build_report, extract
from .layouts import MigGpu, RepartitionOutcome, compute_of, inventory, outcome
from .model import build, canonical_optimum, gpu_classes, solution_values
from .report import GpuChange, InstanceOut, MigPlan, NodeResources, PlanRow, TieBreak
from .validate import disagreements, layout_violations

__all__ = [
    "GpuChange",
    "InstanceOut",
    "MigPlan",
    "NodeResources",
    "PlanRow",
    "TieBreak",
    "layout_violations",
    "plan_mig",
]


def plan_mig(
    cluster: Cluster, demand: dict[str, int], config: SolverConfig, deadline: Deadline | None = None
) -> MigPlan:
    """The optimal repartitioning for the demand (checked by the validator), beside first-fit and all-balanced.

    One `deadline` (default: the time limit from now) covers every phase. First-fit is worked out first: it is
    the floor. When the solve finds nothing in time, or only a plan worse than first-fit's on the objective
    levels, first-fit's plan is the answer, FEASIBLE, with the solve's bounds."""
    deadline = deadline or Deadline.start(config.time_limit)
    gpus = inventory(cluster)
    floor = first_fit(gpus, demand)
    classes = gpu_classes(gpus, demand)
    built = build(classes, gpus, demand)
    reserve = 0.05 + 2e-5 * len(gpus)  # extraction, validation and the report, about linear in the GPUs
    limited = config.model_copy(update={"time_limit": deadline.solve_seconds(reserve)})
    try:
        solver, report = solve_lexicographic(built.model, built.levels, limited)
    except Infeasible as error:  # every class may keep its layout, so this is a bug, not an answer
        raise RuntimeError(f"the MIG model has no solution: {error}") from None
    if not report.optimal and deadline.passed(reserve):
        deadline.note("solve")
    layouts, tie_break = floor, None
    if report.levels[0].objective is not None:
        values = solution_values(built.model, solver)
        if report.optimal:
            left = limited.model_copy(update={"time_limit": report.seconds + deadline.left(reserve)})
            tie_break, values = canonical_optimum(built.model, classes, built.counts, left, report.seconds, values)
        layouts = extract(classes, [[values[v.index] for v in row] for row in built.counts])
    result = outcome(gpus, layouts, demand)
    if layouts is not floor and _score(gpus, outcome(gpus, floor, demand)) > _score(gpus, result):
        layouts, result = floor, outcome(gpus, floor, demand)  # never worse than the first-fit row
    if layouts is floor:
        report = _floor_report(gpus, result, report, built.levels)
    require_valid(
        "the MIG plan", layout_violations(cluster, gpus, layouts, demand) + disagreements(gpus, result, report)
    )
    return build_report(cluster, gpus, classes, demand, layouts, result, report, tie_break, floor)


def _score(gpus: list[MigGpu], result: RepartitionOutcome) -> tuple[int, int, int]:
    """The objective levels in order as one key, larger is better: served compute slices, fewer GPUs
    reconfigured, fewer unused slices."""
    served = sum(compute_of(gpus, name) * count for name, count in result.served.items())
    return served, -result.reconfigured, -result.unused_slices


def _floor_report(gpus: list[MigGpu], result: RepartitionOutcome, solved: SolveReport, named: list) -> SolveReport:
    """The report of first-fit's plan as the answer: its value on each level, the solve's bound where it has one
    (a level the solve did not reach has none), FEASIBLE unless the bound proves it."""
    values = _score(gpus, result)
    levels: list[LevelReport] = []
    for index, (name, sense, _) in enumerate(named):
        value = float(abs(values[index]))
        found = solved.levels[index] if index < len(solved.levels) else None
        bound = found.best_bound if found is not None else None
        proven = bound is not None and bound == value and all(level.status == "OPTIMAL" for level in levels)
        levels.append(
            LevelReport(
                name=name,
                sense=sense,
                status="OPTIMAL" if proven else "FEASIBLE",
                objective=value,
                best_bound=bound,
                gap=None if bound is None else abs(bound - value) / max(1.0, value),
                seconds=found.seconds if found is not None else 0.0,
            )
        )
        if not proven:
            break  # a later level is only meaningful once this one is proven
    status = "OPTIMAL" if len(levels) == len(named) and all(lv.status == "OPTIMAL" for lv in levels) else "FEASIBLE"
    return solved.model_copy(update={"levels": levels, "status": status})
