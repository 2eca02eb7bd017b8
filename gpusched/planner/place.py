"""Place pods one after another, as the scheduler does, under a view and a policy.

Identical pods are common (forty notebooks), so each node's verdict is cached per pod shape and recomputed only
for nodes that changed since: placing N pods on M nodes costs about N·(changed nodes) evaluations, not N·M.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from ..models.cluster import Cluster
from ..models.graph import build_graph, gpu_id
from ..models.workload import GpuNeeds, Pod
from .allreduce import AllReduce, allreduce_for
from .frag import DEFAULT_SIZES, FragReport, fragmentation
from .ranking import Ranking, rank
from .scheduler.framework import Diagnosis, Status
from .scheduler.plugins.gpudevices import GpuChoice
from .scheduler.plugins.noderesources import HostResourcesFit
from .scheduler.views import MODEL_VIEWS, View, evaluate
from .state import ClusterState, NodeState
from .validate import Assignment, require_valid, violations

__all__ = ["needs_key", "PodResult", "PlaceReport", "Placer", "place", "DEFAULT_GRADIENT_GB"]

DEFAULT_GRADIENT_GB = 14.0  # bf16 gradients of a 7B-parameter model


class PodResult(BaseModel):
    pod: str
    node: str | None = None
    resource: str | None = None
    gpus: list[int] = Field(default_factory=list)
    islands: list[int] = Field(default_factory=list)
    mig: list[tuple[int, int]] = Field(default_factory=list, description="(gpu, start) of MIG instances")
    message: str | None = Field(None, description="the FitError text when Pending")
    warnings: list[str] = Field(default_factory=list, description="runtime consequences the scheduler cannot see")
    allreduce: AllReduce | None = None

    @property
    def pending(self) -> bool:
        return self.node is None


class PlaceReport(BaseModel):
    view: str
    policy: str
    gpu_weight: int | None
    results: list[PodResult]
    fragmentation: FragReport

    @property
    def pending(self) -> list[PodResult]:
        return [result for result in self.results if result.pending]


def needs_key(needs: GpuNeeds) -> str:
    """What decides where a pod can go; pods with equal keys are interchangeable to the filters."""
    return needs.model_dump_json(
        exclude={"name", "priority", "labels", "pods", "gpus", "gpus_per_pod", "duration", "arrival"}
    )


def _shape(pod: GpuNeeds, gpus: int) -> str:
    return f"{needs_key(pod)}|{gpus}"


@dataclass
class _ShapeCache:
    """Every node's verdict for one pod shape, the feasible ones in a heap by rank (stale entries skipped)."""

    seen: int = 0  # how much of the change log these verdicts reflect
    verdicts: dict[str, Status | GpuChoice] = field(default_factory=dict)
    heap: list[tuple[tuple, int, str]] = field(default_factory=list)  # (rank, token, node)
    tokens: dict[str, int] = field(default_factory=dict)  # node -> token of its current verdict
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict)  # per full shape, reused while no node changes


_HOST = HostResourcesFit()
_BEFORE_HOST = {plugin.name for plugin in MODEL_VIEWS["gpu"][0]} - {_HOST.name}  # filters that run before it


def _gpu_part(pod: GpuNeeds) -> GpuNeeds:
    """The pod without its cpu and memory requests: what GpuDevices and the node filters see of it."""
    return pod if pod.cpu is None and pod.memory is None else pod.model_copy(update={"cpu": None, "memory": None})


