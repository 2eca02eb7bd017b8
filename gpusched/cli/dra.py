"""DRA commands: `slices` (what a driver would publish for the model) and `dra` (allocate claims, or say why not)."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console

from ..actions.apply import ApplyReport, apply_objects
from ..errors import InputError
from ..planner.dra.allocator import allocated_devices
from ..planner.dra.objects import objects_from, read_all
from ..planner.dra.run import DraReport, run_dra
from ..planner.dra.slices import cluster_slices, driver_classes
from ..planner.scheduler.framework import NEWEST as NEWEST_RELEASE
from ..planner.scheduler.predict import parse_version, server_release
from ..scenarios import load_cluster
from ..scenarios.live import fetch_dra, fetch_version
from .common import (
    DEFAULT_DRIVER,
    ClusterArg,
    ClusterOpt,
    ContextOpt,
    DriverOpt,
    JsonFlag,
    app,
    cluster_source,
    emit_json,
    live,
    names,
    object_name,
    run,
    shape,
    show,
    usage,
)


class KubeList(BaseModel):
    """A Kubernetes List (`kubectl apply -f` takes it): the objects as the API server stores them."""

    apiVersion: str = "v1"
    kind: str = "List"
    items: list[dict[str, Any]]


@names(lambda listed: [object_name(item["kind"].lower(), item["metadata"]["name"]) for item in listed["items"]])
@shape(KubeList | ApplyReport)
@app.command("slices")
def slices_command(
    cluster: ClusterArg = None,
    driver: DriverOpt = DEFAULT_DRIVER,
    classes: Annotated[bool, typer.Option("--classes", help="also print the driver's DeviceClasses")] = False,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply", help="publish them with server-side apply (field manager gpusched); a dry run unless --yes"
        ),
    ] = False,
    kubeconfig: Annotated[
        str | None,
        typer.Option(
            "--kubeconfig",
            metavar="FILE",
            help="--apply: the cluster to publish to (default under `kubectl gpusched`: kubectl's)",
        ),
    ] = None,
    context: ContextOpt = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="--apply: write for real (default: dryRun=All, nothing stored)")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """The ResourceSlices (resource.k8s.io/v1) a DRA driver would publish for the cluster, as a List (-o yaml for
    YAML): `kubectl apply -f` them."""

    def body() -> int:
        server = live(kubeconfig) if apply else kubeconfig
        _check_apply(apply, server, context, yes)
        model = load_cluster(cluster_source(cluster, None if cluster else live(None), None))
        objects = [*(driver_classes(driver) if classes else []), *cluster_slices(model, driver)]
        wire = [obj.wire() for obj in objects]
        if apply:
            show(apply_objects(str(server), context, wire, write=yes), as_json, render_apply)
        else:
            emit_json(KubeList(items=wire))
        return 0

    run(body)


def _check_apply(apply: bool, kubeconfig: str | None, context: str | None, yes: bool) -> None:
    """--kubeconfig, --context and --yes belong to --apply, which needs a kubeconfig."""
    if not apply:
        given = [
            name for name, value in (("--kubeconfig", kubeconfig), ("--context", context), ("--yes", yes)) if value
        ]
        if given:
            raise usage(f"{', '.join(given)}: only with --apply")
    elif not kubeconfig:
        raise usage("--apply needs --kubeconfig PATH: the cluster to publish to")


def render_apply(console: Console, report: ApplyReport) -> None:
    mode = "dry run (dryRun=All): nothing stored; --yes writes" if report.dry_run else "applied"
    console.print(f"server-side apply to {report.server} (field manager {report.field_manager}), {mode}", markup=False)
    done = {"create": "created", "update": "updated", "unchanged": "unchanged"}
    for change in report.changes:
        action = change.action if report.dry_run else done[change.action]
        fields = f": {', '.join(change.changed)}" if change.changed else ""
        console.print(f"{action} {change.kind} {change.name}{fields}", markup=False)
    counts: Counter[str] = Counter(change.action for change in report.changes)
    words = ("to create", "to update", "unchanged") if report.dry_run else ("created", "updated", "unchanged")
    console.print(", ".join(f"{counts[a]} {w}" for a, w in zip(done, words, strict=True)), markup=False)


@names(
    lambda report: [object_name("resourceclaim", claim["claim"]) for claim in report["claims"] if claim["allocated"]]
)
@shape(DraReport)
@app.command("dra")
def dra_command(
    objects: Annotated[
        list[str] | None,
        typer.Option(
            "--objects",
            metavar="FILE",
            help="DeviceClasses, claims, templates, slices, pods (kubectl -o json|yaml; - for stdin), or a built-in set",
        ),
    ] = None,
    cluster: ClusterOpt = None,
    given_kubeconfig: Annotated[
        str | None,
        typer.Option(
            "--kubeconfig",
            metavar="FILE",
            help="read the DRA objects and the Pending pods with claims from this cluster (default under `kubectl gpusched`: kubectl's)",
        ),
    ] = None,
    context: ContextOpt = None,
    driver: DriverOpt = DEFAULT_DRIVER,
    k8s_version: Annotated[
        str | None,
        typer.Option(
            "--k8s-version",
            metavar="VERSION",
            help="1.34 to 1.37 (features and wording); default: the server's release with --kubeconfig, else 1.37",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Allocate ResourceClaims as kube-scheduler's DRA allocator would: per claim the node and devices, or why not."""

    def body() -> int:
        version = parse_version(k8s_version or NEWEST_RELEASE, "--k8s-version")
        kubeconfig = live(given_kubeconfig, cluster)
        if not objects and not kubeconfig:
            raise usage("give the DRA objects: --objects FILE (or a built-in set), or --kubeconfig to read a cluster's")
        if context and not kubeconfig:
            raise usage("--context goes with --kubeconfig")
        if kubeconfig and cluster:
            raise usage(
                "--kubeconfig reads the cluster's own ResourceSlices: drop --cluster (its slices would be added twice)"
            )
        documents = fetch_dra(kubeconfig, context) if kubeconfig else []
        if kubeconfig and not k8s_version:
            try:
                version = server_release(fetch_version(kubeconfig, context), kubeconfig)
            except InputError as error:
                raise usage(f"{error}; pass --k8s-version to predict as one of them") from None
        documents += [(source, read_all(source)) for source in objects or []]
        model = load_cluster(cluster) if cluster else None
        report = run_dra(model, objects_from(documents, version=version), driver, version)
        show(report, as_json, render_dra)
        return 0 if report.all_allocated else 1

    run(body)


def render_dra(console: Console, report: DraReport) -> None:
    for claim in report.claims:
        if claim.allocated:
            line = f"claim {claim.claim}: allocated on {claim.node}: {', '.join(allocated_devices(claim.allocation or {}))}"
        else:
            line = f"claim {claim.claim}: {claim.reason}: {claim.diagnosis}"
        console.print(line, markup=False)
