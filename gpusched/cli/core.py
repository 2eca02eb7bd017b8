"""The core commands: scenarios, schema, advertised, place, frag, allreduce, gang, k8s."""

from __future__ import annotations

from typing import Annotated, Literal

import typer
from pydantic import BaseModel, TypeAdapter

from ..models.cluster import Cluster
from ..models.dra import ClaimList
from ..models.graph import build_graph
from ..models.offers import Offers
from ..models.workload import JobList, PodList
from ..planner.allreduce import AllReduce, ring_allreduce
from ..planner.dra.objects import load_objects
from ..planner.emit import DEFAULT_GPU_WEIGHT, kueue_setup, scheduler_config
from ..planner.frag import FragReport, fragmentation
from ..planner.gang import GangReport, Mode, simulate
from ..planner.gpumap import node_summaries
from ..planner.place import DEFAULT_GRADIENT_GB, PlaceReport, place
from ..planner.scheduler.framework import NEWEST as NEWEST_RELEASE
from ..planner.scheduler.live import predict_live
from ..planner.scheduler.predict import K8sPrediction, parse_version, predict_files
from ..planner.scheduler.profile import load_profiles
from ..planner.scheduler.queue import QueueReplay, replay
from ..planner.scheduler.views import View
from ..planner.state import ClusterState, advertised
from ..scenarios import (
    load_cluster,
    load_jobs,
    load_pods,
    load_scenario,
    read_document,
    scenario_names,
)
from . import render
from .common import (
    AllNamespacesFlag,
    ClusterArg,
    ContextOpt,
    JsonFlag,
    KubeconfigOpt,
    NamespaceOpt,
    PolicyOpt,
    SizesOpt,
    app,
    check_namespaces,
    cluster_source,
    command_named,
    command_paths,
    emit_json,
    emit_target,
    finite,
    in_namespace,
    live,
    names,
    namespace_for,
    object_name,
    qualified,
    run,
    shape,
    show,
    show_emitted,
    usage,
)
from .common import (
    sizes as parse_sizes,
)
from .figures import figure_target, save_figure, wrote


class ScenarioRow(BaseModel):
    """A built-in scenario, as `gpusched scenarios` lists it."""

    name: str
    description: str
    nodes: int
    pods: int
    jobs: int


@names(lambda rows: [object_name("scenario", row["name"]) for row in rows])
@shape(list[ScenarioRow])
@app.command()
def scenarios(as_json: JsonFlag = False) -> None:
    """List the built-in scenarios (every command takes one by name in place of a file)."""

    def body() -> int:
        found = {name: load_scenario(name) for name in scenario_names()}
        rows = [
            ScenarioRow(
                name=name,
                description=s.description,
                nodes=len(s.cluster.nodes),
                pods=len(s.pods.pods) if s.pods else 0,
                jobs=len(s.jobs.jobs) if s.jobs else 0,
            )
            for name, s in found.items()
        ]
        show(rows, as_json, render.scenarios)
        return 0

    run(body)


SCHEMAS: dict[str, type[BaseModel]] = {
    "cluster": Cluster, "pods": PodList, "jobs": JobList, "claims": ClaimList, "offers": Offers,
}  # fmt: skip


@app.command()
def schema(
    kind: Annotated[
        Literal["cluster", "pods", "jobs", "claims", "offers"] | None,
        typer.Argument(metavar="KIND", help="an input file"),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            metavar="COMMAND",
            help="the shape COMMAND prints with -o json|yaml: plan, mig plan, bench openb",
        ),
    ] = None,
) -> None:
    """Print the JSON Schema of an input file (KIND), or of what a command prints with -o json (--output)."""

    def body() -> int:
        if (kind is None) == (output is None):
            raise usage("give KIND (cluster, pods, jobs, claims, offers) or --output COMMAND")
        if kind is not None:
            emit_json(SCHEMAS[kind].model_json_schema(by_alias=True))
            return 0
        assert output is not None
        from . import load  # every command's module, to find the one named

        load()
        command = command_named(output)
        printed = getattr(command, "__gpusched_shape__", None)
        if printed is None:
            listed = ", ".join(
                path for path in command_paths() if getattr(command_named(path), "__gpusched_shape__", None)
            )
            raise usage(f"--output: {output!r} is no command that prints JSON; one of: {listed}")
        emit_json(TypeAdapter(printed).json_schema(mode="serialization", by_alias=True))
        return 0

    run(body)


