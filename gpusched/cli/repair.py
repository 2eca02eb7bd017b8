"""preempt and defrag: make room for what waits, by evicting (preempt) or moving (defrag) running pods.

Both print the proven plan, the solver's verdict (OPTIMAL only when proven; otherwise the gap) and the heuristic it
beats. Exit codes: 0 a plan, 1 no plan (infeasible, or none found in time), 2 bad input.
"""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from ..actions.journal import Journal
from ..actions.kube import Kube, Snapshot
from ..actions.plans import defrag_journal, preempt_journal
from ..actions.runner import RunOutcome
from ..limits import MAX_PODS
from ..models.scheduling import Toleration
from ..planner.explain.target import pick_pending, pod_named
from ..planner.optimize.defrag import DefragReport, defrag, parse_shape, shape_like
from ..planner.optimize.preempt import Alternative, PreemptReport, preempt
from ..planner.optimize.solver import SolveReport
from ..scenarios import load_cluster, load_pending
from .apply import (
    ApplyFlag,
    JournalOpt,
    PdbTimeoutOpt,
    Target,
    WaitTimeoutOpt,
    YesFlag,
    apply_plan,
    check_apply,
    live_apply,
    options,
)
from .common import (
    DEFAULT_WORKERS,
    ClusterArg,
    ClusterOpt,
    ContextOpt,
    JsonFlag,
    KubeconfigOpt,
    NamespaceOpt,
    Seed,
    SolverWorkers,
    TimeLimit,
    app,
    cluster_source,
    live,
    names,
    namespace_for,
    new_table,
    object_name,
    out,
    run,
    shape,
    show,
    solver_config,
    usage,
)

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
            for text in ([alternative.note] if alternative.note else []) + [str(p) for p in alternative.problems]
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


# --- commands ----------------------------------------------------------------------------------------------------


@names(lambda report: [object_name("pod", victim["pod"]) for victim in report["victims"]])
@shape(PreemptReport | RunOutcome)
@app.command("preempt")
def preempt_command(
    name: Annotated[str, typer.Argument(metavar="POD", help="the pending pod or job, by name ([NAMESPACE/]NAME)")],
    cluster: ClusterOpt = None,
    namespace: NamespaceOpt = None,
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="FILE",
            help="pods or jobs file, scenario file or built-in scenario holding it (default: the cluster's pending)",
        ),
    ] = None,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    seed: Seed = 0,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    apply: ApplyFlag = False,
    yes: YesFlag = False,
    journal: JournalOpt = None,
    pdb_timeout: PdbTimeoutOpt = 300.0,
    wait_timeout: WaitTimeoutOpt = 300.0,
    as_json: JsonFlag = False,
) -> None:
    """The fewest, least important evictions that let a pending pod or job run (only lower priorities go);
    --apply evicts them through the Eviction API (PodDisruptionBudgets apply)."""

    def body() -> int:
        server = live(kubeconfig, cluster)
        check_apply(apply, server, context, yes, journal)
        config = solver_config(time_limit, workers, seed)
        where = cluster_source(cluster, server, context, "-f/--cluster")
        with live_apply(apply, server, context) as opened:  # --apply: plan from the one snapshot the run checks
            model = opened.cluster if opened else load_cluster(where)
            pods, jobs = load_pending(source or (opened.scenario if opened else where))
            known = [pod.name for pod in pods.pods] + [job.name for job in jobs.jobs]
            wanted = pod_named(name, namespace_for(namespace, server, context), known)
            report = preempt(model, pick_pending(pods.pods, jobs.jobs, wanted, source or where), config)
            if not apply or not report.feasible:
                show(report, as_json, render_preempt)
                return 0 if report.feasible else 1
            if not as_json:
                render_preempt(out, report)
            settings = options(pdb_timeout, wait_timeout)

            def steps(kube: Kube, snapshot: Snapshot, where: Target) -> Journal:
                return preempt_journal(kube, snapshot, report, wanted, where, settings)

            return apply_plan(opened, f"preempt {wanted}", steps, yes, journal, as_json)

    run(body)


