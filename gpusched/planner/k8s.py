"""Predict kube-scheduler's verdict for one pod from kubectl JSON: the nodes that fit, or the exact message.

Covers the default profile of 1.34–1.37 for what kubectl shows of Nodes and Pods: NodeName, NodeUnschedulable,
TaintToleration, NodeAffinity and NodeResourcesFit, then the PostFilter (DRA's message and DefaultPreemption).
Unbound pods that preemption nominated to a node count there for pods of no higher priority, as the Filter does.
The wording and the version differences follow /work/notes/k8s-research.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, Field, computed_field

from ..errors import InputError
from ..models.dra import DeviceClass, ResourceClaim
from ..models.kube import (
    KubeNode,
    KubePod,
    Requests,
    add,
    is_scalar,
    parse_nodes,
    parse_pod,
    parse_pods,
)
from ..models.quantity import format_quantity
from ..models.scheduling import NodeSelectorTerm, selector_matches, terms_match
from ..scenarios import read_document
from .dra.allocator import DraError, Inventory, NodeRef
from .dra.extended import (
    SPECIAL_NAME,
    class_mapping,
    dra_served,
    extended_claim,
    uses_extended,
)
from .dra.extended import enabled as extended_enabled
from .dra.objects import DraObjects, load_objects
from .dra.plugin import (
    NOT_AVAILABLE,
    Cycle,
    Unit,
    explain,
    filter_node,
    normalized,
    pod_unit,
    postfilter_reason,
    prefilter,
    summarize,
)
from .dra.run import error_to_input
from .filters import (
    TOO_MANY_PODS,
    check_node_name,
    check_selector,
    check_taints,
    check_unschedulable,
    insufficient,
)
from .framework import SUCCESS, Code, Status, fit_error, unresolvable, unschedulable
from .preemption import Candidate, importance, pick, reprieve

__all__ = ["Shortfall", "NodeVerdict", "Nomination", "ClaimPrediction", "K8sPrediction", "parse_version", "predict", "predict_files"]

Version = tuple[int, ...]
OLDEST, NEWEST = (1, 34), (1, 37)
NO_NODES = "no nodes available to schedule pods"
AFFINITY_CONFLICT = "pod affinity terms conflict"
DRA_NO_CLAIMS = "no new claims to deallocate"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
EVENT_LIMIT = 1024  # bytes kept of an event's note
_NATIVE = ("cpu", "memory", "ephemeral-storage")


class Shortfall(BaseModel):
    """One NodeResourcesFit reason with the numbers behind it (cpu in millicores)."""

    resource: str
    reason: str
    requested: int
    free: int
    allocatable: int
    unresolvable: bool = Field(False, description="the request alone exceeds the node's allocatable")
    nominated: int = Field(0, description="of the free amount, what pods nominated to the node by preemption hold")

    def text(self) -> str:
        requested, free, total, held = (
            format_quantity(self.resource, n) for n in (self.requested, self.free, self.allocatable, self.nominated)
        )
        kept = f", {held} held for nominated pods" if self.nominated else ""
        return f"{self.reason} ({self.resource}: requested {requested}, free {free} of {total}{kept})"


class NodeVerdict(BaseModel):
    name: str
    fits: bool
    plugin: str = Field("", description="the first filter plugin that rejected the node")
    code: str = Field("Success", description="Success, Unschedulable or UnschedulableAndUnresolvable")
    reasons: list[str] = Field(default_factory=list)
    shortfalls: list[Shortfall] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def detail(self) -> str:
        """`node reason` — with the numbers for resource reasons, which the event never shows."""
        if self.fits:
            return ""
        parts = [s.text() for s in self.shortfalls] or self.reasons
        return f"{self.name} {', '.join(parts)}"


class Nomination(BaseModel):
    node: str
    victims: list[str] = Field(description="namespace/name, most important first")


class ClaimPrediction(BaseModel):
    """A claim of the pod: where its devices would come from, or why none can."""

    claim: str = Field(description="namespace/name")
    node: str | None = Field(None, description="the node picked among the feasible ones (DRA score, then name)")
    devices: list[str] = Field(default_factory=list, description="pool/device")
    allocation: dict | None = Field(None, description="status.allocation as the scheduler would write it")
    diagnosis: str | None = Field(None, description="gpusched's: what ruled the devices out on each node")


class K8sPrediction(BaseModel):
    version: str
    pod: str = Field(description="namespace/name")
    priority: int
    requests: dict[str, int] = Field(description="what the scheduler counts for the pod; cpu in millicores")
    feasible: list[str] = Field(description="nodes that pass every filter")
    nodes: list[NodeVerdict]
    message: str | None = Field(None, description="the PodScheduled=False condition message when Pending")
    event: str | None = Field(None, description="the FailedScheduling event note (the message cut to 1024 bytes)")
    nomination: Nomination | None = Field(None, description="where preemption would make room, and whom it evicts")
    claims: list[ClaimPrediction] = Field(default_factory=list, description="the pod's ResourceClaims (with --objects)")
    extended_resource_claim_status: dict | None = Field(
        None, description="status.extendedResourceClaimStatus when DRA serves an extended resource (DRAExtendedResource); "
        "resourceClaimName is the generateName, the API server appends 5 random characters")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fits(self) -> bool:
        return bool(self.feasible)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def details(self) -> list[str]:
        return [verdict.detail for verdict in self.nodes if not verdict.fits]


def parse_version(version: str | Version) -> Version:
    """`1.37` or `1.34.1` (a leading v is fine); a version outside 1.34–1.37 is refused, not guessed at."""
    text = version if isinstance(version, str) else ".".join(str(part) for part in version)
    try:
        parsed = tuple(int(part) for part in text.strip().lstrip("v").split("."))
    except ValueError:
        parsed = ()
    if not 2 <= len(parsed) <= 3 or not OLDEST <= parsed[:2] <= NEWEST:
        raise ValueError(f"--k8s-version: expected 1.34 to 1.37, optionally with a patch such as 1.34.1, got {text!r}")
    return parsed


@dataclass(frozen=True)
class _NodeInfo:
    """A node with the pods the scheduler counts on it, and their summed requests.

    `nominated`: unbound pods that preemption nominated to this node, of at least the predicted pod's priority;
    the Filter counts them as if they ran here (RunFilterPluginsWithNominatedPods), but they are never victims.
    """

    node: KubeNode
    pods: tuple[KubePod, ...]
    requested: Requests
    dra_mapped: frozenset[str] = frozenset()  # resource names a DeviceClass maps (DRAExtendedResource)
    nominated: tuple[KubePod, ...] = ()

    @classmethod
    def of(cls, node: KubeNode, pods: list[KubePod] | tuple[KubePod, ...],
           dra_mapped: frozenset[str] = frozenset(), nominated: tuple[KubePod, ...] = ()) -> _NodeInfo:
        requested: Requests = {}
        for pod in (*pods, *nominated):
            requested = add(requested, pod.requests)
        return cls(node, tuple(pods), requested, dra_mapped, nominated)

    def without(self, gone: list[KubePod]) -> _NodeInfo:
        ids = {id(pod) for pod in gone}
        return _NodeInfo.of(self.node, [pod for pod in self.pods if id(pod) not in ids], self.dra_mapped, self.nominated)

    def delegated(self, name: str) -> bool:
        """shouldDelegateResourceToDRA: a class maps the resource and no device plugin offers it here."""
        return name in self.dra_mapped and self.node.allocatable.get(name, 0) <= 0


def _snapshot(nodes: list[KubeNode], pods: list[KubePod], target: KubePod,
              dra_mapped: frozenset[str] = frozenset()) -> list[_NodeInfo]:
    """Bound, non-terminal pods per node, and the pods nominated there that matter to the target; the pod being
    predicted never counts against itself."""
    bound: dict[str, list[KubePod]] = {node.name: [] for node in nodes}
    nominated: dict[str, list[KubePod]] = {node.name: [] for node in nodes}
    for pod in pods:
        if pod.terminal or pod.key == target.key:
            continue
        if pod.node_name in bound:
            bound[pod.node_name].append(pod)
        elif not pod.node_name and pod.nominated_node in nominated and pod.priority >= target.priority:
            nominated[pod.nominated_node].append(pod)
    return [_NodeInfo.of(node, bound[node.name], dra_mapped, tuple(nominated[node.name])) for node in nodes]


# --- Filter ---------------------------------------------------------------------------------------------------


def _shortfalls(pod: KubePod, info: _NodeInfo) -> list[Shortfall]:
    """NodeResourcesFit: pod count, then cpu, memory, ephemeral-storage, then scalar resources (sorted)."""
    found = []
    room, present, held = info.node.allocatable.get("pods", 0), len(info.pods), len(info.nominated)
    if present + held + 1 > room:
        found.append(Shortfall(resource="pods", reason=TOO_MANY_PODS, requested=1, free=room - present,
                               allocatable=room, nominated=held))  # fmt: skip
    scalars = sorted(name for name in pod.requests if is_scalar(name))
    for name in (*_NATIVE, *scalars):
        if info.delegated(name):
            continue  # DynamicResources allocates it from the DeviceClass's devices
        need = pod.requests.get(name, 0)
        total = info.node.allocatable.get(name, 0)
        held = sum(nominated.requests.get(name, 0) for nominated in info.nominated)
        free = total - info.requested.get(name, 0) + held
        if need > 0 and need > free - held:
            found.append(
                Shortfall(
                    resource=name,
                    reason=insufficient(name),
                    requested=need,
                    free=free,
                    allocatable=total,
                    unresolvable=need > total,
                    nominated=held,
                )
            )
    return found


def _resources(pod: KubePod, info: _NodeInfo, version: Version) -> Status:
    """Unresolvable for the whole node when any request alone exceeds allocatable (1.34+): preemption skips it."""
    found = _shortfalls(pod, info)
    if not found:
        return SUCCESS
    make = unresolvable if any(s.unresolvable for s in found) else unschedulable
    return make("NodeResourcesFit", *(s.reason for s in found))


def _node_name(pod: KubePod, info: _NodeInfo, version: Version) -> Status:
    return check_node_name(pod.node_name, info.node.name)


def _unschedulable(pod: KubePod, info: _NodeInfo, version: Version) -> Status:
    return check_unschedulable(info.node.unschedulable, pod.tolerations)


def _taints(pod: KubePod, info: _NodeInfo, version: Version) -> Status:
    return check_taints(info.node.taints, pod.tolerations, version)


def _affinity(pod: KubePod, info: _NodeInfo, version: Version) -> Status:
    """nodeSelector AND the required node affinity terms (ORed); both are one reason."""
    labels, name = info.node.labels, info.node.name
    required = pod.affinity is None or terms_match(pod.affinity, labels, name)
    return check_selector(selector_matches(pod.node_selector, labels) and required)


Filter = Callable[[KubePod, _NodeInfo, Version], Status]


def _filters(version: Version) -> tuple[Filter, ...]:
    """The default profile's order; 1.37 moved NodeName ahead of NodeUnschedulable."""
    head = (_node_name, _unschedulable) if version[:2] >= (1, 37) else (_unschedulable, _node_name)
    return (*head, _taints, _affinity, _resources)


