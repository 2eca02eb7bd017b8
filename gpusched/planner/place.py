"""Place pods one after another, as the scheduler does, under a view and a policy.

Identical pods are common (forty notebooks), and so are identical nodes: each pod shape's verdict is cached per
node signature (Placer) and recomputed only for signatures that changed since: placing N pods on M nodes costs
about N·(changed signatures) evaluations, not N·M.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from pydantic import BaseModel, Field

from ..models.cluster import Cluster
from ..models.graph import build_graph, gpu_id
from ..models.workload import GpuNeeds, Pod
from .allreduce import AllReduce, allreduce_for
from .frag import DEFAULT_SIZES, FragReport, fragmentation
from .ranking import Ranking, rank
from .scheduler.framework import Code, Diagnosis, Status
from .scheduler.plugins.gpudevices import GpuChoice, mismatch
from .scheduler.plugins.noderesources import HostResourcesFit
from .scheduler.views import MODEL_VIEWS, View, evaluate, node_filters
from .state import ClusterState, NodeState, mig_resource
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


_Entry = tuple[tuple, str, int, int, int, bool]  # (rank or bound, first node, seq, gen, sig, evaluated)


@dataclass
class _ShapeCache:
    """One pod shape's verdicts per node signature (a signature's verdict never changes: it holds everything the
    filters and the allocator read) and a heap of signatures by rank, each at its first node by name. An entry
    not yet evaluated is ranked by a bound no worse than its true rank (`_bound`), and evaluated when it comes
    to the top: most signatures are never evaluated for most shapes."""

    seen: int = -1  # how much of the change log the heap reflects (-1: nothing yet)
    verdicts: dict[int, tuple[Status | GpuChoice, tuple]] = field(default_factory=dict)  # sig -> verdict, lists
    refused: dict[int, Status | None] = field(default_factory=dict)  # kind of node -> its refusal (None: passes)
    heap: list[_Entry] = field(default_factory=list)
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


def _exact(node: NodeState) -> tuple:
    """Every GPU's holders (how many, their declared memory) and MIG instances (free or not)."""
    return tuple(
        (len(gpu.holders), gpu.declared_gib, tuple((m.start, m.profile, m.holder is None) for m in gpu.mig))
        for gpu in node.gpus
    )


def _layout(node: NodeState) -> tuple[str, tuple]:
    """How much of a node's state the GPU view's allocator reads, and so how nodes of one signature map onto
    each other: `whole` (exclusive whole GPUs: each island's free count), `mig` (every GPU cut, one island:
    free instances per profile, taken in order), or `exact` (time-sliced, mixed: every GPU as it is)."""
    if all(gpu.replicas == 1 and not gpu.mig for gpu in node.gpus):
        return "whole", tuple(len(free) for free in _free_lists(node))  # canonical: the counts, sorted
    if node.gpus and all(gpu.mig for gpu in node.gpus) and len({gpu.island for gpu in node.gpus}) == 1:
        return "mig", tuple(sorted(_Units.of(node).profiles))
    return "exact", _exact(node)


def _free_mig(node: NodeState, profile: str) -> tuple[tuple[int, int], ...]:
    """The free instances of the profile in the order GpuDevices takes them: (GPU, start)."""
    return tuple((gpu.index, slot.start) for gpu, slot in node.free_mig(profile))


def _profile_of(choice: GpuChoice) -> str:
    """The MIG profile a choice took, from its resource name (nvidia.com/mig-PROFILE)."""
    return choice.resource.removeprefix(mig_resource(""))


def _host(node: NodeState) -> tuple:
    """A node's cpu and memory as the extended view and the scheduler's scores read them."""
    spec = node.spec
    used = (node.cpu_requested, node.memory_requested, node.cpu_nonzero, node.memory_nonzero)
    return (spec.cpu_milli, spec.memory_bytes, *used)


