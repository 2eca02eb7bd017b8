"""`gpusched scale up` (the cheapest nodes to add for a backlog) and `scale down` (the nodes that can go), beside
Karpenter's and Cluster Autoscaler's own rules."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from ..errors import InputError
from ..planner.optimize.scale import ScaleDownReport, ScaleUpReport, scale_down, scale_up
from ..planner.optimize.scale.nodepool import DEFAULT_NODE_CLASS, nodepool
from ..planner.pending import pending_jobs
from ..scenarios import load_cluster, load_pending
from ..scenarios.offers import load_offers
from .common import (
    DEFAULT_WORKERS,
    JsonFlag,
    Seed,
    SolverWorkers,
    TimeLimit,
    app,
    emit_json,
    emit_target,
    names,
    new_table,
    object_name,
    run,
    shape,
    show,
    solver_config,
    usage,
    write_output,
)
from .plan import render_solve

scale_app = typer.Typer(
    help="Node autoscaling, planned: the cheapest nodes to add for a backlog, the nodes that can go.",
    no_args_is_help=True,
)
app.add_typer(scale_app, name="scale")

ClusterFile = Annotated[  # scale reads no live cluster (ClusterArg's default)
    str, typer.Argument(metavar="CLUSTER", help="cluster or scenario file, built-in scenario, kubectl dump folder")
]
OffersOpt = Annotated[
    str, typer.Option("--offers", metavar="FILE", help="the instance types the NodePool may launch, with prices")
]


@names(lambda report: [object_name("node", node["name"]) for node in report["new_nodes"]])
@shape(ScaleUpReport)
@scale_app.command("up")
def up_command(
    cluster: ClusterFile,
    pending: Annotated[str, typer.Argument(metavar="PENDING", help="pending pods and/or jobs (file or scenario)")],
    offers: OffersOpt,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    seed: Seed = 0,
    emit: Annotated[
        str | None,
        typer.Option(
            "--emit", metavar="karpenter", help="write an object asking for the plan's nodes: karpenter (a NodePool)"
        ),
    ] = None,
    output_file: Annotated[
        str, typer.Option("--output-file", metavar="FILE|-", help="where --emit writes (- for stdout)")
    ] = "-",
    node_class: Annotated[
        str, typer.Option("--node-class", metavar="GROUP/KIND/NAME", help="--emit karpenter: the nodeClassRef")
    ] = DEFAULT_NODE_CLASS,
    as_json: JsonFlag = False,
) -> None:
    """The cheapest nodes to add so that every pending pod and gang fits, existing free capacity used first
    (CP-SAT: everything placed, then cost, then node count; proven optimal or bounded), beside Karpenter's
    provisioning and Cluster Autoscaler's expanders. Exit 0 when every job fits, 1 when some cannot."""

    def body() -> int:
        config = solver_config(time_limit, workers, seed)
        if emit is not None and emit != "karpenter":
            raise usage(f"--emit: expected karpenter, got {emit!r}")
        console = emit_target("--output-file", output_file, as_json) if emit else None
        pods, jobs = load_pending(pending)
        try:
            backlog = pending_jobs(pods.pods, jobs.jobs)
        except InputError as error:
            raise type(error)(pending, str(error)) from None
        model = load_cluster(cluster)
        catalogue = load_offers(offers)
        report = scale_up(model, backlog, catalogue, config)
        if emit:
            assert console is not None
            emitted = nodepool(report, catalogue, model, node_class, "--node-class")
            write_output(output_file, emitted.text())
            if as_json:
                emit_json(report)
            else:
                render_up(console, report)
                if output_file != "-":
                    console.print(f"wrote the NodePool {catalogue.nodepool} to {output_file}", markup=False)
        else:
            show(report, as_json, render_up)
        return 1 if report.unplaced else 0

    run(body)


