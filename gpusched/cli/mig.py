"""`gpusched mig plan`: MIG layouts that serve a demand, with the mig-parted config and labels to apply."""

from __future__ import annotations

from typing import Annotated

import typer
import yaml
from rich.console import Console

from ..actions.journal import Journal
from ..actions.kube import Kube, Snapshot
from ..actions.plans import mig_journal
from ..actions.runner import RunOutcome
from ..planner.optimize.mig import InstanceOut, MigPlan, plan_mig
from ..planner.optimize.mig.layouts import (
    MigGpu,
    check_demand,
    demand_from_pods,
    inventory,
    parse_demand,
)
from ..planner.optimize.mig.migparted import mig_parted_file
from ..planner.optimize.solver import Infeasible, SolveReport
from ..scenarios import load_cluster, load_pods
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
    ContextOpt,
    JsonFlag,
    KubeconfigOpt,
    Seed,
    SolverWorkers,
    TimeLimit,
    app,
    cluster_source,
    emit_json,
    emit_target,
    err,
    live,
    names,
    new_table,
    object_name,
    run,
    shape,
    solver_config,
    usage,
    write_output,
)

mig_app = typer.Typer(help="MIG repartitioning: layouts that serve a demand for MIG instances.", no_args_is_help=True)
app.add_typer(mig_app, name="mig")


@names(lambda plan: [object_name("node", node) for node in plan["labels"]])
@shape(MigPlan | RunOutcome)
@mig_app.command("plan")
def plan_command(
    cluster: ClusterArg = None,
    demand: Annotated[
        str | None,
        typer.Option("--demand", metavar="PROFILE=N,...", help="instances wanted per profile: 3g.40gb=4,1g.10gb=10"),
    ] = None,
    pending: Annotated[
        str | None,
        typer.Option(
            "--pending", metavar="FILE", help="pods file (or scenario): the demand is mig_profile × gpus of its pods"
        ),
    ] = None,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    seed: Seed = 0,
    emit: Annotated[
        str | None,
        typer.Option(
            "--emit-mig-parted",
            metavar="FILE|-",
            help="write the mig-parted config, headed by the node labels that apply it; - for stdout",
        ),
    ] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    apply: ApplyFlag = False,
    yes: YesFlag = False,
    journal: JournalOpt = None,
    pdb_timeout: PdbTimeoutOpt = 300.0,
    wait_timeout: WaitTimeoutOpt = 300.0,
    mig_timeout: Annotated[
        float,
        typer.Option(
            "--mig-timeout", metavar="SECONDS", min=0, max=86400, help="--apply: seconds mig-manager may take per node"
        ),
    ] = 900.0,
    as_json: JsonFlag = False,
) -> None:
    """New MIG layouts that serve the demand, reconfiguring the fewest GPUs; busy instances stay where they are.
    --apply repartitions node by node: cordon, evict the pods on the GPUs to change, label, wait, uncordon."""

    def body() -> int:
        server = live(kubeconfig, cluster)
        check_apply(apply, server, context, yes, journal)
        config = solver_config(time_limit, workers, seed)
        if (demand is None) == (pending is None):
            raise usage("give exactly one of --demand PROFILE=COUNT,... and --pending PODS")
        target = emit
        console = emit_target("--emit-mig-parted", target, as_json)
        source = cluster_source(cluster, server, context)
        with live_apply(apply, server, context) as opened:  # --apply: plan from the one snapshot the run checks
            model = opened.cluster if opened else load_cluster(source)
            wanted = _demand(inventory(model), demand, pending)
            try:
                plan = plan_mig(model, wanted, config)
            except Infeasible as error:  # no plan within the time limit: an answer, not bad input
                err.print(f"error: {error}", markup=False)
                return 1
            _timing(plan)
            emitted = mig_parted_file(plan) if target else None
            if emitted:
                write_output(str(target), emitted.text())
            if as_json and not apply:
                emit_json(plan)
            elif not as_json:
                render_plan(console, plan)
                if target:
                    _render_emitted(console, target, emitted is not None)
            if apply and plan.labels:
                settings = options(pdb_timeout, wait_timeout, mig_timeout=mig_timeout)

                def steps(kube: Kube, snapshot: Snapshot, where: Target) -> Journal:
                    return mig_journal(kube, snapshot, plan, where, settings)

                code = apply_plan(opened, "mig plan", steps, yes, journal, as_json)
                return code or (0 if plan.outcome.met else 1)
            return 0 if plan.outcome.met else 1

    run(body)