@dataclass(frozen=True)
class _Units:
    """What the GPU view's allocator can still give on a node: a pod of N takes N of one kind, so fewer and it
    is refused before anything is chosen; free_after is what a GpuChoice there would leave."""

    gpus: int  # whole GPUs with a free replica
    replicas: int  # free replicas of whole GPUs
    mig: int  # free MIG instances
    profiles: tuple[tuple[str, int], ...]  # free MIG instances by profile

    @classmethod
    def of(cls, node: NodeState) -> _Units:
        profiles: dict[str, int] = {}
        gpus = replicas = 0
        for gpu in node.gpus:
            if gpu.mig:
                for slot in gpu.mig:
                    if slot.holder is None:
                        profiles[slot.profile] = profiles.get(slot.profile, 0) + 1
            elif gpu.free_replicas:
                gpus += 1
                replicas += gpu.free_replicas
        return cls(gpus, replicas, sum(profiles.values()), tuple(sorted(profiles.items())))

    def short(self, pod: GpuNeeds, count: int) -> bool:
        have = dict(self.profiles).get(pod.mig_profile, 0) if pod.mig_profile else self.gpus
        return have < count

    def free_after(self, pod: GpuNeeds, count: int) -> int:
        return (self.mig if pod.mig_profile else self.replicas) - count


_SHORT = Status(Code.UNSCHEDULABLE, ("short of units",), "")  # placeholder: too few units; evaluated if diagnosed
_UNSEEN: tuple = ()  # a heap entry's lists before its signature is evaluated


