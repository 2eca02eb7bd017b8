"""kubectl `get -o json` Nodes and Pods, reduced to what kube-scheduler reads.

Every complaint names the file and the field path (`items[2].spec.containers[0].resources.requests.cpu`), so a
user can find the bad value in a large dump.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, NoReturn

from pydantic import BaseModel, ValidationError

from ..errors import InputError, LimitError
from ..limits import INT32_MAX, INT32_MIN, INT64_MAX, MAX_NODES, MAX_PODS
from .goparse import label_value_error, parse_rfc3339, qualified_name_error
from .quantity import milli, rounded, stored, to_int
from .scheduling import NodeSelectorTerm, Taint, Toleration
from .topology import METADATA_NAME, LabelSelector, PodAffinityTerm, TopologySpreadConstraint, WeightedPodAffinityTerm

__all__ = [
    "kubectl_pod",
    "KubeNode",
    "KubePod",
    "PodClaim",
    "ContainerRequests",
    "HostPort",
    "KubePdb",
    "parse_namespaces",
    "parse_nodes",
    "parse_pdbs",
    "parse_pvcs",
    "parse_pods",
    "parse_pod",
    "add",
    "is_scalar",
]

TERMINAL_PHASES = ("Succeeded", "Failed")
DEFAULT_SCHEDULER = "default-scheduler"  # what the API server sets when spec.schedulerName is empty
_TOLERATION_KEYS = ("key", "operator", "value", "effect")  # tolerationSeconds does not affect scheduling
Requests = dict[str, int]  # cpu in millicores, everything else in whole units
Exact = dict[str, Decimal]  # the same before rounding, as Quantity keeps them


@dataclass(frozen=True)
class KubeNode:
    name: str
    labels: dict[str, str]
    unschedulable: bool
    taints: list[Taint]
    allocatable: Requests
    images: dict[str, int] = field(default_factory=dict)  # status.images: each name -> sizeBytes (ImageLocality)


@dataclass(frozen=True)
class PodClaim:
    """One spec.resourceClaims entry: a claim by name, or a template, with the claim generated for it (if any)."""

    name: str
    claim_name: str = ""
    template_name: str = ""
    generated: str = ""  # status.resourceClaimStatuses: the claim the controller created from the template


@dataclass(frozen=True)
class ContainerRequests:
    """One container's requests (each missing one defaulted to its limit), for DRA extended-resource request names."""

    name: str
    requests: Requests
    init: bool = False  # an initContainers entry
    sidecar: bool = False  # an init container with restartPolicy Always


@dataclass(frozen=True)
class HostPort:
    """A container port bound on the node (hostPort > 0); an empty hostIP means every address (0.0.0.0)."""

    port: int
    protocol: str = "TCP"
    ip: str = "0.0.0.0"


@dataclass(frozen=True)
class KubePod:
    name: str
    namespace: str
    node_name: str
    phase: str
    priority: int
    preemption_policy: str
    requests: Requests
    tolerations: list[Toleration] = field(default_factory=list)
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: list[NodeSelectorTerm] | None = None  # None: no required node affinity at all
    start_time: datetime | None = None
    nominated_node: str = ""  # status.nominatedNodeName: where preemption made room for this unbound pod
    claims: tuple[PodClaim, ...] = ()  # spec.resourceClaims, in order
    labels: dict[str, str] = field(default_factory=dict)
    containers: tuple[ContainerRequests, ...] = ()  # initContainers, then containers (their index order)
    # required pod (anti-)affinity terms, resolved (PodAffinityTerm.resolved); preferred ones as written
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    spread: tuple[TopologySpreadConstraint, ...] = ()  # topologySpreadConstraints, resolved
    deleting: bool = False  # metadata.deletionTimestamp is set: Terminating, still counted where it is bound
    preempted: bool = False  # a DisruptionTarget condition, reason PreemptionByScheduler: evicted by preemption
    host_ports: tuple[HostPort, ...] = ()  # of the containers and sidecars, what NodePorts reads
    scheduling_gates: tuple[str, ...] = ()  # spec.schedulingGates names: the pod is not scheduled while any remain
    volumes: tuple[str, ...] = ()  # `name (kind)` of volumes whose scheduling gpusched does not model
    # (kind, claim name) of persistentVolumeClaim and ephemeral volumes, in order: the claims the volume plugins read
    claim_volumes: tuple[tuple[str, str], ...] = ()
    scheduler_name: str = DEFAULT_SCHEDULER  # spec.schedulerName: only that scheduler's profile tries the pod
    # what the Score plugins read: requests with cpu 100m and memory 200Mi for a container that sets none
    # (GetNonzeroRequests), preferred node affinity as (weight, term), the containers' images (init ones first)
    nonzero: Requests = field(default_factory=dict)
    preferred_node_affinity: tuple[tuple[int, NodeSelectorTerm], ...] = ()
    images: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        """Succeeded and Failed pods hold nothing: the scheduler's informer never sees them."""
        return self.phase in TERMINAL_PHASES