class Placer:
    """Places pods on a ClusterState; reusable by the gang simulator, which also releases them."""

    def __init__(
        self, state: ClusterState, view: View = "gpu", policy: Ranking = "binpack", gpu_weight: int | None = None
    ):
        self.state = state
        self.view: View = view
        self.policy: Ranking = policy
        self.gpu_weight = gpu_weight
        self._changes: list[str] = []  # node names in order of change
        self._cache: dict[str, _ShapeCache] = {}
        self._token = 0
        # In the GPU view, ranked by GPUs alone, cpu and memory only filter (HostResourcesFit, whose verdict
        # does not change the GPUs chosen): pods that differ only there share one cache, checked node by node.
        self._host_apart = view == "gpu" and gpu_weight is None

    def _refresh(self, pod: GpuNeeds, gpus: int) -> _ShapeCache:
        probe = _gpu_part(pod) if self._host_apart else pod
        cache = self._cache.setdefault(_shape(probe, gpus), _ShapeCache())
        if cache.verdicts:
            stale = set(self._changes[cache.seen :])
        else:
            stale = {node.name for node in self.state.nodes}
        for name in stale:
            verdict = evaluate(probe, gpus, self.state.node(name), self.view)
            cache.verdicts[name] = verdict
            self._token += 1
            cache.tokens[name] = self._token
            if isinstance(verdict, GpuChoice):
                heapq.heappush(cache.heap, (rank(verdict, pod, gpus, self.policy, self.gpu_weight), self._token, name))
        if stale:
            cache.diagnoses.clear()
        cache.seen = len(self._changes)
        return cache

    def _verdict(self, pod: GpuNeeds, verdict: Status | GpuChoice, name: str) -> Status | GpuChoice:
        """The full pipeline's verdict from the cached one: HostResourcesFit runs after the node filters and
        before GpuDevices, so it decides wherever the node filters passed."""
        if not self._host_apart or (isinstance(verdict, Status) and verdict.plugin in _BEFORE_HOST):
            return verdict
        host = _HOST.filter(pod, self.state.node(name))
        return verdict if host.ok else host

    def best(self, pod: GpuNeeds, gpus: int, within: set[str] | None = None) -> GpuChoice | Diagnosis:
        """The best node for the pod, or why none fits; `within` confines the choice to those nodes."""
        found = self.choose(pod, gpus, within)
        if found is not None:
            return found
        cache = self._refresh(pod, gpus)
        if within is not None:
            statuses = {n: self._verdict(pod, v, n) for n, v in cache.verdicts.items() if n in within}
            return Diagnosis(len(statuses), {n: v for n, v in statuses.items() if isinstance(v, Status)})
        key = _shape(pod, gpus)
        if key not in cache.diagnoses:
            verdicts = {n: self._verdict(pod, v, n) for n, v in cache.verdicts.items()}
            cache.diagnoses[key] = Diagnosis(
                len(verdicts), {n: v for n, v in verdicts.items() if isinstance(v, Status)}
            )
        return cache.diagnoses[key]

    def choose(self, pod: GpuNeeds, gpus: int, within: set[str] | None = None) -> GpuChoice | None:
        """The best node for the pod, or None, without the diagnosis (which costs a verdict from every node)."""
        cache = self._refresh(pod, gpus)
        if within is not None:
            ranked = [
                (rank(verdict, pod, gpus, self.policy, self.gpu_weight), cache.tokens[name], verdict)
                for name, cached in cache.verdicts.items()
                if name in within and isinstance(verdict := self._verdict(pod, cached, name), GpuChoice)
            ]
            return min(ranked, key=lambda entry: entry[:2])[2] if ranked else None
        heap = cache.heap
        passed: list[tuple[tuple, int, str]] = []  # fit the GPUs, not the cpu or memory: back in the heap after
        found: GpuChoice | None = None
        while heap:
            _, token, name = heap[0]
            if cache.tokens[name] != token:
                heapq.heappop(heap)
                continue
            verdict = self._verdict(pod, cache.verdicts[name], name)
            if isinstance(verdict, GpuChoice):
                found = verdict
                break
            passed.append(heapq.heappop(heap))
        for entry in passed:
            heapq.heappush(heap, entry)
        return found

    def bind(self, name: str, pod: GpuNeeds, option: GpuChoice) -> None:
        option.node.occupy(name, pod, option.gpus, option.mig)
        self._changes.append(option.node.name)

    def release(self, name: str, pod: GpuNeeds, node: NodeState) -> None:
        node.vacate(name, pod)
        self._changes.append(node.name)


