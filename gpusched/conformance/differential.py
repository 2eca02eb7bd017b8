"""Differential testing: play random scenarios on the real control plane and compare every pod with gpusched.

A play creates the scenario's DRA objects, then its nodes, waits until the scheduler has seen them all (sync.py),
then creates the pods one at a time. Each pod is judged against gpusched's prediction from the state just before
it was created (`kubectl get -o json` of nodes, pods and DRA objects, read back from the API), which is the state
the scheduler decided on, since each pod's consequences are settled before the next:

- bound: agrees when its node is one gpusched finds feasible (the scheduler then picks by score, ties at random),
  and every claim's allocation on that node (devices, subrequests, config, node selector) is gpusched's;
- Pending: agrees when the PodScheduled message is gpusched's word for word and no claim's allocation changed.
  The pod is then deleted, so that room preemption frees later cannot schedule it behind the harness's back;
- preempting: the scheduler nominates a node and evicts victims. The harness plays the kubelet (kubelet.py): the
  victims, Terminating, are deleted at once, and the preemptor binds. Agrees when the message, the nominated
  node, the evicted pods and the final node are all gpusched's (`nomination`); where gpusched says the deletion does
  not retry the pod (its queueing hints), it must still be unbound 30 s later. A pod the scenario labels to
  arrive during a preemption is created (and judged) before the victims are deleted, while the preemptor is only
  nominated.

- refused: the API server refuses the manifest (400/422). Agrees when gpusched refuses the same manifest too (an
  InputError: exit 2 from the CLI). A DRA object the release's API server refuses (a selector its CEL environment
  does not compile) is judged the same way, named `<kind> <name>`; the pods that name it find it missing;
- never tried: a PreEnqueue plugin holds the pod (scheduling gates; a claim missing or being deleted): no verdict
  comes within HELD_AFTER seconds (DECIDED_WITHIN where gpusched predicts a verdict). Agrees when gpusched predicts PreEnqueue too, with the same PodScheduled
  condition (SchedulingGated, set by the API server) or none.


Each pod also records the plugins at work on it, as gpusched's prediction shows them (the real scheduler names
none per node; where the two agree, the message says the same): every plugin that rejected a node, DynamicResources
when the pod's claims were allocated or failed, DefaultPreemption when it nominated a node, the PreEnqueue plugin
that held it, or the API server's refusal. The report counts, per plugin, the scenarios and pods that exercised it.

A disagreement is shrunk by replaying the scenario without each node and earlier pod in turn, keeping every removal
that still disagrees.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pydantic import BaseModel, Field, computed_field

from ..errors import InputError
from ..planner.dra import features
from ..planner.dra.objects import DraObjects, objects_from
from ..planner.scheduler.names import DEFAULT_PREEMPTION, DYNAMIC_RESOURCES
from ..planner.scheduler.predict import K8sPrediction, parse_version, predict
from . import dra as dra_objects
from . import kubelet, sync
from .api import Rest, RestError
from .scenarios import (
    DURING_PREEMPTION,
    PRIORITY_CLASSES,
    RUNTIME_CLASS,
    SCENARIO_LABEL,
    ConformanceScenario,
    generate,
    pdb_status,
)
from .sync import verdict

__all__ = [
    "ClaimCheck",
    "PodVerdict",
    "Disagreement",
    "PluginCount",
    "ConformanceReport",
    "Player",
    "run",
    "shrink",
    "verdict",
]

NAMESPACE = "gpusched-conformance"
NAMESPACE_LABELS = {"team": "x"}  # what the generator's namespaceSelectors ask about (scenarios._namespace_selectors)
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
PDBS = f"/apis/policy/v1/namespaces/{NAMESPACE}/poddisruptionbudgets"
RESOURCE = "/apis/resource.k8s.io/v1"
NAMESPACED = ("resourceclaims", "resourceclaimtemplates")
CLUSTER_WIDE = ("deviceclasses", "devicetaintrules", "resourceslices")  # DeviceTaintRules: served in v1 from 1.37
NOT_CREATED = "ResourceClaim not created yet"  # a template's claim the controller has not made yet: wait on
HELD_AFTER = 10.0  # seconds without a verdict after which a pod counts as never tried (held by PreEnqueue)
DECIDED_WITHIN = 30.0  # the same where gpusched predicts a verdict: DRA's Filter may take its 10 s timeout per node
NO_CONDITION = "no PodScheduled condition"
REFUSED = "API server refusal"  # what `plugins` names for a manifest the API server refused
SHARE = "<a shareID>"  # a share's random UID, compared as present or not


class ClaimCheck(BaseModel):
    claim: str = Field(description="namespace/name; a template's claim as `<pod>-<entry>` (the server adds 5 letters)")
    real: dict | None = Field(None, description="status.allocation, allocationTimestamp left out; None: unallocated")
    predicted: dict | None = Field(None, description="gpusched's allocation on the node the scheduler chose")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def agrees(self) -> bool:
        return self.real == self.predicted


class PodVerdict(BaseModel):
    pod: str = Field(description="the pod's name; for a DRA object the API server refused, `<kind> <name>`")
    node: str | None = Field(None, description="where the real scheduler bound it (a preemptor: after the eviction)")
    message: str | None = Field(None, description="the real PodScheduled=False message")
    nominated: str | None = Field(None, description="the real status.nominatedNodeName set with that message")
    victims: list[str] = Field(default_factory=list, description="pods the real preemption deleted")
    feasible: list[str] = Field(default_factory=list, description="the nodes gpusched finds feasible")
    predicted: str | None = Field(None, description="gpusched's message, when it predicts Pending")
    alternatives: list[str] = Field(
        default_factory=list,
        description="when the allocator fails with an error: gpusched's error on each node (the scheduler stops at "
        "whichever its parallel filtering meets first); else the messages if the real DRA search times out on a "
        "node where gpusched's is long",
    )
    predicted_nomination: str | None = None
    predicted_victims: list[str] = Field(default_factory=list)
    predicted_retried: bool = Field(
        True, description="gpusched: the victims' deletion retries the pod at once (else it is not bound within 30 s)"
    )
    possible_nominations: list[str] = Field(
        default_factory=list, description="every node gpusched says the scheduler may nominate (random among them)"
    )
    claims: list[ClaimCheck] = Field(default_factory=list)
    during: bool = Field(False, description="created while a preemption was under way (victims terminating)")
    plugins: list[str] = Field(
        default_factory=list,
        description="plugins at work on this pod in gpusched's prediction: each that rejected a node, "
        "DynamicResources for claims allocated or failed, DefaultPreemption for a nomination",
    )
    refused: bool = Field(False, description="the API server refused the manifest")
    predicted_refused: bool = Field(False, description="gpusched refused it too (exit 2)")
    held: str | None = Field(None, description="never tried: the PodScheduled condition reason, or none at all")
    predicted_held: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def agrees(self) -> bool:
        if self.refused or self.predicted_refused:
            return self.refused == self.predicted_refused
        if not all(claim.agrees for claim in self.claims):
            return False
        if self.held or self.predicted_held:
            return self.held == self.predicted_held and self.node is None
        if self.nominated or self.predicted_nomination or self.victims:
            return (
                self.message == self.predicted
                and self.nominated == self.predicted_nomination
                and sorted(self.victims) == sorted(self.predicted_victims)
                and self.node == (self.nominated if self.predicted_retried else None)
            )
        if self.node is not None:
            return self.node in self.feasible
        return (not self.feasible and self.message == self.predicted) or self.message in self.alternatives

    def real(self) -> str:
        if self.refused or self.held:
            return "refused by the API server" if self.refused else f"never tried ({self.held})"
        if self.nominated:
            evicted = ", ".join(self.victims) or "nobody"
            then = f"then bound to {self.node}" if self.node else "not bound within 30 s"
            return f"Pending: {self.message} (nominated {self.nominated}, evicted {evicted}, {then})"
        return f"bound to {self.node}" if self.node else f"Pending: {self.message}"

    def gpusched(self) -> str:
        if self.predicted_refused or self.predicted_held:
            return "refused (exit 2)" if self.predicted_refused else f"never tried ({self.predicted_held})"
        if self.predicted_nomination:
            waits = "" if self.predicted_retried else "; then waits in the unschedulable queue"
            return (
                f"Pending: {self.predicted} (nominates {self.predicted_nomination}, evicting "
                f"{', '.join(self.predicted_victims)}{waits})"
            )
        return f"fits {', '.join(self.feasible)}" if self.feasible else f"Pending: {self.predicted}"


class Disagreement(BaseModel):
    scenario: str
    outcome: PodVerdict
    reproducer: ConformanceScenario = Field(
        description="the smallest replay found that still disagrees on the same pod"
    )


class PluginCount(BaseModel):
    scenarios: int = Field(0, description="scenarios in which the plugin was at work on at least one pod")
    pods: int = Field(0, description="pods it was at work on")


class ConformanceReport(BaseModel):
    version: str
    seed: int
    scenarios: int
    pods: int
    agreed: int
    seconds: float
    disagreements: list[Disagreement]
    dra_scenarios: int = 0
    preemption_scenarios: int = 0
    claims: int = Field(0, description="claims whose allocation (or none) was compared")
    allocated: int = Field(0, description="of those, claims the real scheduler allocated")
    claims_agreed: int = 0
    shares: int = Field(0, description="of the allocated claims, those holding a share of a multi-allocatable device")
    preemptions: int = Field(0, description="pods the real scheduler nominated, evicting others")
    during: int = Field(0, description="pods created while a preemption was under way")
    budget_scenarios: int = Field(0, description="scenarios with PodDisruptionBudgets")
    plugins: dict[str, PluginCount] = Field(
        default_factory=dict, description="per plugin (by name), how many scenarios and pods exercised it"
    )
    rules: dict[str, int] = Field(
        default_factory=dict, description="pods carrying pod affinity, anti-affinity or topology spread constraints"
    )
    refused: int = Field(0, description="pods (and DRA objects, counted as pods) the API server refused")
    held: int = Field(0, description="pods the scheduler never tried (PreEnqueue)")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float:
        return round(100.0 * self.agreed / self.pods, 2) if self.pods else 100.0


@dataclass
class _State:
    """What `kubectl get -o json` shows just before a pod is created."""

    nodes: dict
    pods: dict
    namespaces: dict | None = None  # every Namespace, for the labels namespaceSelectors match
    pdbs: dict | None = None  # when the scenario has PodDisruptionBudgets
    objects: DraObjects | None = None  # when the scenario has DRA objects
    allocations: dict[str, dict] = field(default_factory=dict)  # claim key -> status.allocation, as the server has it

    def bound(self) -> set[str]:
        """The harness's bound pods."""
        return {_key(pod) for pod in self.pods["items"]
                if pod["spec"].get("nodeName") and pod["metadata"]["namespace"] == NAMESPACE}  # fmt: skip


