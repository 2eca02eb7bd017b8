"""MIG repartitioning with CP-SAT: the fewest GPUs reconfigured that serve a demand for MIG instances.

build (model.py) → solve → extract (extract.py) → validate (validate.py). The words (layout, reconfigured, unused
slices) and the GPUs a plan may change are in layouts.py; the mig-parted config in migparted.py; first-fit and
all-balanced, the plans an operator would try without a solver, in baselines.py.

Objective, in order: serve as much of the demand as possible (compute slices of demanded instances), then
reconfigure the fewest GPUs, then leave the fewest unused slices on them.
"""

from __future__ import annotations

from ....models.cluster import Cluster
from ...validate import require_valid
from ..solver import Infeasible, SolverConfig, solve_lexicographic
from .extract import build_report, extract
from .layouts import inventory, outcome
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


def plan_mig(cluster: Cluster, demand: dict[str, int], config: SolverConfig) -> MigPlan:
    """The optimal repartitioning for the demand (checked by the validator), beside first-fit and all-balanced."""
    gpus = inventory(cluster)
    classes = gpu_classes(gpus, demand)
    built = build(classes, gpus, demand)
    try:
        solver, report = solve_lexicographic(built.model, built.levels, config)
    except Infeasible as error:  # every class may keep its layout, so this is a bug, not an answer
        raise RuntimeError(f"the MIG model has no solution: {error}") from None
    if report.levels[0].objective is None:
        raise Infeasible(f"no plan found within the time limit of {config.time_limit:g} s (nothing is proven)")
    values = solution_values(built.model, solver)
    tie_break = None
    if report.optimal:
        tie_break, values = canonical_optimum(built.model, classes, built.counts, config, report.seconds, values)
    layouts = extract(classes, [[values[v.index] for v in row] for row in built.counts])
    result = outcome(gpus, layouts, demand)
    require_valid(
        "the MIG plan", layout_violations(cluster, gpus, layouts, demand) + disagreements(gpus, result, report)
    )
    return build_report(cluster, gpus, classes, demand, layouts, result, report, tie_break)