def _render_emitted(console: Console, target: str, written: bool) -> None:
    where = "stdout" if target == "-" else target
    if written:
        console.print(f"mig-parted config -> {where}", markup=False)
    else:
        console.print(f"mig-parted config not written ({where}): no GPU to reconfigure", markup=False)


def _demand(gpus: list[MigGpu], demand: str | None, pending: str | None) -> dict[str, int]:
    """Instances wanted per profile, from --demand or from the pending pods; a profile no GPU has is bad input."""
    if demand is not None:
        wanted = parse_demand(demand, "--demand")
        check_demand(wanted, gpus, "--demand")
        return wanted
    pods = load_pods(pending or "").pods
    for pod in pods:
        if pod.mig_profile:
            check_demand({pod.mig_profile: 1}, gpus, f"--pending: pod {pod.name}")
    return demand_from_pods(pods, "--pending")


def _timing(plan: MigPlan) -> None:
    """Solve time goes to stderr: it differs from run to run, the plan on stdout does not."""
    report = plan.solve
    tie = f", tie-break {plan.tie_break.seconds:.3f} s" if plan.tie_break else ""
    err.print(
        f"solved in {report.seconds:.3f} s{tie} (time limit {report.time_limit:g} s, {report.workers} workers, "
        f"seed {report.seed})",
        markup=False,
    )


def _instances(items: list[InstanceOut] | None) -> str:
    if items is None:
        return "MIG disabled"
    return " ".join(f"{i.profile}@{i.start}" + (f"={i.holder}" if i.holder else "") for i in items) or "none"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "nothing"


def render_plan(console: Console, plan: MigPlan) -> None:
    demand = ", ".join(f"{name}={count}" for name, count in plan.demand.items())
    result = plan.outcome
    console.print(
        f"demand {demand}: {'met' if result.met else 'NOT met'}; GPUs reconfigured {result.reconfigured}, "
        f"unused slices {result.unused_slices} (GPUs that could change: {plan.gpus}, in classes: {plan.classes})",
        markup=False,
    )
    if plan.message:
        console.print(plan.message, markup=False)
    _render_solve(console, plan.solve)
    if not plan.changes:
        why = "the free instances serve the demand" if plan.outcome.met else "no change serves more of the demand"
        console.print(f"nothing to reconfigure: {why}", markup=False)
    else:
        for change in plan.changes:
            console.print(
                f"{change.node}/{change.gpu}: {_instances(change.before)} -> {_instances(change.after)}", markup=False
            )
        held = sorted({holder for change in plan.changes for holder in change.holders})
        if held:
            console.print(
                f"pods on reconfigured GPUs: {', '.join(held)}; the plan keeps their instances, but "
                "mig-manager re-creates every instance of a GPU it reconfigures: drain them before labelling",
                markup=False,
            )
        console.print("mig-parted config:", markup=False)
        console.print(yaml.safe_dump(plan.mig_parted, sort_keys=False, default_flow_style=None).rstrip(), markup=False)
        for node, name in plan.labels.items():
            console.print(f"kubectl label node {node} nvidia.com/mig.config={name} --overwrite", markup=False)
        _render_resources(console, plan)
    _render_comparison(console, plan)


def _render_solve(console: Console, report: SolveReport) -> None:
    proven = "proven optimal" if report.optimal else "NOT proven optimal"
    console.print(f"solver {report.status} ({proven})", markup=False)
    table = new_table("level", "status", "objective", "bound", "gap")
    for level in report.levels:
        value = "-" if level.objective is None else f"{level.objective:g}"
        bound = "-" if level.best_bound is None else f"{level.best_bound:g}"
        gap = "-" if level.gap is None else f"{100 * level.gap:.3g}%"
        table.add_row(level.name, level.status, value, bound, gap)
    console.print(table)


def _render_resources(console: Console, plan: MigPlan) -> None:
    for node in plan.resources:
        console.print(f"advertised on {node.node} (runs {node.strategy}): before {_counts(node.before)}", markup=False)
        console.print(f"  after, mixed strategy: {_counts(node.mixed)}", markup=False)
        single = _counts(node.single) if node.single is not None else f"not possible: {node.single_problem}"
        console.print(f"  after, single strategy: {single}", markup=False)


def _render_comparison(console: Console, plan: MigPlan) -> None:
    table = new_table("plan", *plan.demand, "met", "GPUs reconfigured", "unused slices")
    for row in plan.comparison:
        served = [f"{row.outcome.served[name]}/{count}" for name, count in plan.demand.items()]
        table.add_row(
            row.plan,
            *served,
            "yes" if row.outcome.met else "no",
            str(row.outcome.reconfigured),
            str(row.outcome.unused_slices),
        )
    console.print(table)