class _Dra:
    """DynamicResources: the last filter, its verdict per node cached (pods do not change it).

    With DRAExtendedResource, a node whose device plugin does not offer a resource a DeviceClass maps gets the pod's
    special claim (see dra/extended.py) allocated after the pod's own claims.
    """

    def __init__(self, inventory: Inventory, nodes: list[KubeNode], unit: Unit, objects: DraObjects,
                 pod: KubePod | None = None, mapping: dict[str, DeviceClass] | None = None) -> None:
        self.inventory, self.unit, self.objects = inventory, unit, objects
        self.pod, self.mapping = pod, mapping or {}
        self.nodes = {node.name: NodeRef(node.name, node.labels) for node in nodes}
        self.cycle = Cycle(prefilter=prefilter(unit, inventory))
        self.units: dict[str, Unit | None] = {}
        self.request_mappings: dict[str, list[dict]] = {}

    def _unit(self, node: KubeNode) -> Unit | None:
        """The node's claims: the pod's own, plus the special claim when DRA serves an extended resource here."""
        if node.name not in self.units:
            served = dra_served(self.pod, node, self.mapping) if self.pod is not None and self.mapping else {}
            if not served or self.pod is None:
                self.units[node.name] = self.unit if self.unit.claims or self.unit.missing else None
            else:
                claim, mappings = extended_claim(self.pod, served, self.mapping)
                self.units[node.name] = replace(self.unit, claims=[*self.unit.claims, claim])
                self.request_mappings[node.name] = mappings
        return self.units[node.name]

    def __call__(self, pod: KubePod, info: _NodeInfo, version: Version) -> Status:
        name = info.node.name
        if name not in self.cycle.reasons:
            unit = self._unit(info.node)
            if unit is None:  # every extended resource comes from a device plugin here, and no claims
                return SUCCESS
            try:
                reason, results = filter_node(self.inventory, self.nodes[name], unit)
            except DraError as error:
                raise error_to_input(error, self.objects) from None
            self.cycle.record(self.nodes[name], unit, reason, results)
        reason = self.cycle.reasons[name]
        return unresolvable("DynamicResources", reason) if reason else SUCCESS

    def _label(self, claim: ResourceClaim) -> str:
        """The special claim is created as `<pod>-extended-resources-<random>`; shown by that generateName."""
        if claim.metadata.name == SPECIAL_NAME:
            return f"{claim.metadata.namespace}/{claim.metadata.generate_name}"
        return claim.key

    def predictions(self, feasible: list[str]) -> list[ClaimPrediction]:
        """The claims on the best feasible node (DRA score, then name), or what ruled each node out."""
        if feasible:
            scores = normalized({node: self.cycle.scores.get(node, 0) for node in feasible})
            best = min(feasible, key=lambda node: (-scores[node], node))
            fresh = iter(self.cycle.allocations.get(best, []))
            found = []
            unit = self.units.get(best) or self.unit
            for claim in unit.claims:
                allocation = claim.status.allocation if claim.status and claim.status.allocation else next(fresh)
                found.append(ClaimPrediction(claim=self._label(claim), node=best, allocation=allocation.wire(),
                                             devices=[f"{r.pool}/{r.device}" for r in allocation.devices.results]))
            return found
        refused = sorted(name for name, reason in self.cycle.reasons.items() if reason and reason != NOT_AVAILABLE)
        per_node = {name: explain(self.inventory, self.nodes[name], self.units[name].claims)  # type: ignore[union-attr]
                    for name in refused}
        text = summarize(per_node) if per_node else self.cycle.prefilter or None
        claims = next((self.units[name].claims for name in refused), self.unit.claims)  # type: ignore[union-attr]
        return [ClaimPrediction(claim=self._label(claim), diagnosis=text) for claim in claims]

    def extended_status(self, node: str) -> dict | None:
        """pod.status.extendedResourceClaimStatus as PreBind writes it, when the node uses the special claim."""
        mappings = self.request_mappings.get(node)
        if not mappings or self.pod is None:
            return None
        return {"requestMappings": mappings,
                "resourceClaimName": f"{self.pod.name}-extended-resources-"}  # the API server appends 5 characters


