"""`plan` (the proven-best batch placement, beside the heuristics) and `validate` (any plan file, checked)."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import BaseModel, ConfigDict
from rich.console import Console

from ..bench.plan_bench import PlanBench, bench_plan
from ..limits import MAX_NODES, MAX_PODS
from ..planner.optimize.plan import (
    PlanJob,
    PlannedPod,
    PlanReport,
    check_plan,
    pending_jobs,
    plan,
)
from ..planner.optimize.solver import SolveReport
from ..scenarios import load_cluster, load_pending, read_document, validate
from .common import (
    ClusterArg,
    JsonFlag,
    Seed,
    SizesOpt,
    SolverWorkers,
    TimeLimit,
    app,
    finite,
    new_table,
    run,
    show,
    solver_config,
)
from .common import sizes as parse_sizes
from .core import bench_app


@app.command("plan")
def plan_command(
    cluster: ClusterArg,
    pending: Annotated[
        str | None, typer.Argument(help="pending pods and/or jobs (file or scenario; default: the scenario's own)")
    ] = None,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = 2,
    seed: Seed = 0,
    sizes: SizesOpt = "",
    as_json: JsonFlag = False,
) -> None:
    """The best placement of pending pods and gangs (CP-SAT, proven optimal or bounded), beside the heuristics."""

    def body() -> int:
        config = solver_config(time_limit, workers, seed)
        pods, jobs = load_pending(pending or cluster)
        report = plan(load_cluster(cluster), pending_jobs(pods.pods, jobs.jobs), config, parse_sizes(sizes))
        show(report, as_json, render_plan)
        return 1 if report.unplaced else 0

    run(body)


class PlanFile(BaseModel):
    """What `validate` reads from a plan: the jobs and where their pods go (other keys are ignored)."""

    model_config = ConfigDict(extra="ignore")
    jobs: list[PlanJob]
    assignments: list[PlannedPod]


class Validation(BaseModel):
    valid: bool
    violations: list[str]


@app.command("validate")
def validate_command(
    cluster: ClusterArg,
    plan_file: Annotated[str, typer.Argument(metavar="PLAN", help="a plan, as `gpusched plan --json` writes it")],
    as_json: JsonFlag = False,
) -> None:
    """Check a plan against the cluster: capacity, islands, MIG geometry, constraints, gangs complete."""

    def body() -> int:
        model = load_cluster(cluster)
        found = validate(plan_file, read_document(plan_file), PlanFile)
        names = {node.name for node in model.nodes}
        problems = [f"{a.pod}: unknown node {a.node}" for a in found.assignments if a.node not in names]
        jobs = {job.name for job in found.jobs}
        problems += [f"{a.pod}: unknown job {a.job}" for a in found.assignments if a.job not in jobs]
        if not problems:
            problems = check_plan(model, [job.pending() for job in found.jobs], found.assignments)
        show(Validation(valid=not problems, violations=problems), as_json, render_validation)
        return 1 if problems else 0

    run(body)


# --- rendering -----------------------------------------------------------------------------------------------


def render_solve(console: Console, solve: SolveReport) -> None:
    console.print(
        f"solver: {solve.status} in {solve.seconds:.2f} s (time limit {solve.time_limit:g} s, "
        f"{solve.workers} workers, seed {solve.seed})",
        markup=False,
    )
    levels = new_table("objective", "sense", "status", "value", "bound", "gap")
    for level in solve.levels:
        value = "-" if level.objective is None else f"{level.objective:g}"
        bound = "-" if level.best_bound is None else f"{level.best_bound:g}"
        gap = "-" if level.gap is None else f"{100 * level.gap:.1f}%"
        levels.add_row(level.name, level.sense, level.status, value, bound, gap)
    console.print(levels)


def render_plan(console: Console, report: PlanReport) -> None:
    render_solve(console, report.solve)
    console.print(
        f"model: {report.node_classes} node classes, {report.pod_shapes} pod shapes, {report.patterns} patterns",
        markup=False,
    )
    for a in report.assignments:
        where = f"MIG {', '.join(f'GPU {g}@{s}' for g, s in a.mig)}" if a.mig else f"GPUs {a.gpus}"
        console.print(f"{a.pod} -> {a.node} {where}{' (spans islands)' if a.split else ''}", markup=False)
    if report.unplaced:
        console.print(f"not placed: {', '.join(report.unplaced)}", markup=False)
    sizes = sorted(report.metrics.stranded)
    compare = new_table("plan", "mode", "GPUs placed", "jobs placed", "weighted GPUs", "held by partial jobs",
                    "stranded " + "/".join(map(str, sizes)))
    rows = [("optimum", "gang", report.metrics)] + [(h.policy, h.mode, h.metrics) for h in report.heuristics]
    for name, mode, m in rows:
        stranded = "/".join(str(m.stranded[size]) for size in sizes)
        compare.add_row(name, mode, str(m.gpus_placed), str(m.jobs_placed), str(m.weighted_gpus),
                        str(m.gpus_held_by_partial_jobs), stranded)
    console.print(compare)


def render_validation(console: Console, result: Validation) -> None:
    if result.valid:
        console.print("valid", markup=False)
    else:
        console.print(f"invalid: {result.violations[0]}", markup=False)
        if len(result.violations) > 1:
            console.print(f"({len(result.violations) - 1} more; --json lists all)", markup=False)


@bench_app.command("plan")
def bench_plan_command(
    nodes: Annotated[int, typer.Option(min=1, max=MAX_NODES, help="generated nodes (DGX, PCIe pairs, time-sliced L4, 5:3:2)")] = 10000,
    jobs: Annotated[int, typer.Option(min=1, max=MAX_PODS, help="generated pending jobs (1-8 GPUs per pod, 1-8 pods)")] = 2000,
    busy: Annotated[float, typer.Option(parser=finite(0.0, 1.0), help="fraction of GPUs already busy")] = 0.5,
    domain_jobs: Annotated[int, typer.Option(min=0, max=MAX_PODS, help="add 4x8-GPU jobs confined to one NVLink domain")] = 0,
    seed: Seed = 42,
    time_limit: TimeLimit = 60.0,
    as_json: JsonFlag = False,
) -> None:
    """Time `plan` on a generated cluster and backlog: classes, patterns, solve, disaggregation, validation."""

    def body() -> int:
        solver_config(time_limit, 1, seed)
        result = bench_plan(nodes, jobs, busy, seed, time_limit, domain_jobs)
        show(result, as_json, render_bench)
        return 0

    run(body)


def render_bench(console: Console, result: PlanBench) -> None:
    console.print(
        f"plan {result.jobs} jobs on {result.nodes} nodes ({result.gpus} GPUs, {result.busy_fraction:.0%} busy): "
        f"{result.status}, {result.jobs_placed} jobs placed, {result.seconds:.2f} s in all "
        f"({result.solve_seconds:.2f} s solving; {result.node_classes} node classes, {result.pod_shapes} pod shapes, "
        f"{result.patterns} patterns)",
        markup=False,
    )