def toleration_of(text: str) -> Toleration:
    """`KEY[=VALUE]:EFFECT`, as kubectl taint writes a taint: Equal with a value, Exists without; no EFFECT
    tolerates every effect."""
    pair, _, effect = text.rpartition(":") if ":" in text else (text, "", "")
    key, equals, value = pair.partition("=")
    try:
        return Toleration.model_validate(
            {"key": key, "operator": "Equal" if equals else "Exists", "value": value, "effect": effect}
        )
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        where = ".".join(map(str, problem["loc"]))
        message = str(problem["msg"]).removeprefix("Value error, ")
        raise ValueError(f"--toleration {text!r}: {where + ': ' if where else ''}{message}") from None


@names(lambda report: [object_name("pod", move["pod"]) for move in report["moves"]])
@shape(DefragReport | RunOutcome)
@app.command("defrag")
def defrag_command(
    shape: Annotated[
        str | None,
        typer.Option(
            "--for",
            metavar="SHAPE",
            help="GPUS[xPODS|xmax][@island]: 8@island, 8x2 (two 8-GPU pods), 4xmax@island (default: --like's)",
        ),
    ] = None,
    cluster: ClusterArg = None,
    like: Annotated[
        str | None,
        typer.Option(
            "--like",
            metavar="POD",
            help="the target pods are like this pending pod or job: its GPUs and NVLink (unless --for), "
            "tolerations, node selector, GPU model and memory (not its cpu and memory: defrag packs GPUs)",
        ),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            "--from", metavar="FILE", help="--like: pods or jobs file or scenario holding it (default: the cluster's)"
        ),
    ] = None,
    namespace: NamespaceOpt = None,
    tolerations: Annotated[
        list[str] | None,
        typer.Option(
            "--toleration",
            metavar="KEY[=VALUE]:EFFECT",
            help="the target pods tolerate this taint (repeatable), e.g. nvidia.com/gpu=present:NoSchedule",
        ),
    ] = None,
    max_moves: Annotated[
        int | None,
        typer.Option("--max-moves", metavar="N", max=MAX_PODS, help="at most this many moves (needed with xmax)"),
    ] = None,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    seed: Seed = 0,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    apply: ApplyFlag = False,
    yes: YesFlag = False,
    journal: JournalOpt = None,
    pdb_timeout: PdbTimeoutOpt = 300.0,
    wait_timeout: WaitTimeoutOpt = 300.0,
    as_json: JsonFlag = False,
) -> None:
    """The fewest pod moves that make room for a shape, in an order where every step is valid; --apply moves them
    (evict, the owner re-creates, the emptied nodes cordoned meanwhile)."""

    def body() -> int:
        server = live(kubeconfig, cluster)
        check_apply(apply, server, context, yes, journal)
        config = solver_config(time_limit, workers, seed)
        if shape is None and like is None:
            raise usage("--for: give a shape, or --like POD")
        if source is not None and like is None:
            raise usage("--from: only with --like")
        given = [toleration_of(text) for text in tolerations or []]
        where = cluster_source(cluster, server, context)
        with live_apply(apply, server, context) as opened:  # --apply: plan from the one snapshot the run checks
            item = None
            if like is not None:
                pods, jobs = load_pending(source or (opened.scenario if opened else where))
                known = [pod.name for pod in pods.pods] + [job.name for job in jobs.jobs]
                wanted = pod_named(like, namespace_for(namespace, server, context), known)
                item = pick_pending(pods.pods, jobs.jobs, wanted, source or where)
            try:
                target = shape_like(item, parse_shape(shape, "--for") if shape else None, given)
            except ValueError as error:
                raise ValueError(f"--like: {error}") from None
            report = defrag(opened.cluster if opened else load_cluster(where), target, max_moves, config)
            if not apply or not report.feasible:
                show(report, as_json, render_defrag)
                return 0 if report.feasible else 1
            if not as_json:
                render_defrag(out, report)
            settings = options(pdb_timeout, wait_timeout)

            def steps(kube: Kube, snapshot: Snapshot, where: Target) -> Journal:
                return defrag_journal(kube, snapshot, report, where, settings)

            what = f"defrag --for {shape}" if shape else f"defrag --like {like}"
            return apply_plan(opened, what, steps, yes, journal, as_json)

    run(body)
