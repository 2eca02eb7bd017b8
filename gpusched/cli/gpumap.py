"""`gpusched map`: every GPU's state node by node, as text, --json, or a PNG (--out)."""

from __future__ import annotations

from itertools import groupby
from typing import Annotated

import typer
from rich.console import Console

from ..limits import MAX_POD_GPUS
from ..planner.gpumap import ClusterMap, MapGpu, Placement, cluster_map
from ..planner.state import ClusterState
from ..scenarios import load_cluster
from .common import (
    ClusterArg,
    ContextOpt,
    JsonFlag,
    KubeconfigOpt,
    app,
    cluster_source,
    names,
    new_table,
    object_name,
    run,
    shape,
    show,
)
from .figures import figure_target, save_figure, wrote

SYMBOLS = {"free": ".", "stranded": "s", "busy": "#", "mig": "m", "time-sliced": "t"}


@names(lambda drawn: [object_name("node", node) for node in dict.fromkeys(gpu["node"] for gpu in drawn["gpus"])])
@shape(ClusterMap)
@app.command("map")
def map_command(
    cluster: ClusterArg = None,
    out_path: Annotated[
        str | None, typer.Option("--output-file", metavar="FILE", help="also draw the map (.png, .svg or .pdf)")
    ] = None,
    size: Annotated[
        int,
        typer.Option(
            "--size", metavar="GPUS", min=1, max=MAX_POD_GPUS, help="the job size a free GPU must be able to join"
        ),
    ] = 8,
    placement: Annotated[
        Placement,
        typer.Option("--placement", help="island (a pod inside one NVLink island) | count (any GPUs of a node)"),
    ] = "island",
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Every GPU's state: free, stranded for --size, busy, MIG instances, time-sliced replicas; islands kept apart."""

    def body() -> int:
        target = figure_target("--output-file", out_path)
        model = load_cluster(cluster_source(cluster, kubeconfig, context))
        drawn = cluster_map(ClusterState.from_cluster(model), size, placement)
        save_figure("--output-file", target, "map_figure", drawn)
        show(drawn, as_json, render_map)
        wrote(target, as_json)
        return 0

    run(body)


def _islands(gpus: list[MapGpu]) -> str:
    """One symbol per GPU, a space between NVLink islands."""
    ordered = sorted(gpus, key=lambda gpu: (gpu.island, gpu.index))
    return " ".join("".join(SYMBOLS[gpu.state] for gpu in island) for _, island in groupby(ordered, lambda g: g.island))


def _shared(gpus: list[MapGpu]) -> str:
    """What the symbols m and t hide: replicas in use per time-sliced GPU, instances in use per MIG GPU."""
    replicas = [f"{len(gpu.holders)}/{gpu.replicas}" for gpu in gpus if gpu.state == "time-sliced"]
    instances = [
        f"GPU {gpu.index}: {sum(1 for i in gpu.instances if i.holder)}/{len(gpu.instances)}"
        for gpu in gpus
        if gpu.state == "mig"
    ]
    parts = []
    if replicas:
        parts.append(f"replicas used {' '.join(replicas)}")
    if instances:
        parts.append(f"MIG instances used {', '.join(instances)}")
    return "; ".join(parts)


def _label(state: str) -> str:
    return "MIG" if state == "mig" else state


def render_map(console: Console, drawn: ClusterMap) -> None:
    how = "inside one NVLink island" if drawn.placement == "island" else "by count on one node"
    counts = ", ".join(f"{count} {_label(state)}" for state, count in drawn.counts.items())
    small = sum(1 for node in drawn.nodes if not node.holds_size and node.free)
    where = "island" if drawn.placement == "island" else "node"
    note = f"; {small} node(s) with no {where} of {drawn.size} GPUs (their free GPUs are not stranded)" if small else ""
    console.print(f"GPUs for {drawn.size}-GPU pods {how}: {counts}{note}", markup=False)
    table = new_table("node", "GPUs by NVLink island", "shared GPUs in use")
    for node, gpus in groupby(drawn.gpus, key=lambda gpu: gpu.node):
        cells = list(gpus)
        table.add_row(node, _islands(cells), _shared(cells))
    console.print(table)
    key = "  ".join(f"{symbol} {_label(state)}" for state, symbol in SYMBOLS.items())
    console.print(f"key: {key}; a space between NVLink islands", markup=False)
