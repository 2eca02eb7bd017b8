"""`gpusched import`: the cluster file built from kubectl dumps (or a live cluster), with where each fact came from;
`gpusched init`: a commented template to write one by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
import yaml
from pydantic import BaseModel
from rich.console import Console

from ..errors import InputError
from ..models.reference import template
from ..scenarios.importer import ImportReport, build_cluster, read_inputs
from ..scenarios.importer.live import read_live
from .common import (
    ContextOpt,
    JsonFlag,
    app,
    console,
    emit_json,
    emit_target,
    err,
    live,
    names,
    new_table,
    object_name,
    run,
    shape,
    usage,
    write_output,
)


@names(lambda report: [object_name("node", node["node"]) for node in report["nodes"]])
@shape(ImportReport)
@app.command("import")
def import_command(
    nodes: Annotated[
        str | None, typer.Option("--nodes", metavar="FILE", help="kubectl get nodes -o json (- for stdin)")
    ] = None,
    pods: Annotated[
        str | None, typer.Option("--pods", metavar="FILE", help="kubectl get pods -A -o json: who holds which GPU")
    ] = None,
    objects: Annotated[
        list[str] | None,
        typer.Option(
            "--objects",
            metavar="FILE",
            help="DRA objects: kubectl get resourceslices,resourceclaims -A -o json (repeatable)",
        ),
    ] = None,
    topology: Annotated[
        list[str] | None,
        typer.Option(
            "--topology",
            metavar="NODE=FILE",
            help="`nvidia-smi topo -m`, `nvidia-smi -q -x`, or `nvidia-smi mig -lgi` / `-lci` captured on NODE (repeatable)",
        ),
    ] = None,
    kubeconfig: Annotated[
        str | None,
        typer.Option(
            "--kubeconfig",
            metavar="FILE",
            help="read Nodes, Pods and DRA objects from this cluster (default under `kubectl gpusched`: kubectl's)",
        ),
    ] = None,
    context: ContextOpt = None,
    output_file: Annotated[
        str | None,
        typer.Option(
            "--output-file", metavar="FILE|-", help="write the cluster file here (.json: JSON, else YAML; - for stdout)"
        ),
    ] = None,
    pods_out: Annotated[
        str | None,
        typer.Option("--emit-pods", metavar="FILE|-", help="write the Pending GPU pods here as a pods file"),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Build the cluster model from what the cluster publishes: GFD labels, allocatable, pods, DRA slices, nvidia-smi."""

    def body() -> int:
        emit_target("--output-file", output_file, as_json)
        emit_target("--emit-pods", pods_out, as_json)
        if output_file == "-" and pods_out == "-":
            raise usage("--output-file - and --emit-pods - both want stdout: give one of them a FILE")
        server = live(kubeconfig, nodes)
        if server and (nodes or pods or objects):
            raise usage("--kubeconfig reads the cluster itself: drop --nodes, --pods and --objects")
        if server:
            inputs = read_live(server, context, topology or [])
        elif nodes:
            inputs = read_inputs(nodes, pods, objects or [], topology or [])
        else:
            raise usage("give --nodes (kubectl get nodes -o json, - for stdin) or --kubeconfig")
        imported = build_cluster(inputs)
        report = imported.report
        outputs = [
            (target, _text(target, model))
            for target, model in ((output_file, imported.cluster), (pods_out, imported.pending))
            if target
        ]
        if outputs:
            write_output(*outputs[0], *outputs[1:])
        report.output = output_file
        if as_json:
            emit_json(report)
        else:
            render(console(stderr="-" in (output_file, pods_out)), report)
        return 1 if report.errors else 0

    run(body)


def _text(target: str, model: BaseModel) -> str:
    """JSON for a .json name, YAML otherwise; the files are written together, only after the import succeeded."""
    data = model.model_dump(mode="json", exclude_defaults=True)
    return json.dumps(data, indent=2) + "\n" if target.endswith(".json") else yaml.safe_dump(data, sort_keys=False)


def render(console: Console, report: ImportReport) -> None:
    written = f" -> {report.output}" if report.output else " (not written: give --output-file FILE)"
    console.print(
        f"imported {len(report.nodes)} nodes ({report.gpu_nodes} with GPUs, {report.gpus} GPUs), "
        f"{report.holders} pods holding GPUs, {report.nvlink_domains} NVLink domain(s), "
        f"{len(report.pending)} Pending GPU pod(s){written}",
        markup=False,
    )
    table = new_table("node", "GPUs", "model", "GiB", "sharing", "held", "islands", "from")
    for node in report.nodes:
        table.add_row(
            node.node, str(node.gpus), node.model or "-", "-" if node.memory_gib is None else f"{node.memory_gib:g}",
            node.sharing, str(node.holders), _islands(node.islands) if node.gpus else "-",
            _short(node.sources.get("islands", "-")) if node.gpus > 1 else "-",
        )  # fmt: skip
    console.print(table)
    for line in report.summary:
        console.print(line, markup=False)


def _islands(islands: list[list[int]]) -> str:
    if not islands:
        return "none"
    return " ".join(f"[{i[0]}-{i[-1]}]" if i == list(range(i[0], i[-1] + 1)) else str(i) for i in islands)


def _short(source: str) -> str:
    """The kind of source without its details: `catalogue: AWS p4d.24xlarge`, `nvidia-smi topo -m`."""
    return source.split(" (")[0]


@app.command("init")
def init_command(
    target: Annotated[
        str, typer.Argument(metavar="FILE", help="where to write the template (- for stdout)", show_default=False)
    ] = "-",
    force: Annotated[bool, typer.Option("--force", help="replace FILE if it exists")] = False,
) -> None:
    """Write a commented scenario to start from (a cluster, its running pods, a budget, pending pods and jobs),
    to describe a cluster by hand; `gpusched import` builds one from kubectl instead."""

    def body() -> int:
        if target != "-" and Path(target).exists() and not force:
            raise InputError(target, "exists: give another FILE, or --force to replace it")
        write_output(target, template())
        if target != "-":
            err.print(
                f"wrote {target}: edit it, then `gpusched frag {target}` or `gpusched plan {target}`", markup=False
            )
        return 0

    run(body)