def _key(pod: dict) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


class Player:
    """Plays scenarios on one cluster; `play` returns one PodVerdict per pod and always cleans up after itself."""

    def __init__(self, rest: Rest, version: str) -> None:
        self.rest, self.version = rest, version
        self.plays = itertools.count()
        self.clock = itertools.count()
        self.stale_dra = False  # the last play's DRA objects are deleted, but maybe not yet seen deleted
        self.budgets = False  # the scenario being played has PodDisruptionBudgets
        self.release = parse_version(version)
        rules = features.enabled("DRADeviceTaintRules", self.release)
        self.cluster_wide = [name for name in CLUSTER_WIDE if rules or name != "devicetaintrules"]  # what v1 serves
        self._setup()

    def _setup(self) -> None:
        for path, body in (
            ("/api/v1/namespaces", {"metadata": {"name": NAMESPACE, "labels": NAMESPACE_LABELS}}),
            *(("/apis/scheduling.k8s.io/v1/priorityclasses", body) for body in PRIORITY_CLASSES),
            ("/apis/node.k8s.io/v1/runtimeclasses", RUNTIME_CLASS),
        ):
            try:
                self.rest.create(path, body)
            except RestError as error:
                if error.status != 409:  # already there from an earlier run
                    raise
        self.namespaces = self.rest.get("/api/v1/namespaces")  # they do not change while scenarios play

    def play(self, scenario: ConformanceScenario) -> list[PodVerdict]:
        label = f"{scenario.label}-{next(self.plays)}"
        refusals: list[PodVerdict] = []
        try:
            for obj in scenario.objects:
                try:
                    self.rest.create(_collection(obj), _labelled(obj, label))
                except RestError as error:
                    if error.status not in (400, 422):
                        raise
                    refusals.append(self._refused(obj))
                    continue
                if dra_objects.DELETING in obj["metadata"].get("annotations", {}):
                    self.rest.delete(f"{_collection(obj)}/{obj['metadata']['name']}")  # its finalizer keeps it
            for node in scenario.nodes:
                self.rest.create("/api/v1/nodes", _labelled(node, label))
            sync.nodes(self.rest, NAMESPACE, label, len(scenario.nodes))
            if scenario.objects or self.stale_dra:  # a stale class could still serve nvidia.com/gpu
                sync.dra(self.rest, NAMESPACE, label)
            self.budgets = bool(scenario.pdbs)
            for pdb in scenario.pdbs:
                self._budget(pdb)
            return [*refusals, *self._pods(scenario.pods, bool(scenario.objects))]
        finally:
            self._reset(label, bool(scenario.objects))
            self.stale_dra = bool(scenario.objects)

    def _refused(self, obj: dict) -> PodVerdict:
        """A DRA object the API server refused (a selector its CEL environment does not compile, say): gpusched must
        refuse it too, for this release. The pods that name it then find it missing."""
        try:
            objects_from([("object", [obj])], pods=False, version=self.release)
            refused = False
        except InputError:
            refused = True
        name = f"{obj['kind']} {obj['metadata']['name']}"
        return PodVerdict(pod=name, refused=True, predicted_refused=refused, plugins=[REFUSED])

    def _budget(self, pdb: dict) -> None:
        """Create a budget and write its status, as a disruption controller would (none runs here); then wait until
        the scheduler's informer could have seen it, by reading it back."""
        body = {key: value for key, value in pdb.items() if key != "status"}
        self.rest.create(PDBS, body)
        path = f"{PDBS}/{pdb['metadata']['name']}/status"
        self.rest.call("PATCH", path, pdb_status(pdb), "application/merge-patch+json")
        want = pdb["status"]["disruptionsAllowed"]
        self.rest.wait(lambda: self.rest.get(path).get("status", {}).get("disruptionsAllowed") == want)

    def _state(self, dra: bool) -> _State:
        state = _State(
            nodes=self.rest.get("/api/v1/nodes"), pods=self.rest.get("/api/v1/pods"), namespaces=self.namespaces
        )
        if self.budgets:
            state.pdbs = _as_list(self.rest.get("/apis/policy/v1/poddisruptionbudgets"))
        if dra:
            listed = {name: _as_list(self.rest.get(f"{RESOURCE}/{name}")) for name in (*self.cluster_wide, *NAMESPACED)}
            state.objects = objects_from(
                [(f"{RESOURCE}/{name}", [doc]) for name, doc in listed.items()], pods=False, version=self.release
            )
            state.allocations = {_key(claim): claim["status"]["allocation"] for claim in listed["resourceclaims"]["items"]
                                 if claim.get("status", {}).get("allocation")}  # fmt: skip
        return state

    def _pods(self, pods: list[dict], dra: bool) -> list[PodVerdict]:
        """One at a time; a pod labelled to arrive during a preemption comes while its predecessor's victims
        terminate, when that predecessor did preempt (otherwise in turn)."""
        outcomes: list[PodVerdict] = []
        while len(outcomes) < len(pods):
            index = len(outcomes)
            follower = pods[index + 1] if index + 1 < len(pods) else None
            during = follower if follower and DURING_PREEMPTION in follower["metadata"].get("labels", {}) else None
            outcomes.extend(self._one(pods[index], dra, during))
        return outcomes

    def _one(self, manifest: dict, dra: bool, during: dict | None = None) -> list[PodVerdict]:
        """The pod's outcome, and that of `during` when it came during this pod's preemption."""
        name = manifest["metadata"]["name"]
        before = self._state(dra)
        try:
            created = self.rest.create(PODS, manifest)
        except RestError as error:
            if error.status not in (400, 422):
                raise
            refused = isinstance(self._predict(before, manifest), InputError)
            return [PodVerdict(pod=name, refused=True, predicted_refused=refused, plugins=[REFUSED])]
        prediction = self._predict(before, created)
        held = isinstance(prediction, K8sPrediction) and (prediction.pre_enqueue or prediction.never_tried) is not None
        try:
            decided = sync.await_verdict(self.rest, f"{PODS}/{name}", lambda text: NOT_CREATED in text,
                                         HELD_AFTER if held else DECIDED_WITHIN)  # fmt: skip
        except TimeoutError:
            return [self._held(before, created, dra, prediction)]
        node, message, nominated, followers = self._settle(name, dra, during, decided)
        pod = self.rest.get(f"{PODS}/{name}")
        claims = self._claims(before, created, pod, node) if dra else []
        message = _stamped(message, pod)
        if node is None:
            self.rest.delete(f"{PODS}/{name}")  # so that nothing can schedule it behind the harness's back
        victims = sorted(before.bound() - {_key(pod) for pod in self.rest.get(PODS)["items"]})
        outcome = PodVerdict(pod=name, node=node, message=message, nominated=nominated, victims=victims, claims=claims)
        if isinstance(prediction, InputError):
            outcome = outcome.model_copy(update={"predicted": _scheduler_words(prediction),
                                                 "alternatives": self._errors(before, created),
                                                 "plugins": [DYNAMIC_RESOURCES] if dra else []})  # fmt: skip
        else:
            outcome = _predicted(outcome, prediction)
        return [outcome, *followers]

    def _held(self, before: _State, created: dict, dra: bool, prediction: K8sPrediction | InputError) -> PodVerdict:
        """A pod no verdict came for: its PodScheduled condition, if any; then it is deleted."""
        name = created["metadata"]["name"]
        pod = self.rest.get(f"{PODS}/{name}")
        conditions = pod.get("status", {}).get("conditions") or []
        condition: dict = next((c for c in conditions if c["type"] == "PodScheduled"), {})
        outcome = PodVerdict(pod=name, held=condition.get("reason") or NO_CONDITION,
                             claims=self._claims(before, created, pod, None) if dra else [])  # fmt: skip
        self.rest.delete(f"{PODS}/{name}")  # its claims read first: the controller deletes what it generated
        if isinstance(prediction, InputError):
            return outcome.model_copy(update={"predicted": _scheduler_words(prediction)})
        return _predicted(outcome, prediction)

    def _settle(
        self, name: str, dra: bool, during: dict | None, decided: tuple[dict, str | None, str | None]
    ) -> tuple[str | None, str | None, str | None, list[PodVerdict]]:
        """(node, Pending message, nominated node, outcomes of pods that came meanwhile) from the verdict, then the
        kubelet's part: a preemptor's victims deleted until it binds (`during` played first), a bound pod started."""
        pod, node, message = decided
        nominated = pod["status"].get("nominatedNodeName") if node is None else None
        followers = self._one(during, dra) if nominated and during else []
        followers = [outcome.model_copy(update={"during": True}) for outcome in followers]
        if nominated:
            node = kubelet.evict_until_bound(self.rest, NAMESPACE, name)
        if node:
            kubelet.start(self.rest, NAMESPACE, name, next(self.clock))
        return node, message, nominated, followers

    def _predict(self, state: _State, pod: dict, node: str | None = None) -> K8sPrediction | InputError:
        """gpusched's prediction (on `node` alone when given), or the error it stops at (as the scheduler does)."""
        nodes = state.nodes
        if node is not None:
            nodes = {**nodes, "items": [n for n in nodes["items"] if n["metadata"]["name"] == node]}
        try:
            return predict(
                nodes, state.pods, pod, self.version, objects=state.objects, pdbs_doc=state.pdbs,
                namespaces_doc=state.namespaces,
            )  # fmt: skip
        except InputError as error:
            return error

    def _errors(self, state: _State, pod: dict) -> list[str]:
        """The error gpusched stops at on each node alone."""
        found = (self._predict(state, pod, node["metadata"]["name"]) for node in state.nodes["items"])
        return sorted({_scheduler_words(error) for error in found if isinstance(error, InputError)})

    def _claims(self, before: _State, created: dict, pod: dict, node: str | None) -> list[ClaimCheck]:
        """Each claim of the pod: the real allocation, and gpusched's on the node the scheduler chose (a Pending
        pod changes none: an allocated claim keeps the allocation it had). Before 1.36 the allocator takes pools
        and slices in a random order (features.py): gpusched's allocation is then the one of whichever order of the
        node's slices gives the real one, if any does."""
        predicted = {key: _comparable(allocation) for key, allocation in before.allocations.items()}
        real = dict(_claim_names(pod))
        options = self._slice_orders(before, created, node) if node is not None else iter(())
        found = next(options, None)
        if isinstance(found, K8sPrediction):
            real.update({claim.claim: real.get(claim.claim) for claim in found.claims})  # the pod's, on the node
        allocations = {key: _comparable(self._allocation(name)) for key, name in real.items()}
        chosen = found
        while isinstance(found, K8sPrediction):
            mine = {**predicted, **{claim.claim: _comparable(claim.allocation) for claim in found.claims}}
            if all(allocations[key] == mine.get(key) for key in real):
                chosen = found
                break
            found = next(options, None)
        if isinstance(chosen, K8sPrediction):
            predicted.update({claim.claim: _comparable(claim.allocation) for claim in chosen.claims})
        return [ClaimCheck(claim=key, real=allocations[key], predicted=predicted.get(key)) for key in real]

    def _slice_orders(self, state: _State, pod: dict, node: str) -> Iterator[K8sPrediction | InputError]:
        """gpusched's prediction on `node` with the slices as given, then (before 1.36 only) with every other order
        of the slices that node can use (at most 720)."""
        yield self._predict(state, pod, node)
        if state.objects is None or features.changed("pools-and-slices-sorted", parse_version(self.version)):
            return
        usable = [s for s in state.objects.slices if s.spec.node_name in (None, "", node)]
        others = [s for s in state.objects.slices if s not in usable]
        for order in itertools.islice(itertools.permutations(usable), 1, 720):
            objects = dataclasses.replace(state.objects, slices=[*order, *others])
            yield self._predict(dataclasses.replace(state, objects=objects), pod, node)

    def _allocation(self, name: str | None) -> dict | None:
        if name is None:
            return None
        try:
            claim = self.rest.get(f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims/{name}")
        except RestError as error:
            if error.status == 404:  # a claim the pod names that does not exist: PreEnqueue held the pod
                return None
            raise
        return claim.get("status", {}).get("allocation")

    def _release_finalizers(self) -> None:
        """Drop the harness's own finalizer from the claims it deleted at once, so that they go."""
        for claim in self.rest.get(f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims")["items"]:
            if dra_objects.FINALIZER in claim["metadata"].get("finalizers", []):
                path = f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims/{claim['metadata']['name']}"
                kept = [f for f in claim["metadata"]["finalizers"] if f != dra_objects.FINALIZER]
                patch = [{"op": "replace", "path": "/metadata/finalizers", "value": kept}]
                self.rest.call("PATCH", path, patch, "application/json-patch+json")

    def _reset(self, label: str, dra: bool) -> None:
        """Every pod of the namespace and this play's nodes, deleted at once (no kubelet to wait for); its DRA
        objects too. A claim the scheduler allocated keeps a finalizer until kube-controller-manager's resourceclaim
        controller sees its pods gone and deallocates it (the harness cannot drop the finalizer itself: a patch
        re-encodes the opaque config, and the API server refuses that as a change of the immutable spec)."""
        self.rest.delete(PODS)
        self.rest.delete(PDBS)
        if dra:
            self._release_finalizers()
            for name in NAMESPACED:
                self.rest.delete(f"{RESOURCE}/namespaces/{NAMESPACE}/{name}")
            for name in self.cluster_wide:
                self.rest.delete(f"{RESOURCE}/{name}?labelSelector={SCENARIO_LABEL}%3D{label}")
        self.rest.delete(f"/api/v1/nodes?labelSelector={SCENARIO_LABEL}%3D{label}")
        self.rest.wait(lambda: not self.rest.get(PODS)["items"])
        if dra:
            self.rest.wait(lambda: not self.rest.get(f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims")["items"])


def _predicted(outcome: PodVerdict, prediction: K8sPrediction) -> PodVerdict:
    """gpusched's verdict; of the nodes it says preemption may nominate, the one the scheduler chose if it is one."""
    chosen = [n for n in prediction.nominations if n.node == outcome.nominated]
    nomination = chosen[0] if chosen else prediction.nomination
    held = prediction.pre_enqueue
    return outcome.model_copy(update={
        "feasible": prediction.feasible,
        "predicted": nomination.message if nomination else prediction.message,
        "predicted_nomination": nomination.node if nomination else None,
        "predicted_victims": list(nomination.victims) if nomination else [],
        "predicted_retried": nomination.retried if nomination else True,
        "possible_nominations": [n.node for n in prediction.nominations],
        "alternatives": prediction.alternatives,
        "plugins": plugins_at_work(prediction),
        "predicted_held": ((held.condition or {}).get("reason") or NO_CONDITION) if held
                          else NO_CONDITION if prediction.never_tried else None,
    })  # fmt: skip


def plugins_at_work(prediction: K8sPrediction) -> list[str]:
    """Each plugin that rejected a node, DynamicResources when the pod has claims, DefaultPreemption when it
    nominated a node, the PreEnqueue plugin that held it; sorted by name."""
    found = {node.plugin for node in prediction.nodes if not node.fits and node.plugin}
    found |= {prediction.pre_enqueue.plugin} if prediction.pre_enqueue else set()
    found |= {DYNAMIC_RESOURCES} if prediction.claims else set()
    found |= {DEFAULT_PREEMPTION} if prediction.nomination else set()
    return sorted(found)


def _claim_names(pod: dict) -> list[tuple[str, str | None]]:
    """(gpusched's key, the real claim's name or None) per spec.resourceClaims entry, in order, then the claim the
    scheduler made for extended resources (gpusched names it by its generateName, `<pod>-extended-resources-`)."""
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    status = pod.get("status", {})
    generated = {s["name"]: s.get("resourceClaimName") for s in status.get("resourceClaimStatuses", [])}
    found = []
    for entry in pod["spec"].get("resourceClaims", []):
        if entry.get("resourceClaimName"):
            found.append((f"{namespace}/{entry['resourceClaimName']}", entry["resourceClaimName"]))
        else:
            found.append((f"{namespace}/{name}-{entry['name']}", generated.get(entry["name"])))
    extended = status.get("extendedResourceClaimStatus")
    if extended:
        found.append((f"{namespace}/{name}-extended-resources-", extended["resourceClaimName"]))
    return found


def _scheduler_words(error: InputError) -> str:
    """The error as the scheduler words it: gpusched adds the failing CEL expression, or the note that the search
    time is not modelled."""
    return error.message.split(" (expression: ")[0].split(" (not modelled: ")[0]


def _stamped(message: str | None, pod: dict) -> str | None:
    """The message with each claim generated from a template named as gpusched names it: `<pod>-<entry>`, without
    the 5 random characters the API server appends."""
    namespace = pod["metadata"]["namespace"]
    for key, name in _claim_names(pod):
        if message and name and key != f"{namespace}/{name}":
            message = message.replace(f"{namespace}/{name}", key)
    return message


def _comparable(allocation: dict | None) -> dict | None:
    """The allocation without the time it was made, and with each share's shareID (a random UID the scheduler
    makes) only marked as present."""
    if allocation is None:
        return None
    found = {key: value for key, value in allocation.items() if key != "allocationTimestamp"}
    results = found.get("devices", {}).get("results")
    if results and any("shareID" in result for result in results):
        marked = [{**r, "shareID": SHARE} if "shareID" in r else r for r in results]
        found["devices"] = {**found["devices"], "results": marked}
    return found


def _collection(obj: dict) -> str:
    plural = obj["kind"].lower() + ("es" if obj["kind"].endswith("s") else "s")
    namespace = obj["metadata"].get("namespace")
    return f"{RESOURCE}/namespaces/{namespace}/{plural}" if namespace else f"{RESOURCE}/{plural}"


def _as_list(listed: dict) -> dict:
    """A typed list (items without kind) as `kubectl get -o json` prints it: a List of objects with their kind."""
    kind = str(listed.get("kind", "")).removesuffix("List")
    items = [{"apiVersion": listed.get("apiVersion"), "kind": kind, **item} for item in listed.get("items") or []]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _labelled(obj: dict, label: str) -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("labels", {})[SCENARIO_LABEL] = label
    return obj


# --- shrinking ----------------------------------------------------------------------------------------------------


def _disagrees(player: Player, scenario: ConformanceScenario, pod: str) -> PodVerdict | None:
    for outcome in player.play(scenario):
        if outcome.pod == pod:
            return None if outcome.agrees else outcome
    return None


def _without(scenario: ConformanceScenario, kind: str, index: int) -> ConformanceScenario:
    return scenario.without_pod(index) if kind == "pods" else scenario.without_node(index)


def shrink(
    player: Player, scenario: ConformanceScenario, outcome: PodVerdict
) -> tuple[ConformanceScenario, PodVerdict]:
    """Greedy one-at-a-time removal of nodes and of pods other than the disagreeing one; a refused DRA object is its
    own reproducer (nothing else takes part in the refusal)."""
    if outcome.pod not in {pod["metadata"]["name"] for pod in scenario.pods}:
        return scenario, outcome
    current = scenario
    while current.pods[-1]["metadata"]["name"] != outcome.pod:
        current = current.without_pod(len(current.pods) - 1)
    for kind in ("pods", "nodes"):
        index = 0
        while index < len(getattr(current, kind)):
            item = getattr(current, kind)[index]
            if kind == "pods" and item["metadata"]["name"] == outcome.pod or len(getattr(current, kind)) == 1:
                index += 1
                continue
            trial = _without(current, kind, index)
            found = _disagrees(player, trial, outcome.pod)
            if found is None:
                index += 1
            else:
                current, outcome = trial, found
    return current, outcome


def run(
    rest: Rest, version: str, seed: int, count: int, progress: Callable[[int, list[PodVerdict]], None] | None = None
) -> ConformanceReport:
    """Scenarios 0..count-1 of `seed`; every disagreement comes back shrunk."""
    player = Player(rest, version)
    started = time.monotonic()
    report = ConformanceReport(version=version, seed=seed, scenarios=count, pods=0, agreed=0, seconds=0.0,
                               disagreements=[])  # fmt: skip
    for index in range(count):
        scenario = generate(seed, index, NAMESPACE, parse_version(version))
        outcomes = player.play(scenario)
        _tally(report, scenario, outcomes)
        for outcome in outcomes:
            if not outcome.agrees:
                smallest, final = shrink(player, scenario, outcome)
                report.disagreements.append(Disagreement(scenario=scenario.label, outcome=final, reproducer=smallest))
        if progress:
            progress(index, outcomes)
    report.seconds = round(time.monotonic() - started, 1)
    return report


def _tally(report: ConformanceReport, scenario: ConformanceScenario, outcomes: list[PodVerdict]) -> None:
    report.dra_scenarios += scenario.kind == "dra"
    report.preemption_scenarios += scenario.kind == "preemption"
    report.pods += len(outcomes)
    report.agreed += sum(outcome.agrees for outcome in outcomes)
    report.claims += sum(len(outcome.claims) for outcome in outcomes)
    report.allocated += sum(claim.real is not None for outcome in outcomes for claim in outcome.claims)
    report.claims_agreed += sum(claim.agrees for outcome in outcomes for claim in outcome.claims)
    report.shares += sum(
        any("shareID" in r for r in (claim.real or {}).get("devices", {}).get("results", []))
        for outcome in outcomes
        for claim in outcome.claims
    )
    report.preemptions += sum(bool(outcome.nominated) for outcome in outcomes)
    report.during += sum(outcome.during for outcome in outcomes)
    report.refused += sum(outcome.refused for outcome in outcomes)
    report.held += sum(bool(outcome.held) for outcome in outcomes)
    report.budget_scenarios += bool(scenario.pdbs)
    for pod in scenario.pods:
        spec = pod["spec"]
        for rule, present in (
            ("podAffinity", "podAffinity" in spec.get("affinity", {})),
            ("podAntiAffinity", "podAntiAffinity" in spec.get("affinity", {})),
            ("topologySpreadConstraints", "topologySpreadConstraints" in spec),
        ):
            report.rules[rule] = report.rules.get(rule, 0) + present
    for outcome in outcomes:
        for name in outcome.plugins:
            report.plugins.setdefault(name, PluginCount()).pods += 1
    for name in {name for outcome in outcomes for name in outcome.plugins}:
        report.plugins[name].scenarios += 1
    report.plugins = dict(sorted(report.plugins.items()))