class Placer:
    """Places pods on a ClusterState; reusable by the gang simulator, which also releases them.

    Nodes are indexed by what they can still hold: a signature of everything the filters and the allocator read
    (labels, taints, the GPU block, each GPU's holders; cpu and memory unless the GPU view checks them apart).
    On a node of exclusive whole GPUs only how many GPUs each island has free counts (the GPUs chosen on one
    node map position by position onto another's). The node filters and the GPUs' kind are checked once per
    kind of node; a pod shape is evaluated once per signature, and only for the signatures its heap brings to
    the top: placing N pods costs about N·(signatures changed), whatever the node count."""

    def __init__(
        self, state: ClusterState, view: View = "gpu", policy: Ranking = "binpack", gpu_weight: int | None = None
    ):
        self.state = state
        self.view: View = view
        self.policy: Ranking = policy
        self.gpu_weight = gpu_weight
        # In the GPU view, ranked by GPUs alone, cpu and memory only filter (HostResourcesFit, whose verdict
        # does not change the GPUs chosen): pods that differ only there share one cache, checked node by node.
        self._host_apart = view == "gpu" and gpu_weight is None
        self._kinds: dict[tuple, int] = {}  # what never changes on a node -> its kind
        self._kind_node: list[str] = []  # kind -> one of its nodes (a node's kind never changes)
        self._ids: dict[tuple, int] = {}  # signature -> its number
        self._kind_of: list[int] = []  # signature -> its kind
        self._of_kind: list[list[int]] = []  # kind -> its signatures
        self._mode: list[str] = []  # signature -> how its nodes' GPUs map onto each other (_layout)
        self._units: list[_Units] = []  # signature -> what its nodes can still give
        self._groups: list[list[str]] = []  # signature -> its nodes' names, sorted
        self._gen: list[int] = []  # signature -> how often its members changed (a heap entry's freshness)
        self._sig: dict[str, int] = {}
        self._changes: list[int] = []  # signatures whose members changed, in order
        self._cache: dict[str, _ShapeCache] = {}
        self._seq = 0
        for node in state.nodes:
            sig = self._signature(node)
            self._sig[node.name] = sig
            self._groups[sig].append(node.name)
        for members in self._groups:
            members.sort()

    def _signature(self, node: NodeState) -> int:
        kind = self._kinds.setdefault(_static(node), len(self._kinds))
        if kind == len(self._kind_node):
            self._kind_node.append(node.name)
            self._of_kind.append([])
        host = () if self._host_apart else _host(node)
        mode, state = _layout(node) if self.view == "gpu" else ("exact", _exact(node))
        key = (kind, host, mode, state)
        sig = self._ids.get(key)
        if sig is None:
            sig = self._ids[key] = len(self._kind_of)
            self._kind_of.append(kind)
            self._of_kind[kind].append(sig)
            self._mode.append(mode)
            self._units.append(_Units.of(node))
            self._groups.append([])
            self._gen.append(0)
        return sig

    def _moved(self, node: NodeState) -> None:
        """The node changed: it leaves its signature's group for its new one."""
        old, new = self._sig[node.name], self._signature(node)
        if old == new:
            return
        before = [group[0] if group else None for group in (self._groups[old], self._groups[new])]
        self._groups[old].remove(node.name)
        bisect.insort(self._groups[new], node.name)
        self._sig[node.name] = new
        for sig, first in zip((old, new), before, strict=True):
            group = self._groups[sig]
            if (group[0] if group else None) != first:  # a heap entry stands for its group's first node
                self._gen[sig] += 1
                self._changes.append(sig)

    def _refresh(self, pod: GpuNeeds, gpus: int) -> _ShapeCache:
        probe = _gpu_part(pod) if self._host_apart else pod
        cache = self._cache.setdefault(_shape(probe, gpus), _ShapeCache())
        refused, kind_of = cache.refused, self._kind_of
        if cache.seen < 0:
            for kind in self._kinds.values():
                self._passes(probe, gpus, cache, kind)
            stale: Iterable[int] = [
                sig for kind, sigs in enumerate(self._of_kind) if refused[kind] is None for sig in sigs
            ]
        else:
            stale = [sig for sig in set(self._changes[cache.seen :]) if refused[kind_of[sig]] is None]
        for sig in stale:
            members = self._groups[sig]
            if members:
                self._push(probe, pod, gpus, cache, sig, members[0])
        if stale:
            cache.diagnoses.clear()
        cache.seen = len(self._changes)
        return cache

    def _bound(self, probe: GpuNeeds, gpus: int, sig: int) -> tuple | None:
        """A rank no better than the signature's true one, from its units alone; None when there is none."""
        if self.view != "gpu" or self.gpu_weight is not None or not gpus:
            return None
        free_after = self._units[sig].free_after(probe, gpus)
        if self.policy == "spread":
            return (-free_after,)
        if self.policy == "topology":
            return (0, 0, free_after)
        return (free_after,)

    def _push(self, probe: GpuNeeds, pod: GpuNeeds, gpus: int, cache: _ShapeCache, sig: int, first: str) -> None:
        """The signature into the shape's heap: at its bound if not evaluated yet, else at its rank if it fits."""
        if sig not in cache.verdicts:
            if self.view == "gpu" and gpus and self._units[sig].short(probe, gpus):
                cache.verdicts[sig] = (_SHORT, ())
                return
            key = self._bound(probe, gpus, sig)
            if key is None:
                cache.verdicts[sig] = self._evaluate(probe, gpus, first)
        if sig in cache.verdicts:
            verdict = cache.verdicts[sig][0]
            if not isinstance(verdict, GpuChoice):
                return
            key = self._rank(sig, cache, first, pod, gpus)
        self._seq += 1
        assert key is not None
        heapq.heappush(cache.heap, (key, first, self._seq, self._gen[sig], sig, sig in cache.verdicts))

    def _rank(self, sig: int, cache: _ShapeCache, name: str, pod: GpuNeeds, gpus: int) -> tuple:
        """The rank of the signature's choice on the node, less the name: by the choice alone, or with a GPU
        weight by the node's own cpu and memory (the same for every node of the signature, read on this one)."""
        verdict = cache.verdicts[sig][0]
        assert isinstance(verdict, GpuChoice)
        choice = verdict if self.gpu_weight is None else self._on(sig, cache, name)
        return rank(choice, pod, gpus, self.policy, self.gpu_weight)[:-1]

    def _passes(self, probe: GpuNeeds, gpus: int, cache: _ShapeCache, kind: int) -> None:
        """Whether this kind of node passes what never changes on it: the node filters and, in the GPU view, the
        GPUs' kind (time-sliced, model, memory). Worked out once per kind on one of its nodes; a refusal is that
        node's whole verdict, and every node of the kind's."""
        node = self.state.node(self._kind_node[kind])
        refused = node_filters(probe, node)
        if refused is None and self.view == "gpu" and gpus and not probe.mig_profile and mismatch(probe, node):
            found = evaluate(probe, gpus, node, self.view)
            refused = found if isinstance(found, Status) else None
        cache.refused[kind] = refused

    def _evaluate(self, probe: GpuNeeds, gpus: int, name: str) -> tuple[Status | GpuChoice, tuple]:
        """The verdict on the node, and what its GPUs are mapped by onto another node of its signature."""
        node = self.state.node(name)
        verdict = evaluate(probe, gpus, node, self.view)
        if not isinstance(verdict, GpuChoice):
            return verdict, ()
        return verdict, _free_mig(node, probe.mig_profile) if probe.mig_profile else _free_lists(node)

    def _cached(self, pod: GpuNeeds, gpus: int, cache: _ShapeCache, sig: int) -> Status | GpuChoice:
        """The verdict of a signature: its kind's refusal, or its own (evaluated now if it was not yet)."""
        refused = cache.refused[self._kind_of[sig]]
        if refused is not None:
            return refused
        if sig not in cache.verdicts:
            probe = _gpu_part(pod) if self._host_apart else pod
            short = self.view == "gpu" and gpus and self._units[sig].short(probe, gpus)
            cache.verdicts[sig] = (_SHORT, ()) if short else self._evaluate(probe, gpus, self._groups[sig][0])
        return cache.verdicts[sig][0]

    def _diagnosed(self, pod: GpuNeeds, gpus: int, sig: int, cache: _ShapeCache) -> Status | GpuChoice:
        """The verdict as the scheduler words it: a placeholder evaluated on one of the signature's nodes."""
        verdict = self._cached(pod, gpus, cache, sig)
        if verdict is _SHORT:
            probe = _gpu_part(pod) if self._host_apart else pod
            cache.verdicts[sig] = self._evaluate(probe, gpus, self._groups[sig][0])
            verdict = cache.verdicts[sig][0]
        return verdict

    def _on(self, sig: int, cache: _ShapeCache, name: str) -> GpuChoice:
        """The signature's choice on this node: the same GPUs (an exact signature), or mapped onto its own."""
        verdict, lists = cache.verdicts[sig]
        assert isinstance(verdict, GpuChoice)
        node = self.state.node(name)
        mode = self._mode[sig]
        if mode == "exact" or (mode == "whole") == bool(verdict.mig):
            return verdict if verdict.node is node else replace(verdict, node=node)
        # counts only (the node it was found on may hold others of the same counts since): mapped
        if verdict.mig:
            slots = dict(zip(lists, _free_mig(node, _profile_of(verdict)), strict=True))
            taken = tuple(slots[slot] for slot in verdict.mig)
            return replace(verdict, node=node, gpus=tuple(gpu for gpu, _ in taken), mig=taken)
        own = _free_lists(node)
        mapping = {a: b for theirs, mine in zip(lists, own, strict=True) for a, b in zip(theirs, mine, strict=True)}
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
                verdict = self._cached(pod, gpus, cache, self._sig[name])
                if isinstance(verdict, GpuChoice) and isinstance(self._verdict(pod, verdict, name), GpuChoice):
                    ranked.append((self._rank(self._sig[name], cache, name, pod, gpus), name))
            return self._on(self._sig[min(ranked)[1]], cache, min(ranked)[1]) if ranked else None
        heap = cache.heap
        probe = _gpu_part(pod) if self._host_apart else pod
        passed: list[_Entry] = []  # popped while looking: back in the heap after
        best: tuple[tuple, str, int] | None = None  # (rank, node, sig) of the best node that fits so far
        while heap:
            entry = heap[0]
            sig = entry[4]
            if self._gen[sig] != entry[3]:
                heapq.heappop(heap)
                continue
            if best is not None and entry[:2] >= best[:2]:
                break  # every node left ranks after the best one found: a group's first node is its least
            if not entry[5]:  # at its bound: evaluated now, back at its rank if it fits
                heapq.heappop(heap)
                if sig not in cache.verdicts:
                    cache.verdicts[sig] = self._evaluate(probe, gpus, self._groups[sig][0])
                self._push(probe, pod, gpus, cache, sig, self._groups[sig][0])
                continue
            passed.append(heapq.heappop(heap))
            verdict = cache.verdicts[sig][0]  # fits the GPUs; the first of its nodes whose cpu and memory fit
            fits = next((n for n in self._groups[sig] if isinstance(self._verdict(pod, verdict, n), GpuChoice)), None)
            if fits is not None and (best is None or (entry[0], fits) < best[:2]):
                best = (entry[0], fits, sig)
        for entry in passed:
            heapq.heappush(heap, entry)
        return None if best is None else self._on(best[2], cache, best[1])

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
