"""The core commands: scenarios, schema, advertised, place, frag, allreduce, gang, k8s."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel

from ..models.cluster import Cluster
from ..models.dra import ClaimList
from ..models.graph import build_graph
from ..models.workload import JobList, PodList
from ..planner.allreduce import ring_allreduce
from ..planner.emit import DEFAULT_GPU_WEIGHT, kueue_setup, scheduler_config
from ..planner.frag import fragmentation
from ..planner.gang import simulate
from ..planner.place import DEFAULT_GRADIENT_GB, place
from ..planner.scheduler.framework import NEWEST as NEWEST_RELEASE
from ..planner.scheduler.live import predict_live
from ..planner.scheduler.predict import predict_files
from ..planner.state import ClusterState, advertised
from ..scenarios import (
    load_cluster,
    load_jobs,
    load_pods,
    load_scenario,
    scenario_names,
)
from . import render
from .common import (
    POLICY_CHOICES,
    VIEW_CHOICES,
    ClusterArg,
    JsonFlag,
    SizesOpt,
    app,
    choice,
    emit_json,
    emit_target,
    finite,
    run,
    show,
    show_emitted,
)
from .common import (
    sizes as parse_sizes,
)
from .figures import png_target, save_figure, wrote


@app.command()
def scenarios(as_json: JsonFlag = False) -> None:
    """List the built-in scenarios (every command takes one by name in place of a file)."""

    def body() -> int:
        found = {name: load_scenario(name) for name in scenario_names()}
        rows = [
            {
                "name": name,
                "description": s.description,
                "nodes": len(s.cluster.nodes),
                "pods": len(s.pods.pods) if s.pods else 0,
                "jobs": len(s.jobs.jobs) if s.jobs else 0,
            }
            for name, s in found.items()
        ]
        show(rows, as_json, render.scenarios)
        return 0

    run(body)


SCHEMAS: dict[str, type[BaseModel]] = {"cluster": Cluster, "pods": PodList, "jobs": JobList, "claims": ClaimList}


@app.command()
def schema(kind: Annotated[str, typer.Argument(help="cluster | pods | jobs | claims")]) -> None:
    """Print the JSON Schema of an input file."""

    def body() -> int:
        if kind not in SCHEMAS:
            raise ValueError(f"unknown schema {kind!r}: expected one of {', '.join(SCHEMAS)}")
        emit_json(SCHEMAS[kind].model_json_schema(by_alias=True))
        return 0

    run(body)


@app.command("advertised")
def advertised_command(cluster: ClusterArg, as_json: JsonFlag = False) -> None:
    """What the device plugin reports per node: the integers kube-scheduler sees."""

    def body() -> int:
        state = ClusterState.from_cluster(load_cluster(cluster))
        counts = {node.name: advertised(node) for node in state.nodes}
        show(counts, as_json, render.advertised)
        return 0

    run(body)


@app.command("place")
def place_command(
    cluster: ClusterArg,
    pods: Annotated[
        str | None, typer.Argument(help="pods file or scenario name (default: the scenario's pods)")
    ] = None,
    policy: Annotated[str, typer.Option(help="binpack | spread | topology")] = "binpack",
    view: Annotated[
        str, typer.Option(help="gpu (what the hardware allows) | extended (the scheduler's integers)")
    ] = "gpu",
    gpu_weight: Annotated[
        int | None,
        typer.Option(
            "--gpu-weight",
            min=0,
            max=1_000_000,
            help="score with NodeResourcesFit: nvidia.com/gpu at this weight, cpu and memory at 1",
        ),
    ] = None,
    gradient_gb: Annotated[
        float, typer.Option("--gradient-gb", parser=finite(0, 1e9), help="gradient size for the all-reduce bound")
    ] = DEFAULT_GRADIENT_GB,
    sizes: SizesOpt = "",
    emit_scheduler: Annotated[
        str | None,
        typer.Option(
            "--emit-scheduler-config",
            metavar="FILE|-",
            help="write the KubeSchedulerConfiguration whose profile scores as --view extended --gpu-weight "
            f"(default {DEFAULT_GPU_WEIGHT}) with this --policy does; - for stdout",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Place pods one after another with a policy and a view, then report fragmentation."""

    def body() -> int:
        choice("--policy", policy, POLICY_CHOICES)
        choice("--view", view, VIEW_CHOICES)
        console = emit_target("--emit-scheduler-config", emit_scheduler, as_json)
        model = load_cluster(cluster)
        pod_list = load_pods(pods or cluster)
        config = scheduler_config(model, policy, gpu_weight) if emit_scheduler else None
        report = place(model, pod_list.pods, view, policy, gpu_weight, gradient_gb, parse_sizes(sizes))  # type: ignore[arg-type]
        if config is None:
            show(report, as_json, render.placement)
        else:
            show_emitted(
                report,
                config,
                emit_scheduler,
                "scheduler_config",
                as_json,
                console,
                (render.placement, render.scheduler_config),
            )
        return 1 if report.pending else 0

    run(body)


