"""The scheduler's reasons restated in hardware terms, kube-scheduler's own verdict, and whether the GPUs are gone
or only fragmented."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypedDict

from ...models.cluster import Cluster
from ...models.scheduling import untolerated
from ...models.workload import GpuNeeds
from ..frag import FragRow, fragmentation
from ..optimize.disrupt import running_state
from ..place import Placer, consequences
from ..scheduler.framework import Diagnosis
from ..scheduler.names import NODE_RESOURCES_FIT, TAINT_TOLERATION
from ..scheduler.plugins import gpudevices, nodeaffinity, nodeunschedulable
from ..scheduler.plugins.gpudevices import GpuChoice, mismatch
from ..scheduler.plugins.noderesources import insufficient
from ..scheduler.views import node_filters
from ..state import GPU_RESOURCE, SHARED_RESOURCE, ClusterState, NodeState, mig_resource
from .report import Capacity, Reason, SchedulerView

__all__ = ["capacity", "restate", "scheduler_view", "suitable"]


def _names(nodes: list[str]) -> str:
    return ", ".join(nodes) if len(nodes) <= 4 else f"{', '.join(nodes[:3])} and {len(nodes) - 3} more"


def _span(values: Sequence[int | float], unit: str) -> str:
    low, high = min(values), max(values)
    return f"{low:g} {unit}" if low == high else f"{low:g}–{high:g} {unit}"


def _free_units(node: NodeState, pod: GpuNeeds) -> int:
    if pod.mig_profile:
        return len(node.free_mig(pod.mig_profile))
    return sum(gpu.free_replicas for gpu in node.whole_gpus())


def _free_island(node: NodeState) -> int:
    islands: dict[int, int] = {}
    for gpu in node.whole_gpus():
        if gpu.free_replicas:
            islands[gpu.island] = islands.get(gpu.island, 0) + 1
    return max(islands.values(), default=0)


def _insufficient(nodes: list[NodeState], pod: GpuNeeds, gpus: int) -> str:
    unit = f"free {pod.mig_profile} instances" if pod.mig_profile else "free GPUs"
    free = [_free_units(node, pod) for node in nodes]
    each = " each" if len(nodes) > 1 else ""
    partitioned = [node.name for node in nodes if not pod.mig_profile and any(gpu.mig for gpu in node.gpus)]
    mig = f" ({_names(partitioned)}: MIG-partitioned GPUs are not whole GPUs)" if partitioned else ""
    return f"{_count(nodes)} {_span(free, unit)}{each}{mig}; the pod needs {gpus} on one node"


def _count(nodes: list[NodeState]) -> str:
    return f"{len(nodes)} nodes have" if len(nodes) > 1 else f"{nodes[0].name} has"


def _island(nodes: list[NodeState], pod: GpuNeeds, gpus: int) -> str:
    islands = [_free_island(node) for node in nodes]
    return (
        f"{_names([n.name for n in nodes])}: enough free GPUs, but the largest free NVLink island holds "
        f"{_span(islands, 'GPUs')}; the pod needs {gpus} joined by NVLink"
    )


def _models(nodes: list[NodeState]) -> str:
    by_model: dict[str, list[str]] = {}
    for node in nodes:
        by_model.setdefault(f"{node.model} ({node.memory_gib:g} GiB)", []).append(node.name)
    return "; ".join(f"{_names(names)}: {model}" for model, names in by_model.items())


def _hardware_of(reason: str, plugin: str, nodes: list[NodeState], pod: GpuNeeds, gpus: int) -> str:
    """One sentence about the GPUs behind one reason, which `plugin` gave."""
    names = _names([node.name for node in nodes])
    first = nodes[0]
    texts: dict[str, Callable[[], str]] = {
        gpudevices.ERR_REASON_TIME_SLICED: lambda: (
            f"{names} {'shares' if len(nodes) == 1 else 'share'} each GPU between {first.spec.gpu.replicas if first.spec.gpu else 1} pods by time-slicing: "
            "a replica has no memory or fault isolation, and the pod is not marked shared"
        ),
        gpudevices.ERR_REASON_NOT_TIME_SLICED: lambda: (
            f"{names} give whole GPUs only; the pod asks for a time-sliced replica"
        ),
        gpudevices.ERR_REASON_MODEL.format(model=pod.model): lambda: f"the pod needs {pod.model}; {_models(nodes)}",
        gpudevices.ERR_REASON_MEMORY.format(gib=pod.memory_gib or 0): lambda: (
            f"the pod needs {pod.memory_gib:g} GiB per GPU; {_models(nodes)}"
        ),
        gpudevices.ERR_REASON_NVLINK.format(count=gpus): lambda: _island(nodes, pod, gpus),
        insufficient(GPU_RESOURCE): lambda: _insufficient(nodes, pod, gpus),
        insufficient("cpu"): lambda: f"{names}: too little cpu left for the pod's {pod.cpu}",
        insufficient("memory"): lambda: f"{names}: too little host memory left for the pod's {pod.memory}",
        nodeunschedulable.ERR_REASON: lambda: f"{names} {'is' if len(nodes) == 1 else 'are'} cordoned",
        nodeaffinity.ERR_REASON: lambda: (
            f"{names} lack the label(s) the pod selects: {', '.join(f'{k}={v}' for k, v in pod.node_selector.items())}"
        ),
    }
    if pod.mig_profile:
        texts[insufficient(mig_resource(pod.mig_profile))] = lambda: _insufficient(nodes, pod, gpus)
    if reason in texts:
        return texts[reason]()
    if plugin == TAINT_TOLERATION:
        taints = sorted({_taint_text(node, pod) for node in nodes})
        verb = "carries" if len(nodes) == 1 else "carry"
        return f"{names} {verb} taint(s) the pod does not tolerate: {', '.join(taints)}"
    return reason


def _taint_text(node: NodeState, pod: GpuNeeds) -> str:
    taint = untolerated(node.spec.taints, pod.tolerations)
    if taint is None:
        return "?"
    return f"{taint.key}{'=' + taint.value if taint.value else ''}:{taint.effect}"


def restate(diagnosis: Diagnosis, state: ClusterState, pod: GpuNeeds, gpus: int) -> list[Reason]:
    """Each reason of the diagnosis with the nodes that gave it (in cluster order), the most common first."""
    by_reason: dict[str, list[str]] = {}
    plugin_of: dict[str, str] = {}
    for node in state.nodes:
        status = diagnosis.statuses.get(node.name)
        if status is None:
            continue
        for reason in status.reasons:
            by_reason.setdefault(reason, []).append(node.name)
            plugin_of[reason] = status.plugin
    return [
        Reason(
            reason=reason,
            nodes=names,
            hardware=_hardware_of(reason, plugin_of[reason], [state.node(n) for n in names], pod, gpus),
        )
        for reason, names in sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0]))
    ]


def scheduler_view(cluster: Cluster, pod: GpuNeeds, gpus: int) -> SchedulerView:
    """kube-scheduler with the device plugin's integers: where it binds the pod, and what goes wrong there."""
    found = _extended_choice(cluster, pod, gpus)
    if isinstance(found, Diagnosis):
        return SchedulerView(message=found.message)
    view = SchedulerView(node=found.node.name, warnings=consequences(pod, found))
    if found.node.time_sliced and not pod.shared:  # a renamed node never binds a whole-GPU pod
        view.fix = _renamed(cluster, pod, gpus)
    return view