def consequences(pod: GpuNeeds, option: GpuChoice) -> list[str]:
    """What goes wrong at runtime when the count decided: the truth the extended view did not check."""
    node = option.node
    warnings = []
    short = node.model.split("-")[0] if node.model else "the node"
    if pod.model and pod.model != node.model:
        warnings.append(f"wants {pod.model}, gets {node.model}")
    if pod.memory_gib and pod.memory_gib > node.memory_gib:
        warnings.append(
            f"needs {pod.memory_gib:g} GiB per GPU, {short} has {node.memory_gib:g} GiB: "
            "out of memory when the weights load"
        )
    if node.time_sliced and not option.mig and not pod.shared:
        warnings.append("lands on a time-sliced replica: shares a physical GPU, no memory or fault isolation")
    repeated = sorted({index for index in option.gpus if option.gpus.count(index) > 1})
    for index in repeated:
        warnings.append(
            f"{option.gpus.count(index)} of its replicas are physical GPU {index}: no more compute than one"
        )
    for index in sorted(set(option.gpus)):
        gpu = node.gpus[index]
        if not gpu.mig and gpu.declared_gib > gpu.memory_gib:
            warnings.append(
                f"GPU {index} memory oversubscribed: {gpu.declared_gib:g} of {gpu.memory_gib:g} GiB declared"
            )
    if option.mig and not pod.mig_profile:
        profiles = sorted(
            {slot.profile for gpu in node.gpus for slot in gpu.mig if (gpu.index, slot.start) in option.mig}
        )
        warnings.append(f"gets MIG instance(s) {', '.join(profiles)}, not whole GPUs")
    if len(set(option.gpus)) > 1 and option.spans:
        need = "needs one NVLink island; " if pod.nvlink else ""
        warnings.append(f"{need}GPUs span NVLink islands {option.islands}: all-reduce crosses PCIe")
    return warnings


def place(
    cluster: Cluster,
    pods: list[Pod],
    view: View = "gpu",
    policy: Ranking = "binpack",
    gpu_weight: int | None = None,
    gradient_gb: float = DEFAULT_GRADIENT_GB,
    sizes: tuple[int, ...] = DEFAULT_SIZES,
) -> PlaceReport:
    if view == "extended" and policy == "topology":
        raise ValueError("--policy topology needs --view gpu: through a count there is no topology to see")
    if gpu_weight is not None and (view != "extended" or policy == "topology"):
        raise ValueError(
            "--gpu-weight scores the scheduler's integers: use it with --view extended and binpack or spread"
        )
    state = ClusterState.from_cluster(cluster)
    placer = Placer(state, view, policy, gpu_weight)
    graph = build_graph(cluster)
    results = []
    for pod in pods:
        found = placer.best(pod, pod.gpus)
        if isinstance(found, Diagnosis):
            results.append(PodResult(pod=pod.name, message=found.message))
            continue
        placer.bind(pod.name, pod, found)
        results.append(_result(pod, found, view, graph, gradient_gb))
    _check(cluster, pods, results, view)
    return PlaceReport(
        view=view, policy=policy, gpu_weight=gpu_weight, results=results, fragmentation=fragmentation(state, sizes)
    )


def _check(cluster: Cluster, pods: list[Pod], results: list[PodResult], view: View) -> None:
    """Every plan passes the independent validator; a failure is a gpusched bug, never the user's."""
    needs = {pod.name: pod for pod in pods}
    placed = [
        Assignment(r.pod, needs[r.pod], r.node, tuple(r.gpus), tuple(r.mig)) for r in results if r.node is not None
    ]
    require_valid("a placement", violations(cluster, placed, hardware=view == "gpu"))


def _result(pod: Pod, option: GpuChoice, view: View, graph, gradient_gb: float) -> PodResult:
    physical = sorted(set(option.gpus))
    allreduce = None
    if len(physical) > 1 and not option.mig:
        allreduce = allreduce_for(graph, [gpu_id(option.node.name, index) for index in physical], gradient_gb)
    return PodResult(
        pod=pod.name,
        node=option.node.name,
        resource=option.resource,
        gpus=list(option.gpus),
        islands=option.islands,
        mig=list(option.mig),
        warnings=consequences(pod, option) if view == "extended" else [],
        allreduce=allreduce,
    )
