"""explain: why a GPU pod or job is Pending, and the one change that schedules it."""

from __future__ import annotations

from typing import Annotated

import typer
import yaml
from rich.console import Console

from ..models.workload import Job
from ..planner.explain import (
    Explanation,
    check_claim,
    claim_for,
    explain_claim,
    explain_job,
    explain_pod,
)
from ..planner.explain.target import pick_pending, pod_named, running_node
from ..planner.place import DEFAULT_GRADIENT_GB
from ..scenarios import load_cluster, load_pending, load_scenario
from .common import (
    DEFAULT_DRIVER,
    DEFAULT_WORKERS,
    ClusterOpt,
    ContextOpt,
    DriverOpt,
    JsonFlag,
    KubeconfigOpt,
    NamespaceOpt,
    Seed,
    SolverWorkers,
    TimeLimit,
    app,
    cluster_source,
    emit_json,
    emit_target,
    finite,
    live,
    names,
    namespace_for,
    object_name,
    out,
    run,
    shape,
    show,
    solver_config,
    usage,
    write_output,
)


def _write_claim(claim: dict, target: str) -> None:
    text = yaml.safe_dump(claim, sort_keys=False, width=1000)
    write_output(target, text)


@names(lambda result: [object_name("node", result["node"])] if result["fits"] and result["node"] else [])
@shape(Explanation)
@app.command("explain")
def explain_command(
    target: Annotated[
        str,
        typer.Argument(metavar="POD", help="the Pending pod or job, by name ([NAMESPACE/]NAME; or a ResourceClaim's)"),
    ],
    cluster: ClusterOpt = None,
    namespace: NamespaceOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    pods: Annotated[
        str | None,
        typer.Option(
            "--pods", metavar="FILE", help="pods file holding the target (default: the cluster's Pending pods)"
        ),
    ] = None,
    jobs: Annotated[
        str | None,
        typer.Option("--jobs", metavar="FILE", help="jobs file holding the target (default: the scenario's jobs)"),
    ] = None,
    emit_claim: Annotated[
        str | None,
        typer.Option(
            "--emit-claim",
            metavar="FILE|-",
            help="write a DRA ResourceClaim for the pod's needs to FILE (- for stdout)",
        ),
    ] = None,
    objects: Annotated[
        list[str] | None,
        typer.Option(
            "--objects",
            metavar="FILE",
            help="DRA objects (as for `gpusched dra`): explain a ResourceClaim by namespace/name",
        ),
    ] = None,
    driver: DriverOpt = DEFAULT_DRIVER,
    gradient_gb: Annotated[
        float,
        typer.Option(
            "--gradient-gb", metavar="GB", parser=finite(0, 1e9), help="gradient size for the all-reduce cost"
        ),
    ] = DEFAULT_GRADIENT_GB,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    seed: Seed = 0,
    as_json: JsonFlag = False,
) -> None:
    """Why a pod or job is Pending, in the scheduler's words and the hardware's, and the one change that schedules it."""

    def body() -> int:
        config = solver_config(time_limit, workers, seed)
        if emit_claim is not None:
            emit_target("--emit-claim", emit_claim, False)  # `-` with --json: the claim alone is printed
        if objects:
            claim = _claim(cluster, objects, driver, target)
            if claim is not None:
                show(claim, as_json, render)
                return 0 if claim.fits else 1
        source = cluster_source(cluster, kubeconfig, context, "-f/--cluster")
        scenario = load_scenario(source)
        model = scenario.cluster
        pending = load_pending(scenario, pods, jobs)
        pending_pods, pending_jobs = pending[0].pods, pending[1].jobs
        space = namespace_for(namespace, live(kubeconfig, cluster), context)
        known = [p.name for p in pending_pods] + [j.name for j in pending_jobs] + [r.name for r in model.running_pods()]
        wanted = pod_named(target, space, known)
        node = running_node(model, pending_pods, pending_jobs, wanted)
        if node is not None:
            result = Explanation(target=wanted, kind="pod", fits=True, running=True, node=node)
            show(result, as_json, render)
            return 0
        item = pick_pending(pending_pods, pending_jobs, wanted, pods or jobs or source)
        if isinstance(item, Job):
            if emit_claim:
                raise usage("--emit-claim writes a claim for one pod; a job's pods each need their own")
            result = explain_job(model, pending_jobs, wanted)
        else:
            emitted = claim_for(item.name, item, item.gpus, driver) if emit_claim else None
            result = explain_pod(model, item, config, gradient_gb)
            if emitted is not None and emit_claim:
                result.claim = check_claim(model, emitted, driver)
                _write_claim(emitted, emit_claim)
                if emit_claim == "-":
                    return 0 if result.fits else 1
        if as_json:
            emit_json(result)
        else:
            render(out, result, emit_claim)
        return 0 if result.fits else 1

    run(body)