def _extended_choice(cluster: Cluster, pod: GpuNeeds, gpus: int) -> GpuChoice | Diagnosis:
    return Placer(running_state(cluster), "extended", "binpack").best(pod, gpus)


def _renamed(cluster: Cluster, pod: GpuNeeds, gpus: int) -> str:
    """What renameByDefault on the time-sliced nodes changes: a whole-GPU request no longer matches a replica."""
    data = cluster.model_dump()
    sliced = [node["name"] for node in data["nodes"] if node["gpu"] and node["gpu"]["replicas"] > 1]
    for node in data["nodes"]:
        if node["name"] in sliced:
            node["gpu"]["rename_shared"] = True
    found = _extended_choice(Cluster.model_validate(data), pod, gpus)
    then = found.message if isinstance(found, Diagnosis) else f"it binds it to {found.node.name}"
    return (
        f"renameByDefault: true in the device plugin's time-slicing config ({', '.join(sliced)}) advertises replicas "
        f"as {SHARED_RESOURCE}, so a pod asking for {GPU_RESOURCE} cannot land on one; kube-scheduler then: {then}"
    )


def suitable(state: ClusterState, pod: GpuNeeds) -> list[NodeState]:
    """Nodes whose hardware and labels suit the pod, whatever is free on them now."""
    return [
        node for node in state.nodes if node.gpus and node_filters(pod, node) is None and _hardware_suits(pod, node)
    ]