class _Value:
    """A JSON value with the file and field path it came from."""

    def __init__(self, source: str, path: str, value: Any) -> None:
        self.source, self.path, self.value = source, path, value

    def fail(self, message: str, path: str | None = None) -> NoReturn:
        raise InputError(self.source, message, self.path if path is None else path)

    def get(self, key: str) -> _Value:
        path = f"{self.path}.{key}" if self.path else key
        return _Value(self.source, path, self.mapping().get(key))

    def mapping(self) -> dict:
        if self.value is None:
            return {}
        if not isinstance(self.value, dict):
            self.fail(f"expected an object, got {type(self.value).__name__}")
        return self.value

    def items(self) -> list[_Value]:
        if self.value is None:
            return []
        if not isinstance(self.value, list):
            self.fail(f"expected a list, got {type(self.value).__name__}")
        return [_Value(self.source, f"{self.path}[{i}]", item) for i, item in enumerate(self.value)]

    def text(self, default: str = "") -> str:
        if self.value is None:
            return default
        if not isinstance(self.value, str):
            self.fail(f"expected a string, got {self.value!r}")
        return self.value

    def integer(self, default: int = 0, low: int = -INT64_MAX - 1, high: int = INT64_MAX) -> int:
        """A whole number in [low, high] (Kubernetes' integers are int32 or int64), else the API server's words."""
        if self.value is None:
            return default
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            self.fail(f"expected a whole number, got {self.value!r}")
        if self.value > high:
            self.fail(f"must be no more than {high}")
        if self.value < low:
            self.fail(f"must be no less than {low}")
        return self.value

    def strings(self) -> dict[str, str]:
        found = self.mapping()
        for key, value in found.items():
            if not isinstance(value, str):
                self.get(key).fail(f"expected a string, got {value!r}")
        return dict(found)

    def labels(self) -> dict[str, str]:
        """Labels or a nodeSelector: qualified-name keys and label values, as the API server validates them."""
        found = self.strings()
        for key, value in found.items():
            if error := qualified_name_error(key) or label_value_error(value):
                self.get(key).fail(f"{error} (got key {key!r}, value {value!r})")
        return found

    def quantities(self) -> Requests:
        """A ResourceList: cpu becomes millicores, the rest whole units (rounded up, like Quantity.Value)."""
        result: Requests = {}
        for name, raw in self.mapping().items():
            if isinstance(raw, bool) or not isinstance(raw, str | int | float):
                self.get(name).fail(f"expected a quantity such as 4, 500m or 64Gi, got {raw!r}")
            try:
                result[name] = milli(raw) if name == "cpu" else to_int(raw)
            except ValueError as error:
                self.get(name).fail(str(error))
        return result

    def exact(self) -> Exact:
        """A pod's ResourceList as the API server stores it (see quantity.stored): never negative; an extended
        resource a whole number."""
        self.quantities()  # the same complaints for a malformed one
        result: Exact = {}
        for name, raw in self.mapping().items():
            amount = stored(raw)
            if amount < 0:
                self.get(name).fail(f"must be greater than or equal to 0, got {raw!r}")
            if is_extended(name) and amount != amount.to_integral_value():
                self.get(name).fail(f"must be an integer, got {raw!r}")
            result[name] = amount
        return result

    def model(self, cls: type[BaseModel], keys: tuple[str, ...] | None = None, drop_empty: bool = False) -> Any:
        """Validate into a shared model.

        `keys` drops fields the scheduler ignores (tolerationSeconds, timeAdded); `drop_empty` lets an empty string
        mean the default, as the API server reads a toleration's empty operator (Equal).
        """
        data = self.mapping()
        if keys is not None:
            data = {key: value for key, value in data.items() if key in keys}
        if drop_empty:
            data = {key: value for key, value in data.items() if value != ""}
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            self.fail(first["msg"], f"{self.path}.{where}" if where else self.path)


