"""Building gpusched's cluster model from what a cluster publishes, and the report of where each fact came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from pydantic import ValidationError

from ...errors import InputError
from ...models.cluster import Cluster, GpuBlock, Node, NvlinkDomain
from ...models.kube import KubeNode, KubePod
from ...models.quantity import format_quantity
from ...models.workload import GpuNeeds, Pod, PodList
from .catalogue import catalogue
from .gfd import read_labels
from .gpus import Gpus, NodeContext, infer_gpus
from .holders import Holdings, assign, gpu_request, needs_of
from .inputs import ImportInputs
from .nvidia_dra import claim_holders, read_slices
from .report import Findings, ImportReport, NodeImport

__all__ = ["Imported", "build_cluster", "pending_pods"]


@dataclass(frozen=True)
class Imported:
    cluster: Cluster
    pending: PodList  # Pending pods asking for GPUs: the dump's own workload
    report: ImportReport


def build_cluster(inputs: ImportInputs) -> Imported:
    """The cluster model, its Pending GPU pods and the report; raises InputError only when nothing usable can be
    built."""
    if not inputs.nodes:
        raise InputError(inputs.sources[0] if inputs.sources else "nodes", "no Nodes: nothing to import")
    findings = Findings()
    for ignored in inputs.ignored:
        findings.add("info", "ignored-object", f"not read: {ignored}")
    nodes, imports, running, gpus = _build_nodes(inputs, findings)
    domains = _domains(nodes, gpus, findings)
    pending = pending_pods(inputs.pods, findings)
    try:
        cluster = Cluster(nodes=nodes, running=running, nvlink_domains=domains)
    except ValidationError as error:
        raise InputError(
            "import", f"the imported model is inconsistent (a gpusched bug): {error.errors()[0]['msg']}"
        ) from None
    report = ImportReport(
        inputs=inputs.sources,
        nodes=imports,
        gpu_nodes=sum(1 for n in nodes if n.gpu),
        gpus=sum(n.gpu.count for n in nodes if n.gpu),
        holders=len({p.name for p in cluster.running_pods()}),
        nvlink_domains=len(domains),
        pending=[p.name for p in pending],
        findings=list(findings),
        summary=findings.summary(),
    )
    return Imported(cluster, PodList(pods=pending), report)


def _build_nodes(
    inputs: ImportInputs, findings: Findings
) -> tuple[list[Node], list[NodeImport], dict[str, GpuNeeds], dict[str, Gpus]]:
    """Every node with its GPUs and holders, node by node: a node whose GPUs cannot be modelled is kept without."""
    dra = read_slices(inputs.slices)
    claims = claim_holders(inputs.claims)
    bound = _bound(inputs.pods)
    names = {node.name for node in inputs.nodes}
    for name in sorted(set(inputs.captures) - names):
        findings.add(
            "warning", "unknown-node", f"--topology names node {name!r}, which is not among the Nodes: ignored"
        )
    for name in sorted(set(dra) - names):
        findings.add(
            "warning", "unknown-node", f"ResourceSlices name node {name!r}, which is not among the Nodes: ignored"
        )
    nodes, imports, running, found = [], [], {}, {}
    for kube in inputs.nodes:
        ctx = NodeContext(
            kube,
            read_labels(kube.labels),
            dra.get(kube.name),
            inputs.captures.get(kube.name, []),
            catalogue(),
            findings,
            origin=inputs.sources[0] if inputs.sources else "nodes",
        )
        if kube.unschedulable:
            findings.add("info", "cordoned", "cordoned (spec.unschedulable)", kube.name)
        gpus = infer_gpus(ctx)
        held = assign(ctx, gpus, bound.get(kube.name, []), claims) if gpus else Holdings()
        try:
            node = _node(kube, gpus, held, bound.get(kube.name, []), findings)
        except ValidationError as error:
            ctx.note(
                "error", "node-invalid", f"GPUs not modelled: {error.errors()[0]['msg'].removeprefix('Value error, ')}"
            )
            gpus, held = None, Holdings()
            node = _node(kube, None, held, bound.get(kube.name, []), findings)
        nodes.append(node)
        imports.append(_node_import(ctx, gpus, held))
        running.update(held.running)
        if gpus:
            found[kube.name] = gpus
    return nodes, imports, running, found


def _bound(pods: list[KubePod]) -> dict[str, list[KubePod]]:
    """Pods the scheduler counts on each node: bound and not finished."""
    bound: dict[str, list[KubePod]] = {}
    for pod in pods:
        if pod.node_name and not pod.terminal:
            bound.setdefault(pod.node_name, []).append(pod)
    return bound


class _Nvlink(TypedDict, total=False):
    nvlink_gbps: float  # given only when measured: otherwise GpuBlock's default, left unset


def _node(kube: KubeNode, gpus: Gpus | None, held: Holdings, pods: list[KubePod], findings: Findings) -> Node:
    """The node with what is left of its cpu and memory once the pods bound to it are counted."""
    block = None
    if gpus is not None:
        nvlink: _Nvlink = {"nvlink_gbps": gpus.nvlink_gbps} if gpus.nvlink_gbps else {}
        block = GpuBlock(
            model=gpus.model,
            count=gpus.count,
            memory_gib=gpus.memory_gib,
            islands=gpus.islands,
            replicas=gpus.replicas,
            rename_shared=gpus.rename_shared,
            mig_strategy=gpus.mig_strategy,  # type: ignore[arg-type]
            mig=held.mig,
            busy=held.busy,
            **nvlink,
        )
    return Node(
        name=kube.name,
        labels=kube.labels,
        taints=kube.taints,
        unschedulable=kube.unschedulable,
        cpu=_left(kube, pods, "cpu", findings),
        memory=_left(kube, pods, "memory", findings),
        gpu=block,
    )


def _left(kube: KubeNode, pods: list[KubePod], resource: str, findings: Findings) -> str | None:
    if resource not in kube.allocatable:
        return None
    left = kube.allocatable[resource] - sum(pod.requests.get(resource, 0) for pod in pods)
    if left < 0:
        findings.add(
            "warning", "overcommitted", f"bound pods request more {resource} than allocatable: 0 left", kube.name
        )
    return format_quantity(resource, max(left, 0))


def _node_import(ctx: NodeContext, gpus: Gpus | None, held: Holdings) -> NodeImport:
    if gpus is None:
        return NodeImport(node=ctx.name, gpus=0, sharing="-")
    return NodeImport(
        node=ctx.name,
        gpus=gpus.count,
        model=gpus.model,
        memory_gib=gpus.memory_gib,
        islands=gpus.islands,
        sharing=gpus.sharing,
        holders=held.holders,
        sources=ctx.sources,
    )


def _domains(nodes: list[Node], gpus: dict[str, Gpus], findings: Findings) -> list[NvlinkDomain]:
    """Rack-scale NVLink domains: GPU nodes sharing one nvidia.com/gpu.clique label."""
    cliques: dict[str, list[Node]] = {}
    for node in nodes:
        clique = node.labels.get("nvidia.com/gpu.clique")
        if clique and node.gpu:
            cliques.setdefault(clique, []).append(node)
    domains = []
    for clique, members in sorted(cliques.items()):
        if len(members) < 2:
            findings.add(
                "info",
                "clique-of-one",
                f"NVLink clique {clique} has one node here: nothing spans nodes",
                members[0].name,
            )
            continue
        server = next((gpus[n.name].server for n in members if gpus[n.name].server), None)
        if server and server.domain:
            gbps = server.domain.gbps
        else:
            gbps = min(n.gpu.nvlink_gbps for n in members if n.gpu)
            findings.add(
                "warning",
                "domain-speed",
                f"NVLink domain {clique}: bandwidth not in the catalogue, taken as the "
                f"nodes' NVLink bandwidth {gbps:g} GB/s",
            )
        domains.append(NvlinkDomain(name=clique, nodes=[n.name for n in members], gbps=gbps))
    return domains


def pending_pods(pods: list[KubePod], findings: Findings | None = None) -> list[Pod]:
    """Pods waiting for GPUs (not bound, not finished), as gpusched pods: the workload the dump itself holds."""
    found = []
    for pod in pods:
        if pod.node_name or pod.terminal:
            continue
        request = gpu_request(pod)
        if request.empty:
            if pod.claims and findings is not None:
                findings.add(
                    "warning",
                    "pending-claims",
                    f"Pending pod {pod.key} asks for devices through ResourceClaims: not modelled",
                )
            continue
        if len(request.mig) > 1 or (request.mig and request.units):
            if findings is not None:
                findings.add(
                    "warning", "pending-mixed", f"Pending pod {pod.key} asks for several kinds of GPU: left out"
                )
            continue
        if pod.affinity is not None and findings is not None:
            findings.add(
                "warning", "pending-affinity", f"Pending pod {pod.key}: required node affinity is not modelled"
            )
        found.append(_pod(pod, request.units or sum(request.mig.values()), next(iter(request.mig), None)))
    return found


def _pod(pod: KubePod, gpus: int, mig_profile: str | None) -> Pod:
    shared = pod.requests.get("nvidia.com/gpu.shared", 0) > 0 or _selects_shared(pod.node_selector)
    needs = needs_of(pod, shared=shared, mig_profile=mig_profile)
    return Pod(
        name=pod.key,
        gpus=gpus,
        cpu=format_quantity("cpu", pod.requests["cpu"]) if pod.requests.get("cpu") else None,
        memory=format_quantity("memory", pod.requests["memory"]) if pod.requests.get("memory") else None,
        **needs.model_dump(exclude_defaults=True, exclude={"cpu", "memory"}),
    )


def _selects_shared(selector: dict[str, str]) -> bool:
    return selector.get("nvidia.com/gpu.sharing-strategy") in ("time-slicing", "mps") or selector.get(
        "nvidia.com/gpu.product", ""
    ).endswith("-SHARED")