def _run_filters(pod: KubePod, info: _NodeInfo, version: Version, dra: _Dra | None = None) -> Status:
    """The first plugin that rejects the node decides its status; DynamicResources comes last."""
    for check in (*_filters(version), *([dra] if dra else [])):
        status = check(pod, info, version)
        if not status.ok:
            return status
    return SUCCESS


# --- PreFilter ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PreFilter:
    names: frozenset[str] | None = None  # None: every node is considered
    plugins: tuple[str, ...] = ()
    failure: str = ""
    failed_plugin: str = "NodeAffinity"

    def outside(self) -> Status:
        """What a node left out by the PreFilter result shows."""
        return unresolvable("", f"node(s) didn't satisfy plugin(s) [{' '.join(self.plugins)}]")


def _affinity_names(terms: list[NodeSelectorTerm] | None) -> frozenset[str] | None:
    """Node names the required terms allow by `metadata.name In`; None as soon as one term does not pin names."""
    if not terms:
        return None
    allowed: set[str] = set()
    for term in terms:
        pinned: set[str] | None = None
        for requirement in term.match_fields:
            if requirement.key == "metadata.name" and requirement.operator == "In":
                values = set(requirement.values)
                pinned = values if pinned is None else pinned & values
        if pinned is None:
            return None
        allowed |= pinned
    return frozenset(allowed)