_MOST_NODES = (MAX_NODES, "GPUSCHED_MAX_NODES")
_MOST_PODS = (MAX_PODS, "GPUSCHED_MAX_PODS")


def _objects(doc: Any, kind: str, source: str, most: tuple[int, str]) -> list[_Value]:
    """The objects of one kind in a List/NodeList/PodList or a single object; at most `most` (the limit and its
    variable) of them, counted before any is read (a LimitError naming the limit)."""
    root = _Value(source, "", doc)
    if not isinstance(doc, dict):
        root.fail(f"expected a {kind} or a List of them (kubectl get -o json), got {type(doc).__name__}")
    found = root.get("kind").text()
    if found in ("List", f"{kind}List"):
        listed = doc.get("items")
        limit, variable = most
        if isinstance(listed, list) and len(listed) > limit:
            raise LimitError(
                source,
                f"{len(listed)} {kind}s: more than the {limit} gpusched reads (set {variable} to raise it)",
                "items",
            )
        objects = root.get("items").items()
        for item in objects:
            item.mapping()
            if item.get("kind").value is not None and item.get("kind").text() != kind:
                item.get("kind").fail(f"expected a {kind}, got {item.get('kind').text()!r}")
        return objects
    if found != kind:
        root.get("kind").fail(
            f"expected {kind}, {kind}List or List, got {found!r}"
            if found
            else f"missing; expected {kind}, {kind}List or List"
        )
    return [root]


def _name(item: _Value) -> str:
    name = item.get("metadata").get("name").text()
    if not name:
        item.get("metadata").get("name").fail("missing; every object needs a name")
    return name


def parse_nodes(doc: Any, source: str) -> list[KubeNode]:
    nodes = [_node(item) for item in _objects(doc, "Node", source, _MOST_NODES)]
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            raise InputError(source, f"node {node.name!r} appears more than once", "metadata.name")
        seen.add(node.name)
    return nodes


def _node(item: _Value) -> KubeNode:
    """Allocatable only, as the scheduler reads it: a resource in capacity alone (a device plugin registered,
    the kubelet has not copied it yet) is not there to schedule on; capacity is still checked for bad quantities."""
    spec, status = item.get("spec"), item.get("status")
    allocatable = status.get("allocatable").quantities()
    status.get("capacity").quantities()
    unschedulable = spec.get("unschedulable").value
    if unschedulable is not None and not isinstance(unschedulable, bool):
        spec.get("unschedulable").fail(f"expected true or false, got {unschedulable!r}")
    return KubeNode(
        name=_name(item),
        labels=item.get("metadata").get("labels").labels(),
        unschedulable=bool(unschedulable),
        taints=[taint.model(Taint, ("key", "value", "effect")) for taint in spec.get("taints").items()],
        allocatable=allocatable,
        images=_images(status),
    )


def parse_pods(doc: Any, source: str) -> list[KubePod]:
    return [_pod(item) for item in _objects(doc, "Pod", source, _MOST_PODS)]


def parse_pod(doc: Any, source: str) -> KubePod:
    """The one pod to predict: a Pod, or a List holding exactly one."""
    pods = parse_pods(doc, source)
    if len(pods) != 1:
        raise InputError(source, f"expected exactly one Pod, found {len(pods)}", "items")
    return pods[0]