def _hardware_suits(pod: GpuNeeds, node: NodeState) -> bool:
    if pod.mig_profile:
        return any(gpu.mig for gpu in node.gpus)
    return bool(node.whole_gpus()) and not mismatch(pod, node)


class _Counted(TypedDict):
    """Capacity's fields but the verdict and the summary."""

    needed: int
    suitable_nodes: int
    free: int
    largest_node: int
    largest_island: int
    sizes: list[FragRow]
    moves: int | None


def capacity(
    state: ClusterState, pod: GpuNeeds, gpus: int, found: GpuChoice | Diagnosis, moves: int | None
) -> Capacity:
    """Fits; fragmented (moving pods makes room, or enough is free in the wrong shape); gone; or unsuitable."""
    nodes = suitable(state, pod)
    free = sum(_free_units(node, pod) for node in nodes)
    largest = max((_free_units(node, pod) for node in nodes), default=0)
    island = max((_free_island(node) for node in nodes), default=0) if not pod.mig_profile else largest
    frag = fragmentation(ClusterState(nodes, state.network_gbps)) if nodes and not pod.mig_profile else None
    common: _Counted = {
        "needed": gpus,
        "suitable_nodes": len(nodes),
        "free": free,
        "largest_node": largest,
        "largest_island": island,
        "sizes": frag.rows if frag else [],
        "moves": moves,
    }
    unit = f"{pod.mig_profile} instances" if pod.mig_profile else "GPUs"
    if isinstance(found, GpuChoice):
        return Capacity(verdict="fits", summary=f"it fits on {found.node.name}", **common)
    if not nodes:
        return Capacity(verdict="unsuitable", summary="no node's hardware and labels suit the pod", **common)
    pool = fragmentation(state).free
    where = f"{free} {unit} free on the {len(nodes)} suitable node{'s' if len(nodes) != 1 else ''}"
    if not pod.mig_profile:
        where = f"{pool} whole GPUs free in the pool, {where}"
    shape = f"the largest block on one node is {largest}" + (
        f", in one NVLink island {island}" if pod.nvlink and gpus > 1 else ""
    )
    if moves is not None:
        plural = "s" if moves != 1 else ""
        return Capacity(
            verdict="fragmented", summary=f"fragmented: {where}; {shape}; {moves} pod move{plural} make room", **common
        )
    if free >= gpus and not _blocked_by_host(found, nodes):
        return Capacity(verdict="fragmented", summary=f"fragmented: {where}; {shape}; no pod moves make room", **common)
    return Capacity(
        verdict="gone", summary=f"gone: {where}; the pod needs {gpus}, and no pod moves make room", **common
    )


def _blocked_by_host(found: Diagnosis, nodes: list[NodeState]) -> bool:
    """Every suitable node failed on host cpu or memory, none on its GPUs."""
    rejected = {node.name for node in nodes if node.name in found.statuses}
    return bool(rejected) and rejected <= set(found.failing(NODE_RESOURCES_FIT))