def render_up(console: Console, report: ScaleUpReport) -> None:
    if report.solve is not None:
        render_solve(console, report.solve)
    bound = "-" if report.bound_per_hour is None else f"{report.bound_per_hour:g}"
    gap = "-" if report.gap is None else f"{100 * report.gap:.1f}%"
    console.print(
        f"plan: {report.status}, {report.cost_per_hour:g} per hour for {len(report.new_nodes)} new node(s) "
        f"(bound {bound}, gap {gap}; kept {report.kept}); {report.pending_pods} pending pods in {report.shapes} "
        f"shapes over {report.offerings} offerings",
        markup=False,
    )
    for placed in report.existing:
        where = f"MIG {placed.mig}" if placed.mig else f"GPUs {placed.gpus}"
        console.print(f"{placed.pod} -> {placed.node} {where} (existing)", markup=False)
    nodes = new_table("new node", "offering", "per hour", "MIG", "pods")
    for node in report.new_nodes:
        mig = ", ".join(f"{n}x{profile}" for profile, n in node.mig.items()) or "-"
        nodes.add_row(node.name, node.offering, f"{node.per_hour:g}", mig, ", ".join(node.pods))
    if report.new_nodes:
        console.print(nodes)
    if report.unplaced:
        console.print(f"cannot run on any offering: {', '.join(report.unplaced)}", markup=False)
    compare = new_table("rule", "per hour", "nodes", "over the plan", "left pending")
    compare.add_row(
        "gpusched",
        f"{report.cost_per_hour:g}",
        str(len(report.new_nodes)),
        "-",
        str(len(report.unplaced)),
    )
    for other in report.baselines:
        extra = other.cost_per_hour - report.cost_per_hour
        share = f"+{extra:g} ({100 * extra / report.cost_per_hour:.0f}%)" if report.cost_per_hour else f"+{extra:g}"
        compare.add_row(
            other.name,
            f"{other.cost_per_hour:g}",
            str(other.nodes),
            share,
            str(len(other.unplaced)),
        )
    console.print(compare)


@names(lambda report: [object_name("node", removal["node"]) for removal in report["removals"]])
@shape(ScaleDownReport)
@scale_app.command("down")
def down_command(
    cluster: ClusterFile,
    offers: Annotated[
        str | None,
        typer.Option("--offers", metavar="FILE", help="prices (and cheaper offerings to replace nodes by)"),
    ] = None,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    seed: Seed = 0,
    as_json: JsonFlag = False,
) -> None:
    """Nodes to remove (their pods moved to the nodes kept) or replace by a cheaper offering, with the fewest and
    least important evictions: disruption budgets, karpenter.sh/do-not-disrupt, gangs whole, pods that cannot move
    stay; savings per hour (with --offers) and a bound; beside Karpenter's consolidation and Cluster Autoscaler's
    utilisation-threshold scale-down. Deleting the nodes is left to you or the autoscaler."""

    def body() -> int:
        config = solver_config(time_limit, workers, seed)
        model = load_cluster(cluster)
        catalogue = load_offers(offers) if offers else None
        show(scale_down(model, catalogue, config), as_json, render_down)
        return 0

    run(body)


def render_down(console: Console, report: ScaleDownReport) -> None:
    bound = "-" if report.bound_per_hour is None else f"{report.bound_per_hour:g}"
    gap = "-" if report.gap is None else f"{100 * report.gap:.1f}%"
    console.print(
        f"plan: {report.status}, saves {report.saves_per_hour:g} per hour removing {len(report.removals)} node(s) "
        f"(bound {bound}, gap {gap}; order {report.kept})",
        markup=False,
    )
    table = new_table("node", "action", "saves per hour", "evicted")
    for removal in report.removals:
        action = f"replace by {removal.replacement}" if removal.replacement else removal.action
        table.add_row(removal.node, action, f"{removal.saves_per_hour:g}", ", ".join(removal.evicted) or "-")
    if report.removals:
        console.print(table)
    for move in report.moves:
        where = f"MIG {move.mig}" if move.mig else f"GPUs {move.gpus}"
        console.print(f"{move.pod} -> {move.node} {where}", markup=False)
    for node, why in report.kept_by_rule.items():
        console.print(f"{node} stays: {why}", markup=False)
    compare = new_table("rule", "saves per hour", "nodes", "evictions")
    evictions = sum(len(r.evicted) for r in report.removals)
    compare.add_row("gpusched", f"{report.saves_per_hour:g}", str(len(report.removals)), str(evictions))
    for other in report.baselines:
        compare.add_row(
            other.name,
            f"{other.saves_per_hour:g}",
            str(len(other.removed)),
            str(other.evictions),
        )
    console.print(compare)