def _pod(item: _Value) -> KubePod:
    meta, spec, status = item.get("metadata"), item.get("spec"), item.get("status")
    requests, nonzero = pod_requests(spec)
    policy = spec.get("preemptionPolicy").text("PreemptLowerPriority")
    if policy not in ("PreemptLowerPriority", "Never"):
        spec.get("preemptionPolicy").fail(f"expected PreemptLowerPriority or Never, got {policy!r}")
    return KubePod(
        name=_name(item),
        namespace=meta.get("namespace").text("default") or "default",
        node_name=spec.get("nodeName").text(),
        phase=status.get("phase").text(),
        priority=spec.get("priority").integer(0, INT32_MIN, INT32_MAX),
        preemption_policy=policy,
        requests=requests,
        nonzero=nonzero,
        tolerations=[_toleration(t) for t in spec.get("tolerations").items()],
        node_selector=spec.get("nodeSelector").labels(),
        affinity=_required_affinity(spec),
        start_time=_time(status.get("startTime")),
        nominated_node=status.get("nominatedNodeName").text(),
        claims=_pod_claims(spec, status),
        labels=meta.get("labels").labels(),
        containers=_containers(spec),
        **_pod_rules(spec, meta),
        deleting=bool(meta.get("deletionTimestamp").text()),
        preempted=_preempted(status),
        host_ports=_host_ports(spec),
        scheduling_gates=_gates(spec),
        volumes=_unmodelled_volumes(spec),
        claim_volumes=_claim_volumes(spec, _name(item)),
        scheduler_name=spec.get("schedulerName").text() or DEFAULT_SCHEDULER,
        preferred_node_affinity=_preferred_affinity(spec),
        images=tuple(
            c.get("image").text() for kind in ("initContainers", "containers") for c in spec.get(kind).items()
        ),
    )


def _pod_rules(spec: _Value, meta: _Value) -> dict[str, Any]:
    """Pod (anti-)affinity and topology spread, resolved against the pod's own namespace and labels."""
    namespace = meta.get("namespace").text("default") or "default"
    labels = meta.get("labels").strings()
    affinity = spec.get("affinity")
    found: dict[str, Any] = {}
    for kind, required, preferred in (
        ("podAffinity", "pod_affinity", "preferred_affinity"),
        ("podAntiAffinity", "pod_anti_affinity", "preferred_anti_affinity"),
    ):
        rules = affinity.get(kind)
        terms = rules.get("requiredDuringSchedulingIgnoredDuringExecution").items()
        found[required] = tuple(term.model(PodAffinityTerm).resolved(namespace, labels) for term in terms)
        weighted = rules.get("preferredDuringSchedulingIgnoredDuringExecution").items()
        found[preferred] = tuple(term.model(WeightedPodAffinityTerm) for term in weighted)
    constraints = spec.get("topologySpreadConstraints").items()
    found["spread"] = tuple(c.model(TopologySpreadConstraint).resolved(labels) for c in constraints)
    return found


def _preempted(status: _Value) -> bool:
    """podTerminatingByPreemption's condition: DisruptionTarget True with reason PreemptionByScheduler."""
    return any(
        c.get("type").text() == "DisruptionTarget"
        and c.get("status").text() == "True"
        and c.get("reason").text() == "PreemptionByScheduler"
        for c in status.get("conditions").items()
    )


@dataclass(frozen=True)
class KubePdb:
    """A PodDisruptionBudget as preemption reads it: its selector and status (disruptionsAllowed, disruptedPods)."""

    name: str
    namespace: str
    selector: LabelSelector | None
    allowed: int
    disrupted: frozenset[str] = frozenset()

    def covers(self, pod: KubePod) -> bool:
        """filterPodsWithPDBViolation: same namespace, a non-empty selector matching the pod's (non-empty) labels."""
        if not pod.labels or pod.namespace != self.namespace or self.selector is None or self.selector.everything:
            return False
        return self.selector.matches(pod.labels)


def parse_namespaces(doc: Any, source: str) -> dict[str, dict[str, str]]:
    """`kubectl get namespaces -o json`: each namespace's labels, with the name label the API server always sets."""
    found: dict[str, dict[str, str]] = {}
    for item in _objects(doc, "Namespace", source, _MOST_NODES):
        name = _name(item)
        if name in found:
            raise InputError(source, f"namespace {name!r} appears more than once", "metadata.name")
        found[name] = {**item.get("metadata").get("labels").labels(), METADATA_NAME: name}
    return found


