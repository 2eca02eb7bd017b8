"""`plan` (the proven-best batch placement, beside the heuristics) and `validate` (any plan file, checked)."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.console import Console

from ..actions.journal import Journal
from ..actions.kube import Kube, Snapshot
from ..actions.plans import bind_journal, gpusched_jobs
from ..actions.runner import RunOutcome
from ..errors import InputError
from ..planner.optimize.plan import (
    PlanReport,
    pending_jobs,
    plan,
)
from ..planner.optimize.solver import SolveReport, collector_paused
from ..planner.planfile import PlanValidation, check_plan_file, load_plan
from ..scenarios import load_cluster, load_pending
from .apply import (
    ApplyFlag,
    JournalOpt,
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
    AllNamespacesFlag,
    ClusterArg,
    ContextOpt,
    JsonFlag,
    KubeconfigOpt,
    NamespaceOpt,
    Seed,
    SizesOpt,
    SolverWorkers,
    TimeLimit,
    app,
    check_namespaces,
    cluster_source,
    in_namespace,
    live,
    names,
    new_table,
    object_name,
    out,
    run,
    shape,
    show,
    solver_config,
    usage,
)
from .common import sizes as parse_sizes


@names(lambda report: [object_name("pod", assignment["pod"]) for assignment in report["assignments"]])
@shape(PlanReport | RunOutcome)
@app.command("plan")
def plan_command(
    cluster: ClusterArg = None,
    pending: Annotated[
        str | None,
        typer.Option(
            "--pending", metavar="FILE", help="pending pods and/or jobs (file or scenario; default: the cluster's own)"
        ),
    ] = None,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    seed: Seed = 0,
    sizes: SizesOpt = "",
    namespace: NamespaceOpt = None,
    all_namespaces: AllNamespacesFlag = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    apply: ApplyFlag = False,
    scheduler_name: Annotated[
        str,
        typer.Option(
            "--scheduler-name", metavar="NAME", help="--apply: bind only the pending pods of this schedulerName"
        ),
    ] = "gpusched",
    rollback: Annotated[
        bool,
        typer.Option(
            "--rollback",
            help="--apply: a gang with pods that have no owner may be bound too; if it cannot be completed, those "
            "pods are deleted and re-created unbound from their manifests (gangs of owned pods are always all or "
            "nothing)",
        ),
    ] = False,
    yes: YesFlag = False,
    journal: JournalOpt = None,
    wait_timeout: WaitTimeoutOpt = 300.0,
    as_json: JsonFlag = False,
) -> None:
    """The best placement of pending pods and gangs (CP-SAT, proven optimal or bounded), beside the heuristics;
    --apply binds the planned pods (Binding subresource) as a secondary scheduler named --scheduler-name."""

    began = time.perf_counter()  # the time limit covers the whole command, reading its input included

    def body() -> int:
        server = live(kubeconfig, cluster)
        check_apply(apply, server, context, yes, journal)
        check_namespaces(namespace, all_namespaces)
        if rollback and not apply:
            raise usage("--rollback: only with --apply")
        config = solver_config(time_limit, workers, seed)
        source = cluster_source(cluster, server, context)
        if not apply:
            with collector_paused():  # a large cluster's model: see collector_paused
                pods, jobs = load_pending(pending or source)
                try:
                    backlog = pending_jobs(
                        [pod for pod in pods.pods if in_namespace(pod.name, namespace)],
                        [job for job in jobs.jobs if in_namespace(job.name, namespace)],
                    )
                except InputError as error:  # names, GPU counts, priorities of the pending file: say which file
                    raise type(error)(pending or source, str(error)) from None
                model = load_cluster(source)
            report = plan(model, backlog, config, parse_sizes(sizes), began=began)
            show(report, as_json, render_plan)
            return 1 if report.unplaced else 0
        if pending:
            raise usage("--apply binds the cluster's own pending pods: drop --pending")
        with live_apply(apply, server, context) as opened:  # plan from the one snapshot the run checks
            assert opened is not None
            found, members = gpusched_jobs(opened.snapshot, scheduler_name)
            found = [job for job in found if in_namespace(job.name, namespace)]
            if not found:
                raise usage(f"no pending GPU pod has schedulerName {scheduler_name!r}: nothing to bind")
            report = plan(opened.cluster, found, config, parse_sizes(sizes), began=began)
            if not as_json:
                render_plan(out, report)
            settings = options(0.0, wait_timeout, rollback=rollback)

            def steps(kube: Kube, snapshot: Snapshot, where: Target) -> Journal:
                return bind_journal(kube, snapshot, report, members, where, settings)

            code = apply_plan(opened, "plan", steps, yes, journal, as_json)
            return code or (1 if report.unplaced else 0)

    run(body)


@shape(PlanValidation)
@app.command("validate")
def validate_command(
    cluster: Annotated[
        str,
        typer.Argument(
            metavar="CLUSTER", help="cluster or scenario file, built-in scenario, kubectl dump folder or kubeconfig"
        ),
    ],
    plan_file: Annotated[
        str,
        typer.Argument(
            metavar="PLAN",
            help="a plan, as `gpusched plan -o json` or `gpusched mig plan -o json` writes it (- for stdin)",
        ),
    ],
    as_json: JsonFlag = False,
) -> None:
    """Check a plan against the cluster: capacity, islands, MIG geometry, constraints, gangs complete; or a MIG
    plan: layouts, busy instances kept, single strategy, mig-parted config and labels, the outcome it claims."""

    def body() -> int:
        model = load_cluster(cluster)
        result = check_plan_file(model, load_plan(plan_file))
        show(result, as_json, render_validation)
        return 0 if result.valid else 1

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
    binding = f", {report.binding_nodes} nodes where cpu or memory may run out" if report.binding_nodes else ""
    seen = f" ({report.gpu_shapes} as the GPUs see them)" if report.gpu_shapes != report.pod_shapes else ""
    console.print(
        f"model: {report.node_classes} node classes, {report.pod_shapes} pod shapes{seen}, "
        f"{report.patterns} patterns{binding}",
        markup=False,
    )
    start = report.warm_start
    if start is not None:
        console.print(
            f"started from {start.policy} ({start.mode}): {start.metrics.weighted_gpus} weighted GPUs, "
            f"{start.metrics.jobs_placed} jobs{'' if start.hinted else ' (its objective a floor, not hinted)'}",
            markup=False,
        )
    for a in report.assignments:
        where = f"MIG {', '.join(f'GPU {g}@{s}' for g, s in a.mig)}" if a.mig else f"GPUs {a.gpus}"
        console.print(f"{a.pod} -> {a.node} {where}{' (spans islands)' if a.split else ''}", markup=False)
    if report.unplaced:
        console.print(f"not placed: {', '.join(report.unplaced)}", markup=False)
    sizes = sorted(report.metrics.stranded)
    compare = new_table(
        "plan",
        "mode",
        "GPUs placed",
        "jobs placed",
        "weighted GPUs",
        "held by partial jobs",
        "stranded " + "/".join(map(str, sizes)),
    )
    rows = [("optimum" if report.solve.optimal else "best found", "gang", report.metrics)] + [
        (h.policy, h.mode, h.metrics) for h in report.heuristics
    ]
    for name, mode, m in rows:
        stranded = "/".join(str(m.stranded[size]) for size in sizes)
        compare.add_row(
            name,
            mode,
            str(m.gpus_placed),
            str(m.jobs_placed),
            str(m.weighted_gpus),
            str(m.gpus_held_by_partial_jobs),
            stranded,
        )
    console.print(compare)
    for reason in dict.fromkeys(skipped.reason for skipped in report.not_run):
        names = [f"{h.policy} ({h.mode})" for h in report.not_run if h.reason == reason]
        console.print(f"not run: {', '.join(names)}: {reason}", markup=False)
    if report.ran_out:
        console.print(f"out of time: {', '.join(report.ran_out)} (the answer: {report.source})", markup=False)
    spent = ", ".join(f"{name} {seconds:.2f}" for name, seconds in report.phases.items())
    console.print(f"time: {report.seconds:.2f} s of {report.solve.time_limit:g} s ({spent})", markup=False)


def render_validation(console: Console, result: PlanValidation) -> None:
    if result.valid:
        console.print("valid", markup=False)
    else:
        for violation in result.violations:  # every one, with the kind of rule it breaks
            console.print(f"invalid: {violation.message} ({violation.kind})", markup=False)