def _claim(cluster: str | None, objects: list[str], driver: str, target: str) -> Explanation | None:
    """The claim named `target` among the objects, explained; None when there is none (the target is a pod)."""
    from ..planner.dra.objects import (
        load_objects,  # the CEL library loads only when claims are read
    )

    return explain_claim(load_cluster(cluster) if cluster else None, load_objects(objects), driver, target)


def render(console: Console, result: Explanation, claim_file: str | None = None) -> None:
    def print_(text: str = "") -> None:
        console.print(text, markup=False)

    if result.running:
        print_(f"{result.target} is running on {result.node}: it is not Pending")
        return
    if result.kind == "claim":
        print_(
            f"claim {result.target} allocates on {result.node}"
            if result.fits
            else f"claim {result.target} does not allocate"
        )
    elif result.kind == "job":
        starts = result.gang.starts_at if result.gang else None
        print_(
            f"{result.target} starts at t={starts:g}"
            if starts is not None
            else f"{result.target} never starts (gang simulator, default scheduler)"
        )
    elif result.fits:
        print_(f"{result.target} fits on {result.node} (gpusched's hardware view, as the cluster is now)")
    else:
        print_(f"{result.target} is Pending (gpusched's hardware view, as the cluster is now)")
    if result.scheduler is not None:
        view = result.scheduler
        if view.node:
            print_(f"kube-scheduler (extended resources) would bind it to {view.node}")
            for warning in view.warnings:
                print_(f"  ! {warning}")
            if view.fix:
                print_(f"  fix: {view.fix}")
        else:
            print_(f"kube-scheduler: {view.message}")
    if result.reasons:
        print_("why, in hardware terms:")
        for reason in result.reasons:
            print_(f"  {reason.reason} ({len(reason.nodes)}): {reason.hardware}")
    if result.capacity is not None and not result.fits:
        print_(f"GPUs: {result.capacity.summary}")
        rows = result.capacity.sizes
        if rows:
            by_count = ", ".join(f"{row.size}: {row.pods_by_count}" for row in rows)
            in_island = ", ".join(str(row.pods_in_island) for row in rows)
            print_(
                f"  pods per job size that fit the suitable nodes' free GPUs: {by_count} (inside one NVLink island: {in_island})"
            )
    if result.gang is not None:
        print_(f"gang: {result.gang.summary}")
    if result.claim is not None:
        claim = result.claim
        where = (
            f"allocates on {claim.node}: {', '.join(claim.devices)}"
            if claim.allocated
            else f"{claim.reason}: {claim.diagnosis}"
        )
        written = f" (written to {claim_file})" if claim_file else ""
        print_(f"DRA claim {claim.claim}{written}: {where}")
    _changes(print_, result)


def _changes(print_, result: Explanation) -> None:
    if result.changes:
        first, *others = result.changes
        print_("the one change that schedules it:")
        _change(print_, first, "  ")
        if others:
            print_("other changes, by cost:")
            for change in others:
                _change(print_, change, "  - ")
    elif not result.fits:
        print_("no single change found that schedules it")
    if result.will_not_help:
        print_("what will not help:")
        for item in result.will_not_help:
            print_(f"  - {item.change}: {item.why}")


def _change(print_, change, prefix: str) -> None:
    print_(f"{prefix}{change.summary}")
    indent = " " * len(prefix) + "  "
    for detail in change.details:
        print_(f"{indent}{detail}")
    if change.lands_on:
        print_(f"{indent}then it runs on {change.lands_on}")