def _prefilter(pod: KubePod, version: Version) -> _PreFilter:
    """PreFilter results narrow the nodes: 1.37's NodeName, and NodeAffinity's `metadata.name` matchFields."""
    names: frozenset[str] | None = None
    plugins: list[str] = []
    if version[:2] >= (1, 37) and pod.node_name:
        names, plugins = frozenset({pod.node_name}), ["NodeName"]
    pinned = _affinity_names(pod.affinity)
    if pinned is not None and not pinned:
        return _PreFilter(failure=AFFINITY_CONFLICT)
    if pinned is not None:
        names = pinned if names is None else names & pinned
        plugins.append("NodeAffinity")
    return _PreFilter(names, tuple(sorted(plugins)))


# --- PostFilter: DefaultPreemption ------------------------------------------------------------------------------


def _dry_run(pod: KubePod, info: _NodeInfo, version: Version, dra: _Dra | None = None) -> Candidate[KubePod] | Status:
    """Remove every lower-priority pod; if the pod then fits, put back as many as possible, most important first."""
    lower = [other for other in info.pods if other.priority < pod.priority]
    if not lower:
        return unresolvable("DefaultPreemption", NO_VICTIMS)
    status = _run_filters(pod, info.without(lower), version, dra)
    if not status.ok:
        return status
    victims = reprieve(
        [], sorted(lower, key=importance), lambda gone: _run_filters(pod, info.without(gone), version, dra).ok
    )
    return Candidate(info.node.name, victims)


