"""Predict kube-scheduler's verdict for one pod from kubectl JSON: the nodes that fit, or the exact message.

Covers the default profile of 1.34–1.37 for what kubectl shows of Nodes and Pods: PreEnqueue (SchedulingGates,
DynamicResources' claims), NodeName, NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,
PodTopologySpread and InterPodAffinity, then the PostFilter (DRA's message and DefaultPreemption, with
PodDisruptionBudgets when given). Unbound pods that preemption nominated to a node count there for pods of no higher
priority: the filters run with them, then, if they pass, without them, as RunFilterPluginsWithNominatedPods does.
The feasible nodes are then scored as the profile scores them (scoring.py: the Score plugins, their weights, the
feasible-node search) and the nodes the scheduler picks from reported; a pod naming another scheduler is never
tried; with the volume claims given, a missing one fails the PreFilter. What the real scheduler would also check and gpusched does not model is listed as `not_modelled`: the
prediction may then differ.
The wording and the version differences follow the Kubernetes sources of each release (pkg/scheduler).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, computed_field

from ...errors import InputError
from ...models.kube import (
    KubePdb,
    KubePod,
    parse_namespaces,
    parse_nodes,
    parse_pdbs,
    parse_pod,
    parse_pods,
    parse_pvcs,
)
from ...models.topology import NamespaceLabels
from ...scenarios import read_document
from ..dra import features
from ..dra.extended import class_mapping, uses_extended
from ..dra.extended import enabled as extended_enabled
from ..dra.objects import DraObjects, load_objects
from ..dra.plugin import TIMED_OUT
from .framework import (
    ERR_REASON_PREFILTER_DISJOINT,
    NEWEST,
    OLDEST,
    SUCCESS,
    Diagnosis,
    Status,
    Version,
    outside_prefilter,
    unresolvable,
)
from .names import NODE_AFFINITY, NODE_NAME, NODE_UNSCHEDULABLE, TAINT_TOLERATION, VOLUME_BINDING
from .nodeinfo import KubeNodeInfo, snapshot
from .plugins import (
    defaultpreemption,
    dynamicresources,
    interpodaffinity,
    nodeaffinity,
    noderesources,
    schedulinggates,
    volumes,
)
from .plugins.defaultpreemption import Candidate
from .plugins.dynamicresources import ClaimPrediction, DynamicResources
from .plugins.interpodaffinity import InterPodAffinity
from .plugins.nodeaffinity import NodeAffinity
from .plugins.nodename import NodeName
from .plugins.noderesources import Shortfall, shortfalls
from .plugins.podtopologyspread import PodTopologySpread
from .profile import Profile, default_profile, load_profiles
from .scoring import ScoreReport, score_nodes
from .views import Filter, kubectl_filters

SKIPPED = "Skipped"  # a filter the scheduler never ran on the node: an earlier one had rejected it

__all__ = [
    "Shortfall",
    "NodeVerdict",
    "Nomination",
    "PreEnqueue",
    "ClaimPrediction",
    "K8sPrediction",
    "parse_version",
    "server_release",
    "predict",
    "predict_files",
]

NO_NODES = "no nodes available to schedule pods"
NOT_OURS = "not this scheduler's pod: never tried by {names}"
EVENT_LIMIT = 1024  # bytes kept of an event's note


class NodeVerdict(BaseModel):
    name: str
    fits: bool
    plugin: str = Field("", description="the first filter plugin that rejected the node")
    code: str = Field("Success", description="Success, Unschedulable or UnschedulableAndUnresolvable")
    reasons: list[str] = Field(default_factory=list)
    shortfalls: list[Shortfall] = Field(default_factory=list)
    plugins: dict[str, str] = Field(
        default_factory=dict,
        description="each filter plugin, in the order they run, and its status code on this node: Success, "
        f"Unschedulable, UnschedulableAndUnresolvable, or {SKIPPED} after the first rejection (the scheduler stops "
        "there); empty when a PreFilter ruled the node out",
    )

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
    message: str = Field("", description="the PodScheduled=False message when this node is nominated")
    retried: bool = Field(
        True,
        description="the victims' deletion makes the scheduler retry the pod at once (the queueing hints of the "
        "plugins that rejected it); False: it waits in the unschedulable queue, up to 5 min, before it binds",
    )


class PreEnqueue(BaseModel):
    """Why the scheduler never tries the pod: a PreEnqueue plugin holds it out of the queue."""

    plugin: str
    reason: str = Field(description="the plugin's status (the scheduler only logs it)")
    condition: dict | None = Field(
        None,
        description="the pod's PodScheduled condition (SchedulingGated, which the API server sets); None: no "
        "condition at all",
    )


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
    nominations: list[Nomination] = Field(
        default_factory=list,
        description="every node the real scheduler may nominate (it samples candidates from a random start, and "
        "breaks a final tie by that order): its choice is random among these; the first is `nomination`",
    )
    pre_enqueue: PreEnqueue | None = Field(None, description="when the scheduler never tries the pod, and why")
    never_tried: str | None = Field(
        None,
        description="the pod names another scheduler (spec.schedulerName) than the profiles': no profile of this "
        "scheduler ever tries it, it gets no condition and no event (pending, exit 1)",
    )
    not_modelled: list[str] = Field(
        default_factory=list, description="what the real scheduler checks here that gpusched does not model"
    )
    claims: list[ClaimPrediction] = Field(default_factory=list, description="the pod's ResourceClaims (with --objects)")
    scores: ScoreReport | None = Field(
        None, description="when it fits: each Score plugin's score per feasible node, the totals, the top nodes"
    )
    alternatives: list[str] = Field(
        default_factory=list,
        description="other PodScheduled messages the real scheduler may give: its DRA search may time out (10 s) on "
        "the nodes `not_modelled` names, where gpusched's search is long",
    )
    extended_resource_claim_status: dict | None = Field(
        None,
        description="status.extendedResourceClaimStatus when DRA serves an extended resource (DRAExtendedResource); "
        "resourceClaimName is the generateName, the API server appends 5 random characters",
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fits(self) -> bool:
        return bool(self.feasible)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def may_differ(self) -> bool:
        """True when something not modelled could change the verdict."""
        return bool(self.not_modelled)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def details(self) -> list[str]:
        return [verdict.detail for verdict in self.nodes if not verdict.fits]


def parse_version(version: str | Version, source: str = "Kubernetes version") -> Version:
    """`1.37` or `1.34.1` (a leading v is fine); a version outside 1.34–1.37 is refused (an InputError naming
    `source`, the CLI's flag), not guessed at."""
    text = version if isinstance(version, str) else ".".join(str(part) for part in version)
    try:
        parsed = tuple(int(part) for part in text.strip().lstrip("v").split("."))
    except ValueError:
        parsed = ()
    if not 2 <= len(parsed) <= 3 or not OLDEST <= parsed[:2] <= NEWEST:
        raise InputError(source, f"expected 1.34 to 1.37, optionally with a patch such as 1.34.1, got {text!r}")
    return parsed


def server_release(git_version: str, server: str = "the API server") -> Version:
    """The release an API server reports (`/version`'s gitVersion, v1.35.4 or a vendor's v1.35.4-eks-1f2e3d):
    predictions from a live cluster follow it unless --k8s-version says otherwise."""
    match = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", git_version.strip())
    release = tuple(int(part) for part in match.groups() if part is not None) if match else ()
    if not release or not OLDEST <= release[:2] <= NEWEST:
        raise InputError(
            server, f"runs {git_version!r}; gpusched predicts 1.34 to 1.37: name one of them to predict as that"
        )
    return release


@dataclass(frozen=True)
class _PreFilter:
    """The PreFilter results: the nodes still considered (None: all), which plugins narrowed them, or a failure."""

    names: frozenset[str] | None = None
    plugins: tuple[str, ...] = ()
    failure: str = ""
    failed_plugin: str = nodeaffinity.NAME


def _prefilter(
    pod: KubePod, version: Version, dra: DynamicResources | None, claims: frozenset[str] | None = None
) -> _PreFilter:
    """1.37's NodeName and NodeAffinity's `metadata.name` matchFields narrow the nodes; a missing volume claim (when
    the claims are known) or DRA's PreFilter may fail."""
    names = NodeName.prefilter(pod, version)
    plugins = [NodeName.name] if names is not None else []
    pinned = NodeAffinity.prefilter(pod)
    if pinned is not None and not pinned:
        return _PreFilter(failure=nodeaffinity.ERR_REASON_CONFLICT)
    if pinned is not None:
        names = pinned if names is None else names & pinned
        plugins.append(NodeAffinity.name)
        if not names:  # RunPreFilterPlugins' words, the plugins in the order they ran
            return _PreFilter(failure=ERR_REASON_PREFILTER_DISJOINT.format(plugins=" ".join(plugins)),
                              failed_plugin="")  # fmt: skip
    missing = volumes.missing_claim(pod, claims) if claims is not None else None
    if missing is not None:
        return _PreFilter(failure=missing[1], failed_plugin=missing[0])
    if dra is not None and dra.cycle.prefilter:
        return _PreFilter(failure=dra.cycle.prefilter, failed_plugin=dynamicresources.NAME)
    return _PreFilter(names, tuple(sorted(plugins)))


def _codes(filters: tuple[Filter, ...], pod: KubePod, info: KubeNodeInfo) -> tuple[Status, dict[str, str]]:
    """The first rejection (as run_filters), and every plugin's code on the node."""
    codes: dict[str, str] = {}
    found = None
    for plugin in filters:
        if found is not None:
            codes[plugin.name] = SKIPPED
            continue
        status = plugin.filter(pod, info)
        codes[plugin.name] = status.code.value
        found = None if status.ok else status
    return found or SUCCESS, codes


def _each(filters: tuple[Filter, ...], pod: KubePod, info: KubeNodeInfo) -> tuple[Status, dict[str, str]]:
    """RunFilterPluginsWithNominatedPods: with the nominated pods, then, if that passes, without them; the first
    rejection and every plugin's code on the node."""
    status, codes = _codes(filters, pod, info)
    if status.ok and info.nominated:
        status, codes = _codes(filters, pod, info.alone())
    return status, codes


def _with_nominated(filters: tuple[Filter, ...], pod: KubePod, info: KubeNodeInfo) -> Status:
    return _each(filters, pod, info)[0]


def _statuses(
    pod: KubePod, infos: list[KubeNodeInfo], pre: _PreFilter, filters: tuple[Filter, ...]
) -> dict[str, tuple[Status, dict[str, str]]]:
    if pre.failure:
        return {info.name: (unresolvable(pre.failed_plugin, pre.failure), {}) for info in infos}
    return {
        info.name: _each(filters, pod, info)
        if pre.names is None or info.name in pre.names
        else (outside_prefilter(pre.plugins), {})
        for info in infos
    }


def _postfilter(
    pod: KubePod,
    infos: list[KubeNodeInfo],
    statuses: dict[str, Status],
    version: Version,
    filters: tuple[Filter, ...],
    dra: DynamicResources | None,
    pdbs: list[KubePdb],
    pre: _PreFilter,
) -> tuple[str, list[Candidate[KubePod]]]:
    """DynamicResources then DefaultPreemption; a success drops the reasons gathered before it. A PreFilter that
    failed before DynamicResources' ran leaves DynamicResources no state: its PostFilter errors and nothing follows."""
    if pre.failure and pre.failed_plugin != dynamicresources.NAME:
        return dynamicresources.ERR_REASON_NO_STATE, []
    reasons = dynamicresources.postfilter_reasons(dra, version, pod)
    ok, message, found = defaultpreemption.preempt(
        pod, infos, statuses, version, lambda pod, info: _with_nominated(filters, pod, info), pdbs
    )
    if ok:
        return message, found
    return ", ".join([*reasons, message]), []


def _timed_out(
    pod: KubePod,
    infos: list[KubeNodeInfo],
    statuses: dict[str, Status],
    version: Version,
    filters: tuple[Filter, ...],
    dra: DynamicResources,
    pdbs: list[KubePdb],
    pre: _PreFilter,
) -> list[str]:
    """The messages if the real search times out on some of the slow nodes (at most 4 taken together): from 1.36 the
    first such node's error; before, each is that node's own "timed out" in the histogram (no node left: Pending)."""
    if features.changed("filter-timeout-is-an-error", version):
        return [f'running "{dynamicresources.NAME}" filter plugin: node {node}: {TIMED_OUT}' for node in dra.slow]
    found = []
    for size in range(1, min(len(dra.slow), 4) + 1):
        for nodes in itertools.combinations(dra.slow, size):
            changed = {**statuses, **{node: unresolvable(dynamicresources.NAME, TIMED_OUT) for node in nodes}}
            if any(status.ok for status in changed.values()):
                continue  # it binds elsewhere, on a node gpusched finds feasible
            post, _ = _postfilter(pod, infos, changed, version, filters, dra, pdbs, pre)
            found.append(Diagnosis(len(infos), changed, prefilter=pre.failure, postfilter=post).message)
    return sorted(set(found))


def _truncate(message: str) -> str:
    """An event note keeps at most 1024 bytes, ending ` ...` when cut."""
    raw = message.encode()
    if len(raw) <= EVENT_LIMIT:
        return message
    return raw[: EVENT_LIMIT - 4].decode(errors="ignore") + " ..."


def _verdict(pod: KubePod, info: KubeNodeInfo, status: Status, codes: dict[str, str]) -> NodeVerdict:
    return NodeVerdict(
        name=info.name,
        fits=status.ok,
        plugin=status.plugin,
        code=status.code.value,
        reasons=list(status.reasons),
        shortfalls=shortfalls(pod, info) if status.plugin == noderesources.NAME else [],
        plugins=codes,
    )


def _pod_filters(
    pod: KubePod, infos: list[KubeNodeInfo], namespaces: NamespaceLabels | None, version: Version
) -> list[Filter]:
    """PodTopologySpread and InterPodAffinity after their PreFilter: absent when it skips them."""
    spread = PodTopologySpread.for_pod(pod, infos)
    affinity = InterPodAffinity.for_pod(pod, infos, namespaces, version)
    return [plugin for plugin in (spread, affinity) if plugin is not None]


def _unscheduled(pod: KubePod, version: Version) -> K8sPrediction:
    return K8sPrediction(
        version=".".join(map(str, version)),
        pod=pod.key,
        priority=pod.priority,
        requests=dict(sorted(pod.requests.items())),
        feasible=[],
        nodes=[],
    )


def _schedule(
    pod: KubePod,
    infos: list[KubeNodeInfo],
    version: Version,
    dra: DynamicResources | None,
    pdbs: list[KubePdb] | None = None,
    namespaces: NamespaceLabels | None = None,
    claims: frozenset[str] | None = None,
    profile: Profile | None = None,
) -> K8sPrediction:
    result = _unscheduled(pod, version)
    if not infos:
        return result.model_copy(update={"message": NO_NODES, "event": NO_NODES})
    filters = (*kubectl_filters(version), *_pod_filters(pod, infos, namespaces, version), *([dra] if dra else []))
    pre = _prefilter(pod, version, dra, claims)
    each = _statuses(pod, infos, pre, filters)
    statuses = {name: status for name, (status, _) in each.items()}
    result.nodes = [_verdict(pod, info, *each[info.name]) for info in infos]
    result.feasible = [name for name, status in statuses.items() if status.ok]
    if dra is not None:
        result.claims = dra.predictions(result.feasible)
        chosen = next((c.node for c in result.claims if c.node), None)
        result.extended_resource_claim_status = dra.extended_status(chosen) if chosen else None
    if dra is not None and dra.slow:
        result.alternatives = _timed_out(pod, infos, statuses, version, filters, dra, pdbs or [], pre)
    if result.feasible:
        considered = len(infos) if pre.names is None else sum(1 for info in infos if info.name in pre.names)
        dra_scores = dict(dra.cycle.scores) if dra is not None and dra.unit.claims else None
        result.scores = score_nodes(pod, infos, result.feasible, profile or default_profile(), considered, version,
                                    namespaces, dra_scores)  # fmt: skip
        return result
    post, found = _postfilter(pod, infos, statuses, version, filters, dra, pdbs or [], pre)
    diagnosis = Diagnosis(len(infos), statuses, prefilter=pre.failure, postfilter=post)
    result.message = diagnosis.message
    result.event = _truncate(result.message)
    result.nominations = [
        Nomination(
            node=choice.node,
            victims=[victim.key for victim in choice.victims],
            message=Diagnosis(
                len(infos), statuses, postfilter=defaultpreemption.nominated_message(version, choice)
            ).message,
            retried=_retried(pod, choice.victims, statuses, version),
        )
        for choice in found
    ]
    result.nomination = result.nominations[0] if found else None
    return result


# Plugins that register no event for a deleted pod (EventsToRegister in 1.34-1.37: node events, the pod's own
# toleration updates): a victim's deletion never requeues a pod for them. "" is a node the PreFilter left out.
_DELETION_BLIND = {"", NODE_NAME, NODE_UNSCHEDULABLE, NODE_AFFINITY, TAINT_TOLERATION}


def _retried(pod: KubePod, victims: Iterable[KubePod], statuses: dict[str, Status], version: Version) -> bool:
    """Whether deleting the victims retries the pod at once: a queueing hint of a plugin that rejected a node says
    Queue. Modelled for InterPodAffinity; any other plugin that watches deletions is taken to requeue the pod."""
    rejecting = {status.plugin for status in statuses.values() if not status.ok} - _DELETION_BLIND
    if rejecting != {interpodaffinity.NAME}:
        return bool(rejecting)
    return any(interpodaffinity.requeued_by_deletion(pod, victim, version) for victim in victims)


def predict(
    nodes_doc: Any,
    pods_doc: Any,
    pod_doc: Any,
    version: str | Version = NEWEST,
    sources: tuple[str, str, str] = ("nodes", "pods", "pod"),
    objects: DraObjects | None = None,
    pdbs_doc: Any = None,
    pdbs_source: str = "pdbs",
    namespaces_doc: Any = None,
    namespaces_source: str = "namespaces",
    pvcs_doc: Any = None,
    pvcs_source: str = "pvcs",
    profiles: list[Profile] | None = None,
) -> K8sPrediction:
    """Parsed `kubectl get -o json` documents in; `sources` names them in errors. `pods_doc` may be None.

    A pod with spec.resourceClaims needs `objects`: the DeviceClasses, ResourceSlices and claims or templates.
    `pdbs_doc` (`kubectl get pdb -A -o json`) gives preemption its disruption budgets, `namespaces_doc`
    (`kubectl get namespaces -o json`) the labels namespaceSelectors match, `pvcs_doc` (`kubectl get pvc -A -o
    json`) the volume claims that exist. `profiles` (a KubeSchedulerConfiguration's; default: the release's
    default profile) score the feasible nodes; a pod naming a scheduler none of them is, is never tried.
    """
    release = parse_version(version)
    nodes = parse_nodes(nodes_doc, sources[0])
    pods = parse_pods(pods_doc, sources[1]) if pods_doc is not None else []
    pod = parse_pod(pod_doc, sources[2])
    pdbs = parse_pdbs(pdbs_doc, pdbs_source) if pdbs_doc is not None else []
    namespaces = parse_namespaces(namespaces_doc, namespaces_source) if namespaces_doc is not None else None
    dra = None
    mapping = class_mapping(objects.classes) if objects is not None and extended_enabled(release) else {}
    if pod.claims or uses_extended(pod, mapping):
        if objects is None:
            raise InputError(
                sources[2],
                "ResourceClaims need --objects: the DeviceClasses, ResourceSlices and "
                "ResourceClaims or templates, as kubectl get -o json prints them",
                "spec.resourceClaims",
            )
        dra = DynamicResources.for_pod(pod, nodes, objects, mapping, release)
    claims = parse_pvcs(pvcs_doc, pvcs_source) if pvcs_doc is not None else None
    chosen = {profile.scheduler_name: profile for profile in profiles or [default_profile()]}
    if pod.scheduler_name not in chosen:
        never = NOT_OURS.format(names=", ".join(chosen))
        return _unscheduled(pod, release).model_copy(update={"never_tried": never})
    held = _pre_enqueue(pod, objects)
    if held is not None:
        result = _unscheduled(pod, release).model_copy(update={"pre_enqueue": held})
    else:
        infos = snapshot(nodes, pods, pod, frozenset(mapping))
        result = _schedule(pod, infos, release, dra, pdbs, namespaces, claims, chosen[pod.scheduler_name])
    decided = claims is not None and volumes.missing_claim(pod, claims) is not None and held is None
    notes = [] if decided else not_modelled(pod, pods, namespaces)  # a missing claim decides: nothing else counts
    return result.model_copy(update={"not_modelled": notes + (dra.not_modelled if dra else [])})


def _pre_enqueue(pod: KubePod, objects: DraObjects | None) -> PreEnqueue | None:
    """SchedulingGates, then DynamicResources: the first PreEnqueue plugin that holds the pod back."""
    if reason := schedulinggates.pre_enqueue(pod):
        condition = {"type": "PodScheduled", "status": "False", "reason": schedulinggates.CONDITION_REASON,
                     "message": schedulinggates.CONDITION_MESSAGE}  # fmt: skip
        return PreEnqueue(plugin=schedulinggates.NAME, reason=reason, condition=condition)
    if pod.claims and objects is not None and (reason := dynamicresources.pre_enqueue(pod, objects)):
        return PreEnqueue(plugin=dynamicresources.NAME, reason=reason)
    return None


def not_modelled(pod: KubePod, pods: list[KubePod], namespaces: NamespaceLabels | None) -> list[str]:
    """What the default profile's filters would read here that gpusched does not model (or was not given)."""
    found = [f"volume {volume}: {VOLUME_BINDING}, VolumeRestrictions, VolumeZone, NodeVolumeLimits"
             for volume in pod.volumes]  # fmt: skip
    terms = [*pod.pod_affinity, *pod.pod_anti_affinity, *(t for other in pods for t in other.pod_anti_affinity)]
    if namespaces is None and any(term.reads_namespace_labels for term in terms):
        found.append(
            "namespace labels: a namespaceSelector asks for labels other than kubernetes.io/metadata.name "
            "(give the namespaces: kubectl get namespaces -o json)"
        )
    return found


def predict_files(
    nodes: str,
    pods: str | None,
    pod: str,
    version: str | Version = NEWEST,
    objects: list[str] | None = None,
    pdbs: str | None = None,
    namespaces: str | None = None,
    pvcs: str | None = None,
    scheduler_config: str | None = None,
) -> K8sPrediction:
    """The same from file paths, each named in any error."""
    release = parse_version(version)
    pods_doc = read_document(pods) if pods else None
    found = load_objects(objects, pods=False, version=release) if objects else None
    pdbs_doc = read_document(pdbs) if pdbs else None
    namespaces_doc = read_document(namespaces) if namespaces else None
    return predict(
        read_document(nodes),
        pods_doc,
        read_document(pod),
        release,
        (nodes, pods or "pods", pod),
        found,
        pdbs_doc,
        pdbs or "pdbs",
        namespaces_doc,
        namespaces or "namespaces",
        read_document(pvcs) if pvcs else None,
        pvcs or "pvcs",
        load_profiles(scheduler_config)[0] if scheduler_config else None,
    )