def parse_pdbs(doc: Any, source: str) -> list[KubePdb]:
    """`kubectl get pdb -A -o json`."""
    found = []
    for item in _objects(doc, "PodDisruptionBudget", source, _MOST_PODS):
        spec, status = item.get("spec"), item.get("status")
        selector = spec.get("selector")
        found.append(
            KubePdb(
                name=_name(item),
                namespace=item.get("metadata").get("namespace").text("default") or "default",
                selector=None if selector.value is None else selector.model(LabelSelector),
                allowed=status.get("disruptionsAllowed").integer(0, INT32_MIN, INT32_MAX),
                disrupted=frozenset(status.get("disruptedPods").mapping()),
            )
        )
    return found


def _toleration(item: _Value) -> Toleration:
    if item.get("tolerationSeconds").value is not None and item.get("effect").text() != "NoExecute":
        item.get("effect").fail("effect must be 'NoExecute' when `tolerationSeconds` is set")
    item.get("tolerationSeconds").integer()
    return item.model(Toleration, _TOLERATION_KEYS, drop_empty=True)


def _host_ports(spec: _Value) -> tuple[HostPort, ...]:
    """Ports of the containers and sidecars with a hostPort (hostNetwork: the containerPort, as the API server
    defaults it). A hostPort or protocol the API server refuses, or one repeated in the pod, is an error."""
    network = spec.get("hostNetwork").value is True
    found: dict[tuple[str, str, int], HostPort] = {}
    sidecars = [c for c in spec.get("initContainers").items() if c.get("restartPolicy").text() == "Always"]
    for container in [*spec.get("containers").items(), *sidecars]:
        for entry in container.get("ports").items():
            number = entry.get("containerPort").integer(0, 1, 65535)
            host = entry.get("hostPort").integer(number if network else 0, 0, 65535)
            protocol = entry.get("protocol").text("TCP") or "TCP"
            if protocol not in ("TCP", "UDP", "SCTP"):
                entry.get("protocol").fail(f"expected TCP, UDP or SCTP, got {protocol!r}")
            if not host:
                continue
            if network and host != number:
                entry.get("hostPort").fail("must match `containerPort` when `hostNetwork` is true")
            ip = entry.get("hostIP").text()
            key = (protocol, ip, host)
            if key in found:
                entry.get("hostPort").fail(f"Duplicate value: {protocol}/{ip}/{host}")
            found[key] = HostPort(host, protocol, ip or "0.0.0.0")
    return tuple(found.values())


def _gates(spec: _Value) -> tuple[str, ...]:
    names = [gate.get("name").text() for gate in spec.get("schedulingGates").items()]
    for index, name in enumerate(names):
        if error := qualified_name_error(name):
            spec.get("schedulingGates").items()[index].get("name").fail(error)
        if name in names[:index]:
            spec.get("schedulingGates").items()[index].get("name").fail(f"Duplicate value: {name!r}")
    return tuple(names)


_NO_SCHEDULING_EFFECT = ("emptyDir", "configMap", "secret", "downwardAPI", "projected", "hostPath", "image")


def _unmodelled_volumes(spec: _Value) -> tuple[str, ...]:
    """Volumes VolumeBinding, VolumeRestrictions, VolumeZone or NodeVolumeLimits would judge (claims, ephemeral,
    in-tree and CSI inline volumes), which gpusched does not model; the kinds that never affect scheduling are left
    out."""
    found = []
    for volume in spec.get("volumes").items():
        kinds = [key for key in volume.mapping() if key != "name"]
        kind = kinds[0] if kinds else "emptyDir"  # the API server's default
        if kind not in _NO_SCHEDULING_EFFECT:
            found.append(f"{volume.get('name').text()} ({kind})")
    return tuple(found)