def _preempt(
    pod: KubePod, infos: list[_NodeInfo], statuses: dict[str, Status], version: Version, dra: _Dra | None = None
) -> tuple[bool, str, Candidate[KubePod] | None]:
    """DefaultPreemption's (success, message, choice); only Unschedulable nodes are tried."""
    if pod.preemption_policy == "Never":
        return False, f"preemption: {POLICY_NEVER}", None
    tried: dict[str, Status] = {}
    candidates: list[Candidate[KubePod]] = []
    for info in infos:
        if statuses[info.node.name].code is Code.UNSCHEDULABLE:
            result = _dry_run(pod, info, version, dra)
            if isinstance(result, Status):
                tried[info.node.name] = result
            else:
                candidates.append(result)
    if not candidates:
        absent = unresolvable("DefaultPreemption", NOT_HELPFUL)
        inner = fit_error(len(infos), [tried.get(info.node.name, absent) for info in infos])
        return False, f"preemption: {inner}", None
    best = pick(candidates)
    if version[:2] < (1, 37):
        return True, "", best
    return (
        True,
        f"preemption: found a potential placement for pod on node {best.node}, preempting {len(best.victims)} victims",
        best,
    )


def _postfilter(
    pod: KubePod, infos: list[_NodeInfo], statuses: dict[str, Status], version: Version, dra: _Dra | None = None
) -> tuple[str, Candidate[KubePod] | None]:
    """DynamicResources then DefaultPreemption; a success drops the reasons gathered before it."""
    if dra is None:
        reasons = [DRA_NO_CLAIMS] if version[:2] < (1, 37) else []  # 1.37 adds no reason for a pod without claims
    else:
        reasons = [reason for reason in [postfilter_reason(dra.cycle, version, pod.key)] if reason]
    ok, message, best = _preempt(pod, infos, statuses, version, dra)
    if ok:
        return message, best
    return ", ".join([*reasons, message]), None


# --- predict --------------------------------------------------------------------------------------------------


def _truncate(message: str) -> str:
    """An event note keeps at most 1024 bytes, ending ` ...` when cut."""
    raw = message.encode()
    if len(raw) <= EVENT_LIMIT:
        return message
    return raw[: EVENT_LIMIT - 4].decode(errors="ignore") + " ..."


