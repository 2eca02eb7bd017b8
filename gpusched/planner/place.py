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
from .policies import Policy, rank
from .scheduler.framework import Diagnosis, Status
from .scheduler.plugins.gpudevices import GpuChoice
from .scheduler.views import View, evaluate
from .state import ClusterState, NodeState
from .validate import Assignment, violations

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
    diagnosis: Diagnosis | None = None  # reused while no node changes


class Placer:
    """Places pods on a ClusterState; reusable by the gang simulator, which also releases them."""

    def __init__(
        self, state: ClusterState, view: View = "gpu", policy: Policy = "binpack", gpu_weight: int | None = None
    ):
        self.state = state
        self.view: View = view
        self.policy: Policy = policy
        self.gpu_weight = gpu_weight
        self._changes: list[str] = []  # node names in order of change
        self._cache: dict[str, _ShapeCache] = {}
        self._token = 0

    def _refresh(self, pod: GpuNeeds, gpus: int) -> _ShapeCache:
        cache = self._cache.setdefault(_shape(pod, gpus), _ShapeCache())
        if cache.verdicts:
            stale = set(self._changes[cache.seen :])
        else:
            stale = {node.name for node in self.state.nodes}
        for name in stale:
            verdict = evaluate(pod, gpus, self.state.node(name), self.view)
            cache.verdicts[name] = verdict
            self._token += 1
            cache.tokens[name] = self._token
            if isinstance(verdict, GpuChoice):
                heapq.heappush(cache.heap, (rank(verdict, pod, gpus, self.policy, self.gpu_weight), self._token, name))
        if stale:
            cache.diagnosis = None
        cache.seen = len(self._changes)
        return cache

    def best(self, pod: GpuNeeds, gpus: int, within: set[str] | None = None) -> GpuChoice | Diagnosis:
        """The best node for the pod, or why none fits; `within` confines the choice to those nodes."""
        cache = self._refresh(pod, gpus)
        if within is not None:
            ranked = [
                (rank(verdict, pod, gpus, self.policy, self.gpu_weight), cache.tokens[name], verdict)
                for name, verdict in cache.verdicts.items()
                if name in within and isinstance(verdict, GpuChoice)
            ]
            if ranked:
                return min(ranked, key=lambda entry: entry[:2])[2]
            statuses = {n: v for n, v in cache.verdicts.items() if n in within and isinstance(v, Status)}
            return Diagnosis(len(statuses), statuses)
        heap = cache.heap
        while heap and cache.tokens[heap[0][2]] != heap[0][1]:
            heapq.heappop(heap)
        if heap:
            found = cache.verdicts[heap[0][2]]
            assert isinstance(found, GpuChoice)
            return found
        if cache.diagnosis is None:
            statuses = {n: v for n, v in cache.verdicts.items() if isinstance(v, Status)}
            cache.diagnosis = Diagnosis(len(cache.verdicts), statuses)
        return cache.diagnosis

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
    policy: Policy = "binpack",
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
    problems = violations(cluster, placed, hardware=view == "gpu")
    if problems:
        raise RuntimeError("internal error: a placement failed validation: " + "; ".join(problems))


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