def _claim_volumes(spec: _Value, pod: str) -> tuple[tuple[str, str], ...]:
    """An ephemeral volume's claim is named `<pod>-<volume>` (ephemeral.VolumeClaimName)."""
    found = []
    for volume in spec.get("volumes").items():
        if volume.get("persistentVolumeClaim").value is not None:
            found.append(("persistentVolumeClaim", volume.get("persistentVolumeClaim").get("claimName").text()))
        elif volume.get("ephemeral").value is not None:
            found.append(("ephemeral", f"{pod}-{volume.get('name').text()}"))
    return tuple(found)


def parse_pvcs(doc: Any, source: str) -> frozenset[str]:
    """`kubectl get pvc -A -o json`: the claims that exist, as namespace/name."""
    return frozenset(
        f"{item.get('metadata').get('namespace').text('default') or 'default'}/{_name(item)}"
        for item in _objects(doc, "PersistentVolumeClaim", source, _MOST_PODS)
    )


def _container_names(spec: _Value) -> None:
    """The API server's validation of container names (validateContainers, then validateInitContainers): unique
    across containers and init containers. (A missing name, which it also refuses, is let pass: a hand-written
    pod file may leave names out.)"""
    seen: set[str] = set()
    for kind in ("containers", "initContainers"):
        for container in spec.get(kind).items():
            name = container.get("name")
            if not name.text():
                continue
            if name.text() in seen:
                name.fail(f"Duplicate value: {json.dumps(name.text())}")
            seen.add(name.text())


def _containers(spec: _Value) -> tuple[ContainerRequests, ...]:
    _container_names(spec)
    found = [
        ContainerRequests(
            c.get("name").text(),
            _container_requests(c.get("resources")),
            True,
            c.get("restartPolicy").text() == "Always",
        )
        for c in spec.get("initContainers").items()
    ]
    found += [
        ContainerRequests(c.get("name").text(), _container_requests(c.get("resources")))
        for c in spec.get("containers").items()
    ]
    return tuple(found)


def _pod_claims(spec: _Value, status: _Value) -> tuple[PodClaim, ...]:
    generated = {
        s.get("name").text(): s.get("resourceClaimName").text() for s in status.get("resourceClaimStatuses").items()
    }
    claims = []
    for entry in spec.get("resourceClaims").items():
        name = entry.get("name").text()
        claim, template = entry.get("resourceClaimName").text(), entry.get("resourceClaimTemplateName").text()
        if not name or bool(claim) == bool(template):
            entry.fail("needs a name and exactly one of resourceClaimName, resourceClaimTemplateName")
        claims.append(PodClaim(name, claim, template, generated.get(name, "")))
    return tuple(claims)


def _required_affinity(spec: _Value) -> list[NodeSelectorTerm] | None:
    required = spec.get("affinity").get("nodeAffinity").get("requiredDuringSchedulingIgnoredDuringExecution")
    if required.value is None:
        return None
    terms = [term.model(NodeSelectorTerm) for term in required.get("nodeSelectorTerms").items()]
    if not terms:
        required.get("nodeSelectorTerms").fail("must have at least one node selector term")
    return terms


def _preferred_affinity(spec: _Value) -> tuple[tuple[int, NodeSelectorTerm], ...]:
    preferred = spec.get("affinity").get("nodeAffinity").get("preferredDuringSchedulingIgnoredDuringExecution")
    found = []
    for entry in preferred.items():
        weight = entry.get("weight").integer(0, 1, 100)
        found.append((weight, entry.get("preference").model(NodeSelectorTerm)))
    return tuple(found)


def _images(status: _Value) -> dict[str, int]:
    found: dict[str, int] = {}
    for image in status.get("images").items():
        size = image.get("sizeBytes").integer(0, 0)
        for name in image.get("names").items():
            found[name.text()] = size
    return found


def _time(value: _Value) -> datetime | None:
    text = value.text()
    if not text:
        return None
    parsed = parse_rfc3339(text)
    if parsed is None:
        value.fail(f"expected an RFC 3339 time such as 2025-01-31T12:00:00Z, got {text!r}")
    return parsed


def add(total: Requests, more: Requests) -> Requests:
    return {name: total.get(name, 0) + more.get(name, 0) for name in total.keys() | more.keys()}


def _add(total: Exact, more: Exact) -> Exact:
    return {name: total.get(name, Decimal(0)) + more.get(name, Decimal(0)) for name in total.keys() | more.keys()}


