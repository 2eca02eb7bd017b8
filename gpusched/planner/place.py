"""Place pods one after another, as the scheduler does, under a view and a policy.

Identical pods are common (forty notebooks), and so are identical nodes: each pod shape's verdict is cached per
node signature (Placer) and recomputed only for signatures that changed since: placing N pods on M nodes costs
about N·(changed signatures) evaluations, not N·M.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass, field, replace

from pydantic import BaseModel, Field

from ..models.cluster import Cluster
from ..models.graph import build_graph, gpu_id
from ..models.workload import GpuNeeds, Pod
from .allreduce import AllReduce, allreduce_for
from .frag import DEFAULT_SIZES, FragReport, fragmentation
from .policies import Policy, rank
from .scheduler.framework import Code, Diagnosis, Status
from .scheduler.plugins.gpudevices import GpuChoice, mismatch
from .scheduler.plugins.noderesources import HostResourcesFit
from .scheduler.views import MODEL_VIEWS, View, evaluate, node_filters
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
    """One pod shape's verdict per node signature (a signature's verdict never changes: it holds all the filters
    and the allocator read), and the feasible signatures in a heap by rank (stale entries skipped)."""

    seen: int = -1  # how much of the change log these verdicts reflect (-1: none yet)
    verdicts: dict[tuple, tuple[Status | GpuChoice, tuple]] = field(default_factory=dict)  # sig -> verdict, lists
    refused: dict[int, Status | None] = field(default_factory=dict)  # kind of node -> its refusal (None: passes)
    heap: list[tuple[tuple, str, int, int, tuple]] = field(default_factory=list)  # (rank, first, seq, gen, sig)
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict)  # per full shape, reused while no node changes


_HOST = HostResourcesFit()
_BEFORE_HOST = {plugin.name for plugin in MODEL_VIEWS["gpu"][0]} - {_HOST.name}  # filters that run before it


def _gpu_part(pod: GpuNeeds) -> GpuNeeds:
    """The pod without its cpu and memory requests: what GpuDevices and the node filters see of it."""
    return pod if pod.cpu is None and pod.memory is None else pod.model_copy(update={"cpu": None, "memory": None})


def _static(node: NodeState) -> tuple:
    """What of a node never changes and the filters and the allocator read: labels, taints, cordon, the GPUs."""
    gpu = node.spec.gpu
    block = None
    if gpu is not None:
        profiles = None if gpu.mig_profiles is None else tuple(gpu.mig_profiles)
        islands = tuple(state.island for state in node.gpus)
        block = (gpu.model, gpu.memory_gib, gpu.replicas, gpu.rename_shared, gpu.mig_strategy, profiles, islands)
    return (tuple(sorted(node.labels.items())), tuple(node.taints), node.unschedulable, block)


def _free_lists(node: NodeState) -> tuple[tuple[int, ...], ...]:
    """Each island's free whole GPUs in index order, islands by (free GPUs, number): best fit picks the least
    free island that holds the pod, ties by number, so two nodes with the same counts choose position for position
    the same (GpuDevices reads nothing else of a node of exclusive whole GPUs)."""
    by_island: dict[int, list[int]] = {}
    for gpu in node.gpus:
        by_island.setdefault(gpu.island, [])
        if gpu.free_replicas:
            by_island[gpu.island].append(gpu.index)
    return tuple(tuple(free) for _, free in sorted(by_island.items(), key=lambda item: (len(item[1]), item[0])))


def _units(node: NodeState) -> tuple[int, dict[str, int]]:
    """What the GPU view's allocator can still give: whole GPUs with a free replica, free MIG instances by profile
    (a pod of N takes N of one kind: fewer, and it is refused before anything is chosen)."""
    mig: dict[str, int] = {}
    whole = 0
    for gpu in node.gpus:
        if gpu.mig:
            for slot in gpu.mig:
                if slot.holder is None:
                    mig[slot.profile] = mig.get(slot.profile, 0) + 1
        elif gpu.free_replicas:
            whole += 1
    return whole, mig


_SHORT = Status(Code.UNSCHEDULABLE, ("short of units",), "")  # placeholder: too few units; evaluated if diagnosed


class Placer:
    """Places pods on a ClusterState; reusable by the gang simulator, which also releases them.

    Nodes are indexed by what they can still hold: a signature of everything the filters and the allocator read
    (labels, taints, the GPU block, each GPU's holders; cpu and memory unless the GPU view checks them apart).
    On a node of exclusive whole GPUs only which island has how many free counts (GpuDevices' best fit takes the
    lowest free indices of an island, so the GPUs chosen on one node map position by position onto another's).
    A pod shape is evaluated once per signature, not per node, and its heap holds signatures, each at its
    first node by name: placing N pods costs about N·(signatures changed), whatever the node count."""

    def __init__(
        self, state: ClusterState, view: View = "gpu", policy: Policy = "binpack", gpu_weight: int | None = None
    ):
        self.state = state
        self.view: View = view
        self.policy: Policy = policy
        self.gpu_weight = gpu_weight
        # In the GPU view, ranked by GPUs alone, cpu and memory only filter (HostResourcesFit, whose verdict
        # does not change the GPUs chosen): pods that differ only there share one cache, checked node by node.
        self._host_apart = view == "gpu" and gpu_weight is None
        self._static: dict[tuple, int] = {}
        self._sig: dict[str, tuple] = {}
        self._groups: dict[tuple, list[str]] = {}  # sig -> its nodes' names, sorted
        self._kinds: dict[int, dict[tuple, None]] = {}  # kind of node (what never changes) -> its signatures
        self._gen: dict[tuple, int] = {}  # sig -> how often its members changed (a heap entry's freshness)
        self._changes: list[tuple] = []  # signatures whose members changed, in order
        self._cache: dict[str, _ShapeCache] = {}
        self._units: dict[tuple, tuple[int, dict[str, int]]] = {}  # sig -> what its nodes can still give
        self._seq = 0
        for node in state.nodes:
            sig = self._signature(node)
            self._sig[node.name] = sig
            self._units.setdefault(sig, _units(node))
            self._kinds.setdefault(sig[0], {})[sig] = None
            self._groups.setdefault(sig, []).append(node.name)
        for members in self._groups.values():
            members.sort()

    def _signature(self, node: NodeState) -> tuple:
        static = self._static.setdefault(_static(node), len(self._static))
        host = (
            ()
            if self._host_apart
            else (node.cpu_requested, node.memory_requested, node.cpu_nonzero, node.memory_nonzero)
        )
        if self.view == "gpu" and all(gpu.replicas == 1 and not gpu.mig for gpu in node.gpus):
            return (static, host, tuple(len(free) for free in _free_lists(node)))  # canonical: counts, sorted
        exact = tuple(
            (tuple(gpu.holders), tuple((m.start, m.profile, m.holder is None) for m in gpu.mig)) for gpu in node.gpus
        )
        return (static, host, exact)

    def _moved(self, node: NodeState) -> None:
        """The node changed: it leaves its signature's group for its new one."""
        old, new = self._sig[node.name], self._signature(node)
        if old == new:
            return
        self._groups[old].remove(node.name)
        bisect.insort(self._groups.setdefault(new, []), node.name)
        self._sig[node.name] = new
        self._units.setdefault(new, _units(node))
        self._kinds[new[0]][new] = None
        for sig in (old, new):
            self._gen[sig] = self._gen.get(sig, 0) + 1
            self._changes.append(sig)

    def _refresh(self, pod: GpuNeeds, gpus: int) -> _ShapeCache:
        probe = _gpu_part(pod) if self._host_apart else pod
        cache = self._cache.setdefault(_shape(probe, gpus), _ShapeCache())
        if cache.seen < 0:
            stale = [
                sig for static, sigs in self._kinds.items() if self._passes(probe, gpus, cache, static) for sig in sigs
            ]
        else:
            stale = [
                sig for sig in dict.fromkeys(self._changes[cache.seen :]) if self._passes(probe, gpus, cache, sig[0])
            ]
        for sig in stale:
            members = self._groups.get(sig)
            if not members:
                continue
            if sig not in cache.verdicts:
                cache.verdicts[sig] = self._evaluate(probe, gpus, sig, members[0])
            verdict = cache.verdicts[sig][0]
            if isinstance(verdict, GpuChoice):
                self._seq += 1
                key = rank(verdict, pod, gpus, self.policy, self.gpu_weight)[:-1]
                heapq.heappush(cache.heap, (key, members[0], self._seq, self._gen.get(sig, 0), sig))
        if stale:
            cache.diagnoses.clear()
        cache.seen = len(self._changes)
        return cache

    def _passes(self, probe: GpuNeeds, gpus: int, cache: _ShapeCache, static: int) -> bool:
        """Whether this kind of node passes what never changes on it: the node filters and, in the GPU view, the
        GPUs' kind (time-sliced, model, memory). Worked out once per kind on one of its nodes; a refusal is that
        node's whole verdict, and every node of the kind's."""
        if static not in cache.refused:
            name = next(members[0] for sig in self._kinds[static] if (members := self._groups[sig]))
            node = self.state.node(name)
            refused = node_filters(probe, node)
            if refused is None and self.view == "gpu" and gpus and not probe.mig_profile and mismatch(probe, node):
                found = evaluate(probe, gpus, node, self.view)
                refused = found if isinstance(found, Status) else None
            cache.refused[static] = refused
        return cache.refused[static] is None

    def _evaluate(self, probe: GpuNeeds, gpus: int, sig: tuple, name: str) -> tuple:
        """The signature's verdict, found on its node `name`; too few units without evaluating (`_SHORT`, worked
        out if a diagnosis asks)."""
        node = self.state.node(name)
        if self.view == "gpu" and gpus:
            whole, mig = self._units[sig]
            if (mig.get(probe.mig_profile, 0) if probe.mig_profile else whole) < gpus:
                return _SHORT, ()
        verdict = evaluate(probe, gpus, node, self.view)
        return verdict, _free_lists(node) if isinstance(verdict, GpuChoice) else ()

    def _cached(self, cache: _ShapeCache, sig: tuple) -> Status | GpuChoice:
        """The verdict of a signature whose nodes the refresh has seen: their kind's refusal, or its own."""
        refused = cache.refused[sig[0]]
        return refused if refused is not None else cache.verdicts[sig][0]

    def _diagnosed(self, pod: GpuNeeds, gpus: int, sig: tuple, cache: _ShapeCache) -> Status | GpuChoice:
        """The verdict as the scheduler words it: a placeholder evaluated on one of the signature's nodes."""
        verdict = self._cached(cache, sig)
        if verdict is _SHORT:
            probe = _gpu_part(pod) if self._host_apart else pod
            verdict = evaluate(probe, gpus, self.state.node(self._groups[sig][0]), self.view)
            cache.verdicts[sig] = (verdict, ())
        return verdict

    def _on(self, sig: tuple, cache: _ShapeCache, name: str) -> Status | GpuChoice:
        """The signature's verdict for this node: its Status, or its GPUs mapped onto the node's own."""
        verdict, lists = cache.verdicts[sig]
        node = self.state.node(name)
        if not isinstance(verdict, GpuChoice):
            return verdict
        if verdict.mig or not sig[2] or not isinstance(sig[2][0], int):  # an exact signature: the same GPUs
            return verdict if verdict.node is node else replace(verdict, node=node)
        # counts only (the node it was found on may hold other GPUs of the same counts since): mapped
        mapping = {
            rep: own
            for rep_list, own_list in zip(lists, _free_lists(node), strict=True)
            for rep, own in zip(rep_list, own_list, strict=True)
        }
        chosen = tuple(mapping[index] for index in verdict.gpus)
        return replace(verdict, node=node, gpus=tuple(sorted(chosen)) if verdict.spans else chosen)

    def _verdict(self, pod: GpuNeeds, verdict: Status | GpuChoice, name: str) -> Status | GpuChoice:
        """The full pipeline's verdict from the cached one: HostResourcesFit runs after the node filters and
        before GpuDevices, so it decides wherever the node filters passed."""
        if not self._host_apart or (isinstance(verdict, Status) and verdict.plugin in _BEFORE_HOST):
            return verdict
        host = _HOST.filter(pod, self.state.node(name))
        return verdict if host.ok else host

    def _statuses(self, pod: GpuNeeds, gpus: int, cache: _ShapeCache, within: set[str] | None) -> Diagnosis:
        names = self._sig if within is None else within
        verdicts = {n: self._verdict(pod, self._diagnosed(pod, gpus, self._sig[n], cache), n) for n in names}
        return Diagnosis(len(verdicts), {n: v for n, v in verdicts.items() if isinstance(v, Status)})

    def best(self, pod: GpuNeeds, gpus: int, within: set[str] | None = None) -> GpuChoice | Diagnosis:
        """The best node for the pod, or why none fits; `within` confines the choice to those nodes."""
        found = self.choose(pod, gpus, within)
        if found is not None:
            return found
        cache = self._refresh(pod, gpus)
        if within is not None:
            return self._statuses(pod, gpus, cache, within)
        key = _shape(pod, gpus)
        if key not in cache.diagnoses:
            cache.diagnoses[key] = self._statuses(pod, gpus, cache, None)
        return cache.diagnoses[key]

    def choose(self, pod: GpuNeeds, gpus: int, within: set[str] | None = None) -> GpuChoice | None:
        """The best node for the pod, or None, without the diagnosis (which costs a verdict from every node)."""
        cache = self._refresh(pod, gpus)
        if within is not None:
            ranked = []
            for name in within:
                verdict = self._cached(cache, self._sig[name])
                if isinstance(verdict, GpuChoice) and isinstance(self._verdict(pod, verdict, name), GpuChoice):
                    ranked.append((rank(verdict, pod, gpus, self.policy, self.gpu_weight)[:-1], name))
            if not ranked:
                return None
            name = min(ranked)[1]
            found = self._on(self._sig[name], cache, name)
            assert isinstance(found, GpuChoice)
            return found
        heap = cache.heap
        passed: list[tuple[tuple, str, int, int, tuple]] = []  # popped while looking: back in the heap after
        best: tuple[tuple, str, tuple] | None = None  # (rank, node, sig) of the best node that fits so far
        while heap:
            entry = heap[0]
            sig = entry[4]
            if self._gen.get(sig, 0) != entry[3]:
                heapq.heappop(heap)
                continue
            if best is not None and entry[:2] >= best[:2]:
                break  # every node left ranks after the best one found: a group's first node is its least
            passed.append(heapq.heappop(heap))
            verdict = cache.verdicts[sig][0]  # fits the GPUs; the first of its nodes whose cpu and memory fit
            fits = next((n for n in self._groups[sig] if isinstance(self._verdict(pod, verdict, n), GpuChoice)), None)
            if fits is not None and (best is None or (entry[0], fits) < best[:2]):
                best = (entry[0], fits, sig)
        for entry in passed:
            heapq.heappush(heap, entry)
        if best is None:
            return None
        found = self._on(best[2], cache, best[1])
        assert isinstance(found, GpuChoice)
        return found

    def bind(self, name: str, pod: GpuNeeds, option: GpuChoice) -> None:
        option.node.occupy(name, pod, option.gpus, option.mig)
        self._moved(option.node)

    def release(self, name: str, pod: GpuNeeds, node: NodeState) -> None:
        node.vacate(name, pod)
        self._moved(node)


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