@names(lambda counts: [object_name("node", node) for node in counts])
@shape(dict[str, dict[str, int]])
@app.command("advertised")
def advertised_command(
    cluster: ClusterArg = None, kubeconfig: KubeconfigOpt = None, context: ContextOpt = None, as_json: JsonFlag = False
) -> None:
    """What the device plugin reports per node: the integers kube-scheduler sees."""

    def body() -> int:
        state = ClusterState.from_cluster(load_cluster(cluster_source(cluster, kubeconfig, context)))
        counts = {node.name: advertised(node) for node in state.nodes}
        show(counts, as_json, render.advertised)
        return 0

    run(body)


@names(lambda report: [object_name("pod", pod["pod"]) for pod in report["results"] if pod["node"]])
@shape(PlaceReport)
@app.command("place")
def place_command(
    cluster: ClusterArg = None,
    pods: Annotated[
        str | None,
        typer.Option("--pods", metavar="FILE", help="pods file or scenario name (default: the cluster's own pods)"),
    ] = None,
    policy: PolicyOpt = "binpack",
    view: Annotated[
        View, typer.Option(help="gpu (what the hardware allows) | extended (the scheduler's integers)")
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
    namespace: NamespaceOpt = None,
    all_namespaces: AllNamespacesFlag = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Place pods one after another with a policy and a view, then report fragmentation (a cluster with no pods
    of its own, such as a file of only `nodes:`, reports the fragmentation as it is)."""

    def body() -> int:
        check_namespaces(namespace, all_namespaces)
        console = emit_target("--emit-scheduler-config", emit_scheduler, as_json)
        source = cluster_source(cluster, kubeconfig, context)
        scenario = load_scenario(source)
        pod_list = load_pods(pods).pods if pods else (scenario.pods.pods if scenario.pods else [])
        pod_list = [pod for pod in pod_list if in_namespace(pod.name, namespace)]
        config = scheduler_config(scenario.cluster, policy, gpu_weight) if emit_scheduler else None
        report = place(scenario.cluster, pod_list, view, policy, gpu_weight, gradient_gb, parse_sizes(sizes))
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


@shape(FragReport)
@app.command("frag")
def frag_command(
    cluster: ClusterArg = None,
    sizes: SizesOpt = "",
    plot: Annotated[
        str | None,
        typer.Option(
            "--output-file",
            metavar="FILE",
            help="also draw it (.png, .svg or .pdf): free GPUs per node by kind, nodes by free GPUs per job size",
        ),
    ] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Fragmentation per job size, largest free blocks, and what each MIG GPU could still offer."""

    def body() -> int:
        target = figure_target("--output-file", plot)
        model = load_cluster(cluster_source(cluster, kubeconfig, context))
        state = ClusterState.from_cluster(model)
        report = fragmentation(state, parse_sizes(sizes))
        if target is not None:
            save_figure("--output-file", target, "frag_figure", report, node_summaries(state))
        show(report, as_json, render.frag)
        wrote(target, as_json)
        return 0

    run(body)


@shape(list[AllReduce])
@app.command("allreduce")
def allreduce_command(
    cluster: Annotated[
        str,
        typer.Argument(
            metavar="CLUSTER", help="cluster or scenario file, built-in scenario, kubectl dump folder or kubeconfig"
        ),
    ],
    placements: Annotated[
        list[str], typer.Argument(metavar="NODE:GPUS...", help="GPU sets as NODE:GPUS, e.g. pcie-a:0,2 or dgx-a:0-7")
    ],
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


@names(lambda report: [object_name("job", job["name"]) for job in report["jobs"]])
@shape(GangReport)
@app.command("gang")
def gang_command(
    cluster: ClusterArg = None,
    jobs: Annotated[
        str | None,
        typer.Option("--jobs", metavar="FILE", help="jobs file or scenario name (default: the cluster's own jobs)"),
    ] = None,
    mode: Annotated[Mode, typer.Option(help="pod (default scheduler) | gang (all or nothing)")] = "gang",
    timeout: Annotated[
        float,
        typer.Option(
            metavar="SECONDS", parser=finite(0, 1e9), help="gang mode: seconds a partial reservation may be held"
        ),
    ] = 0.0,
    policy: PolicyOpt = "binpack",
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
    namespace: Annotated[
        str | None,
        typer.Option(
            "-n",
            "--namespace",
            metavar="NS",
            help="--emit-kueue: the LocalQueue's namespace (default: the context's when live, else default)",
        ),
    ] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Simulate training jobs on a virtual clock: starts, finishes, idle reservations, deadlock."""

    def body() -> int:
        console = emit_target("--emit-kueue", emit_kueue, as_json)
        if mode == "pod" and timeout:
            raise usage("--timeout applies to --mode gang: the default scheduler never gives a bound pod back")
        source = cluster_source(cluster, kubeconfig, context)
        model = load_cluster(source)
        job_list = load_jobs(jobs or source)
        queue_namespace = namespace_for(namespace, live(kubeconfig, cluster), context) or "default"
        setup = kueue_setup(model, job_list.jobs, queue, queue_namespace) if emit_kueue else None
        report = simulate(model, job_list.jobs, mode, timeout, policy)
        if setup is None:
            show(report, as_json, render.gang)
        else:
            show_emitted(report, setup, emit_kueue, "kueue", as_json, console, (render.gang, render.kueue))
        stuck = report.deadlock is not None or any(job.never_fits for job in report.jobs)
        return 1 if stuck else 0

    run(body)


@names(lambda result: [object_name("node", node) for node in _k8s_nodes(result)])
@shape(K8sPrediction | QueueReplay)
@app.command("k8s")
def k8s_command(
    pod: Annotated[
        str | None,
        typer.Argument(
            metavar="POD",
            help="kubectl get pod NAME -o json (a file, - for stdin); with --kubeconfig: the pod's [NAMESPACE/]NAME; "
            "none with --queue",
        ),
    ] = None,
    nodes: Annotated[str | None, typer.Option("--nodes", metavar="FILE", help="kubectl get nodes -o json")] = None,
    pods: Annotated[
        str | None, typer.Option("--pods", metavar="FILE", help="kubectl get pods -A -o json: what is bound where")
    ] = None,
    namespace: NamespaceOpt = None,
    kubeconfig: Annotated[
        str | None,
        typer.Option(
            "--kubeconfig",
            metavar="FILE",
            help="read nodes and pods from this cluster (default under `kubectl gpusched`: kubectl's)",
        ),
    ] = None,
    context: ContextOpt = None,
    k8s_version: Annotated[
        str | None,
        typer.Option(
            "--k8s-version",
            metavar="VERSION",
            help="1.34 to 1.37, a patch optional (1.34.1); default: the server's release with --kubeconfig, else 1.37",
        ),
    ] = None,
    objects: Annotated[
        list[str] | None,
        typer.Option(
            "--objects",
            metavar="FILE",
            help="DRA objects for a pod with claims: kubectl get deviceclasses,devicetaintrules,resourceslices,resourceclaims -o json",
        ),
    ] = None,
    pdbs: Annotated[
        str | None,
        typer.Option("--pdbs", metavar="FILE", help="kubectl get pdb -A -o json: the budgets preemption respects"),
    ] = None,
    namespaces: Annotated[
        str | None,
        typer.Option(
            "--namespaces", metavar="FILE", help="kubectl get namespaces -o json: the labels namespaceSelectors match"
        ),
    ] = None,
    pvcs: Annotated[
        str | None,
        typer.Option("--pvcs", metavar="FILE", help="kubectl get pvc -A -o json: the volume claims that exist"),
    ] = None,
    scheduler_config: Annotated[
        str | None,
        typer.Option(
            "--scheduler-config",
            metavar="FILE",
            help="a KubeSchedulerConfiguration: its profiles score the nodes (weights, scoring strategy, "
            "percentageOfNodesToScore); default: the release's default profile",
        ),
    ] = None,
    queue: Annotated[
        bool,
        typer.Option(
            "--queue",
            help="replay every pending pod of --pods in the scheduler's queue order (priority, then creation), each "
            "bound where the scheduler picks before the next",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Predict kube-scheduler's verdict for one pod: the nodes that fit, or the FailedScheduling message word for word."""

    def body() -> int:
        if k8s_version is not None:
            parse_version(k8s_version, "--k8s-version")
        if queue:
            return _replay_queue(pod, nodes, pods, k8s_version, objects, pdbs, namespaces, pvcs, scheduler_config,
                                 kubeconfig, as_json)  # fmt: skip
        if pod is None:
            raise usage("POD is required (kubectl get pod NAME -o json), or --queue to replay --pods")
        server = live(kubeconfig, nodes)
        if server:
            if nodes or pods or objects or pdbs or namespaces or pvcs or scheduler_config:
                raise usage(
                    "--kubeconfig reads nodes and pods from the cluster: "
                    "drop --nodes, --pods, --objects, --pdbs, --namespaces, --pvcs and --scheduler-config"
                )
            result = predict_live(
                server, context, qualified(pod, namespace_for(namespace, server, context)), k8s_version
            )
        elif nodes:
            if namespace is not None:
                raise usage("-n/--namespace names a live pod; POD is a file here (kubectl get pod NAME -o json)")
            release = k8s_version or NEWEST_RELEASE
            result = predict_files(nodes, pods, pod, release, objects, pdbs, namespaces, pvcs, scheduler_config)
        else:
            raise usage("--nodes is required (kubectl get nodes -o json), or --kubeconfig to read a cluster")
        show(result, as_json, render.k8s)
        return 0 if result.fits else 1

    run(body)


def _k8s_nodes(result: dict) -> list[str]:
    """-o name: the feasible nodes, or with --queue the nodes the pods bind to."""
    if "steps" in result:
        return [step["node"] for step in result["steps"] if step["node"]]
    return list(result["feasible"])


def _replay_queue(
    pod: str | None,
    nodes: str | None,
    pods: str | None,
    k8s_version: str | None,
    objects: list[str] | None,
    pdbs: str | None,
    namespaces: str | None,
    pvcs: str | None,
    scheduler_config: str | None,
    kubeconfig: str | None,
    as_json: bool,
) -> int:
    if pod is not None or kubeconfig is not None:
        raise usage("--queue replays --pods against --nodes: drop POD and --kubeconfig")
    if not nodes or not pods:
        raise usage("--queue needs --nodes and --pods (kubectl get nodes,pods -o json)")
    release = parse_version(k8s_version or NEWEST_RELEASE)
    context = {
        "objects": load_objects(objects, pods=False, version=release) if objects else None,
        "pdbs_doc": read_document(pdbs) if pdbs else None,
        "namespaces_doc": read_document(namespaces) if namespaces else None,
        "pvcs_doc": read_document(pvcs) if pvcs else None,
    }
    profiles = load_profiles(scheduler_config)[0] if scheduler_config else None
    result = replay(read_document(nodes), read_document(pods), release, (nodes, pods), profiles, **context)
    show(result, as_json, render.queue)
    return 0 if result.all_bound else 1