def _statuses(
    pod: KubePod, infos: list[_NodeInfo], pre: _PreFilter, version: Version, dra: _Dra | None = None
) -> dict[str, Status]:
    if pre.failure:
        return {info.node.name: unresolvable(pre.failed_plugin, pre.failure) for info in infos}
    return {
        info.node.name: _run_filters(pod, info, version, dra)
        if pre.names is None or info.node.name in pre.names
        else pre.outside()
        for info in infos
    }


def _verdict(pod: KubePod, info: _NodeInfo, status: Status) -> NodeVerdict:
    shortfalls = _shortfalls(pod, info) if status.plugin == "NodeResourcesFit" else []
    return NodeVerdict(
        name=info.node.name,
        fits=status.ok,
        plugin=status.plugin,
        code=status.code.value,
        reasons=list(status.reasons),
        shortfalls=shortfalls,
    )


def _schedule(pod: KubePod, infos: list[_NodeInfo], version: Version, dra: _Dra | None = None) -> K8sPrediction:
    result = K8sPrediction(
        version=".".join(map(str, version)),
        pod=pod.key,
        priority=pod.priority,
        requests=dict(sorted(pod.requests.items())),
        feasible=[],
        nodes=[],
    )
    if not infos:
        return result.model_copy(update={"message": NO_NODES, "event": NO_NODES})
    pre = _prefilter(pod, version)
    if not pre.failure and dra is not None and dra.cycle.prefilter:
        pre = _PreFilter(failure=dra.cycle.prefilter, failed_plugin="DynamicResources")
    statuses = _statuses(pod, infos, pre, version, dra)
    result.nodes = [_verdict(pod, info, statuses[info.node.name]) for info in infos]
    result.feasible = [name for name, status in statuses.items() if status.ok]
    if dra is not None:
        result.claims = dra.predictions(result.feasible)
        chosen = next((c.node for c in result.claims if c.node), None)
        result.extended_resource_claim_status = dra.extended_status(chosen) if chosen else None
    if result.feasible:
        return result
    post, best = _postfilter(pod, infos, statuses, version, dra)
    result.message = fit_error(len(infos), statuses.values(), prefilter=pre.failure, postfilter=post)
    result.event = _truncate(result.message)
    if best is not None:
        result.nomination = Nomination(node=best.node, victims=[victim.key for victim in best.victims])
    return result


def predict(
    nodes_doc: Any,
    pods_doc: Any,
    pod_doc: Any,
    version: str | Version = NEWEST,
    sources: tuple[str, str, str] = ("nodes", "pods", "pod"),
    objects: DraObjects | None = None,
) -> K8sPrediction:
    """Parsed `kubectl get -o json` documents in; `sources` names them in errors. `pods_doc` may be None.

    A pod with spec.resourceClaims needs `objects`: the DeviceClasses, ResourceSlices and claims or templates.
    """
    release = parse_version(version)
    nodes = parse_nodes(nodes_doc, sources[0])
    pods = parse_pods(pods_doc, sources[1]) if pods_doc is not None else []
    pod = parse_pod(pod_doc, sources[2])
    dra = None
    mapping = class_mapping(objects.classes) if objects is not None and extended_enabled(release) else {}
    if pod.claims or uses_extended(pod, mapping):
        if objects is None:
            raise InputError(sources[2], "ResourceClaims need --objects: the DeviceClasses, ResourceSlices and "
                             "ResourceClaims or templates, as kubectl get -o json prints them", "spec.resourceClaims")
        held = {(r.driver, r.pool, r.device) for claim in objects.claims if claim.status and claim.status.allocation
                for r in claim.status.allocation.devices.results}
        dra = _Dra(Inventory(objects.slices, objects.classes, held), nodes, pod_unit(pod, objects), objects, pod,
                   mapping)
    return _schedule(pod, _snapshot(nodes, pods, pod, frozenset(mapping)), release, dra)


def predict_files(
    nodes: str, pods: str | None, pod: str, version: str | Version = NEWEST, objects: list[str] | None = None
) -> K8sPrediction:
    """The same from file paths, each named in any error."""
    release = parse_version(version)
    pods_doc = read_document(pods) if pods else None
    found = load_objects(objects, pods=False) if objects else None
    return predict(read_document(nodes), pods_doc, read_document(pod), release, (nodes, pods or "pods", pod), found)