def _max(one: Exact, other: Exact) -> Exact:
    return {name: max(one.get(name, Decimal(0)), other.get(name, Decimal(0))) for name in one.keys() | other.keys()}


def _exact_requests(resources: _Value) -> Exact:
    """Requests, each missing one defaulted to its limit (what the API server stores for every resource), checked as
    the API server checks them: a request at most its limit, an extended resource's equal to it and never without
    one."""
    limits, requests = resources.get("limits").exact(), resources.get("requests").exact()
    for name, amount in requests.items():
        where = resources.get("requests").get(name)
        if is_extended(name) and name not in limits:
            where.fail("Limit must be set for non overcommitable resources")
        if name in limits and is_extended(name) and amount != limits[name]:
            where.fail(f"must be equal to {name} limit of {limits[name].normalize():f}")
        if name in limits and amount > limits[name]:
            where.fail(f"must be less than or equal to {name} limit of {limits[name].normalize():f}")
    return {**limits, **requests}


def _container_requests(resources: _Value) -> Requests:
    return {name: rounded(name, amount) for name, amount in _exact_requests(resources).items()}


NONZERO_DEFAULTS: Exact = {"cpu": Decimal("0.1"), "memory": Decimal(200 * 2**20)}


def pod_requests(spec: _Value) -> tuple[Requests, Requests]:
    """component-helpers PodRequests: containers plus sidecars, at least any init step's peak, then overhead, summed
    exactly as Quantities are and rounded once (two 0.1Gi containers need 214748365 bytes, not 214748366). Twice:
    as written, and with NONZERO_DEFAULTS for a container that sets none of them (NonMissingContainerRequests, what
    the Score plugins count)."""
    containers = [_exact_requests(c.get("resources")) for c in spec.get("containers").items()]
    inits = [(_exact_requests(c.get("resources")), c.get("restartPolicy").text() == "Always")
             for c in spec.get("initContainers").items()]  # fmt: skip
    pod_level = _pod_level(spec.get("resources"))
    overhead = spec.get("overhead").exact()
    found: list[Requests] = []
    every = [*containers, *(requests for requests, _ in inits)]
    complete = all("cpu" in requests and "memory" in requests for requests in every)
    for missing in ({},) if complete else ({}, NONZERO_DEFAULTS):
        total: Exact = {}
        for requests in containers:
            total = _add(total, {**missing, **requests})
        sidecars: Exact = {}
        init_peak: Exact = {}
        for requests, sidecar in inits:
            requests = {**missing, **requests}
            if sidecar:
                total = _add(total, requests)
                sidecars = _add(sidecars, requests)
                init_peak = _max(init_peak, sidecars)
            else:
                init_peak = _max(init_peak, _add(requests, sidecars))
        total = _max(total, init_peak)
        total.update(pod_level)
        total = _add(total, overhead)
        found.append({name: rounded(name, amount) for name, amount in total.items()})
    return found[0], found[-1]  # every container setting cpu and memory: the same


def _pod_level(resources: _Value) -> Exact:
    """Pod-level requests (PodLevelResources) replace the containers' sum for cpu, memory and hugepages."""
    requests = _exact_requests(resources)
    return {
        name: value for name, value in requests.items() if name in ("cpu", "memory") or name.startswith("hugepages-")
    }


def is_extended(name: str) -> bool:
    """An extended resource (`example.com/gpu`): integers only, never overcommitted (IsExtendedResourceName)."""
    return "/" in name and not name.startswith("requests.") and "kubernetes.io/" not in name


def is_scalar(name: str) -> bool:
    """Resources NodeResourcesFit compares besides cpu/memory/ephemeral-storage: extended, hugepages, volumes."""
    return "/" in name or name.startswith(("hugepages-", "attachable-volumes-"))


def kubectl_pod(name: str) -> str:
    """A pod as a kubectl command line names it: `NAME -n NAMESPACE` for `NAMESPACE/NAME` (kubectl reads no
    slash in a pod's name), the bare NAME in the current namespace."""
    namespace, slash, pod = name.partition("/")
    return f"{pod} -n {namespace}" if slash else name
