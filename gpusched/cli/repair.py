"""preempt and defrag: make room for what waits, by evicting (preempt) or moving (defrag) running pods.

Both print the proven plan, the solver's verdict (OPTIMAL only when proven; otherwise the gap) and the heuristic it
beats. Exit codes: 0 a plan, 1 no plan (infeasible, or none found in time), 2 bad input.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from ..bench.repair import (
    FILL,
    ExplainBench,
    RepairBench,
    bench_defrag,
    bench_explain,
    bench_preempt,
)
from ..errors import InputError
from ..limits import MAX_NODES, MAX_POD_GPUS, MAX_PODS
from ..models.workload import Job, JobList, Pod, PodList
from ..planner.optimize.defrag import DefragReport, defrag, parse_shape
from ..planner.optimize.preempt import Alternative, PreemptReport, preempt
from ..planner.optimize.solver import SolveReport
from ..scenarios import (
    load_cluster,
    load_jobs,
    load_pods,
    load_scenario,
    read_document,
    scenario_names,
    validate,
)
from .common import (
    SEED_MAX,
    ClusterArg,
    JsonFlag,
    Seed,
    SolverWorkers,
    TimeLimit,
    app,
    finite,
    new_table,
    pick_pending,
    run,
    show,
    solver_config,
)
from .core import bench_app

BusyNodes = Annotated[int, typer.Option(min=1, max=MAX_NODES, help="generated nodes, made busy by placing generated pods")]
GeneratorSeed = Annotated[int, typer.Option(min=0, max=SEED_MAX, help="generator seed")]
Fill = Annotated[float, typer.Option(parser=finite(0.0, 100.0), help="generated pods ask for this many times the exclusive GPUs")]


# --- loading what waits ------------------------------------------------------------------------------------------


def _workload(source: str) -> tuple[list[Pod], list[Job]]:
    """The pods and jobs of a scenario (name or file), a pods file or a jobs file."""
    if source in scenario_names():
        scenario = load_scenario(source)
    else:
        data = read_document(source, "no such file (nor a built-in scenario: see `gpusched scenarios`)")
        if isinstance(data, dict) and "cluster" in data:
            scenario = load_scenario(source)
        elif isinstance(data, dict):
            if not data or set(data) - {"pods", "jobs"}:
                raise InputError(source, "expected `pods` and/or `jobs` lists, a bare list, or a scenario")
            pods = validate(source, {"pods": data["pods"]}, PodList).pods if "pods" in data else []
            jobs = validate(source, {"jobs": data["jobs"]}, JobList).jobs if "jobs" in data else []
            return pods, jobs
        elif isinstance(data, list) and any(isinstance(item, dict) and "gpus_per_pod" in item for item in data):
            return [], load_jobs(source).jobs
        else:
            return load_pods(source).pods, []
    return (scenario.pods.pods if scenario.pods else []), (scenario.jobs.jobs if scenario.jobs else [])


# --- rendering ---------------------------------------------------------------------------------------------------




def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def render_solve(console: Console, solve: SolveReport, summary: str) -> None:
    """OPTIMAL only when every level was proven; otherwise each unproven level with its bound and gap."""
    if solve.optimal:
        console.print(f"solver: OPTIMAL (proven): {summary}", markup=False)
        return
    console.print(f"solver: {solve.status}, not proven optimal: {summary}", markup=False)
    for level in solve.levels:
        if level.status != "OPTIMAL":
            detail = (
                "no solution"
                if level.objective is None
                else (f"objective {level.objective:g}, bound {level.best_bound:g}, gap {level.gap:.1%}")
            )
            console.print(f"  {level.name}: {level.status}, {detail}", markup=False)


def _cost_cells(alternative: Alternative) -> list[str]:
    cost = alternative.cost
    if cost is None:
        return ["-"] * 4
    top = "-" if cost.highest_priority is None else str(cost.highest_priority)
    return [str(cost.victims), top, str(cost.units), str(cost.budget_violations)]


def render_preempt(console: Console, report: PreemptReport) -> None:
    pending = report.pending
    shape = f"{_plural(pending.pods, 'pod')} x {_plural(pending.gpus_per_pod, 'GPU')}, priority {pending.priority}"
    if pending.nvlink:
        shape += ", each inside one NVLink island"
    console.print(f"{pending.name}: {shape}", markup=False)
    if not report.feasible:
        console.print(f"no plan: {report.reason}", markup=False)
    for victim in report.victims:
        console.print(
            f"evict {victim.pod} on {victim.node} (priority {victim.priority}, {_plural(victim.units, 'GPU')})",
            markup=False,
        )
    for p in report.placements:
        mig = (" MIG " + ", ".join(f"GPU {g}@{s}" for g, s in p.mig)) if p.mig else ""
        console.print(f"{p.pod} -> {p.node} {p.resource} GPUs {p.gpus} islands {p.islands}{mig}", markup=False)
    if report.feasible and not report.victims:
        console.print("nothing to evict: it fits as the cluster is", markup=False)
    if report.solve and report.cost:
        top = "none" if report.cost.highest_priority is None else str(report.cost.highest_priority)
        render_solve(
            console,
            report.solve,
            f"highest victim priority {top}, victims' GPUs {report.cost.units}, victims {report.cost.victims}",
        )
    elif report.solve:
        render_solve(console, report.solve, "no plan")
    optimum = Alternative(
        name="optimum",
        found=report.feasible,
        victims=report.victims,
        placements=report.placements,
        cost=report.cost,
        valid=report.feasible,
    )
    table = new_table("plan", "nodes", "victims", "top prio", "GPUs", "PDB over", "valid")
    notes = []
    for alternative in [optimum, *report.comparison]:
        used = sorted({p.node for p in alternative.placements})
        nodes = (",".join(used) or "-") if len(used) <= 2 else f"{len(used)} nodes"
        valid = "yes" if alternative.valid else ("no" if alternative.found else "-")
        table.add_row(alternative.name, nodes, *_cost_cells(alternative), valid)
        notes += [
            f"{alternative.name}: {text}"
            for text in ([alternative.note] if alternative.note else []) + alternative.problems
        ]
    console.print(table)
    for note in notes:
        console.print(note, markup=False)


def _step_lines(report: DefragReport) -> list[str]:
    origin = {m.pod: m for m in report.moves}
    lines = []
    for number, step in enumerate(report.steps, 1):
        move = origin[step.pod]
        if step.action == "move":
            lines.append(
                f"{number}. move {step.pod}: {move.from_node} GPUs {move.from_gpus} -> {step.node} GPUs {step.gpus}"
            )
        elif step.action == "evict":
            lines.append(f"{number}. evict {step.pod} from {step.node} GPUs {step.gpus} (re-created below)")
        else:
            lines.append(f"{number}. create {step.pod} on {step.node} GPUs {step.gpus}")
    return lines


def render_defrag(console: Console, report: DefragReport) -> None:
    limit = "" if report.max_moves is None else f", at most {_plural(report.max_moves, 'move')}"
    console.print(f"room for {report.shape.text}{limit}: {report.before} fit now", markup=False)
    if not report.feasible:
        console.print(f"no plan: {report.reason}", markup=False)
    for line in _step_lines(report):
        console.print(line, markup=False)
    for target in report.targets:
        console.print(f"then {target.pod} -> {target.node} GPUs {target.gpus} islands {target.islands}", markup=False)
    if report.feasible and not report.moves:
        console.print("nothing to move: it fits as the cluster is", markup=False)
    if report.solve:
        summary = f"moves {len(report.moves)}, GPUs moved {report.gpus_moved}"
        if report.shape.pods is None:
            summary = f"target pods {len(report.targets)}, " + summary
        render_solve(console, report.solve, summary if report.feasible else "no plan")
    for command in report.commands:
        console.print(command, markup=False)
    table = new_table("plan", "moves", "GPUs moved", "target pods", "valid")
    if report.feasible:
        table.add_row("optimum", str(len(report.moves)), str(report.gpus_moved), str(len(report.targets)), "yes")
    else:
        table.add_row("optimum", "-", "-", "-", "-")
    for row in report.comparison:
        short = "" if row.fits else " (short)"
        table.add_row(
            row.name, str(len(row.moves)), str(row.gpus_moved), f"{row.targets}{short}", "yes" if row.valid else "no"
        )
    console.print(table)
    for row in report.comparison:
        for problem in row.problems:
            console.print(f"{row.name}: {problem}", markup=False)


def render_bench(console: Console, result: RepairBench) -> None:
    console.print(
        f"{result.command} on {result.nodes} nodes ({result.running} running pods, {result.kinds} kinds of node): "
        f"{result.status} in {result.seconds:g} s (solver {result.solve_seconds:g} s); {result.objective}",
        markup=False,
    )


# --- commands ----------------------------------------------------------------------------------------------------


@app.command("preempt")
def preempt_command(
    cluster: ClusterArg,
    name: Annotated[str, typer.Argument(metavar="POD-OR-JOB", help="the pending pod or job, by name")],
    source: Annotated[
        str | None,
        typer.Option(
            "--from", help="pods or jobs file, scenario file or built-in scenario holding it (default: CLUSTER)"
        ),
    ] = None,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = 2,
    seed: Seed = 0,
    as_json: JsonFlag = False,
) -> None:
    """The fewest, least important evictions that let a pending pod or job run (only lower priorities go)."""

    def body() -> int:
        config = solver_config(time_limit, workers, seed)
        model = load_cluster(cluster)
        report = preempt(model, pick_pending(*_workload(source or cluster), name, source or cluster), config)
        show(report, as_json, render_preempt)
        return 0 if report.feasible else 1

    run(body)


@app.command("defrag")
def defrag_command(
    cluster: ClusterArg,
    shape: Annotated[
        str, typer.Option("--for", help="GPUS[xPODS|xmax][@island]: 8@island, 8x2 (two 8-GPU pods), 4xmax@island")
    ],
    max_moves: Annotated[
        int | None, typer.Option("--max-moves", max=MAX_PODS, help="at most this many moves (needed with xmax)")
    ] = None,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = 2,
    seed: Seed = 0,
    as_json: JsonFlag = False,
) -> None:
    """The fewest pod moves that make room for a shape, in an order where every step is valid."""

    def body() -> int:
        config = solver_config(time_limit, workers, seed)
        target = parse_shape(shape)
        report = defrag(load_cluster(cluster), target, max_moves, config)
        show(report, as_json, render_defrag)
        return 0 if report.feasible else 1

    run(body)


@bench_app.command("preempt")
def bench_preempt_command(
    nodes: BusyNodes = 1000,
    pods: Annotated[int, typer.Option(min=1, max=MAX_PODS, help="pods of the pending priority-100 NVLink job")] = 2,
    gpus: Annotated[int, typer.Option(min=1, max=MAX_POD_GPUS, help="GPUs per pod of the pending job")] = 8,
    seed: GeneratorSeed = 42,
    fill: Fill = FILL,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = 2,
    as_json: JsonFlag = False,
) -> None:
    """Time `preempt` on a busy generated cluster."""

    def body() -> int:
        result = bench_preempt(nodes, seed, pods, gpus, solver_config(time_limit, workers, 0), fill)
        show(result, as_json, render_bench)
        return 0

    run(body)


@bench_app.command("defrag")
def bench_defrag_command(
    nodes: BusyNodes = 1000,
    shape: Annotated[str, typer.Option("--for", help="the target shape")] = "8x2@island",
    max_moves: Annotated[int | None, typer.Option("--max-moves", max=MAX_PODS, help="at most this many moves")] = None,
    seed: GeneratorSeed = 42,
    fill: Fill = FILL,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = 2,
    as_json: JsonFlag = False,
) -> None:
    """Time `defrag` on a busy generated cluster."""

    def body() -> int:
        parse_shape(shape)
        result = bench_defrag(nodes, seed, shape, max_moves, solver_config(time_limit, workers, 0), fill)
        show(result, as_json, render_bench)
        return 0

    run(body)


@bench_app.command("explain")
def bench_explain_command(
    nodes: BusyNodes = 1000,
    gpus: Annotated[int, typer.Option(min=1, max=MAX_POD_GPUS, help="GPUs of the pending priority-100 NVLink pod")] = 8,
    seed: GeneratorSeed = 42,
    fill: Fill = FILL,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = 2,
    as_json: JsonFlag = False,
) -> None:
    """Time `explain` on a busy generated cluster: the diagnosis and every planner behind its changes."""

    def body() -> int:
        result = bench_explain(nodes, seed, gpus, solver_config(time_limit, workers, 0), fill)
        show(result, as_json, render_bench_explain)
        return 0

    run(body)


def render_bench_explain(console: Console, result: ExplainBench) -> None:
    state = "fits" if result.fits else f"Pending ({result.verdict})"
    console.print(
        f"explain on a {result.nodes}-node busy cluster ({result.running} running pods): {state}; "
        f"changes {', '.join(result.changes) or 'none'}; {result.seconds:g} s",
        markup=False,
    )