@app.command("frag")
def frag_command(
    cluster: ClusterArg,
    sizes: SizesOpt = "",
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="also draw it as a PNG: free GPUs per node by NVLink island, stranded % per job size"
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Fragmentation per job size, largest free blocks, and what each MIG GPU could still offer."""

    def body() -> int:
        target = png_target("--plot", plot)
        report = fragmentation(ClusterState.from_cluster(load_cluster(cluster)), parse_sizes(sizes))
        save_figure("--plot", target, "frag_figure", report)
        show(report, as_json, render.frag)
        wrote(target, as_json)
        return 0

    run(body)


@app.command("allreduce")
def allreduce_command(
    cluster: ClusterArg,
    placements: Annotated[list[str], typer.Argument(help="GPU sets as NODE:GPUS, e.g. pcie-a:0,2 or dgx-a:0-7")],
    gradient_gb: Annotated[
        float, typer.Option("--gradient-gb", parser=finite(0, 1e9), help="gradient size in GB")
    ] = DEFAULT_GRADIENT_GB,
    as_json: JsonFlag = False,
) -> None:
    """The ring all-reduce bound 2(k-1)/k · gradient / slowest link, for GPU sets on the cluster."""

    def body() -> int:
        graph = build_graph(load_cluster(cluster))
        results = [ring_allreduce(graph, placement, gradient_gb) for placement in placements]
        show(results, as_json, render.allreduce)
        return 0

    run(body)


@app.command("gang")
def gang_command(
    cluster: ClusterArg,
    jobs: Annotated[
        str | None, typer.Argument(help="jobs file or scenario name (default: the scenario's jobs)")
    ] = None,
    mode: Annotated[str, typer.Option(help="pod (default scheduler) | gang (all or nothing)")] = "gang",
    timeout: Annotated[
        float, typer.Option(parser=finite(0, 1e9), help="gang mode: seconds a partial reservation may be held")
    ] = 0.0,
    policy: Annotated[str, typer.Option(help="binpack | spread | topology")] = "binpack",
    emit_kueue: Annotated[
        str | None,
        typer.Option(
            "--emit-kueue",
            metavar="FILE|-",
            help="write Kueue ResourceFlavors, a ClusterQueue sized from the cluster and a LocalQueue; - for stdout",
        ),
    ] = None,
    queue: Annotated[
        str, typer.Option("--queue", help="--emit-kueue: the ClusterQueue and LocalQueue name")
    ] = "training",
    namespace: Annotated[str, typer.Option("--namespace", help="--emit-kueue: the LocalQueue's namespace")] = "default",
    as_json: JsonFlag = False,
) -> None:
    """Simulate training jobs on a virtual clock: starts, finishes, idle reservations, deadlock."""

    def body() -> int:
        choice("--mode", mode, ("pod", "gang"))
        choice("--policy", policy, POLICY_CHOICES)
        console = emit_target("--emit-kueue", emit_kueue, as_json)
        model = load_cluster(cluster)
        job_list = load_jobs(jobs or cluster)
        setup = kueue_setup(model, job_list.jobs, queue, namespace) if emit_kueue else None
        report = simulate(model, job_list.jobs, mode, timeout, policy)  # type: ignore[arg-type]
        if setup is None:
            show(report, as_json, render.gang)
        else:
            show_emitted(report, setup, emit_kueue, "kueue", as_json, console, (render.gang, render.kueue))
        stuck = report.deadlock is not None or any(job.never_fits for job in report.jobs)
        return 1 if stuck else 0

    run(body)


@app.command("k8s")
def k8s_command(
    pod: Annotated[
        str, typer.Option("--pod", help="kubectl get pod NAME -o json; with --kubeconfig: [NAMESPACE/]NAME")
    ],
    nodes: Annotated[str | None, typer.Option("--nodes", help="kubectl get nodes -o json")] = None,
    pods: Annotated[str | None, typer.Option("--pods", help="kubectl get pods -A -o json: what is bound where")] = None,
    kubeconfig: Annotated[
        str | None, typer.Option("--kubeconfig", help="read nodes and pods from this cluster")
    ] = None,
    context: Annotated[str | None, typer.Option("--context", help="kubeconfig context (default: current)")] = None,
    k8s_version: Annotated[
        str | None,
        typer.Option(
            "--k8s-version",
            help="1.34 to 1.37, a patch optional (1.34.1); default: the server's release with --kubeconfig, else 1.37",
        ),
    ] = None,
    objects: Annotated[
        list[str] | None,
        typer.Option(
            "--objects",
            help="DRA objects for a pod with claims: kubectl get deviceclasses,devicetaintrules,resourceslices,resourceclaims -o json",
        ),
    ] = None,
    pdbs: Annotated[
        str | None, typer.Option("--pdbs", help="kubectl get pdb -A -o json: the budgets preemption respects")
    ] = None,
    namespaces: Annotated[
        str | None,
        typer.Option("--namespaces", help="kubectl get namespaces -o json: the labels namespaceSelectors match"),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Predict kube-scheduler's verdict for one pod: the nodes that fit, or the FailedScheduling message word for word."""

    def body() -> int:
        if kubeconfig:
            if nodes or pods or objects or pdbs or namespaces:
                raise ValueError(
                    "--kubeconfig reads nodes and pods from the cluster: "
                    "drop --nodes, --pods, --objects, --pdbs and --namespaces"
                )
            result = predict_live(kubeconfig, context, pod, k8s_version)
        elif nodes:
            result = predict_files(nodes, pods, pod, k8s_version or NEWEST_RELEASE, objects, pdbs, namespaces)
        else:
            raise ValueError("--nodes is required (kubectl get nodes -o json), or --kubeconfig to read a cluster")
        show(result, as_json, render.k8s)
        return 0 if result.fits else 1

    run(body)
